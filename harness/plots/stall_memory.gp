# stall_memory.gp - memory per stalled connection, stacked: kernel (the
# namespace's TCP buffer pages, both ends), the server's userspace growth and
# what the machine lost beyond both (MemAvailable: the 32 KiB page fragments
# the held lines keep), per contender and condition at the largest stall tier
# (report_push.py). The three stack to what the machine lost when it lost more.
th = 760   # room for the conditions' names, written vertically below the bars
load gpdir.'/common.gp'
load data.'/push_vars.gp'
unset logscale x
set offsets 0, 0, graph 0.3, 0   # the key above the tallest bar
set title 'Memory per stalled connection at '.stall_label."\n(oom-guard: what it took before the memory guard stopped it)"
unset xlabel
set ylabel 'bytes per stalled connection'
set format y '%.0f'
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
# vertical: up to 20 conditions side by side, names up to ~35 characters
set xtics rotate by 90 right
set rmargin 4
set bmargin 17
set key top left
plot data.'/stall_memory.dat' using 2:xtic(1) title 'kernel: TCP buffers (sockstat mem, both ends)' lc rgb 0x4c72b0, \
     '' using 3 title 'server userspace (RssAnon growth)' lc rgb 0xdd8452, \
     '' using 4 title 'page fragments held (MemAvailable lost beyond both; 0: not measured)' lc rgb 0x55a868
