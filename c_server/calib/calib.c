/* c1m-calib - one figure of this instance's cost, measured at the start of a
 * suite (harness/bench.sh, meta.json `calibration`): what the floor contender
 * pays per accepted connection, and what one cheap syscall costs.
 *
 * Each round forks a minimal server doing what c1m-floor does per accept
 * (accept4, epoll_ctl add, hold; never reads) while this process connects
 * --conns times over loopback; the server reports its own CPU (getrusage
 * after the last accept less before the first) per accepted connection. Then
 * --syscalls calls of syscall(SYS_getppid) (never cached by libc) timed in
 * this thread's CPU time. The output is one JSON object: the median, min and max over
 * --rounds of each figure. Connections close by RST (SO_LINGER 0): no
 * TIME_WAIT, no ephemeral port held after a round. Each round's listener is
 * new (port 0). Bounded: --conns <= 16000 (under the fd limit with room),
 * --rounds <= 20, and every round ends within --timeout seconds.
 *
 * Run it in a fresh network namespace (bench.sh: unshare --net) so that no
 * socket of an earlier run shares its hash tables.
 * Exit: 0 printed, 1 a runtime failure, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "cli.h"
#include "net.h"

#define MAX_ROUNDS 20

static const char USAGE[] =
    "usage: c1m-calib [--conns N (100-16000, 10000)] [--rounds R (1-20, 5)]\n"
    "                 [--syscalls M (1000-100000000, 1000000)] [--timeout S (1-600, 60)]";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The forked server: accept4 + epoll_ctl add until n connections, then its
 * CPU for them on `out`; holds them until `in` closes. Never returns. */
static void serve(int lfd, long n, int out, int in)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
        _exit(1);
    double c0 = cpu_s();
    long got = 0;
    struct epoll_event evs[64];
    while (got < n) {
        int k = epoll_wait(ep, evs, 64, 1000);
        if (k < 0 && errno != EINTR)
            _exit(1);
        for (;;) {
            int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                if (errno == EAGAIN)
                    break;
                _exit(1);
            }
            struct epoll_event e = {.events = EPOLLIN, .data.fd = fd};
            if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0)
                _exit(1);
            got++;
        }
    }
    double per = (cpu_s() - c0) / (double)n;
    if (write_all(out, &per, sizeof per) < 0)
        _exit(1);
    char b;
    while (read(in, &b, 1) < 0 && errno == EINTR)
        ;
    _exit(0);
}

/* One round: server CPU per accept in *per_s. 0 or -1 (said on stderr). */
static int accept_round(long n, double timeout, double *per_s)
{
    int rc = -1, lfd = -1, res[2] = {-1, -1}, hold[2] = {-1, -1};
    int *fds = calloc((size_t)n, sizeof *fds);
    long made = 0;
    pid_t pid = -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (!fds)
        return -1;
    if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 4096) < 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0 || pipe2(res, O_CLOEXEC) < 0 ||
        pipe2(hold, O_CLOEXEC) < 0) {
        perror("c1m-calib: listener");
        goto out;
    }
    pid_t parent = getpid();
    if ((pid = fork()) < 0) {
        perror("c1m-calib: fork");
        goto out;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives this process */
        if (getppid() != parent)
            _exit(1);
        close(res[0]);
        close(hold[1]);
        serve(lfd, n, res[1], hold[0]);
    }
    close(res[1]);
    res[1] = -1;
    close(hold[0]);
    hold[0] = -1;
    double deadline = now_s() + timeout;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    for (made = 0; made < n; made++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            perror("c1m-calib: socket");
            goto out;
        }
        fds[made] = fd;
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        while (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            if (errno != EINTR) {
                perror("c1m-calib: connect");
                made++;
                goto out;
            }
        }
        if (now_s() > deadline) {
            fprintf(stderr, "c1m-calib: %ld of %ld connections after %.0f s\n", made + 1, n, timeout);
            made++;
            goto out;
        }
    }
    struct pollfd p = {.fd = res[0], .events = POLLIN};
    int left = (int)((deadline - now_s()) * 1000);
    if (left < 1 || poll(&p, 1, left) != 1 || read(res[0], per_s, sizeof *per_s) != sizeof *per_s) {
        fprintf(stderr, "c1m-calib: the server did not report within %.0f s\n", timeout);
        goto out;
    }
    rc = 0;
