prof_tier = '100k'
prof_contenders = 'c asyncio-streams'
prof_log = 1
prof_cols = '2 4'
abl_contenders = 'c asyncio-streams'
abl_tier = '100k'
