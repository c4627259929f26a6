# anatomy_cpu.gp - server CPU per connection by layer, one stacked bar per
# contender (harness/anatomy-cpu). Called with fmt ('png' or 'svg'), phase
# ('ramp' or 'hold'), data (plots/data: layers-PHASE.dat and layers-PHASE.gp,
# written by harness/lib/perf_layers.py table) and out (path without extension).
load data.'/layers-'.phase.'.gp'
if (fmt eq 'svg') {
    set terminal svg size 1040,620 dynamic noenhanced font 'Sans,12' background rgb 'white'
} else {
    set terminal pngcairo size 1040,620 noenhanced font 'Sans,11'
}
set output out.'.'.fmt
set title ttl
set ylabel unit
set grid ytics
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set style data histograms
set style histogram rowstacked
set style fill solid 0.9 border -1
set boxwidth 0.6
set xtics rotate by 30 right nomirror
set key outside right top Left reverse noautotitle
# The measured total over each bar (the layers add up to it).
plot for [i=2:nlayers+1] data.'/layers-'.phase.'.dat' using i:xtic(1) title columnhead(i) \
         lc rgb word(colours, i-1), \
     '' using 0:(column(nlayers+2)):(sprintf('%.2f', column(nlayers+2))) every ::1 with labels offset 0,0.8 notitle
