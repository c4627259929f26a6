tier_tics = '("100k" 100000)'
tier_lo = 100000
tier_hi = 100000
logy_t = 0
base_t = 0
logy_rss = 1
base_rss = 1
logy_cpu = 0
base_cpu = 0
single_width = 51
single_series = 'c~file=stall-peer-rmem32k,stall=0.01 c~file=stall-peer-rmem32k,stall=0.1 pyext~file=stall-peer-rmem32k,stall=0.01 pyext~file=stall-peer-rmem32k,stall=0.1 uvloop~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.1 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.1 asyncio-streams~file=stall-peer-rmem32k,stall=0.01 asyncio-streams~file=stall-peer-rmem32k,stall=0.1'
contenders = 'c~file=stall-peer-rmem32k,stall=0.01 c~file=stall-peer-rmem32k,stall=0.1 pyext~file=stall-peer-rmem32k,stall=0.01 pyext~file=stall-peer-rmem32k,stall=0.1 uvloop~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.1 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.1 asyncio-streams~file=stall-peer-rmem32k,stall=0.01 asyncio-streams~file=stall-peer-rmem32k,stall=0.1'
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01 file=stall-peer-rmem32k,stall=0.1'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; none dropped'
ramp_n = 10
ramp_ser_1 = 'c~file=stall-peer-rmem32k,stall=0.01'
ramp_title_1 = 'c file=stall-peer-rmem32k,stall=0.01'
ramp_faint_1 = ''
ramp_ser_2 = 'c~file=stall-peer-rmem32k,stall=0.1'
ramp_title_2 = 'c file=stall-peer-rmem32k,stall=0.1'
ramp_faint_2 = ''
ramp_ser_3 = 'pyext~file=stall-peer-rmem32k,stall=0.01'
ramp_title_3 = 'pyext file=stall-peer-rmem32k,stall=0.01'
ramp_faint_3 = ''
ramp_ser_4 = 'pyext~file=stall-peer-rmem32k,stall=0.1'
ramp_title_4 = 'pyext file=stall-peer-rmem32k,stall=0.1'
ramp_faint_4 = ''
ramp_ser_5 = 'uvloop~file=stall-peer-rmem32k,stall=0.01'
ramp_title_5 = 'uvloop file=stall-peer-rmem32k,stall=0.01'
ramp_faint_5 = ''
ramp_ser_6 = 'uvloop~file=stall-peer-rmem32k,stall=0.1'
ramp_title_6 = 'uvloop file=stall-peer-rmem32k,stall=0.1'
ramp_faint_6 = ''
ramp_ser_7 = 'asyncio-protocol~file=stall-peer-rmem32k,stall=0.01'
ramp_title_7 = 'asyncio-protocol file=stall-peer-rmem32k,stall=0.01'
ramp_faint_7 = ''
ramp_ser_8 = 'asyncio-protocol~file=stall-peer-rmem32k,stall=0.1'
ramp_title_8 = 'asyncio-protocol file=stall-peer-rmem32k,stall=0.1'
ramp_faint_8 = ''
ramp_ser_9 = 'asyncio-streams~file=stall-peer-rmem32k,stall=0.01'
ramp_title_9 = 'asyncio-streams file=stall-peer-rmem32k,stall=0.01'
ramp_faint_9 = ''
ramp_ser_10 = 'asyncio-streams~file=stall-peer-rmem32k,stall=0.1'
ramp_title_10 = 'asyncio-streams file=stall-peer-rmem32k,stall=0.1'
ramp_faint_10 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '100k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'c~file=stall-peer-rmem32k,stall=0.01 c~file=stall-peer-rmem32k,stall=0.1 pyext~file=stall-peer-rmem32k,stall=0.01 pyext~file=stall-peer-rmem32k,stall=0.1 uvloop~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.1 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.1 asyncio-streams~file=stall-peer-rmem32k,stall=0.01 asyncio-streams~file=stall-peer-rmem32k,stall=0.1'
