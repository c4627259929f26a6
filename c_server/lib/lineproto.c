/* lineproto.c - see lineproto.h. */
#include "lineproto.h"

#include <string.h>

int c1m_line_feed(struct c1m_line_state *s, const char *buf, size_t n, struct c1m_line_result *r)
{
    const char *p = buf, *end = buf + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t seg = (size_t)((nl ? nl : end) - p);
        if (s->len + seg > C1M_LINE_MAX)
            return -1;
        if (s->len < sizeof(s->head)) {
            size_t k = sizeof(s->head) - s->len;
            memcpy(s->head + s->len, p, seg < k ? seg : k);
        }
        s->len = (uint16_t)(s->len + seg);
        if (!nl)
            break;
        r->lines++;
        if (s->len == 4 && memcmp(s->head, "ping", 4) == 0)
            r->pings++;
        s->len = 0;
        p = nl + 1;
    }
    return 0;
}

void c1m_pong_fill(char *buf, size_t n)
{
    for (size_t i = 0; i + C1M_PONG_LEN <= n; i += C1M_PONG_LEN)
        memcpy(buf + i, C1M_PONG, C1M_PONG_LEN);
}
