/* push_watch.h - the client parent's side of server push and --stall.
 *
 * Two moments the harness must act on at once, so the parent announces them
 * on stderr as they happen (whatever --quiet says), each a line starting
 * "c1m-client: ":
 *   - SIGUSR1 opens the push window (one per run): its start, CLOCK_REALTIME
 *     in microseconds, goes to the workers through the shared control block;
 *     "push window open from USEC" is printed once it is there, and
 *     "push window reached all N reading connections, last at USEC" once
 *     every connection that reads (open and not stalled) got a line sent in
 *     the window (push_rx.h): a broadcast sent after the first line has then
 *     reached everyone.
 *   - --stall FRACTION: at the start of the hold, or on SIGUSR2 with
 *     --stall-on-signal, the workers stall that fraction of their
 *     connections; "stalled N connections at USEC" once every worker did.
 */
#ifndef C1M_CLIENT_PUSH_WATCH_H
#define C1M_CLIENT_PUSH_WATCH_H

#include "loop.h"
#include "options.h"
#include "progress.h"
#include "shared.h"

struct c1m_push_watch {
    const struct c1m_opts *o;
    struct c1m_shared *sh;
    int nworkers;
    struct c1m_progress *prog;
    int window_done;  /* "reached all" printed */
    int stall_done;   /* "stalled" printed */
};

/* Take SIGUSR1 (and SIGUSR2) through the parent's loop. 0, or -1 with errno. */
int c1m_push_watch_init(struct c1m_push_watch *pw, c1m_loop *loop, const struct c1m_opts *o,
                        struct c1m_shared *sh, int nworkers, struct c1m_progress *prog);
/* From the parent's tick: start the stall at the hold, print what happened. */
void c1m_push_watch_tick(struct c1m_push_watch *pw, int phase);

#endif
