prof_tier = '100k'
prof_contenders = 'pyext uvloop asyncio-protocol asyncio-streams'
prof_log = 0
prof_cols = '2 3 4 5 6'
