"""c1m's Python contenders: `python3 -m py_server --loop asyncio|uvloop|c1m --api streams|protocol`.

Modules: cli (flags), workers (parent: fork, supervise), worker (one worker's
loop, cap and counters), loops (asyncio / uvloop / c1m backends), protocol (the
one Protocol class and the line rules), streams (seed 000's handler), stats
(the counters file, byte-compatible with c_server/lib/stats.h).
"""
