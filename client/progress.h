/* progress.h - the once-a-second status line on stderr: rewritten in place
 * with \r on a terminal, one plain line per second otherwise. */
#ifndef C1M_CLIENT_PROGRESS_H
#define C1M_CLIENT_PROGRESS_H

#include <stdint.h>

#include "report.h"

struct c1m_progress {
    int tty;
    int on_screen;          /* a \r line is showing and needs a newline */
    uint64_t last_ns;
    uint64_t last_est;
};

void c1m_progress_init(struct c1m_progress *p, uint64_t start_ns);
/* Print one line. hold_el/hold_total < 0: not holding (total < 0: no end). */
void c1m_progress_line(struct c1m_progress *p, const struct c1m_counts *c, long target,
                       uint64_t now_ns, double elapsed_s, int holding, double hold_el,
                       double hold_total);
/* End a \r line before other output goes to stderr or stdout. */
void c1m_progress_break(struct c1m_progress *p);

#endif
