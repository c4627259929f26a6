# cpu.gp - server CPU (user+sys, all processes) in the connect phase per
# accepted connection, microseconds.
load gpdir.'/common.gp'
ttl = 'Server CPU per accepted connection, connect phase (user+sys, all processes)'
yl = 'microseconds per connection'.(logy_cpu ? ' (log scale)' : '')
col = 8
logy = logy_cpu; base = base_cpu
load gpdir.'/tiers.gp'
