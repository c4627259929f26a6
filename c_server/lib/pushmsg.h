/* pushmsg.h - the server push message (interfaces: --push BYTES).
 *
 *   "push SEQ USEC " + '.' padding + "\n", exactly BYTES bytes (32..1025)
 *
 * SEQ is the connection's message number from 1, USEC the CLOCK_REALTIME
 * microseconds at which the server handed the message to the kernel. A line
 * of at most 1024 bytes plus its newline: every server's line rule holds.
 * USEC has 16 digits until the year 2286, so SEQ has BYTES - 24 digits of room
 * (8 at 32 bytes); c1m_push_seq_max() is the largest SEQ that fits, after
 * which a connection's numbering starts again at 1 (at 32 bytes: after
 * 99,999,999 messages on one connection; u32 beyond 34 bytes).
 */
#ifndef C1M_PUSHMSG_H
#define C1M_PUSHMSG_H

#include <stddef.h>
#include <stdint.h>

#define C1M_PUSH_MIN 32
#define C1M_PUSH_MAX 1025   /* C1M_LINE_MAX + the newline */
#define C1M_PUSH_PREFIX "push "

/* The largest SEQ a message of `bytes` holds (at most UINT32_MAX). */
uint32_t c1m_push_seq_max(size_t bytes);
/* The SEQ after seq: seq + 1, or 1 past seq_max. */
static inline uint32_t c1m_push_seq_next(uint32_t seq, uint32_t seq_max)
{
    return seq >= seq_max ? 1 : seq + 1;
}
/* Write one message of `bytes` (C1M_PUSH_MIN..C1M_PUSH_MAX) into out. out
 * must hold `bytes` bytes that are either a previous message of the same size
 * or c1m_push_fill()ed: only the head and the dots it may have overwritten
 * are rewritten (a broadcast formats thousands of messages). seq <=
 * c1m_push_seq_max(bytes), usec < 10^16. */
void c1m_push_format(char *out, size_t bytes, uint32_t seq, uint64_t usec);
/* Prepare n consecutive message slots of `bytes` in out: dots and newlines. */
void c1m_push_fill(char *out, size_t bytes, size_t n);
/* CLOCK_REALTIME now, in microseconds (the USEC of a message). */
uint64_t c1m_realtime_us(void);

#endif
