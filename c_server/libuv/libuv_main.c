/* libuv_main.c - c1m-libuv: c1m-server's command line and workers around a
 * libuv worker (libuv_worker.c). */
#include "contender.h"
#include "libuv_worker.h"

static const struct contender libuv_contender = {
    .prog = "c1m-libuv",
    .kind = "libuv",
    .about = "Holds idle TCP connections on libuv (a uv_tcp_t per connection, uv_read_start\n"
             "with an allocation callback, uv_write) in N SO_REUSEPORT worker processes.",
    .available = NULL, /* linked against libuv: runs wherever it starts */
    .worker_run = libuv_worker_run,
};

int main(int argc, char **argv)
{
    return contender_main(&libuv_contender, argc, argv);
}
