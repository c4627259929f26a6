# common.gp - terminal, colours and styles shared by every plot.
# plot.sh calls each script with: fmt ('png' or 'svg'), out (path without the
# extension), data (the directory with vars.gp and the .dat files), gpdir
# (this directory).
load data.'/vars.gp'
# a script may set tw, th (the size) before loading this one
tw = exists('tw') ? tw : 960
th = exists('th') ? th : 600
if (fmt eq 'svg') {
    set terminal svg size tw,th dynamic noenhanced font 'Sans,12' background rgb 'white'
} else {
    set terminal pngcairo size tw,th noenhanced font 'Sans,11'
}
set output out.'.'.fmt
set grid
set key top left box opaque Left reverse width 1
set border lw 1
# One colour and point type per contender, the same in every plot: the one
# table (name, colour, point type), in the ladder order of
# harness/lib/contenders.py (tests/py/test_plots.py checks that every
# contender has its own entry). Any other name is black, point type 1.
ctab = 'floor #7f7f7f 4 '.\
       'c #1f77b4 7 '.\
       'io_uring #17becf 12 '.\
       'pyext #ff7f0e 5 '.\
       'libuv #8c564b 8 '.\
       'uvloop #9467bd 9 '.\
       'asyncio-protocol #2ca02c 11 '.\
       'asyncio-streams #d62728 13 '.\
       'gevent #bcbd22 10 '.\
       'threads #e377c2 3'
cidx(c, i) = i > words(ctab) ? 0 : (word(ctab, i) eq c ? i : cidx(c, i + 3))
color(c) = cidx(c, 1) ? word(ctab, cidx(c, 1) + 1) : '#000000'
ptype(c) = cidx(c, 1) ? int(word(ctab, cidx(c, 1) + 2)) : 1
# "name:status" (a ramp that did not finish) -> "name"
base(s) = strstrt(s, ':') ? s[1:strstrt(s, ':') - 1] : s
# A series is "contender" or "contender~condition" (results.py series_of): its
# contender gives the colour, its condition the dash type (1: the default;
# else 1 + its place in `conditions`), and the title reads "contender condition".
who(s) = strstrt(base(s), '~') ? s[1:strstrt(s, '~') - 1] : base(s)
cond(s) = strstrt(base(s), '~') ? base(s)[strstrt(base(s), '~') + 1:] : ''
widx(w, list, i) = i > words(list) ? 0 : (word(list, i) eq w ? i : widx(w, list, i + 1))
cdt(s) = cond(s) eq '' ? 1 : 1 + widx(cond(s), conditions, 1)
stitle(s) = strstrt(s, '~') ? s[1:strstrt(s, '~') - 1].' '.s[strstrt(s, '~') + 1:] : s
# Tier axis: the tiers themselves as tics, log scale when they span 10x or more.
set xlabel 'connections (tier)'
if (logx) { set logscale x }
set offsets graph 0.04, graph 0.04, graph 0.08, 0
