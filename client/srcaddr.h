/* srcaddr.h - which source address each connection binds.
 *
 * The N connections are laid out in order over the address range in equal
 * blocks (address a gets connections [ceil(a*N/n), ceil((a+1)*N/n)) ), so no
 * address carries more than ceil(N/n). A worker owns a contiguous run of
 * connection indices, hence a contiguous slice of addresses with a quota for
 * each, and it takes them round-robin within that slice. */
#ifndef C1M_CLIENT_SRCADDR_H
#define C1M_CLIENT_SRCADDR_H

#include <stdint.h>

struct c1m_srcpick {
    uint32_t first;   /* first address of the slice, host order */
    uint32_t n;       /* addresses in the slice (0: no binding) */
    uint32_t rr;      /* next slot */
    long *quota;      /* n entries */
};

/* Set up the picker for the connections [off, off+share) out of total, over
 * count addresses starting at first. count 0: nothing to bind. 0 or -1. */
int c1m_srcpick_init(struct c1m_srcpick *p, uint32_t first, uint32_t count, long total,
                     long off, long share);
/* Next address (host order) round-robin among slots with quota left. */
uint32_t c1m_srcpick_next(struct c1m_srcpick *p);
void c1m_srcpick_free(struct c1m_srcpick *p);

#endif
