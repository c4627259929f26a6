tier_tics = '("100k" 100000)'
tier_lo = 100000
tier_hi = 100000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 0
base_cpu = 0
single_width = 52
single_series = 'uvloop~tuned-net.core.somaxconn,rate=15000 uvloop~tuned-net.core.somaxconn,rate=30000 uvloop~tuned-net.core.somaxconn,rate=40000 asyncio-protocol~tuned-net.core.somaxconn,rate=15000 asyncio-protocol~tuned-net.core.somaxconn,rate=30000 asyncio-protocol~tuned-net.core.somaxconn,rate=40000 asyncio-streams~tuned-net.core.somaxconn,rate=15000 asyncio-streams~tuned-net.core.somaxconn,rate=30000 asyncio-streams~tuned-net.core.somaxconn,rate=40000'
contenders = 'uvloop~tuned-net.core.somaxconn,rate=15000 uvloop~tuned-net.core.somaxconn,rate=30000 uvloop~tuned-net.core.somaxconn,rate=40000 asyncio-protocol~tuned-net.core.somaxconn,rate=15000 asyncio-protocol~tuned-net.core.somaxconn,rate=30000 asyncio-protocol~tuned-net.core.somaxconn,rate=40000 asyncio-streams~tuned-net.core.somaxconn,rate=15000 asyncio-streams~tuned-net.core.somaxconn,rate=30000 asyncio-streams~tuned-net.core.somaxconn,rate=40000'
disturbed = ''
conditions = 'tuned-net.core.somaxconn,rate=15000 tuned-net.core.somaxconn,rate=30000 tuned-net.core.somaxconn,rate=40000'
dagger = '†'
bars = 'median of 1 run'
dropped_note = 'ok runs only; none dropped'
ramp_n = 9
ramp_ser_1 = 'uvloop~tuned-net.core.somaxconn,rate=15000'
ramp_title_1 = 'uvloop tuned-net.core.somaxconn,rate=15000'
ramp_faint_1 = ''
ramp_ser_2 = 'uvloop~tuned-net.core.somaxconn,rate=30000'
ramp_title_2 = 'uvloop tuned-net.core.somaxconn,rate=30000'
ramp_faint_2 = ''
ramp_ser_3 = 'uvloop~tuned-net.core.somaxconn,rate=40000'
ramp_title_3 = 'uvloop tuned-net.core.somaxconn,rate=40000'
ramp_faint_3 = ''
ramp_ser_4 = 'asyncio-protocol~tuned-net.core.somaxconn,rate=15000'
ramp_title_4 = 'asyncio-protocol tuned-net.core.somaxconn,rate=15000'
ramp_faint_4 = ''
ramp_ser_5 = 'asyncio-protocol~tuned-net.core.somaxconn,rate=30000'
ramp_title_5 = 'asyncio-protocol tuned-net.core.somaxconn,rate=30000'
ramp_faint_5 = ''
ramp_ser_6 = 'asyncio-protocol~tuned-net.core.somaxconn,rate=40000'
ramp_title_6 = 'asyncio-protocol tuned-net.core.somaxconn,rate=40000'
ramp_faint_6 = ''
ramp_ser_7 = 'asyncio-streams~tuned-net.core.somaxconn,rate=15000'
ramp_title_7 = 'asyncio-streams tuned-net.core.somaxconn,rate=15000'
ramp_faint_7 = ''
ramp_ser_8 = 'asyncio-streams~tuned-net.core.somaxconn,rate=30000'
ramp_title_8 = 'asyncio-streams tuned-net.core.somaxconn,rate=30000'
ramp_faint_8 = ''
ramp_ser_9 = 'asyncio-streams~tuned-net.core.somaxconn,rate=40000'
ramp_title_9 = 'asyncio-streams tuned-net.core.somaxconn,rate=40000'
ramp_faint_9 = ''
ramp_xmax = 0
ramp_others = 0
big_label = '100k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'uvloop~tuned-net.core.somaxconn,rate=15000 uvloop~tuned-net.core.somaxconn,rate=30000 uvloop~tuned-net.core.somaxconn,rate=40000 asyncio-protocol~tuned-net.core.somaxconn,rate=15000 asyncio-protocol~tuned-net.core.somaxconn,rate=30000 asyncio-protocol~tuned-net.core.somaxconn,rate=40000 asyncio-streams~tuned-net.core.somaxconn,rate=15000 asyncio-streams~tuned-net.core.somaxconn,rate=30000 asyncio-streams~tuned-net.core.somaxconn,rate=40000'
