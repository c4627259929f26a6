contenders = ''
disturbed = ''
conditions = 'rate=5000'
dagger = '†'
bars = ''
dropped_note = 'ok runs only; 1 of 1 runs dropped (oom-guard 1)'
ramp_runs = 'c~rate=5000:oom-guard'
big_label = '151k'
logx = 0
has_bytes = 0
