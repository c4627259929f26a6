tier_tics = '("20k" 20000)'
tier_lo = 20000
tier_hi = 20000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 15
single_series = 'pyext~stall=0.1'
contenders = 'pyext~stall=0.1'
disturbed = ''
conditions = 'stall=0.1'
dagger = '†'
bars = 'median of 2 runs, bars: min-max of the runs'
dropped_note = 'ok runs only; none dropped'
ramp_n = 1
ramp_ser_1 = 'pyext~stall=0.1'
ramp_title_1 = 'pyext stall=0.1'
ramp_faint_1 = 'ramp-pyext~stall=0.1-r1.dat'
ramp_xmax = 0
ramp_others = 1
big_label = '20k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'pyext~stall=0.1'
