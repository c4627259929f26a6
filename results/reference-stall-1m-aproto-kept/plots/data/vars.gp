contenders = ''
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = ''
dropped_note = 'ok runs only; 1 of 1 runs dropped (push-behind 1)'
ramp_runs = 'asyncio-protocol~file=stall-peer-rmem32k,stall=0.01:push-behind'
big_label = '1m'
logx = 0
has_bytes = 0
