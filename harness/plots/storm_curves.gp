# storm_curves.gp - per tier and condition, the server's open connections
# through the kill of every server process and the recovery, one line per
# contender (harness/lib/report_storm.py; panels: storm_panels.gp).
load gpdir.'/common.gp'
pfx = 'sc'
load gpdir.'/storm_panels.gp'
