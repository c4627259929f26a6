tier_tics = '("1m" 1000000)'
tier_lo = 1000000
tier_hi = 1000000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 50
single_series = 'asyncio-streams~file=stall-peer-rmem32k,stall=0.01'
contenders = ''
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = ''
dropped_note = 'ok runs only; 1 of 1 runs dropped (suspect 1)'
ramp_n = 1
ramp_ser_1 = 'asyncio-streams~file=stall-peer-rmem32k,stall=0.01'
ramp_title_1 = 'asyncio-streams file=stall-peer-rmem32k,stall=0.01 (1 suspect)'
ramp_faint_1 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '1m'
logx = 0
ntiers = 1
has_bytes = 0
bytes_series = ''
