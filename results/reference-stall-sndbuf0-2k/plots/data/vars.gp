contenders = 'c~stall=0.2-sndbuf0 pyext~stall=0.2-sndbuf0'
disturbed = ''
conditions = 'stall=0.2-sndbuf0'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'c~stall=0.2-sndbuf0 pyext~stall=0.2-sndbuf0'
big_label = '2k'
logx = 0
has_bytes = 1