out:
    for (long i = 0; i < made; i++)
        close(fds[i]);
    free(fds);
    if (lfd >= 0)
        close(lfd);
    if (hold[1] >= 0)
        close(hold[1]); /* the server's cue to exit */
    if (pid > 0) {
        if (rc != 0)
            kill(pid, SIGKILL);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            fprintf(stderr, "c1m-calib: the server failed\n");
            rc = -1;
        }
    }
    for (int i = 0; i < 2; i++) {
        if (res[i] >= 0)
            close(res[i]);
        if (hold[i] >= 0)
            close(hold[i]);
    }
    return rc;
}

/* ns of this thread's CPU per call: CPU time, not wall time, so that time
 * spent descheduled on a busy machine does not count */
static double syscall_ns(long m)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (long i = 0; i < m; i++)
        syscall(SYS_getppid);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)m;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_stat(const char *name, double *v, int n, double scale, const char *sep)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    printf("\"%s\": {\"median\": %.4g, \"min\": %.4g, \"max\": %.4g}%s", name, med * scale,
           v[0] * scale, v[n - 1] * scale, sep);
}

int main(int argc, char **argv)
{
    static const struct c1m_cli_flag flags[] = {
        {"--conns", 1}, {"--rounds", 1}, {"--syscalls", 1}, {"--timeout", 1}, {"--help", 0}, {"-h", 0}};
    struct c1m_cli c;
    long conns = 10000, rounds = 5, calls = 1000000;
    double timeout = 60;
    c1m_cli_init(&c, "c1m-calib", USAGE, flags, (int)(sizeof flags / sizeof *flags), argc, argv);
    for (int f; (f = c1m_cli_next(&c)) != C1M_CLI_END;) {
        if (f == C1M_CLI_ERROR)
            return 2;
        if (f == C1M_CLI_POSITIONAL)
            return c1m_cli_error(&c, c.value, NULL, "takes no arguments");
        if (f >= 4) {
            puts(USAGE);
            return 0;
        }
        int bad = f == 0   ? c1m_parse_long(c.value, 100, 16000, 1, &conns)
                  : f == 1 ? c1m_parse_long(c.value, 1, MAX_ROUNDS, 0, &rounds)
                  : f == 2 ? c1m_parse_long(c.value, 1000, 100000000, 1, &calls)
                           : c1m_parse_seconds(c.value, 1, 600, 0, &timeout);
        if (bad)
            return c1m_cli_error(&c, c.flag, c.value, "out of range");
    }
    struct rlimit rl; /* the soft fd limit raised to what a round needs, up to the hard one */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)conns + 64) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)conns + 64 ? rl.rlim_max : (rlim_t)conns + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int lim = c1m_nofile_limit();
    if (lim < conns + 32) {
        fprintf(stderr, "c1m-calib: the fd limit (%d) is under --conns %ld + 32\n", lim, conns);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    double acc[MAX_ROUNDS], sys[MAX_ROUNDS], t0 = now_s();
    for (int r = 0; r < rounds; r++) {
        if (accept_round(conns, timeout, &acc[r]) < 0)
            return 1;
        sys[r] = syscall_ns(calls);
    }
    printf("{\"conns\": %ld, \"rounds\": %ld, \"syscalls\": %ld, ", conns, rounds, calls);
    print_stat("accept_cpu_us", acc, (int)rounds, 1e6, ", ");
    print_stat("syscall_ns", sys, (int)rounds, 1.0, ", ");
    printf("\"wall_s\": %.1f}\n", now_s() - t0);
    return 0;
}
