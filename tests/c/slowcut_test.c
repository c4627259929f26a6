/* slowcut_test.c - the slow cutoff's grace (c_server/lib/slowcut.h): held
 * over the bound, released within it, slow only once the backlog has not
 * shrunk for the grace, a shrink starting the grace again, a full set judging
 * at once, forget, and what is due. Exit 0 or 1 with what failed; run by
 * tests/check/c_unit.bats. */
#include <stdio.h>

#include "slowcut.h"
#include "check.h"

#define G C1M_SLOW_GRACE_NS
#define MAXP 4096

int main(void)
{
    struct c1m_held_set s;
    uint64_t due[8];
    CHECK(c1m_held_init(&s, 2) == 0, "init");
    uint64_t t = 1000000000ull;

    /* within the bound: OK, nothing held */
    CHECK(c1m_held_judge(&s, 7, MAXP, MAXP, t) == C1M_BACKLOG_OK, "at the bound is ok");
    CHECK(s.n == 0, "an ok backlog is not held");

    /* over it: held, not due before the grace */
    CHECK(c1m_held_judge(&s, 7, 6000, MAXP, t) == C1M_BACKLOG_HELD, "over the bound: held");
    CHECK(c1m_held_due(&s, t + G - 1, due, 8) == 0, "due before the grace");
    CHECK(c1m_held_judge(&s, 7, 6000, MAXP, t + G - 1) == C1M_BACKLOG_HELD,
          "slow before the grace");
    /* it shrinks just before the grace: the grace starts again */
    CHECK(c1m_held_judge(&s, 7, 5000, MAXP, t + G - 1) == C1M_BACKLOG_HELD, "shrunk: held");
    CHECK(c1m_held_due(&s, t + G, due, 8) == 0, "due although it shrank");
    /* it grows (more input before reading stopped): the grace goes on */
    CHECK(c1m_held_judge(&s, 7, 7000, MAXP, t + G) == C1M_BACKLOG_HELD, "grown: held");
    CHECK(c1m_held_due(&s, t + 2 * G - 1, due, 8) == 1 && due[0] == 7, "not due after the grace");
    CHECK(c1m_held_judge(&s, 7, 7000, MAXP, t + 2 * G - 1) == C1M_BACKLOG_SLOW,
          "not shrunk below 5000 for the grace: slow");
    CHECK(s.n == 0, "a slow one stays held");

    /* released: back within the bound takes it out */
    CHECK(c1m_held_judge(&s, 8, 9000, MAXP, t) == C1M_BACKLOG_HELD, "8 held");
    CHECK(c1m_held_judge(&s, 8, 100, MAXP, t + 1) == C1M_BACKLOG_OK, "8 released");
    CHECK(s.n == 0, "a released one stays held");

    /* a full set judges at once */
    CHECK(c1m_held_judge(&s, 1, 9000, MAXP, t) == C1M_BACKLOG_HELD, "1 held");
    CHECK(c1m_held_judge(&s, 2, 9000, MAXP, t) == C1M_BACKLOG_HELD, "2 held");
    CHECK(c1m_held_judge(&s, 3, 9000, MAXP, t) == C1M_BACKLOG_SLOW, "a full set: slow at once");
    CHECK(c1m_held_judge(&s, 2, 9000, MAXP, t + 1) == C1M_BACKLOG_HELD, "2 still held");

    /* forget: out, and a reused key starts afresh */
    c1m_held_forget(&s, 1);
    c1m_held_forget(&s, 99); /* not in it: a no-op */
    CHECK(s.n == 1, "forget: %d left", s.n);
    CHECK(c1m_held_judge(&s, 1, 9000, MAXP, t + G) == C1M_BACKLOG_HELD,
          "a forgotten key held again is not slow at once");
    CHECK(c1m_held_due(&s, t + G, due, 8) == 1 && due[0] == 2, "only 2 is due");
    CHECK(c1m_held_due(&s, t + 2 * G, due, 1) == 1, "due honours max");

    c1m_held_free(&s);
    if (failures)
        return 1;
    printf("slowcut: ok\n");
    return 0;
}
