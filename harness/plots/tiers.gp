# tiers.gp - the per-tier plots' common part, loaded by t_connect.gp, rss.gp,
# cpu.gp and ratio.gp after they set col (the median's column in
# tiers-*.dat; its interval follows it), ttl (the title), yl (the figure's
# axis label) and logy (a log axis: vars.gp logy_*; base: where its bars
# start). One tier: bars (bars.gp), else lines (lines.gp). The subtitle
# (bars) says what a point and its bars are.
# one tier: the bars' axis has no tier, the title names it
if (ntiers == 1) { ttl = ttl.' at '.big_label }
set title (strlen(bars) > 0 ? ttl."\n".bars : ttl)
# How many runs were dropped, and why (status counts), under the plot.
set bmargin 5
set label 1 dropped_note at screen 0.01, screen 0.025 left font ',9'
if (!exists('refline')) { refline = 0 }
if (ntiers == 1) { load gpdir.'/bars.gp' } else { load gpdir.'/lines.gp' }
