# bars.gp - one tier: a horizontal bar per series (single.dat: the name, then
# the columns of tiers-*.dat, so the median is column col+1), its interval as
# error bars and its median written at the bar's end; the names on the axis,
# no key. A series with no usable run: no bar, its column 20 says why.
# Loaded by tiers.gp (col, yl, logy, base, refline set).
unset xtics
set xtics
set ytics nomirror
set grid xtics noytics
unset key
set xlabel yl
unset ylabel
set offsets 0, graph 0.12, 0, 0
nb = words(single_series)
set yrange [nb - 0.5:-0.5]
if (logy) { set logscale x; set xrange [base:*] } else { unset logscale x; set xrange [0:*] }
unset logscale y
set lmargin (single_width < 12 ? 14 : single_width + 3)
if (refline) { set arrow 2 from first refline, graph 0 to first refline, graph 1 nohead dt 2 lc rgb 'black' } else { unset arrow 2 }
m(i) = column(col + 1)
plot for [i=0:nb-1] data.'/single.dat' every ::i::i \
        using ((base + m(0)) / 2):($0 + i):(base):(m(0)):($0 + i - 0.35):($0 + i + 0.35):ytic(stitle(strcol(1))) \
        with boxxyerror fs solid 0.8 border lc rgb 'black' lc rgb color(who(word(single_series, i + 1))) notitle, \
     data.'/single.dat' using (m(0)):0:(column(col + 2)):(column(col + 3)) with xerrorbars pt -1 lc rgb 'black' notitle, \
     '' using (column(col + 3)):0:(gprintf('%.3g', m(0))) with labels left offset 0.6, 0 notitle, \
     '' using (base > 0 ? base : 0):0:20 with labels left offset 0.6, 0 tc rgb '#606060' notitle
