contenders = 'uvloop~tuned-net.core.somaxconn,rate=15000 uvloop~tuned-net.core.somaxconn,rate=30000 uvloop~tuned-net.core.somaxconn,rate=40000 asyncio-protocol~tuned-net.core.somaxconn,rate=15000 asyncio-protocol~tuned-net.core.somaxconn,rate=30000 asyncio-protocol~tuned-net.core.somaxconn,rate=40000 asyncio-streams~tuned-net.core.somaxconn,rate=15000 asyncio-streams~tuned-net.core.somaxconn,rate=30000 asyncio-streams~tuned-net.core.somaxconn,rate=40000'
disturbed = ''
conditions = 'tuned-net.core.somaxconn,rate=15000 tuned-net.core.somaxconn,rate=30000 tuned-net.core.somaxconn,rate=40000'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'uvloop~tuned-net.core.somaxconn,rate=15000 uvloop~tuned-net.core.somaxconn,rate=30000 uvloop~tuned-net.core.somaxconn,rate=40000 asyncio-protocol~tuned-net.core.somaxconn,rate=15000 asyncio-protocol~tuned-net.core.somaxconn,rate=30000 asyncio-protocol~tuned-net.core.somaxconn,rate=40000 asyncio-streams~tuned-net.core.somaxconn,rate=15000 asyncio-streams~tuned-net.core.somaxconn,rate=30000 asyncio-streams~tuned-net.core.somaxconn,rate=40000'
big_label = '100k'
logx = 0
has_bytes = 1
