/* net.h - socket and process-limit helpers shared by the server, the client and
 * the extension. All return -1 with errno set on failure unless noted. */
#ifndef C1M_NET_H
#define C1M_NET_H

#include <stddef.h>
#include <sys/socket.h>

/* Soft RLIMIT_NOFILE of this process (what it can actually open). */
int c1m_nofile_limit(void);
/* fds a process keeps for itself besides its connections (epoll, signalfd,
 * listener, stdio, slack): a worker's connections are at most
 * RLIMIT_NOFILE - C1M_FD_RESERVE. The one C figure (the servers' and the
 * client's --worker-conns); py_server/cli_rules.py FD_RESERVE is Python's
 * (tests/py/test_cli_rules.py checks they agree). */
#define C1M_FD_RESERVE 64

/* Resolve host:port (numeric IPv4/IPv6 or a name) into *ss. Returns 0, or a
 * getaddrinfo error code (use gai_strerror); never -1. */
int c1m_resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len);

/* A non-blocking, close-on-exec TCP listener on host:port, SO_REUSEADDR and
 * (when reuse_port) SO_REUSEPORT, listening with `backlog`. A host that does
 * not resolve fails with EADDRNOTAVAIL (EAI_SYSTEM: its errno): callers that
 * report it resolve first with c1m_resolve, whose gai_strerror says why. */
int c1m_listen_tcp(const char *host, int port, int backlog, int reuse_port);

/* Options an accepted TCP socket inherits from its listening socket (Linux
 * copies them into every connection it creates on it): set once on the
 * listener instead of once per accepted connection, which saves a setsockopt
 * per option per accept. 0 leaves an option at the kernel default. */
struct c1m_accept_opts {
    int sndbuf;   /* SO_SNDBUF when > 0 */
    int rcvbuf;   /* SO_RCVBUF when > 0 */
    int nodelay;  /* TCP_NODELAY when != 0 */
};
/* c1m_listen_tcp with opts (NULL: none) set before listen(), so the first
 * connection queued already inherits them. */
int c1m_listen_tcp_opts(const char *host, int port, int backlog, int reuse_port,
                        const struct c1m_accept_opts *opts);

/* Set SO_SNDBUF / SO_RCVBUF when the value is > 0 (0 keeps kernel defaults). */
int c1m_set_bufs(int fd, int sndbuf, int rcvbuf);

/* Format a sockaddr as "ip:port" / "[ip6]:port" into buf. Returns buf. */
const char *c1m_addr_str(const struct sockaddr *sa, char *buf, size_t len);

/* Name of an errno value ("ECONNREFUSED"), or "E<number>" for unknown ones. */
const char *c1m_errno_name(int err);

#endif
