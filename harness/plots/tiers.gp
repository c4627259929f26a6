# tiers.gp - the per-tier plots' common part, loaded by t_connect.gp, rss.gp and
# cpu.gp after they set col (the median's column in tiers-*.dat; its interval
# follows it), ttl (the title) and the y label.
# tiers-NAME.dat: tiers whose figures come from ok runs (line, error bars:
# bootstrap 95% interval of the median with >= 3 runs, else min-max; the
# subtitle says which). tiers-NAME-disturbed.dat: tiers where every run was
# disturbed, their median drawn as an open marker with a dagger in the key.
set yrange [0:*]
set title (strlen(bars) > 0 ? ttl."\n".bars : ttl)
# How many runs were dropped, and why (status counts), under the plot.
set bmargin 5
set label 1 dropped_note at screen 0.01, screen 0.025 left font ',9'
ok_lines = "for [i=1:words(contenders)] data.'/tiers-'.word(contenders, i).'.dat' \
    using 1:col:col+1:col+2:xtic(11) with yerrorlines lw 2 pt 7 ps 1.2 \
    lc rgb color(who(word(contenders, i))) dt cdt(word(contenders, i)) title stitle(word(contenders, i))"
dist_points = "for [i=1:words(disturbed)] data.'/tiers-'.word(disturbed, i).'-disturbed.dat' \
    using 1:col:col+1:col+2:xtic(11) with yerrorbars lw 1 pt 6 ps 1.6 \
    lc rgb color(who(word(disturbed, i))) title stitle(word(disturbed, i)).' '.dagger.' all runs disturbed'"
# (an iteration over an empty list would still open a file named after '')
if (words(disturbed) == 0) {
    plot @ok_lines
} else {
    if (words(contenders) == 0) { plot @dist_points } else { plot @ok_lines, @dist_points }
}
