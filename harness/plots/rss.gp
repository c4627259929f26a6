# rss.gp - server RSS (RssAnon summed over the parent and its workers) vs tier.
load gpdir.'/common.gp'
set title 'Server memory with N idle connections (RssAnon, all processes)'
set ylabel 'MiB'
set yrange [0:*]
plot for [i=1:words(contenders)] data.'/tiers-'.word(contenders, i).'.dat' \
    using 1:5:6:7:xtic(11) with yerrorlines lw 2 pt 7 ps 1.2 lc rgb color(word(contenders, i)) \
    title word(contenders, i)
