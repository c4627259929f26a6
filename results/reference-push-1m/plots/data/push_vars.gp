bc_series = 'c pyext uvloop asyncio-protocol asyncio-streams'
lat_series = 'c pyext uvloop asyncio-protocol asyncio-streams'
