/* lineproto.h - the wire protocol's receive side, without buffering lines.
 *
 * Lines end with '\n'. Only "ping" means anything, so a connection never needs
 * more than the first four bytes of its current line and the line's length:
 * a partial line survives across reads in 6 bytes, and a line longer than
 * C1M_LINE_MAX (the 1 KiB rule) is detected without storing it.
 */
#ifndef C1M_LINEPROTO_H
#define C1M_LINEPROTO_H

#include <stddef.h>
#include <stdint.h>

#define C1M_LINE_MAX 1024
#define C1M_PONG "pong\n"
#define C1M_PONG_LEN 5

struct c1m_line_state {
    uint16_t len;     /* bytes of the current line so far */
    char head[4];     /* its first bytes */
};

struct c1m_line_result {
    uint32_t lines;   /* complete lines seen */
    uint32_t pings;   /* of which exactly "ping" */
};

/* Feed n received bytes. Adds to *r. Returns 0, or -1 when a line exceeds
 * C1M_LINE_MAX bytes (the connection must be closed; *r still counts the
 * lines completed before it). */
int c1m_line_feed(struct c1m_line_state *s, const char *buf, size_t n, struct c1m_line_result *r);

/* buf[0..n) filled with repeated "pong\n" (n a multiple of C1M_PONG_LEN):
 * the one buffer a worker writes every connection's replies from. */
void c1m_pong_fill(char *buf, size_t n);

#endif
