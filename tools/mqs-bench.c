/*
 * mqs-bench - the classic scheduler experiments, run against mqs's
 * policies side by side:  mqs-bench <experiment> [options].
 *
 * The CLI is a table of experiments (name, one-line description, entry
 * point); each experiment is one file under bench/ that parses its own
 * options with the shared helpers in bench/common.c and prints through
 * bench/output.c, so every experiment reports in the same schema
 * (aligned table, --csv or --json).  Adding one is a line here and a
 * declaration of its table entry (bench_exp_t) in bench/common.h.
 *
 * Exit status: 0 success, 1 a measurement failed, 2 a usage error.
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "expkit.h"
#include "mqs.h"

struct experiment {
    const char *name;
    const char *description;
    const bench_exp_t *exp;            /* run by bench_exp_main, or */
    int (*run)(int argc, char **argv); /* its own main (report)     */
};

static const struct experiment experiments[] = {
    {"yield",
     "ns per yield vs tasks: policies, kernel sched_yield, bare switch floor",
     &bench_yield_exp, NULL},
    {"ring", "lmbench lat_ctx: us per switch round a ring of N tasks",
     &bench_ring_exp, NULL},
    {"pipe", "lmbench lat_pipe/bw_pipe: one-byte round trip, 64 KiB MiB/s",
     &bench_pipe_exp, NULL},
    {"wake", "latt/schbench: wake-to-run delay percentiles, with hogs",
     &bench_wake_exp, NULL},
    {"mixed",
     "short (10% duty) and long tasks: records/s, wait time, "
     "migrations",
     &bench_mixed_exp, NULL},
    {"spawn", "skynet: a tree of 10^6 spawned tasks: ns per task, peak RSS",
     &bench_spawn_exp, NULL},
    {"chat", "chatroom: rooms of 20 users broadcasting: messages/s",
     &bench_chat_exp, NULL},
    {"echo", "echo server: requests/s and p50/p99/p99.9 over loopback TCP",
     &bench_echo_exp, NULL},
    {"report", "run the standard set of experiments into an HTML report", NULL,
     bench_report_main},
};

#define NEXPERIMENTS (sizeof experiments / sizeof experiments[0])

#define MQS_BENCH_STR2(x) #x
#define MQS_BENCH_STR(x) MQS_BENCH_STR2(x)
/* The version of the header mqs-bench was built with. */
#define MQS_BENCH_VERSION                                                   \
    MQS_BENCH_STR(MQS_VERSION_MAJOR) "." MQS_BENCH_STR(MQS_VERSION_MINOR) "." \
        MQS_BENCH_STR(MQS_VERSION_PATCH)

static void usage(FILE *out)
{
    fprintf(out, "usage: mqs-bench <experiment> [options]\n"
                 "       mqs-bench <experiment> --help\n"
                 "       mqs-bench --version\n\n"
                 "experiments:\n");
    for (size_t i = 0; i < NEXPERIMENTS; i++)
        fprintf(out, "  %-10s %s\n", experiments[i].name,
                experiments[i].description);
    fprintf(out,
            "\nmqs %d.%d.%d; output: an aligned table, --csv or "
            "--json.  Exit status: 0 ok,\n1 a measurement failed, 2 a "
            "usage error.\n",
            MQS_VERSION_MAJOR, MQS_VERSION_MINOR, MQS_VERSION_PATCH);
}

static const struct experiment *find_experiment(const char *name)
{
    for (size_t i = 0; i < NEXPERIMENTS; i++)
        if (strcmp(experiments[i].name, name) == 0)
            return &experiments[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return BENCH_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("mqs-bench (mqs %s, library %s), commit %s\n",
               MQS_BENCH_VERSION, mqs_version(), bench_build_commit());
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    const struct experiment *e = find_experiment(argv[1]);
    if (!e) {
        fprintf(stderr, "mqs-bench: unknown experiment '%s'\n\n", argv[1]);
        usage(stderr);
        return BENCH_EXIT_USAGE;
    }
    if (e->exp)
        return bench_exp_main(e->exp, argc - 1, argv + 1);
    return e->run(argc - 1, argv + 1);
}
