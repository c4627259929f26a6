rate_series = 'uvloop~tuned-net.core.somaxconn asyncio-protocol~tuned-net.core.somaxconn asyncio-streams~tuned-net.core.somaxconn'
rate_tier = '100k'
rate_log = 1
