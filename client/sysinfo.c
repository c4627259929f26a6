/* sysinfo.c - see sysinfo.h. Plain read(2): no stdio buffer per call. */
#include "sysinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ssize_t read_small(const char *path, char *buf, size_t len)
{
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = 0;
    return (ssize_t)got;
}

long c1m_mem_available_kib(void)
{
    char buf[4096];
    if (read_small("/proc/meminfo", buf, sizeof(buf)) <= 0)
        return -1;
    const char *p = strstr(buf, "MemAvailable:");
    if (!p)
        return -1;
    return strtol(p + strlen("MemAvailable:"), NULL, 10);
}

long c1m_local_port_count(void)
{
    char buf[64];
    long lo, hi;
    if (read_small("/proc/sys/net/ipv4/ip_local_port_range", buf, sizeof(buf)) <= 0 ||
        sscanf(buf, "%ld %ld", &lo, &hi) != 2 || hi < lo)
        return -1;
    return hi - lo + 1;
}
