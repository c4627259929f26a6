contenders = 'c~stall=0.01 c~stall=0.01-sndbuf0 c~stall=0.1 c~stall=0.1-sndbuf0 pyext~stall=0.01 pyext~stall=0.01-sndbuf0 pyext~stall=0.1 pyext~stall=0.1-sndbuf0 uvloop~stall=0.01 uvloop~stall=0.01-sndbuf0 uvloop~stall=0.1 uvloop~stall=0.1-sndbuf0 asyncio-protocol~stall=0.01 asyncio-protocol~stall=0.01-sndbuf0 asyncio-protocol~stall=0.1 asyncio-protocol~stall=0.1-sndbuf0 asyncio-streams~stall=0.01 asyncio-streams~stall=0.01-sndbuf0 asyncio-streams~stall=0.1 asyncio-streams~stall=0.1-sndbuf0'
disturbed = ''
conditions = 'stall=0.01 stall=0.01-sndbuf0 stall=0.1 stall=0.1-sndbuf0'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'c~stall=0.01 c~stall=0.01-sndbuf0 c~stall=0.1 c~stall=0.1-sndbuf0 pyext~stall=0.01 pyext~stall=0.01-sndbuf0 pyext~stall=0.1 pyext~stall=0.1-sndbuf0 uvloop~stall=0.01 uvloop~stall=0.01-sndbuf0 uvloop~stall=0.1 uvloop~stall=0.1-sndbuf0 asyncio-protocol~stall=0.01 asyncio-protocol~stall=0.01-sndbuf0 asyncio-protocol~stall=0.1 asyncio-protocol~stall=0.1-sndbuf0 asyncio-streams~stall=0.01 asyncio-streams~stall=0.01-sndbuf0 asyncio-streams~stall=0.1 asyncio-streams~stall=0.1-sndbuf0'
big_label = '20k'
logx = 0
has_bytes = 1
