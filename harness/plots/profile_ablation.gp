# profile_ablation.gp - one setting at a time: for each key of the tuned
# profile, tuned with that key back at its stock value, against tuned: time
# to connect as a ratio (1 = no change) and drops (ListenDrops +
# TCPReqQFullDrop) as a difference, a bar per contender (lib/report_profiles.py
# writes profile-ablation.dat: key, the ratios, then the differences).
load gpdir.'/common.gp'
load data.'/profile-vars.gp'
unset logscale x
n = words(abl_contenders)
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set xtics rotate by -25 font ',9'
unset xlabel
set key top left
set multiplot layout 2, 1 title 'One setting at a time at '.abl_tier.': tuned with KEY back at its stock value'
set ylabel 'time to connect / tuned'
set yrange [0:*]
plot for [i=1:n] data.'/profile-ablation.dat' using (column(i + 1)):xtic(1) \
    lc rgb color(word(abl_contenders, i)) title word(abl_contenders, i), \
    1 with lines lc rgb 'black' dt 2 notitle
set ylabel "drops - tuned's"
set yrange [*:*]
plot for [i=1:n] data.'/profile-ablation.dat' using (column(n + i + 1)):xtic(1) \
    lc rgb color(word(abl_contenders, i)) title word(abl_contenders, i)
unset multiplot
