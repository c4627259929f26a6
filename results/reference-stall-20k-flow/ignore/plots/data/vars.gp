contenders = ''
disturbed = ''
conditions = 'stall=0.5'
dagger = '†'
bars = ''
dropped_note = 'ok runs only; 4 of 4 runs dropped (oom-guard 4)'
ramp_runs = 'pyext~stall=0.5:oom-guard uvloop~stall=0.5:oom-guard asyncio-protocol~stall=0.5:oom-guard asyncio-streams~stall=0.5:oom-guard'
big_label = '20k'
logx = 0
has_bytes = 0
