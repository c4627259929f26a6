contenders = 'c~file=stall-peer-rmem32k,stall=0.01'
disturbed = ''
conditions = 'file=stall-peer-rmem32k,stall=0.01'
dagger = '†'
bars = 'median, bars: min-max of the runs (fewer than 3 per tier)'
dropped_note = 'ok runs only; none dropped'
ramp_runs = 'c~file=stall-peer-rmem32k,stall=0.01'
big_label = '1m'
logx = 0
has_bytes = 1
