contenders = 'c~stock,rate=5000 c~stock,rate=20000 asyncio-streams~stock,rate=5000 asyncio-streams~stock,rate=20000'
disturbed = ''
conditions = 'stock,rate=5000 stock,rate=20000'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'c~stock,rate=5000 c~stock,rate=20000 asyncio-streams~stock,rate=5000 asyncio-streams~stock,rate=20000'
big_label = '100k'
logx = 0
has_bytes = 1
