contenders = 'pyext~stall=0.1'
disturbed = ''
conditions = 'stall=0.1'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'pyext~stall=0.1'
big_label = '20k'
logx = 0
has_bytes = 1
