/*
 * bench_check.h - the two checks the mqs-bench tests add to check.h:
 * NEAR (doubles within a tolerance) and CHECK_STREQ (a NULL string fails
 * rather than crashing strcmp).  Included after check.h.
 */
#ifndef MQS_TESTS_BENCH_CHECK_H
#define MQS_TESTS_BENCH_CHECK_H

#include <math.h>
#include <string.h>

#define NEAR(a, b, tol)                                                        \
    do {                                                                       \
        double near__x = (a), near__y = (b);                                   \
        if (!(fabs(near__x - near__y) <= (tol)))                               \
            CHECK__FAIL("NEAR(%s, %s) failed: %.9g vs %.9g", #a, #b, near__x,  \
                        near__y);                                              \
    } while (0)

#define CHECK_STREQ(a, b)                                                      \
    do {                                                                       \
        const char *streq__a = (a), *streq__b = (b);                           \
        if (!streq__a || strcmp(streq__a, streq__b) != 0)                      \
            CHECK__FAIL("CHECK_STREQ(%s, %s) failed: \"%s\" vs \"%s\"", #a,    \
                        #b, streq__a ? streq__a : "(null)", streq__b);         \
    } while (0)

#endif
