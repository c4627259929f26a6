bc_series = 'c'
lat_series = 'c'
