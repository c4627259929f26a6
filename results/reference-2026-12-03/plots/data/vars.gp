contenders = 'floor c pyext uvloop asyncio-protocol asyncio-streams'
disturbed = ''
conditions = ''
dagger = '†'
bars = 'median, bars: bootstrap 95% interval (>= 3 runs) or min-max'
dropped_note = 'ok runs only; 1 of 36 runs dropped (disturbed 1)'
ramp_runs = 'floor c pyext uvloop asyncio-protocol asyncio-streams'
big_label = '1m'
logx = 0
has_bytes = 1
