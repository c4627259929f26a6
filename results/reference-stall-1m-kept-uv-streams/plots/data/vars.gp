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
single_series = 'uvloop~file=stall-peer-rmem32k,stall=0.01 asyncio-streams~file=stall-peer-rmem32k,stall=0.01'
contenders = 'uvloop~file=stall-peer-rmem32k,stall=0.01'
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; 1 of 2 runs dropped (push-behind 1)'
ramp_n = 2
ramp_ser_1 = 'uvloop~file=stall-peer-rmem32k,stall=0.01'
ramp_title_1 = 'uvloop file=stall-peer-rmem32k,stall=0.01'
ramp_faint_1 = ''
ramp_ser_2 = 'asyncio-streams~file=stall-peer-rmem32k,stall=0.01'
ramp_title_2 = 'asyncio-streams file=stall-peer-rmem32k,stall=0.01 (1 push-behind; runs to 165 s)'
ramp_faint_2 = ''
ramp_xmax = 108.732
ramp_others = 0
big_label = '1m'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'uvloop~file=stall-peer-rmem32k,stall=0.01'
