tier_tics = '("300k" 300000, "1m" 1000000)'
tier_lo = 300000
tier_hi = 1000000
logy_t = 0
base_t = 0
logy_rss = 1
base_rss = 1
logy_cpu = 0
base_cpu = 0
single_width = 12
single_series = ''
contenders = 'c pyext pyext~gc=off'
disturbed = ''
conditions = 'gc=off'
dagger = '†'
bars = 'median of 3 runs, bars: min-max of the runs (= their bootstrap 95% interval)'
dropped_note = 'ok runs only; 6 of 24 runs dropped (unsupported 6)'
ramp_n = 3
ramp_ser_1 = 'c'
ramp_title_1 = 'c'
ramp_faint_1 = 'ramp-c-r2.dat ramp-c-r3.dat'
ramp_ser_2 = 'pyext'
ramp_title_2 = 'pyext'
ramp_faint_2 = 'ramp-pyext-r1.dat ramp-pyext-r3.dat'
ramp_ser_3 = 'pyext~gc=off'
ramp_title_3 = 'pyext gc=off'
ramp_faint_3 = 'ramp-pyext~gc=off-r1.dat ramp-pyext~gc=off-r2.dat'
ramp_xmax = 0
ramp_others = 1
big_label = '1m'
logx = 0
ntiers = 2
has_bytes = 1
bytes_series = 'c pyext pyext~gc=off'
