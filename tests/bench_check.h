/*
 * bench_check.h - the check the mqs-bench tests add to check.h:
 * CHECK_STREQ (a NULL string fails rather than crashing strcmp).
 * Included after check.h.
 */
#ifndef MQS_TESTS_BENCH_CHECK_H
#define MQS_TESTS_BENCH_CHECK_H

#include <math.h>
#include <string.h>

#define CHECK_STREQ(a, b)                                                      \
    do {                                                                       \
        const char *streq__a = (a), *streq__b = (b);                           \
        if (!streq__a || strcmp(streq__a, streq__b) != 0)                      \
            CHECK__FAIL("CHECK_STREQ(%s, %s) failed: \"%s\" vs \"%s\"", #a,    \
                        #b, streq__a ? streq__a : "(null)", streq__b);         \
    } while (0)

#endif
