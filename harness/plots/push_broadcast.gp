# push_broadcast.gp - broadcast time vs tier: SIGUSR1 to every server worker
# until the last connection received the line (median, min-max bars).
load gpdir.'/common.gp'
load data.'/push_vars.gp'
pfx = 'push_broadcast'
ser = bc_series
ttl = "Broadcast: one line to every connection, until the last one received it\nmedian of the ok runs, bars: min-max"
set ylabel 'seconds'
load gpdir.'/push_tiers.gp'
