/* check.h - CHECK(cond, fmt, ...) for the C unit tests that report every
 * failed check before exiting: each failure is printed with its place and
 * counted in `failures`; main() returns 1 if there was any. Not assert():
 * the normal build is -DNDEBUG. */
#ifndef C1M_TEST_CHECK_H
#define C1M_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

#endif
