# push_latency.gp - push delivery latency p99 vs tier (the client's clock at
# receipt minus the server's stamp; median of the ok runs, min-max bars).
load gpdir.'/common.gp'
load data.'/push_vars.gp'
pfx = 'push_latency'
ser = lat_series
ttl = "Server push: delivery latency p99 (server stamp to client receipt)\nmedian of the ok runs, bars: min-max"
set ylabel 'milliseconds'
load gpdir.'/push_tiers.gp'
