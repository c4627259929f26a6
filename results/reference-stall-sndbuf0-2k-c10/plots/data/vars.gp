tier_tics = '("2k" 2000)'
tier_lo = 2000
tier_hi = 2000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 19
single_series = 'c~stall=0.1-sndbuf0'
contenders = 'c~stall=0.1-sndbuf0'
disturbed = ''
conditions = 'stall=0.1-sndbuf0'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; none dropped'
ramp_n = 1
ramp_ser_1 = 'c~stall=0.1-sndbuf0'
ramp_title_1 = 'c stall=0.1-sndbuf0'
ramp_faint_1 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '2k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'c~stall=0.1-sndbuf0'
