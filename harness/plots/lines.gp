# lines.gp - more than one tier: a line per series over the measured tiers
# (each a tic, each point marked), its interval as error bars.
# tiers-NAME-disturbed.dat: tiers where every run was disturbed, an open
# marker with a dagger in the key. Loaded by tiers.gp.
set ylabel yl
# a log axis fits the data (not whole decades), tics 1-2-5
if (logy) {
    set logscale y; set yrange [*:*]; set autoscale yfix
    set offsets graph 0.04, graph 0.04, graph 0.06, graph 0.06
    set ytics () ; do for [e=-3:7] { set ytics add (1 * 10**e, 2 * 10**e, 5 * 10**e) }
    set format y '%g'
} else { unset logscale y; set yrange [0:*] }
eval 'set xtics '.tier_tics
set key outside right top
# the series side by side at a tier (a few pixels apart), so that no bar hides another
nser = words(contenders) + words(disturbed)
dodge(x, i) = logx ? x * (1 + 0.012 * (i - (nser + 1) / 2.0)) \
                   : x + 0.008 * (tier_hi - tier_lo + tier_lo * 0.5) * (i - (nser + 1) / 2.0)
if (refline) { set arrow 2 from graph 0, first refline to graph 1, first refline nohead dt 2 lc rgb 'black' } else { unset arrow 2 }
ok_lines = "for [i=1:words(contenders)] data.'/tiers-'.word(contenders, i).'.dat' \
    using (dodge($1, i)):col:col+1:col+2 with yerrorlines lw 1.5 pt ptype(who(word(contenders, i))) ps 1.3 \
    lc rgb color(who(word(contenders, i))) dt cdt(word(contenders, i)) title stitle(word(contenders, i))"
dist_points = "for [i=1:words(disturbed)] data.'/tiers-'.word(disturbed, i).'-disturbed.dat' \
    using (dodge($1, words(contenders) + i)):col:col+1:col+2 with yerrorbars lw 1 pt 6 ps 1.6 \
    lc rgb color(who(word(disturbed, i))) title stitle(word(disturbed, i)).' '.dagger.' all runs disturbed'"
# (an iteration over an empty list would still open a file named after '')
if (words(disturbed) == 0) {
    plot @ok_lines
} else {
    if (words(contenders) == 0) { plot @dist_points } else { plot @ok_lines, @dist_points }
}
