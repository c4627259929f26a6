bc_series = 'c pyext asyncio-protocol asyncio-streams uvloop'
lat_series = 'c pyext asyncio-protocol asyncio-streams uvloop'
