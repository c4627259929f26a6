contenders = 'pyext~stall=0.5 uvloop~stall=0.5 asyncio-protocol~stall=0.5'
disturbed = ''
conditions = 'stall=0.5'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; 1 of 4 runs dropped (push-behind 1)'
ramp_runs = 'pyext~stall=0.5 uvloop~stall=0.5 asyncio-protocol~stall=0.5 asyncio-streams~stall=0.5:push-behind'
big_label = '20k'
logx = 0
has_bytes = 1
