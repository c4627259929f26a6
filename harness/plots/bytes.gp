# bytes.gp - memory per connection, a row per contender at the largest tier it
# completed ("name (tier)" when below the run's largest; bytes.dat, results.py
# plotdata). Left: kernel (the socket slab caches of both loopback ends, grey)
# and the server's userspace (the contender's colour) stacked, the total and
# its interval at the bar's end. Right: the userspace part alone on a log
# axis, so that 19 B shows beside 5 KB, its interval and value.
tw = 1100
load gpdir.'/common.gp'
unset logscale x
unset xlabel
set xtics
set ytics nomirror
set grid xtics noytics
unset key
# How many runs were dropped, and why; a name with a dagger: all its runs disturbed.
set label 1 dropped_note at screen 0.01, screen 0.025 left font ',9'
# "name@tier" -> "name (tier)"
tick(s) = strstrt(s, '@') ? s[1:strstrt(s, '@') - 1].' ('.s[strstrt(s, '@') + 1:].')' : s
nb = words(bytes_series)
set yrange [nb - 0.5:-0.5]
set offsets 0, graph 0.18, 0, 0
set tmargin 5
set bmargin 5
set multiplot title 'Bytes per connection at '.big_label."\n".bars
# left panel: kernel + userspace
set lmargin at screen 0.15
set rmargin at screen 0.56
set title "kernel (grey: socket slab caches, 2 sockets) + server userspace (RssAnon delta)"
set xlabel 'bytes per connection'
set xrange [0:*]
plot for [i=0:nb-1] data.'/bytes.dat' every ::i::i \
        using (($3 + $2) / 2):($0 + i):(0):($3 + $2):($0 + i - 0.35):($0 + i + 0.35):ytic(tick(strcol(1))) \
        with boxxyerror fs solid 0.8 border lc rgb 'black' lc rgb color(who(word(bytes_series, i + 1))) notitle, \
     '' using ($3 / 2):0:(0):3:($0 - 0.35):($0 + 0.35) with boxxyerror fs solid 1 border lc rgb 'black' \
        lc rgb '#c8c8c8' notitle, \
     '' using 8:0:9:10 with xerrorbars pt -1 lc rgb 'black' notitle, \
     '' using 10:0:(sprintf('%.0f', $8)) with labels left offset 1, 0 notitle
# right panel: userspace alone, log axis (a 0 has no bar)
set lmargin at screen 0.60
set rmargin at screen 0.97
set title 'server userspace alone (log scale)'
set format y ''
set logscale x
set xrange [1:*]
pos(v) = v > 0 ? v : NaN
plot for [i=0:nb-1] data.'/bytes.dat' every ::i::i \
        using (sqrt(pos($2))):($0 + i):(1):(pos($2)):($0 + i - 0.35):($0 + i + 0.35) \
        with boxxyerror fs solid 0.8 border lc rgb 'black' lc rgb color(who(word(bytes_series, i + 1))) notitle, \
     '' using (pos($2)):0:(pos($4)):(pos($5)) with xerrorbars pt -1 lc rgb 'black' notitle, \
     '' using (pos($5)):0:(sprintf('%.0f B', $2)) with labels left offset 1, 0 notitle
unset multiplot
