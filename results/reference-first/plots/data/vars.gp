contenders = 'c pyext asyncio-protocol asyncio-streams uvloop'
ramp_runs = 'c pyext asyncio-protocol asyncio-streams uvloop'
big_label = '1m'
logx = 0
has_bytes = 1
