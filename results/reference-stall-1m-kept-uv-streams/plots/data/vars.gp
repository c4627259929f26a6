contenders = 'uvloop~file=stall-peer-rmem32k,stall=0.01'
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; 1 of 2 runs dropped (push-behind 1)'
ramp_runs = 'uvloop~file=stall-peer-rmem32k,stall=0.01 asyncio-streams~file=stall-peer-rmem32k,stall=0.01:push-behind'
big_label = '1m'
logx = 0
has_bytes = 1
