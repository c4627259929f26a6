bc_series = 'c pyext uvloop asyncio-protocol'
lat_series = 'c pyext uvloop asyncio-protocol'
