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

/* The value of "FIELD:" at the start of a line of TEXT, in KiB, or -1. */
static long meminfo_field(const char *text, const char *field)
{
    size_t len = strlen(field);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, field, len) == 0 && p[len] == ':') {
            char *end;
            errno = 0;
            long v = strtol(p + len + 1, &end, 10);
            return (end == p + len + 1 || errno || v < 0) ? -1 : v;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

long c1m_meminfo_usable_kib(const char *meminfo)
{
    long avail = meminfo_field(meminfo, "MemAvailable");
    if (avail < 0)
        return -1;
    long rec = meminfo_field(meminfo, "SReclaimable");
    if (rec < 0)
        rec = 0;   /* a kernel without the field: MemAvailable alone */
    return avail > rec ? avail - rec : 0;
}

long c1m_mem_usable_kib(void)
{
    char buf[8192];   /* /proc/meminfo is ~1.5 KB; SReclaimable comes after the 20th line */
    if (read_small("/proc/meminfo", buf, sizeof(buf)) <= 0)
        return -1;
    return c1m_meminfo_usable_kib(buf);
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
