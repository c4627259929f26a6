tier_tics = '("1800" 1800, "2200" 2200)'
tier_lo = 1800
tier_hi = 2200
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 19
single_series = ''
contenders = 'c~stall=0.1-sndbuf0'
disturbed = ''
conditions = 'stall=0.1-sndbuf0'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; 1 of 2 runs dropped (oom-guard 1)'
ramp_n = 1
ramp_ser_1 = 'c~stall=0.1-sndbuf0'
ramp_title_1 = 'c stall=0.1-sndbuf0'
ramp_faint_1 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '1800'
logx = 0
ntiers = 2
has_bytes = 1
bytes_series = 'c~stall=0.1-sndbuf0'
