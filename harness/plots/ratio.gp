# ratio.gp - time to connect and server CPU per connection as a ratio to the
# floor (c1m-floor: accept, epoll, hold) at the same tier and condition, two
# panels (tiers.gp; columns 12 and 15 of tiers-*.dat: the ratio of the
# medians and its bootstrap 95% interval). Drawn only when the run measured
# the floor.
th = 900
load gpdir.'/common.gp'
refline = 1
# ratios on a log axis over tiers (0.9 and 17 both readable); bars from 0 at one tier
logy = ntiers > 1; base = 0
bars = 'ratio of the medians to the floor at the same tier, bars: bootstrap 95% interval of the ratio'
set multiplot layout 2, 1
ttl = 'Time to connect / the floor'
yl = 'ratio to the floor'
col = 12
load gpdir.'/tiers.gp'
ttl = 'Server CPU per connection / the floor'
col = 15
load gpdir.'/tiers.gp'
unset multiplot
