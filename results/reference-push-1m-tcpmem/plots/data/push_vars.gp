bc_series = 'c uvloop'
lat_series = 'c uvloop'
