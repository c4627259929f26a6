/* uring_probe.c - does this kernel give c1m-uring what it needs? Tried, not
 * guessed from a version number: a ring of a worker's size (io_uring may be
 * compiled out, disabled by kernel.io_uring_disabled or refused by a seccomp
 * filter; IORING_SETUP_CQSIZE is Linux 5.5), the extended wait argument
 * (5.11), a provided-buffer ring (5.19), one multishot accept on a loopback
 * listening socket (5.19) and one multishot receive on a socket pair (6.0). */
#include "uring_worker.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <liburing.h>

#define PROBE_BUFS 2
#define PROBE_BUF_SIZE 64

static int fail(char *why, size_t len, const char *what, int err, const char *hint)
{
    snprintf(why, len, "%s: %s%s", what, strerror(err), hint);
    return -1;
}

/* Wait up to 2 s for one completion; 0 with *cqe, or -1 with the reason. */
static int wait_one(struct io_uring *ring, struct io_uring_cqe **cqe, const char *what, char *why,
                    size_t len)
{
    struct __kernel_timespec ts = {.tv_sec = 2, .tv_nsec = 0};
    int r = io_uring_submit_and_wait_timeout(ring, cqe, 1, &ts, NULL);
    if (r < 0)
        return fail(why, len, what, -r, r == -ETIME ? " (no completion in 2 s)" : "");
    return 0;
}

/* One multishot accept on a loopback listener (port 0) and one connection to
 * it: 0 if the connection is accepted with F_MORE set. */
static int try_multishot_accept(struct io_uring *ring, char *why, size_t len)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int cfd = -1, rc = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 1) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) < 0) {
        fail(why, len, "probe listener on 127.0.0.1", errno, "");
        goto out;
    }
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, 2);
    /* a loopback connect completes from the listener's backlog */
    if ((cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(cfd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        fail(why, len, "probe connect to 127.0.0.1", errno, "");
        goto out;
    }
    struct io_uring_cqe *cqe;
    if (wait_one(ring, &cqe, "multishot accept", why, len) < 0)
        goto out;
    if (cqe->res == -EINVAL) {
        fail(why, len, "multishot accept", EINVAL, " (needs Linux 5.19)");
    } else if (cqe->res < 0) {
        fail(why, len, "multishot accept", -cqe->res, "");
    } else {
        close(cqe->res); /* the accepted connection */
        if (!(cqe->flags & IORING_CQE_F_MORE))
            snprintf(why, len, "multishot accept ended after one connection (needs Linux 5.19)");
        else
            rc = 0;
    }
    io_uring_cqe_seen(ring, cqe);
out:
    if (cfd >= 0)
        close(cfd);
    if (lfd >= 0)
        close(lfd); /* io_uring_queue_exit (the caller) cancels the request */
    return rc;
}

/* One multishot receive on a socket pair: 0 if it delivers with F_MORE set. */
static int try_multishot_recv(struct io_uring *ring, char *why, size_t len)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return fail(why, len, "socketpair", errno, "");
    int rc = -1;
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    io_uring_prep_recv_multishot(sqe, sv[0], NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 0;
    io_uring_sqe_set_data64(sqe, 1);
    if (write(sv[1], "ping\n", 5) != 5) {
        fail(why, len, "socketpair write", errno, "");
        goto out;
    }
    struct io_uring_cqe *cqe;
    if (wait_one(ring, &cqe, "multishot receive", why, len) < 0)
        goto out;
    if (cqe->res == -EINVAL) {
        fail(why, len, "multishot receive", EINVAL, " (needs Linux 6.0)");
    } else if (cqe->res != 5 || !(cqe->flags & IORING_CQE_F_BUFFER)) {
        snprintf(why, len, "multishot receive: unexpected completion res=%d flags=%#x", cqe->res,
                 cqe->flags);
    } else if (!(cqe->flags & IORING_CQE_F_MORE)) {
        snprintf(why, len, "multishot receive ended after one completion (needs Linux 6.0)");
    } else {
        rc = 0;
    }
    io_uring_cqe_seen(ring, cqe);
out:
    close(sv[0]); /* io_uring_queue_exit (the caller) cancels the request */
    close(sv[1]);
    return rc;
}

int uring_probe(char *why, size_t len)
{
    struct io_uring ring;
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE; /* as uring_worker.c's setup() */
    p.cq_entries = URING_CQ_ENTRIES;
    int rc = io_uring_queue_init_params(URING_SQ_ENTRIES, &ring, &p);
    if (rc < 0)
        return fail(why, len, "io_uring_setup", -rc,
                    rc == -ENOSYS ? " (kernel without io_uring)"
                    : rc == -EPERM ? " (io_uring disabled: sysctl kernel.io_uring_disabled, "
                                     "or a seccomp filter)"
                                   : "");
    void *mem = MAP_FAILED;
    size_t br_size = PROBE_BUFS * sizeof(struct io_uring_buf);
    /* static: the kernel may write to them until the ring is torn down */
    static char bufs[PROBE_BUFS][PROBE_BUF_SIZE];
    if (!(p.features & IORING_FEAT_EXT_ARG)) {
        snprintf(why, len, "io_uring without IORING_FEAT_EXT_ARG (needs Linux 5.11)");
        rc = -1;
        goto out;
    }
    mem = mmap(NULL, br_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        rc = fail(why, len, "mmap", errno, "");
        goto out;
    }
    struct io_uring_buf_ring *br = mem;
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof(reg));
    reg.ring_addr = (unsigned long)br;
    reg.ring_entries = PROBE_BUFS;
    reg.bgid = 0;
    if ((rc = io_uring_register_buf_ring(&ring, &reg, 0)) < 0) {
        rc = fail(why, len, "provided-buffer ring", -rc,
                  rc == -EINVAL ? " (needs Linux 5.19)" : "");
        goto out;
    }
    for (int i = 0; i < PROBE_BUFS; i++)
        io_uring_buf_ring_add(br, bufs[i], PROBE_BUF_SIZE, (unsigned short)i,
                              io_uring_buf_ring_mask(PROBE_BUFS), i);
    io_uring_buf_ring_advance(br, PROBE_BUFS);
    rc = try_multishot_accept(&ring, why, len);
    if (rc == 0)
        rc = try_multishot_recv(&ring, why, len);
out:
    io_uring_queue_exit(&ring); /* also unregisters the buffer ring */
    if (mem != MAP_FAILED)
        munmap(mem, br_size);
    return rc;
}
