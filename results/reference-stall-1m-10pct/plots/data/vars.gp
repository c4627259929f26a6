tier_tics = '("1m" 1000000)'
tier_lo = 1000000
tier_hi = 1000000
logy_t = 0
base_t = 0
logy_rss = 1
base_rss = 10
logy_cpu = 0
base_cpu = 0
single_width = 49
single_series = 'c~file=stall-peer-rmem4k,stall=0.1 pyext~file=stall-peer-rmem4k,stall=0.1 uvloop~file=stall-peer-rmem4k,stall=0.1 asyncio-protocol~file=stall-peer-rmem4k,stall=0.1 asyncio-streams~file=stall-peer-rmem4k,stall=0.1'
contenders = 'c~file=stall-peer-rmem4k,stall=0.1 pyext~file=stall-peer-rmem4k,stall=0.1 uvloop~file=stall-peer-rmem4k,stall=0.1'
disturbed = ''
conditions = 'file=stall-peer-rmem4k,stall=0.1'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; 2 of 5 runs dropped (push-behind 1, server-died 1)'
ramp_n = 5
ramp_ser_1 = 'c~file=stall-peer-rmem4k,stall=0.1'
ramp_title_1 = 'c file=stall-peer-rmem4k,stall=0.1'
ramp_faint_1 = ''
ramp_ser_2 = 'pyext~file=stall-peer-rmem4k,stall=0.1'
ramp_title_2 = 'pyext file=stall-peer-rmem4k,stall=0.1'
ramp_faint_2 = ''
ramp_ser_3 = 'uvloop~file=stall-peer-rmem4k,stall=0.1'
ramp_title_3 = 'uvloop file=stall-peer-rmem4k,stall=0.1'
ramp_faint_3 = ''
ramp_ser_4 = 'asyncio-protocol~file=stall-peer-rmem4k,stall=0.1'
ramp_title_4 = 'asyncio-protocol file=stall-peer-rmem4k,stall=0.1 (1 push-behind; runs to 168 s)'
ramp_faint_4 = ''
ramp_ser_5 = 'asyncio-streams~file=stall-peer-rmem4k,stall=0.1'
ramp_title_5 = 'asyncio-streams file=stall-peer-rmem4k,stall=0.1 (1 server-died; runs to 169 s)'
ramp_faint_5 = ''
ramp_xmax = 101.172
ramp_others = 0
big_label = '1m'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'c~file=stall-peer-rmem4k,stall=0.1 pyext~file=stall-peer-rmem4k,stall=0.1 uvloop~file=stall-peer-rmem4k,stall=0.1'
