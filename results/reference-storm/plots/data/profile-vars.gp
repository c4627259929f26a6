prof_tier = '100k (now)'
prof_contenders = 'c pyext asyncio-protocol asyncio-streams uvloop'
prof_log = 1
prof_cols = '2 4'
