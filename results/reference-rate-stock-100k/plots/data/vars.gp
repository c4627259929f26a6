tier_tics = '("100k" 100000)'
tier_lo = 100000
tier_hi = 100000
logy_t = 0
base_t = 0
logy_rss = 1
base_rss = 1
logy_cpu = 0
base_cpu = 0
single_width = 32
single_series = 'c~stock,rate=5000 c~stock,rate=20000 asyncio-streams~stock,rate=5000 asyncio-streams~stock,rate=20000'
contenders = 'c~stock,rate=5000 c~stock,rate=20000 asyncio-streams~stock,rate=5000 asyncio-streams~stock,rate=20000'
disturbed = ''
conditions = 'stock,rate=5000 stock,rate=20000'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; none dropped'
ramp_n = 4
ramp_ser_1 = 'c~stock,rate=5000'
ramp_title_1 = 'c stock,rate=5000'
ramp_faint_1 = ''
ramp_ser_2 = 'c~stock,rate=20000'
ramp_title_2 = 'c stock,rate=20000'
ramp_faint_2 = ''
ramp_ser_3 = 'asyncio-streams~stock,rate=5000'
ramp_title_3 = 'asyncio-streams stock,rate=5000'
ramp_faint_3 = ''
ramp_ser_4 = 'asyncio-streams~stock,rate=20000'
ramp_title_4 = 'asyncio-streams stock,rate=20000'
ramp_faint_4 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '100k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'c~stock,rate=5000 c~stock,rate=20000 asyncio-streams~stock,rate=5000 asyncio-streams~stock,rate=20000'
