bc_series = ''
lat_series = ''
