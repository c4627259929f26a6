rate_series = 'c~stock asyncio-streams~stock'
rate_tier = '100k'
rate_log = 0
