/* listener.h - a TCP listener on the loop that accepts until EAGAIN and backs
 * off instead of failing.
 *
 * Near its fd cap a worker *closes* its listening socket rather than leaving
 * connections to fail or pile up in its accept queue: with SO_REUSEPORT the
 * kernel stops hashing new connections to a closed listener, and with
 * net.ipv4.tcp_migrate_req=1 the ones already queued move to a sibling
 * listener. The listener is re-opened once the count falls below the low-water
 * mark. EMFILE/ENFILE from accept() close it too, with a timed retry, so an
 * exhausted fd table never turns into a busy loop on a readable listener.
 */
#ifndef C1M_LISTENER_H
#define C1M_LISTENER_H

#include <stdint.h>
#include "loop.h"
#include "net.h"

/* Called for every accepted fd (non-blocking, close-on-exec). The callee owns
 * the fd. Return 0 to keep accepting, -1 to stop this round. */
typedef int c1m_accept_fn(void *ud, int fd);
/* Called when the listener closes (paused=1) or re-opens (paused=0). */
typedef void c1m_listen_state_fn(void *ud, int paused);

struct c1m_listener {
    c1m_loop *loop;
    char host[64];
    int port, backlog, reuse_port;
    struct c1m_accept_opts opts; /* set on every listening socket it opens */
    int fd;                 /* -1 while closed */
    int handler;            /* loop handler id */
    long cap;               /* stop accepting at this many open connections */
    long resume_at;         /* re-open below this many (90% of cap) */
    long *open_count;       /* the owner's live count of open connections */
    uint64_t retry_timer;   /* EMFILE back-off timer, 0 if none */
    uint64_t accept_errors; /* accept() failures other than EAGAIN/EINTR */
    int stopped;            /* closed for good by c1m_listener_close */
    c1m_accept_fn *on_accept;
    c1m_listen_state_fn *on_state;
    void *ud;
};

/* Open and start listening. open_count points at the owner's connection count
 * (read before each accept, so the owner must keep it current). cap <= 0 means
 * no cap. Returns 0, or -1 with errno (bind/listen errors). */
int c1m_listener_open(struct c1m_listener *l, c1m_loop *loop, const char *host, int port,
                      int backlog, int reuse_port, long cap, long *open_count,
                      c1m_accept_fn *on_accept, c1m_listen_state_fn *on_state, void *ud);
/* The same, with options the accepted sockets inherit (net.h; NULL: none),
 * set on the listening socket each time it is opened or re-opened. */
int c1m_listener_open_opts(struct c1m_listener *l, c1m_loop *loop, const char *host, int port,
                           int backlog, int reuse_port, const struct c1m_accept_opts *opts,
                           long cap, long *open_count, c1m_accept_fn *on_accept,
                           c1m_listen_state_fn *on_state, void *ud);
/* The open count below which a listener closed at `cap` re-opens: 90% of the
 * cap, one below it for small caps, never 0 (cap <= 0: 0). The one rule, also
 * used by the contenders on other event loops (c_server/libuv, c_server/uring). */
long c1m_listener_resume_at(long cap);
/* Tell the listener a connection closed: re-opens it when below resume_at. */
void c1m_listener_conn_closed(struct c1m_listener *l);
/* Close for good (also cancels a pending retry). */
void c1m_listener_close(struct c1m_listener *l);
/* 1 when closed because of the cap or an fd back-off. */
int c1m_listener_paused(const struct c1m_listener *l);

#endif
