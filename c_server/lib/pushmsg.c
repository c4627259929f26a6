/* pushmsg.c - see pushmsg.h. */
#include "pushmsg.h"

#include <string.h>
#include <time.h>

/* "push " + SEQ + " " + 16-digit USEC + " " + "\n" */
#define FIXED (5 + 1 + 16 + 1 + 1)
/* the longest head a message can have: 10-digit SEQ */
#define HEAD_MAX (FIXED - 1 + 10)

uint32_t c1m_push_seq_max(size_t bytes)
{
    size_t digits = bytes > FIXED ? bytes - FIXED : 0;
    if (digits >= 10)
        return UINT32_MAX;
    uint32_t m = 1;
    for (size_t i = 0; i < digits; i++)
        m *= 10;
    return m - 1;
}

static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = tmp[--n];
    return p;
}

void c1m_push_format(char *out, size_t bytes, uint32_t seq, uint64_t usec)
{
    char *p = out;
    memcpy(p, C1M_PUSH_PREFIX, 5);
    p = put_u64(p + 5, seq);
    *p++ = ' ';
    p = put_u64(p, usec);
    *p++ = ' ';
    /* dots over whatever a longer head left there, up to the newline */
    size_t head = (size_t)(p - out);
    size_t end = bytes - 1 < HEAD_MAX ? bytes - 1 : HEAD_MAX;
    if (end > head)
        memset(p, '.', end - head);
}

void c1m_push_fill(char *out, size_t bytes, size_t n)
{
    memset(out, '.', bytes * n);
    for (size_t i = 1; i <= n; i++)
        out[i * bytes - 1] = '\n';
}

uint64_t c1m_realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
