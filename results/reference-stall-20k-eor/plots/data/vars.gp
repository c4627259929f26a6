tier_tics = '("20k" 20000)'
tier_lo = 20000
tier_hi = 20000
logy_t = 0
base_t = 0
logy_rss = 1
base_rss = 1
logy_cpu = 0
base_cpu = 0
single_width = 26
single_series = 'c~stall=0.1 pyext~stall=0.1 uvloop~stall=0.1 asyncio-protocol~stall=0.1 asyncio-streams~stall=0.1'
contenders = 'c~stall=0.1 pyext~stall=0.1 uvloop~stall=0.1 asyncio-protocol~stall=0.1 asyncio-streams~stall=0.1'
disturbed = ''
conditions = 'stall=0.1'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; none dropped'
ramp_n = 5
ramp_ser_1 = 'c~stall=0.1'
ramp_title_1 = 'c stall=0.1'
ramp_faint_1 = ''
ramp_ser_2 = 'pyext~stall=0.1'
ramp_title_2 = 'pyext stall=0.1'
ramp_faint_2 = ''
ramp_ser_3 = 'uvloop~stall=0.1'
ramp_title_3 = 'uvloop stall=0.1'
ramp_faint_3 = ''
ramp_ser_4 = 'asyncio-protocol~stall=0.1'
ramp_title_4 = 'asyncio-protocol stall=0.1'
ramp_faint_4 = ''
ramp_ser_5 = 'asyncio-streams~stall=0.1'
ramp_title_5 = 'asyncio-streams stall=0.1'
ramp_faint_5 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '20k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'c~stall=0.1 pyext~stall=0.1 uvloop~stall=0.1 asyncio-protocol~stall=0.1 asyncio-streams~stall=0.1'
