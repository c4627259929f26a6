contenders = 'c~stall=0.01 c~stall=0.1 c~stall=1'
disturbed = ''
conditions = 'stall=0.01 stall=0.1 stall=1'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'c~stall=0.01 c~stall=0.1 c~stall=1'
big_label = '5k'
logx = 0
has_bytes = 1
