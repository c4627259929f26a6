# profile_drops.gp - the namespace's drop counters and the client's failures
# per contender and kernel profile at one tier (lib/report_profiles.py writes
# profile-drops.dat: "contender~profile", then ListenDrops, TCPReqQFullDrop,
# TCPSynRetrans, failed connects, connect timeouts). Log scale when any is
# above 0; a 0 is then no bar.
load gpdir.'/common.gp'
load data.'/profile-vars.gp'
unset logscale x
set offsets 0, 0, graph 0.08, 0
unset xlabel
set bmargin 7
set xtics rotate by -25 font ',9'
set ylabel 'count (median of the runs)'
if (prof_log) {
    set logscale y
    sub = 'log scale: a missing bar is 0'
} else {
    set yrange [0:1]
    sub = 'every counter is 0 in every run'
}
set title 'Drops, retransmits and failed connects per kernel profile at '.prof_tier."\n".sub
set key top left
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
# prof_cols: the data columns to draw (profile-vars.gp; on a log axis those
# with a bar)
array titles[6] = ['', 'ListenDrops', 'TCPReqQFullDrop', 'TCPSynRetrans (SYN + SYN-ACK)', \
                   'failed connects', 'connect timeouts']
array colors[6] = [0, 0xd62728, 0xff7f0e, 0x9467bd, 0x7f7f7f, 0x17becf]
plot for [c in prof_cols] data.'/profile-drops.dat' using int(c):xtic(stitle(strcol(1))) \
     title titles[int(c)] lc rgb colors[int(c)]
