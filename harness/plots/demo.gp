# demo.gp - `make demo`'s one picture (harness/demo; data: harness/lib/demo.py):
# per contender, bytes per connection stacked (kernel: the socket slab caches
# of both loopback ends; the server's userspace) and the server's CPU per
# accepted connection, beside the per-object anatomy of one Python connection
# (py_server.anatomy). Called as plot.sh calls every script: fmt, out, data,
# gpdir; data holds vars.gp, contenders.dat and anatomy.dat.
load gpdir.'/common.gp'
if (fmt eq 'svg') {
    set terminal svg size 1500,680 dynamic noenhanced font 'Sans,12' background rgb 'white'
} else {
    set terminal pngcairo size 1500,680 noenhanced font 'Sans,11'
}
set output out.'.'.fmt
# '|' in a name or label -> a line break
nl(s) = strstrt(s, '|') ? s[1:strstrt(s, '|') - 1]."\n".nl(s[strstrt(s, '|') + 1:]) : s
unset logscale x
unset xlabel
unset key
set style fill solid 0.85 border -1
set grid noxtics ytics

set multiplot title 'c1m demo: what one idle connection costs, from C to asyncio streams ('.tier.' connections)' font ',15'
set label 98 demo_note at screen 0.5, screen 0.045 center font ',10' tc rgb 0xaa0000
set label 99 measure_note at screen 0.5, screen 0.015 center font ',10' tc rgb 0xaa0000
# ---- left: bytes per connection, stacked
set origin 0, 0.08
set size 0.36, 0.85
set title 'Bytes per connection (figures: the userspace)'
set ylabel 'bytes'
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set xtics rotate by -30 left nomirror
set style data histograms
set style histogram rowstacked
set boxwidth 0.65
set key top left box opaque Left reverse
plot data.'/contenders.dat' using 3:xtic(nl(strcol(1))) title 'kernel (2 sockets)' lc rgb 0x4c72b0, \
     '' using 2 title 'server userspace' lc rgb 0xdd8452, \
     '' using 0:($2 + $3):(sprintf('%.0f', $2)) with labels offset 0, 0.7 font ',9' notitle, \
     '' using 0:(0):6 with labels rotate by 90 left offset 0, 0.5 font ',9' tc rgb 0xaa0000 notitle
unset key
unset label 98
unset label 99

# ---- middle: server CPU per accepted connection
set origin 0.36, 0.08
set size 0.28, 0.85
set title 'Server CPU per accepted connection'
set ylabel 'microseconds'
set style data boxes
set boxwidth 0.65
set xrange [-0.6:*]
plot data.'/contenders.dat' using 0:4:(color(strcol(5))):xtic(nl(strcol(1))) with boxes lc rgb variable notitle, \
     '' using 0:4:(sprintf('%.0f', $4)) with labels offset 0, 0.7 font ',9' notitle, \
     '' using 0:(0):6 with labels rotate by 90 left offset 0, 0.5 font ',9' tc rgb 0xaa0000 notitle

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
set xtics 0, xstep
set offsets 0, graph 0.15, 0, 0
set xtics norotate nomirror
set ytics nomirror font ',9'
set grid noytics
set grid xtics
kcolor(k) = k == 0 ? 0xd62728 : k == 1 ? 0xe8a0a0 : 0x999999
plot data.'/anatomy.dat' using ($2 / 2):0:($2 / 2):(0.35):(kcolor($3)):ytic(nl(strcol(1))) with boxxyerror lc rgb variable notitle, \
     '' using 2:0:(sprintf(' %.0f', $2)) with labels left font ',9' notitle
unset multiplot
