# storm_panels.gp - panels of open-connection curves through a reconnect storm,
# loaded by storm_curves.gp and storm_policies.gp with pfx set ('sc', 'sp').
# harness/lib/report_storm.py writes the variables (data/storm_vars.gp):
#   PFX_n panels, PFX_cols columns, PFX_title; per panel i: PFX_title_i,
#   PFX_target_i (N), PFX_k_i series; per series j: PFX_f_i_j (data file:
#   seconds since the kill, open), PFX_c_i_j (contender: the colour),
#   PFX_t_i_j (title), PFX_d_i_j (dash type).
load data.'/storm_vars.gp'
v(name, i, j) = value(sprintf('%s_%s_%d_%d', pfx, name, i, j))
n = value(pfx.'_n')
ncols = value(pfx.'_cols')
nrows = (n + ncols - 1) / ncols
if (fmt eq 'svg') {
    set terminal svg size 620 * ncols, 400 * nrows + 40 dynamic noenhanced font 'Sans,11' background rgb 'white'
} else {
    set terminal pngcairo size 620 * ncols, 400 * nrows + 40 noenhanced font 'Sans,10'
}
set output out.'.'.fmt
unset logscale x
set offsets 0, 0, graph 0.05, 0
set xlabel 'seconds since the kill'
set ylabel 'open (thousands; server counters)'
set format y '%g'
set yrange [0:*]
set key bottom right box opaque
set multiplot layout nrows, ncols title value(pfx.'_title')
do for [i=1:n] {
    set title value(sprintf('%s_title_%d', pfx, i))
    target = value(sprintf('%s_target_%d', pfx, i)) / 1000.0
    # the kill, and the N the server must hold again
    set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 3 lc rgb 0x808080
    set arrow 2 from graph 0, first target to graph 1, first target nohead dt 3 lc rgb 0x808080
    k = value(sprintf('%s_k_%d', pfx, i))
    plot for [j=1:k] data.'/'.v('f', i, j) using 1:($2 / 1000) with lines lw 2 \
        lc rgb color(v('c', i, j)) dt v('d', i, j) title v('t', i, j)
}
unset multiplot
