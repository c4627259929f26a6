# t_connect.gp - time to connect vs tier: median with error bars (tiers.gp).
load gpdir.'/common.gp'
ttl = 'Time to connect: client start until the server counts all N open'
yl = 'seconds'
col = 2
logy = logy_t; base = base_t
load gpdir.'/tiers.gp'
