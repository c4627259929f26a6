/* check_exit.h - CHECK(cond) for the C unit tests that stop at the first
 * failed check: its place and condition printed, exit 1. (check.h is the
 * other kind: every failure reported, then main() returns 1.) Not assert():
 * the normal build is -DNDEBUG. */
#ifndef C1M_TEST_CHECK_EXIT_H
#define C1M_TEST_CHECK_EXIT_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#endif
