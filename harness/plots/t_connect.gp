# t_connect.gp - time to connect vs tier: median with error bars (tiers.gp).
load gpdir.'/common.gp'
ttl = 'Time to connect: client start until the server counts all N open'
set ylabel 'seconds'
col = 2
load gpdir.'/tiers.gp'
