# ladder.gp - the ladder of fixes (lib/report_ladder.py writes ladder.dat and
# ladder_vars.gp): a row per step, top to bottom in the order a user tries
# them. Left: the server's CPU per accepted connection in the ramp; right:
# bytes per connection, the kernel's (grey) under the server's userspace (the
# contender's colour). Each bar's median and, in brackets, its change against
# the step before it; a step without an ok run has no bar and says why.
tw = 1280
th = 560
load gpdir.'/common.gp'
load data.'/ladder_vars.gp'
unset logscale x
set ytics nomirror
set grid xtics noytics
unset key
set label 1 ladder_note at screen 0.01, screen 0.025 left font ',9'
nb = ladder_n
set yrange [nb - 0.5:-0.5]
set offsets 0, graph 0.45, 0, 0
set tmargin 5
set bmargin 5
set xrange [0:*]
set multiplot title ladder_title
# left panel: CPU
set lmargin at screen 0.22
set rmargin at screen 0.58
set title 'server CPU per accepted connection, during the ramp'
set xlabel 'µs per connection'
plot for [i=0:nb-1] data.'/ladder.dat' every ::i::i \
        using ($3 / 2):($0 + i):(0):3:($0 + i - 0.35):($0 + i + 0.35):ytic(strcol(1)) \
        with boxxyerror fs solid 0.8 border lc rgb 'black' lc rgb color(word(ladder_series, i + 1)) notitle, \
     data.'/ladder.dat' using 3:0:6 with labels left offset 0.6, 0 notitle, \
     '' using (0):0:8 with labels left offset 0.6, 0 tc rgb '#606060' notitle
# right panel: bytes, kernel + userspace
set lmargin at screen 0.62
set rmargin at screen 0.97
set offsets 0, graph 0.6, 0, 0
set title 'bytes per connection: kernel (grey) + server userspace'
set xtics ladder_bytes_tic
set xlabel 'bytes per connection'
set format y ''
plot data.'/ladder.dat' using ($5 / 2):0:(0):5:($0 - 0.35):($0 + 0.35) \
        with boxxyerror fs solid 1 border lc rgb 'black' lc rgb '#c8c8c8' notitle, \
     for [i=0:nb-1] data.'/ladder.dat' every ::i::i \
        using ($5 + $4 / 2):($0 + i):5:($5 + $4):($0 + i - 0.35):($0 + i + 0.35) \
        with boxxyerror fs solid 0.8 border lc rgb 'black' lc rgb color(word(ladder_series, i + 1)) notitle, \
     data.'/ladder.dat' using ($4 + $5):0:7 with labels left offset 0.6, 0 notitle, \
     '' using (0):0:8 with labels left offset 0.6, 0 tc rgb '#606060' notitle
unset multiplot
