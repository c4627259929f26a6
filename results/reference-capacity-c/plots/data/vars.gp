tier_tics = '("151k" 151000)'
tier_lo = 151000
tier_hi = 151000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 11
single_series = 'c~rate=5000'
contenders = ''
disturbed = ''
conditions = 'rate=5000'
dagger = '†'
bars = ''
dropped_note = 'ok runs only; 1 of 1 runs dropped (oom-guard 1)'
ramp_n = 1
ramp_ser_1 = 'c~rate=5000'
ramp_title_1 = 'c rate=5000 (1 oom-guard)'
ramp_faint_1 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '151k'
logx = 0
ntiers = 1
has_bytes = 0
bytes_series = ''
