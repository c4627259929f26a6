tier_tics = '("100k" 100000)'
tier_lo = 100000
tier_hi = 100000
logy_t = 0
base_t = 0
logy_rss = 0
base_rss = 0
logy_cpu = 1
base_cpu = 1
single_width = 27
single_series = 'pyext~gc=default pyext pyext~gc=off uvloop~gc=default uvloop uvloop~gc=off asyncio-protocol~gc=default asyncio-protocol asyncio-protocol~gc=off asyncio-streams~gc=default asyncio-streams asyncio-streams~gc=off'
contenders = 'pyext~gc=default pyext pyext~gc=off uvloop~gc=default uvloop uvloop~gc=off asyncio-protocol~gc=default asyncio-protocol asyncio-protocol~gc=off asyncio-streams~gc=default asyncio-streams asyncio-streams~gc=off'
disturbed = ''
conditions = 'gc=default gc=off'
dagger = '†'
bars = 'median of 3 runs, bars: min-max of the runs (= their bootstrap 95% interval)'
dropped_note = 'ok runs only; none dropped'
ramp_n = 12
ramp_ser_1 = 'pyext~gc=default'
ramp_title_1 = 'pyext gc=default'
ramp_faint_1 = 'ramp-pyext~gc=default-r2.dat ramp-pyext~gc=default-r3.dat'
ramp_ser_2 = 'pyext'
ramp_title_2 = 'pyext'
ramp_faint_2 = 'ramp-pyext-r1.dat ramp-pyext-r2.dat'
ramp_ser_3 = 'pyext~gc=off'
ramp_title_3 = 'pyext gc=off'
ramp_faint_3 = 'ramp-pyext~gc=off-r1.dat ramp-pyext~gc=off-r2.dat'
ramp_ser_4 = 'uvloop~gc=default'
ramp_title_4 = 'uvloop gc=default'
ramp_faint_4 = 'ramp-uvloop~gc=default-r1.dat ramp-uvloop~gc=default-r3.dat'
ramp_ser_5 = 'uvloop'
ramp_title_5 = 'uvloop'
ramp_faint_5 = 'ramp-uvloop-r1.dat ramp-uvloop-r3.dat'
ramp_ser_6 = 'uvloop~gc=off'
ramp_title_6 = 'uvloop gc=off'
ramp_faint_6 = 'ramp-uvloop~gc=off-r1.dat ramp-uvloop~gc=off-r3.dat'
ramp_ser_7 = 'asyncio-protocol~gc=default'
ramp_title_7 = 'asyncio-protocol gc=default'
ramp_faint_7 = 'ramp-asyncio-protocol~gc=default-r1.dat ramp-asyncio-protocol~gc=default-r2.dat'
ramp_ser_8 = 'asyncio-protocol'
ramp_title_8 = 'asyncio-protocol'
ramp_faint_8 = 'ramp-asyncio-protocol-r1.dat ramp-asyncio-protocol-r3.dat'
ramp_ser_9 = 'asyncio-protocol~gc=off'
ramp_title_9 = 'asyncio-protocol gc=off'
ramp_faint_9 = 'ramp-asyncio-protocol~gc=off-r1.dat ramp-asyncio-protocol~gc=off-r3.dat'
ramp_ser_10 = 'asyncio-streams~gc=default'
ramp_title_10 = 'asyncio-streams gc=default'
ramp_faint_10 = 'ramp-asyncio-streams~gc=default-r1.dat ramp-asyncio-streams~gc=default-r2.dat'
ramp_ser_11 = 'asyncio-streams'
ramp_title_11 = 'asyncio-streams'
ramp_faint_11 = 'ramp-asyncio-streams-r1.dat ramp-asyncio-streams-r2.dat'
ramp_ser_12 = 'asyncio-streams~gc=off'
ramp_title_12 = 'asyncio-streams gc=off'
ramp_faint_12 = 'ramp-asyncio-streams~gc=off-r1.dat ramp-asyncio-streams~gc=off-r3.dat'
ramp_xmax = 0
ramp_others = 1
big_label = '100k'
logx = 0
ntiers = 1
has_bytes = 1
bytes_series = 'pyext~gc=default pyext pyext~gc=off uvloop~gc=default uvloop uvloop~gc=off asyncio-protocol~gc=default asyncio-protocol asyncio-protocol~gc=off asyncio-streams~gc=default asyncio-streams asyncio-streams~gc=off'
