bc_series = ''
lat_series = ''
stall_label = '5k'
