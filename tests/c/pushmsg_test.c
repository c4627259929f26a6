/* pushmsg_test.c - the push message (c_server/lib/pushmsg.h): exact size,
 * layout, the largest SEQ that fits, and a message formatted over a longer
 * one (the server reuses its buffer) leaving no stale digit. Exit 0 or 1 with
 * what failed; run by tests/push_server.bats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pushmsg.h"
#include "check.h"

/* msg is "push SEQ USEC " + dots + "\n" with exactly these numbers */
static void check_msg(const char *msg, size_t bytes, unsigned long long seq,
                      unsigned long long usec)
{
    char head[64];
    int h = snprintf(head, sizeof(head), "push %llu %llu ", seq, usec);
    CHECK(h > 0 && (size_t)h < bytes, "head %d does not fit %zu", h, bytes);
    CHECK(memcmp(msg, head, (size_t)h) == 0, "head %.*s, want %s", h, msg, head);
    for (size_t i = (size_t)h; i + 1 < bytes; i++)
        CHECK(msg[i] == '.', "byte %zu of %zu is '%c', not '.'", i, bytes, msg[i]);
    CHECK(msg[bytes - 1] == '\n', "no newline at the end (%zu bytes)", bytes);
}

int main(void)
{
    CHECK(c1m_push_seq_max(32) == 99999999u, "seq_max(32) = %u", c1m_push_seq_max(32));
    CHECK(c1m_push_seq_max(33) == 999999999u, "seq_max(33)");
    CHECK(c1m_push_seq_max(34) == 4294967295u, "seq_max(34)");
    CHECK(c1m_push_seq_max(1025) == 4294967295u, "seq_max(1025)");
    CHECK(c1m_push_seq_next(1, 9) == 2 && c1m_push_seq_next(9, 9) == 1, "seq_next");

    size_t sizes[] = {C1M_PUSH_MIN, 33, 34, 64, 100, C1M_PUSH_MAX};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t b = sizes[k];
        char *buf = malloc(3 * b);
        if (!buf)
            return 1;
        c1m_push_fill(buf, b, 3);
        uint64_t now = c1m_realtime_us();
        CHECK(now > 1500000000000000ull && now < 9999999999999999ull, "realtime %llu",
              (unsigned long long)now);
        uint32_t big = c1m_push_seq_max(b);
        /* a long head, then a short one over it in the same slot */
        c1m_push_format(buf, b, big, 9999999999999999ull);
        check_msg(buf, b, big, 9999999999999999ull);
        c1m_push_format(buf, b, 1, now);
        check_msg(buf, b, 1, now);
        c1m_push_format(buf + b, b, 2, now);
        c1m_push_format(buf + 2 * b, b, 3, now);
        for (int i = 0; i < 3; i++)
            check_msg(buf + (size_t)i * b, b, (unsigned long long)i + 1, now);
        free(buf);
    }
    if (failures)
        return 1;
    puts("pushmsg: ok");
    return 0;
}
