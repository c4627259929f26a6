tier_tics = '("1m" 1000000)'
tier_lo = 1000000
tier_hi = 1000000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 52
single_series = 'pyext~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01'
contenders = 'pyext~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.01'
disturbed = 'asyncio-protocol~file=stall-peer-rmem32k,stall=0.01'
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; 1 of 3 runs dropped (disturbed 1); † all runs disturbed'
ramp_n = 3
ramp_ser_1 = 'pyext~file=stall-peer-rmem32k,stall=0.01'
ramp_title_1 = 'pyext file=stall-peer-rmem32k,stall=0.01'
ramp_faint_1 = ''
ramp_ser_2 = 'uvloop~file=stall-peer-rmem32k,stall=0.01'
ramp_title_2 = 'uvloop file=stall-peer-rmem32k,stall=0.01'
ramp_faint_2 = ''
ramp_ser_3 = 'asyncio-protocol~file=stall-peer-rmem32k,stall=0.01'
ramp_title_3 = 'asyncio-protocol file=stall-peer-rmem32k,stall=0.01 (1 disturbed)'
ramp_faint_3 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '1m'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'pyext~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01'
