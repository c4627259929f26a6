contenders = ''
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = ''
dropped_note = 'ok runs only; 1 of 1 runs dropped (suspect 1)'
ramp_runs = 'asyncio-streams~file=stall-peer-rmem32k,stall=0.01:suspect'
big_label = '1m'
logx = 0
has_bytes = 0
