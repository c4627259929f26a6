# demo.gp - `make demo`'s one picture (harness/demo; data: harness/lib/demo.py):
# per contender, bytes per connection stacked (kernel, grey: the socket slab
# caches of both loopback ends; the server's userspace, the contender's
# colour) and the server's CPU per accepted connection, beside the userspace
# of one Python connection by object type (py_server.anatomy). Called as
# plot.sh calls every script: fmt, out, data, gpdir; data holds vars.gp
# (demo_series: the contenders in row order), contenders.dat and anatomy.dat.
tw = 1500
th = 680
load gpdir.'/common.gp'
# '|' in a name or label -> a line break
nl(s) = strstrt(s, '|') ? s[1:strstrt(s, '|') - 1]."\n".nl(s[strstrt(s, '|') + 1:]) : s
unset logscale x
unset xlabel
unset key
set grid noxtics ytics
nc = words(demo_series)
w = 0.33    # half a bar's width

set multiplot title 'c1m demo: what one idle connection costs, from C to asyncio streams ('.tier.' connections)' font ',15'
set label 98 demo_note at screen 0.5, screen 0.045 center font ',10' tc rgb '#aa0000'
set label 99 measure_note at screen 0.5, screen 0.015 center font ',10' tc rgb '#aa0000'
# ---- left: bytes per connection, kernel (grey) under the userspace (colour)
set origin 0, 0.08
set size 0.36, 0.85
set title "Bytes per connection: kernel (grey, 2 sockets)\n+ server userspace (colour; its figure on top)"
set ylabel 'bytes'
set xrange [-0.6:nc - 0.4]
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set xtics rotate by -30 left nomirror
# a kernel figure flagged (a busy machine's slab moved): the userspace from 0
# (column 8: where it starts; 9: the bar's top)
plot for [i=0:nc-1] data.'/contenders.dat' every ::i::i \
        using (i):($3 / 2):(i - w):(i + w):(0):3 \
        with boxxyerror fs solid 1 border lc rgb 'black' lc rgb '#c8c8c8' notitle, \
     for [i=0:nc-1] '' every ::i::i using (i):(($8 + $9) / 2):(i - w):(i + w):8:9 \
        with boxxyerror fs solid 0.85 border lc rgb 'black' lc rgb color(word(demo_series, i + 1)) notitle, \
     '' using 0:9:(sprintf('%.0f', $2)) with labels offset 0, 0.7 font ',9' notitle, \
     '' using 0:9:6:xtic(strcol(1)) with labels rotate by 90 left offset 0, 2.2 \
        font ',9' tc rgb '#aa0000' notitle
unset label 98
unset label 99

# ---- middle: server CPU per accepted connection
set origin 0.36, 0.08
set size 0.28, 0.85
set title "Server CPU per accepted connection\n(in the ramp)"
set ylabel 'microseconds'
plot for [i=0:nc-1] data.'/contenders.dat' every ::i::i \
        using (i):($4 / 2):(i - w):(i + w):(0):4 \
        with boxxyerror fs solid 0.85 border lc rgb 'black' lc rgb color(word(demo_series, i + 1)) notitle, \
     '' using 0:4:(sprintf('%.0f', $4)) with labels offset 0, 0.7 font ',9' notitle, \
     '' using 0:(0):7:xtic(strcol(1)) with labels rotate by 90 left offset 0, 0.5 font ',9' tc rgb '#aa0000' notitle

# ---- right: one Python connection by object type (horizontal bars)
set origin 0.64, 0.08
set size 0.34, 0.85
# its title as a label centred on the panel, not on the plot area the type names narrow
unset title
set label 97 anatomy_title at screen 0.81, screen 0.91 center
set tmargin 4
set xlabel 'bytes per connection'
unset ylabel
set xrange [0:*]
set yrange [-0.6:*]
# at most four steps on the bytes axis: 1, 2 or 5 x a power of ten
stats data.'/anatomy.dat' using 2 nooutput
p10 = 10**floor(log10(STATS_max > 1 ? STATS_max : 1))
xstep = STATS_max / p10 >= 4 ? 2 * p10 : STATS_max / p10 >= 2 ? p10 : p10 / 2
set xtics 0, xstep norotate nomirror
set ytics nomirror font ',9'
set grid xtics noytics
set offsets 0, graph 0.15, 0, 0
# kind 0: a gc-tracked type (the contender's colour), 1: the other types (lighter),
# 2: outside the gc (hatched; grey is the kernel's in the left panel)
bar(k, want, v) = k == want ? v : NaN
plot data.'/anatomy.dat' using (bar($3, 0, $2 / 2)):0:($2 / 2):(0.35) \
        with boxxyerror fs solid 0.85 border lc rgb 'black' lc rgb color(anatomy_series) notitle, \
     '' using (bar($3, 1, $2 / 2)):0:($2 / 2):(0.35) with boxxyerror fs solid 0.35 border lc rgb 'black' \
        lc rgb color(anatomy_series) notitle, \
     '' using (bar($3, 2, $2 / 2)):0:($2 / 2):(0.35) with boxxyerror fs pattern 4 border lc rgb 'black' \
        lc rgb color(anatomy_series) notitle, \
     '' using 2:0:(sprintf(' %.0f', $2)):ytic(nl(strcol(1))) with labels left font ',9' notitle
unset multiplot
