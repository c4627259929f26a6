# storm_policies.gp - per tier and kernel profile, the client's policies
# against each other: now (solid) vs backoff (dashed), one colour per
# contender (harness/lib/report_storm.py; panels: storm_panels.gp).
load gpdir.'/common.gp'
pfx = 'sp'
load gpdir.'/storm_panels.gp'
