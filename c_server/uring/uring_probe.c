/* uring_probe.c - does this kernel give c1m-uring what it needs? Tried, not
 * guessed from a version number: a ring (io_uring may be compiled out,
 * disabled by kernel.io_uring_disabled or refused by a seccomp filter), the
 * extended wait argument (Linux 5.11), a provided-buffer ring (5.19, with
 * multishot accept), and one multishot receive on a socket pair (6.0). */
#include "uring_worker.h"

#include <errno.h>
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
    struct __kernel_timespec ts = {.tv_sec = 2, .tv_nsec = 0};
    struct io_uring_cqe *cqe;
    int r = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL);
    if (r < 0) {
        fail(why, len, "multishot receive", -r, r == -ETIME ? " (no completion in 2 s)" : "");
        goto out;
    }
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
    int rc = io_uring_queue_init_params(4, &ring, &p);
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
    rc = try_multishot_recv(&ring, why, len);
out:
    io_uring_queue_exit(&ring); /* also unregisters the buffer ring */
    if (mem != MAP_FAILED)
        munmap(mem, br_size);
    return rc;
}
