/*
 * check.h - the test harness: one runner per test program, every case run
 * in its own forked child under a timeout, assertions that print both
 * sides, a closing "N passed, N failed" line, exit status 1 on failure.
 *
 *   TEST(name) { CHECK_EQ(1 + 1, 2); }
 *
 * Environment: MQS_TEST_TIMEOUT (seconds per case, default 120),
 * MQS_TEST_SEED (run the cases in a shuffled order from this seed; the
 * seed in use is printed so a failing order can be replayed),
 * MQS_TEST_NOFORK=1 (run in-process, for gdb).  A first argument runs only
 * the cases whose name contains it.
 */
#ifndef MQS_CHECK_H
#define MQS_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mqs.h"

typedef void (*check__fn)(void);
struct check__case {
    const char *name;
    check__fn fn;
};
#define CHECK__MAX 512
static struct check__case check__cases[CHECK__MAX];
static int check__n;

static inline void check__register(const char *name, check__fn fn)
{
    if (check__n < CHECK__MAX)
        check__cases[check__n++] = (struct check__case){name, fn};
}

#define TEST(name)                                                   \
    static void name(void);                                          \
    __attribute__((constructor)) static void check__reg_##name(void) \
    {                                                                \
        check__register(#name, name);                                \
    }                                                                \
    static void name(void)

#define CHECK__FAIL(...)                                             \
    do {                                                             \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);            \
        fprintf(stderr, __VA_ARGS__);                                \
        fprintf(stderr, "\n");                                       \
        fflush(stderr);                                              \
        _exit(1);                                                    \
    } while (0)

#define CHECK(cond)                                                  \
    do {                                                             \
        if (!(cond))                                                 \
            CHECK__FAIL("CHECK(%s) failed", #cond);                  \
    } while (0)

#define CHECK__CMP(a, op, b)                                             \
    do {                                                                 \
        long long check__a = (long long)(a), check__b = (long long)(b);  \
        if (!(check__a op check__b))                                     \
            CHECK__FAIL("CHECK(%s %s %s) failed: %lld vs %lld", #a, #op, \
                        #b, check__a, check__b);                         \
    } while (0)

#define CHECK_EQ(a, b) CHECK__CMP(a, ==, b)
#define CHECK_NE(a, b) CHECK__CMP(a, !=, b)
#define CHECK_LT(a, b) CHECK__CMP(a, <, b)
#define CHECK_LE(a, b) CHECK__CMP(a, <=, b)
#define CHECK_GT(a, b) CHECK__CMP(a, >, b)
#define CHECK_GE(a, b) CHECK__CMP(a, >=, b)

/* An mqs call that must succeed. */
#define CHECK_OK(call)                                                  \
    do {                                                                \
        int check__rc = (call);                                         \
        if (check__rc != 0)                                             \
            CHECK__FAIL("%s returned %d (%s)", #call, check__rc,        \
                        mqs_strerror(check__rc));                       \
    } while (0)

/* An mqs call that must fail with a given code. */
#define CHECK_ERR(call, code)                                           \
    do {                                                                \
        int check__rc = (call);                                         \
        if (check__rc != (code))                                        \
            CHECK__FAIL("%s returned %d (%s), expected %d (%s)", #call, \
                        check__rc, mqs_strerror(check__rc), (code),     \
                        mqs_strerror(code));                            \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                  \
    do {                                                                 \
        const char *check__h = (hay), *check__n = (needle);              \
        if (!check__h || !strstr(check__h, check__n))                    \
            CHECK__FAIL("\"%s\" does not contain \"%s\"",                \
                        check__h ? check__h : "(null)", check__n);       \
    } while (0)

static inline int check__run_one(const struct check__case *c, int timeout)
{
    if (getenv("MQS_TEST_NOFORK")) {
        c->fn();
        return 0;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        alarm((unsigned)timeout);
        c->fn();
        fflush(NULL);
        _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    if (WIFEXITED(st))
        return WEXITSTATUS(st) != 0;
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        fprintf(stderr, "  killed by signal %d%s\n", sig,
                sig == SIGALRM ? " (timeout)" : "");
    }
    return 1;
}

static inline double check__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    const char *t = getenv("MQS_TEST_TIMEOUT");
    int timeout = t ? atoi(t) : 120;
    const char *seed_s = getenv("MQS_TEST_SEED");
    if (seed_s) {
        unsigned seed = (unsigned)strtoul(seed_s, NULL, 10);
        printf("order shuffled with MQS_TEST_SEED=%u\n", seed);
        srand(seed);
        for (int i = check__n - 1; i > 0; i--) {
            int j = rand() % (i + 1);
            struct check__case tmp = check__cases[i];
            check__cases[i] = check__cases[j];
            check__cases[j] = tmp;
        }
    }
    int passed = 0, failed = 0;
    for (int i = 0; i < check__n; i++) {
        const struct check__case *c = &check__cases[i];
        if (filter && !strstr(c->name, filter))
            continue;
        double t0 = check__now();
        int bad = check__run_one(c, timeout);
        printf("%s %s (%.0f ms)\n", bad ? "FAIL" : "PASS", c->name,
               (check__now() - t0) * 1e3);
        fflush(stdout);
        if (bad)
            failed++;
        else
            passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0 || passed == 0;
}

/* |a - b| <= tol for doubles, printing both sides. */
#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double check__x = (a), check__y = (b);                                 \
        if (!(fabs(check__x - check__y) <= (tol)))                             \
            CHECK__FAIL("CHECK_NEAR(%s, %s) failed: %.9g vs %.9g", #a, #b,     \
                        check__x, check__y);                                   \
    } while (0)

#endif
