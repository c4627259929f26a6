/* net.c - see net.h. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int c1m_nofile_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30))
        return 1 << 20;
    return (int)rl.rlim_cur;
}

int c1m_resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0)
        return rc;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int c1m_listen_tcp(const char *host, int port, int backlog, int reuse_port)
{
    return c1m_listen_tcp_opts(host, port, backlog, reuse_port, NULL);
}

static int set_accept_opts(int fd, const struct c1m_accept_opts *o)
{
    if (!o)
        return 0;
    if (c1m_set_bufs(fd, o->sndbuf, o->rcvbuf) < 0)
        return -1;
    int one = 1;
    if (o->nodelay && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
        return -1;
    return 0;
}

int c1m_listen_tcp_opts(const char *host, int port, int backlog, int reuse_port,
                        const struct c1m_accept_opts *opts)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int rc = c1m_resolve(host, port, &ss, &len);
    if (rc != 0) {
        errno = (rc == EAI_SYSTEM) ? errno : EADDRNOTAVAIL;
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
        set_accept_opts(fd, opts) < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 ||
        listen(fd, backlog) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int c1m_set_bufs(int fd, int sndbuf, int rcvbuf)
{
    if (sndbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
        return -1;
    if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
        return -1;
    return 0;
}

const char *c1m_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
        snprintf(buf, len, "%s:%d", ip, ntohs(s4->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
        snprintf(buf, len, "[%s]:%d", ip, ntohs(s6->sin6_port));
    } else {
        snprintf(buf, len, "?");
    }
    return buf;
}

const char *c1m_errno_name(int err)
{
    switch (err) {
#define N(e) case e: return #e
    N(EADDRNOTAVAIL); N(EADDRINUSE); N(ECONNREFUSED); N(ETIMEDOUT); N(ECONNRESET);
    N(ECONNABORTED); N(EMFILE); N(ENFILE); N(ENOBUFS); N(ENOMEM); N(EHOSTUNREACH);
    N(ENETUNREACH); N(EPIPE); N(EAGAIN); N(EINTR); N(EINVAL); N(EACCES); N(EPERM);
    N(ENOSPC); N(EBADF); N(EPROTO); N(EINPROGRESS); N(EALREADY); N(EISCONN);
#undef N
    default: {
        /* Unknown values are rare; a small ring keeps the returned strings
         * valid for a few calls without allocating. */
        static _Thread_local char ring[4][16];
        static _Thread_local unsigned idx;
        char *b = ring[idx++ % 4];
        snprintf(b, sizeof(ring[0]), "E%d", err);
        return b;
    }
    }
}
