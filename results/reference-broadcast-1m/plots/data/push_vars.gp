bc_series = 'floor c pyext'
lat_series = 'floor c pyext'
