tier_tics = '("5k" 5000)'
tier_lo = 5000
tier_hi = 5000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 12
single_series = 'c~stall=0.01 c~stall=0.1 c~stall=1'
contenders = 'c~stall=0.01 c~stall=0.1 c~stall=1'
disturbed = ''
conditions = 'stall=0.01 stall=0.1 stall=1'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; none dropped'
ramp_n = 3
ramp_ser_1 = 'c~stall=0.01'
ramp_title_1 = 'c stall=0.01'
ramp_faint_1 = ''
ramp_ser_2 = 'c~stall=0.1'
ramp_title_2 = 'c stall=0.1'
ramp_faint_2 = ''
ramp_ser_3 = 'c~stall=1'
ramp_title_3 = 'c stall=1'
ramp_faint_3 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '5k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'c~stall=0.01 c~stall=0.1 c~stall=1'
