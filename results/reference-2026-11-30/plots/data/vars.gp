contenders = 'c pyext asyncio-protocol asyncio-streams uvloop'
disturbed = ''
dagger = '†'
bars = 'median, bars: bootstrap 95% interval (>= 3 runs) or min-max'
dropped_note = 'ok runs only; 1 of 30 runs dropped (disturbed 1)'
ramp_runs = 'c pyext asyncio-protocol asyncio-streams uvloop'
big_label = '1m'
logx = 0
has_bytes = 1
