contenders = 'c~file=stall-peer-rmem4k,stall=0.1 pyext~file=stall-peer-rmem4k,stall=0.1 uvloop~file=stall-peer-rmem4k,stall=0.1'
disturbed = ''
conditions = 'file=stall-peer-rmem4k,stall=0.1'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; 2 of 5 runs dropped (push-behind 1, server-died 1)'
ramp_runs = 'c~file=stall-peer-rmem4k,stall=0.1 pyext~file=stall-peer-rmem4k,stall=0.1 uvloop~file=stall-peer-rmem4k,stall=0.1 asyncio-protocol~file=stall-peer-rmem4k,stall=0.1:push-behind asyncio-streams~file=stall-peer-rmem4k,stall=0.1:server-died'
big_label = '1m'
logx = 0
has_bytes = 1
