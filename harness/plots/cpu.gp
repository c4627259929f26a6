# cpu.gp - server CPU seconds (user+sys, all processes) spent while connecting.
load gpdir.'/common.gp'
ttl = 'Server CPU during the connect phase (user+sys, all processes)'
set ylabel 'CPU seconds'
col = 8
load gpdir.'/tiers.gp'
