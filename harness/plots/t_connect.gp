# t_connect.gp - time to connect vs tier: median with min-max error bars.
load gpdir.'/common.gp'
set title 'Time to connect: client start until the server counts all N open'
set ylabel 'seconds'
set yrange [0:*]
plot for [i=1:words(contenders)] data.'/tiers-'.word(contenders, i).'.dat' \
    using 1:2:3:4:xtic(11) with yerrorlines lw 2 pt 7 ps 1.2 lc rgb color(word(contenders, i)) \
    title word(contenders, i)
