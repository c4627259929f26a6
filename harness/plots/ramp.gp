# ramp.gp - accepted connections vs time at the largest tier: per series,
# every run's curve faint and its median run (by time to connect, of the ok
# runs) bold; the key says how many runs were not ok, by status
# (results.py ramp_data writes ramp-SER.dat, the others and the titles).
tw = 1040
load gpdir.'/common.gp'
unset logscale x
set offsets 0, 0, graph 0.05, 0
set title 'Ramp at '.big_label.': connections accepted by the server'. \
    (ramp_others ? "\nbold: the median run (time to connect); faint: the other runs" : '')
set xlabel 'seconds since the client started'
set ylabel 'accepted (thousands)'
set format y '%g'
if (ramp_xmax > 0) { set xrange [0:ramp_xmax] } else { set xrange [0:*] }
set yrange [0:*]
set key outside right top
ser(i) = value(sprintf('ramp_ser_%d', i))
faint(i) = value(sprintf('ramp_faint_%d', i))
# '#60rrggbb': the colour, 0x60/0xff transparent
pale(c) = '#60'.c[2:]
if (ramp_others) {
    plot for [i=1:ramp_n] for [j=1:words(faint(i))] data.'/'.word(faint(i), j) \
            using 1:($2 / 1000) with lines lw 1 lc rgb pale(color(who(ser(i)))) dt cdt(ser(i)) notitle, \
         for [i=1:ramp_n] data.'/ramp-'.ser(i).'.dat' using 1:($2 / 1000) with lines lw 2.5 \
            lc rgb color(who(ser(i))) dt cdt(ser(i)) title value(sprintf('ramp_title_%d', i))
} else {
    plot for [i=1:ramp_n] data.'/ramp-'.ser(i).'.dat' using 1:($2 / 1000) with lines lw 2.5 \
            lc rgb color(who(ser(i))) dt cdt(ser(i)) title value(sprintf('ramp_title_%d', i))
}
