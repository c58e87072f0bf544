/*
 * test_expkit.c - the helpers the ring, pipe and wake experiments share
 * (bench/expkit.c): lifting an experiment's own options out of argv
 * before the common parser sees them, refusing options that do not
 * apply, and the kernel rows' CPU list.
 */
#include <string.h>

#include "check.h"

#include "../bench/common.c"
#include "../bench/expkit.c"
#include "../bench/output.c"
#include "../bench/plot.c"
#include "../bench/peer.c"
#include "../bench/stats.c"

#define N(a) (sizeof(a) / sizeof((a)[0]))

TEST(take_options_both_spellings)
{
    char *argv[] = {"wake", "--clients", "8", "--csv", "--hogs=3",
                    "--seconds", "1", NULL};
    int argc = (int)N(argv) - 1;
    const char *clients = "4", *hogs = "0", *cls = "normal";
    const bench_xopt_t xo[] = {{"clients", &clients}, {"hogs", &hogs},
                               {"class", &cls}, {NULL, NULL}};
    CHECK_EQ(bench_take_options("wake", &argc, argv, xo, NULL), 0);
    CHECK_EQ(argc, 4);
    CHECK(strcmp(clients, "8") == 0);
    CHECK(strcmp(hogs, "3") == 0);
    CHECK(strcmp(cls, "normal") == 0); /* absent: untouched */
    CHECK(strcmp(argv[0], "wake") == 0);
    CHECK(strcmp(argv[1], "--csv") == 0);
    CHECK(strcmp(argv[2], "--seconds") == 0);
    CHECK(strcmp(argv[3], "1") == 0);
    CHECK(argv[4] == NULL);
}

/* A name that only starts like an option is not that option, and
 * nothing after "--" is looked at. */
TEST(take_options_exact_names_and_dashdash)
{
    char *argv[] = {"ring", "--sizes", "2", "--", "--size", "9", NULL};
    int argc = (int)N(argv) - 1;
    const char *size = "0";
    const bench_xopt_t xo[] = {{"size", &size}, {NULL, NULL}};
    CHECK_EQ(bench_take_options("ring", &argc, argv, xo, NULL), 0);
    CHECK_EQ(argc, 6);
    CHECK(strcmp(size, "0") == 0);
    CHECK(strcmp(argv[4], "--size") == 0);
}

TEST(take_options_errors)
{
    const char *v = NULL;
    const bench_xopt_t xo[] = {{"size", &v}, {NULL, NULL}};
    static const char *const refuse[] = {"tasks", NULL};
    char *a1[] = {"pipe", "--tasks", "4", NULL};
    int n1 = 3;
    CHECK_EQ(bench_take_options("pipe", &n1, a1, xo, refuse),
             BENCH_EXIT_USAGE);
    char *a2[] = {"pipe", "--tasks=4", NULL};
    int n2 = 2;
    CHECK_EQ(bench_take_options("pipe", &n2, a2, xo, refuse),
             BENCH_EXIT_USAGE);
    char *a3[] = {"ring", "--size", NULL};
    int n3 = 2;
    CHECK_EQ(bench_take_options("ring", &n3, a3, xo, NULL), BENCH_EXIT_USAGE);
    CHECK(v == NULL);
}

TEST(cpu_list_first_w)
{
    int all[MQS_MAX_WORKERS], one[MQS_MAX_WORKERS];
    int n = bench_cpu_list(0, all, MQS_MAX_WORKERS);
    CHECK_EQ(n, bench_cpus_allowed());
    CHECK_EQ(bench_cpu_list(1, one, MQS_MAX_WORKERS), 1);
    CHECK_EQ(one[0], all[0]);
    for (int i = 1; i < n; i++)
        CHECK_LT(all[i - 1], all[i]);
    cpu_set_t set;
    bench_cpuset_of(all, n, &set);
    CHECK_EQ(CPU_COUNT(&set), n);
}
