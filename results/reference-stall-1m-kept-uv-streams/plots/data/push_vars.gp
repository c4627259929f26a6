bc_series = ''
lat_series = ''
stall_label = '1m'
