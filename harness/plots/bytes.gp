# bytes.gp - memory per connection, stacked: kernel (the socket slab caches of
# both loopback ends) and the server's userspace. Each contender at the largest
# tier it completed ("name@tier" when below the run's largest).
load gpdir.'/common.gp'
unset logscale x
set offsets 0, 0, graph 0.08, 0
set title 'Bytes per connection at '.big_label
unset xlabel   # the tics name the contenders
set bmargin 5  # room for a second tic line: "(tier)", and the note under it
# How many runs were dropped, and why; a name with a dagger: all its runs disturbed.
set label 1 dropped_note at screen 0.01, screen 0.025 left font ',9'
set ylabel 'bytes per connection'
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set key top left
# "name@tier" -> "name" over "(tier)"
tick(s) = strstrt(s, '@') ? s[1:strstrt(s, '@') - 1]."\n(".s[strstrt(s, '@') + 1:].")" : s
plot data.'/bytes.dat' using 3:xtic(tick(stitle(strcol(1)))) title 'kernel: socket slab caches (2 sockets)' lc rgb 0x4c72b0, \
     '' using 2 title 'server userspace (RssAnon delta)' lc rgb 0xdd8452
