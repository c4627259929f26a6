# profile_t_connect.gp - time to connect per kernel profile at one tier: a
# cluster per profile, a bar per contender (lib/report_profiles.py writes
# profile-t_connect.dat: profile, then one median per contender).
load gpdir.'/common.gp'
load data.'/profile-vars.gp'
unset logscale x
set offsets 0, 0, graph 0.08, 0
set title 'Time to connect per kernel profile at '.prof_tier."\n".'client start until the server counts all N open (median of the runs)'
unset xlabel
set ylabel 'seconds'
set yrange [0:*]
set bmargin 7
set xtics rotate by -25 font ',9'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
plot for [i=1:words(prof_contenders)] data.'/profile-t_connect.dat' using (column(i + 1)):xtic(1) \
    lc rgb color(word(prof_contenders, i)) title word(prof_contenders, i)
