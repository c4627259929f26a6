# profile_rates.gp - drops (ListenDrops + TCPReqQFullDrop) per client connect
# rate at the largest tier: a line per contender and profile (dashed: not
# tuned). lib/report_profiles.py writes profile-rate-SERIES.dat: index, rate
# label, drops. Log scale when any is above 0 (a 0 is then no point).
load gpdir.'/common.gp'
load data.'/profile-vars.gp'
unset logscale x
set offsets graph 0.05, graph 0.05, graph 0.08, 0
set xlabel 'client --rate (new connections/s)'
set ylabel 'drops (median of the runs)'
if (rate_log) {
    set logscale y
    sub = 'log scale: a missing point is 0'
} else {
    set yrange [0:1]
    sub = 'no drop at any rate'
}
set title 'Drops per client connect rate at '.rate_tier."\n".sub
rdt(s) = strstrt(s, '~') ? 2 : 1
plot for [i=1:words(rate_series)] data.'/profile-rate-'.word(rate_series, i).'.dat' \
    using 1:3:xtic(2) with linespoints lw 2 pt 7 lc rgb color(who(word(rate_series, i))) \
    dt rdt(word(rate_series, i)) title stitle(word(rate_series, i))
