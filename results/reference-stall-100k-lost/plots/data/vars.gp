contenders = 'c~file=stall-peer-rmem32k,stall=0.01 c~file=stall-peer-rmem32k,stall=0.1 pyext~file=stall-peer-rmem32k,stall=0.01 pyext~file=stall-peer-rmem32k,stall=0.1 uvloop~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.1 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.1 asyncio-streams~file=stall-peer-rmem32k,stall=0.01 asyncio-streams~file=stall-peer-rmem32k,stall=0.1'
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01 file=stall-peer-rmem32k,stall=0.1'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'c~file=stall-peer-rmem32k,stall=0.01 c~file=stall-peer-rmem32k,stall=0.1 pyext~file=stall-peer-rmem32k,stall=0.01 pyext~file=stall-peer-rmem32k,stall=0.1 uvloop~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.1 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.1 asyncio-streams~file=stall-peer-rmem32k,stall=0.01 asyncio-streams~file=stall-peer-rmem32k,stall=0.1'
big_label = '100k'
logx = 0
has_bytes = 1
