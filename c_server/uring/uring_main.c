/* uring_main.c - c1m-uring: c1m-server's command line and workers around an
 * io_uring worker (uring_worker.c); exits 3 (unavailable) with the reason when
 * the kernel lacks what it needs (uring_probe.c). */
#include "contender.h"
#include "uring_worker.h"

static const struct contender uring_contender = {
    .prog = "c1m-uring",
    .kind = "io_uring",
    .about = "Holds idle TCP connections on io_uring (multishot accept, multishot receive\n"
             "with a provided-buffer ring: an idle connection holds no userspace buffer)\n"
             "in N SO_REUSEPORT worker processes.",
    .available = uring_probe,
    .worker_run = uring_worker_run,
};

int main(int argc, char **argv)
{
    return contender_main(&uring_contender, argc, argv);
}
