# cpu.gp - server CPU seconds (user+sys, all processes) spent while connecting.
load gpdir.'/common.gp'
set title 'Server CPU during the connect phase (user+sys, all processes)'
set ylabel 'CPU seconds'
set yrange [0:*]
plot for [i=1:words(contenders)] data.'/tiers-'.word(contenders, i).'.dat' \
    using 1:8:9:10:xtic(11) with yerrorlines lw 2 pt 7 ps 1.2 lc rgb color(word(contenders, i)) \
    title word(contenders, i)
