contenders = ''
disturbed = ''
conditions = 'file=profile,stall=0.1'
dagger = '†'
bars = ''
dropped_note = 'ok runs only; 1 of 1 runs dropped (oom-guard 1)'
ramp_runs = 'asyncio-streams~file=profile,stall=0.1:oom-guard'
big_label = '1m'
logx = 0
has_bytes = 0
