prof_tier = '300k'
prof_contenders = 'uvloop asyncio-protocol asyncio-streams'
prof_log = 1
prof_cols = '2 4 5 6'
abl_contenders = 'uvloop asyncio-protocol asyncio-streams'
abl_tier = '300k'
