contenders = 'pyext~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.01'
disturbed = 'asyncio-protocol~file=stall-peer-rmem32k,stall=0.01'
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; 1 of 3 runs dropped (disturbed 1); † all runs disturbed'
ramp_runs = 'pyext~file=stall-peer-rmem32k,stall=0.01 uvloop~file=stall-peer-rmem32k,stall=0.01 asyncio-protocol~file=stall-peer-rmem32k,stall=0.01:disturbed'
big_label = '1m'
logx = 0
has_bytes = 1
