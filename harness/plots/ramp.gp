# ramp.gp - accepted connections vs time at the largest tier, one line per
# contender (its median-time run; a run that did not finish is labelled so).
load gpdir.'/common.gp'
unset logscale x
set offsets 0, 0, graph 0.05, 0
set title 'Ramp at '.big_label.': connections accepted by the server'
set xlabel 'seconds since the client started'
set ylabel 'accepted (thousands)'
set format y '%g'
set xrange [0:*]
set yrange [0:*]
set key bottom right
plot for [i=1:words(ramp_runs)] data.'/ramp-'.base(word(ramp_runs, i)).'.dat' \
    using 1:($2 / 1000) with lines lw 2 lc rgb color(who(word(ramp_runs, i))) dt cdt(word(ramp_runs, i)) \
    title stitle(word(ramp_runs, i))
