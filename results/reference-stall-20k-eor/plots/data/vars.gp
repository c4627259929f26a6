contenders = 'c~stall=0.1 pyext~stall=0.1 uvloop~stall=0.1 asyncio-protocol~stall=0.1 asyncio-streams~stall=0.1'
disturbed = ''
conditions = 'stall=0.1'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'c~stall=0.1 pyext~stall=0.1 uvloop~stall=0.1 asyncio-protocol~stall=0.1 asyncio-streams~stall=0.1'
big_label = '20k'
logx = 0
has_bytes = 1
