# push_tiers.gp - a per-tier plot of one push figure, loaded by push_broadcast.gp
# and push_latency.gp after they set pfx (the .dat prefix), ser (the series:
# "contender" or "contender~condition"), ttl and the y label. Each
# PFX-SERIES.dat: tier median min max label (harness/lib/report_push.py).
load data.'/push_vars.gp'
set title ttl
set yrange [0:*]
set key top left
plot for [i=1:words(ser)] data.'/'.pfx.'-'.word(ser, i).'.dat' \
    using 1:2:3:4:xtic(5) with yerrorlines lw 2 pt 7 ps 1.2 \
    lc rgb color(who(word(ser, i))) dt cdt(word(ser, i)) title stitle(word(ser, i))
