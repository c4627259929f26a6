contenders = 'c~stall=0.1-sndbuf0'
disturbed = ''
conditions = 'stall=0.1-sndbuf0'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; 1 of 2 runs dropped (oom-guard 1)'
ramp_runs = 'c~stall=0.1-sndbuf0'
big_label = '1800'
logx = 0
has_bytes = 1
