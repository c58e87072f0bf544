/*
 * test_peers.c - the peer programs (mqs-peer-go, mqs-peer-fiber), run
 * through mqs-bench's own runner (bench/peer.c) for every experiment of
 * bench/peers/PROTOCOL.md with tiny parameters: the line parses, the
 * keys the protocol names are there, and the values are sane (skynet's
 * sum exact, rates positive, percentiles ordered, fairness in [0, 1]),
 * unsupported variants exit 3 and bad arguments exit 2.  No timing is
 * compared: the figures only have to be what the protocol says they are.
 *
 * The peers are optional: a peer that was not built (its toolchain is
 * not installed; `make peers`) makes its cases pass with a SKIP line.
 */
#include <errno.h>
#include <math.h>

#include "check.h"

#include "../bench/common.c"
#include "../bench/report_machine.c"
#include "../bench/output.c"
#include "../bench/peer.c"
#include "../bench/plot.c"

/* Point MQS_PEER_DIR at build/peers/ (beside tests/); false, with a SKIP
 * line, when the peer is not there. */
static bool peer_built(const char *peer)
{
    static char dir[PATH_MAX / 2];
    char path[PATH_MAX];
    CHECK(exe_dir(dir, sizeof dir - 16));
    strcat(dir, "../peers");
    setenv("MQS_PEER_DIR", dir, 1);
    snprintf(path, sizeof path, "%s/mqs-peer-%s", dir, peer);
    if (access(path, X_OK) == 0)
        return true;
    printf("SKIP: %s not built (install its toolchain: make peers)\n", path);
    return false;
}

/* Run one measurement, which must succeed. */
static void run_ok(const char *peer, const char *exp, const char *const *args,
                   bench_peer_result_t *r)
{
    char why[128] = "";
    int st = bench_peer_run(peer, exp, args, 0, r, why, sizeof why);
    if (st != BENCH_PEER_OK)
        CHECK__FAIL("mqs-peer-%s %s: status %d (%s)", peer, exp, st, why);
}

/* key's value, which must be present, finite and within [lo, hi]. */
static double val(const bench_peer_result_t *r, const char *key, double lo,
                  double hi)
{
    double v = bench_peer_get(r, key);
    if (!(v >= lo && v <= hi))
        CHECK__FAIL("%s = %g, want %g..%g", key, v, lo, hi);
    return v;
}

#define PEERS(body)                                                            \
    do {                                                                       \
        static const char *const peers[] = {"go", "fiber"};                    \
        for (int p__ = 0; p__ < 2; p__++) {                                    \
            const char *peer = peers[p__];                                     \
            if (peer_built(peer))                                              \
                body;                                                          \
        }                                                                      \
    } while (0)

static void yield_case(const char *peer)
{
    const char *args[] = {"tasks=4", "workers=2", "seconds=0.05", NULL};
    bench_peer_result_t r;
    run_ok(peer, "yield", args, &r);
    val(&r, "ns_per_yield", 1e-3, 1e9);
    val(&r, "fairness_min_over_mean", 0, 1);
    val(&r, "zero_work_tasks", 0, 4);
    val(&r, "norm_dev", 0, 4);
    CHECK_EQ(val(&r, "workers", 1, 2), 2);
}

TEST(peer_yield) { PEERS(yield_case(peer)); }

static void ring_case(const char *peer)
{
    const char *args[] = {"tasks=4", "size_kib=1", "workers=1", "seconds=0.05",
                          NULL};
    bench_peer_result_t r;
    run_ok(peer, "ring", args, &r);
    val(&r, "hop_ns", 1e-3, 1e9);
    val(&r, "touch_ns", 1e-3, 1e9);
    const char *none[] = {"tasks=4", "size_kib=0", "seconds=0.05", NULL};
    run_ok(peer, "ring", none, &r);
    CHECK(val(&r, "touch_ns", 0, 0) == 0);
}

TEST(peer_ring) { PEERS(ring_case(peer)); }

static void pipe_case(const char *peer)
{
    bench_peer_result_t r;
    const char *same[] = {"mode=latency", "placement=same", "workers=2",
                          "seconds=0.05", NULL};
    run_ok(peer, "pipe", same, &r);
    val(&r, "rtt_ns", 1e-3, 1e9);
    CHECK_EQ(val(&r, "workers", 1, 1), 1); /* same: forced to one worker */
    const char *cross[] = {"mode=latency", "placement=cross", "workers=1",
                           "seconds=0.05", NULL};
    run_ok(peer, "pipe", cross, &r);
    val(&r, "rtt_ns", 1e-3, 1e9);
    CHECK_EQ(val(&r, "workers", 2, 2), 2);
    const char *bw[] = {"mode=bandwidth", "msg_kib=64", "workers=2",
                        "seconds=0.05", NULL};
    run_ok(peer, "pipe", bw, &r);
    val(&r, "mb_per_s", 1e-3, 1e9);
}

TEST(peer_pipe) { PEERS(pipe_case(peer)); }

static void wake_case(const char *peer)
{
    bench_peer_result_t r;
    const char *args[] = {"clients=2",    "hogs=1",    "hog_yield_us=100",
                          "class=normal", "workers=2", "seconds=0.1",
                          NULL};
    run_ok(peer, "wake", args, &r);
    double n = val(&r, "samples", 1, 1e9);
    double p50 = val(&r, "p50_ns", 0, 1e12), p90 = val(&r, "p90_ns", p50, 1e12);
    double p99 = val(&r, "p99_ns", p90, 1e12);
    double p999 = val(&r, "p999_ns", p99, 1e12);
    val(&r, "max_ns", p999, 1e12);
    val(&r, "mean_ns", 0, 1e12);
    if (n > 1)
        val(&r, "stdev_ns", 0, 1e12);
    const char *rt[] = {"clients=2", "class=rt", "seconds=0.05", NULL};
    char why[64];
    CHECK_EQ(bench_peer_run(peer, "wake", rt, 0, &r, why, sizeof why),
             BENCH_PEER_UNSUPPORTED); /* neither has a realtime class */
    CHECK_STR_CONTAINS(why, "realtime"); /* the peer's reason */
    /* Hogs that never yield: Go preempts them, a fiber never is. */
    const char *spin[] = {"clients=2", "hogs=1", "workers=2", "seconds=0.05",
                          NULL};
    if (strcmp(peer, "go") == 0)
        run_ok(peer, "wake", spin, &r);
    else {
        CHECK_EQ(bench_peer_run(peer, "wake", spin, 0, &r, why, sizeof why),
                 BENCH_PEER_UNSUPPORTED);
        CHECK_STR_CONTAINS(why, "preempted");
    }
}

TEST(peer_wake) { PEERS(wake_case(peer)); }

static void mixed_case(const char *peer)
{
    bench_peer_result_t r;
    const char *args[] = {"short=2",   "long=1",      "burst_records=20",
                          "workers=2", "seconds=0.1", NULL};
    run_ok(peer, "mixed", args, &r);
    val(&r, "records_per_s", 1, 1e12);
    double smin = val(&r, "short_min", 0, 1e12);
    val(&r, "short_mean", smin, 1e12);
    double lmin = val(&r, "long_min", 0, 1e12);
    CHECK_NEAR(val(&r, "long_mean", lmin, 1e12), lmin, 0); /* one task */
    val(&r, "starved", 0, 3);
    const char *nolong[] = {"short=1",   "long=0",       "burst_records=20",
                            "workers=1", "seconds=0.05", NULL};
    run_ok(peer, "mixed", nolong, &r);
    CHECK(isnan(bench_peer_get(&r, "long_min"))); /* no long task */
    /* neither runtime exposes runnable-not-running time: left out */
    CHECK(isnan(bench_peer_get(&r, "wait_ns")));
    /* the burst is mqs-bench's calibration: without it, a usage error */
    const char *nob[] = {"short=2", "long=1", "seconds=0.05", NULL};
    char why[64];
    CHECK_EQ(bench_peer_run(peer, "mixed", nob, 0, &r, why, sizeof why),
             BENCH_PEER_FAILED);
}

TEST(peer_mixed) { PEERS(mixed_case(peer)); }

static void spawn_case(const char *peer)
{
    bench_peer_result_t r;
    const char *args[] = {"tasks=1000", "fanout=10", "workers=2", NULL};
    run_ok(peer, "spawn", args, &r);
    CHECK(val(&r, "sum", 0, 1e12) == 1000.0 * 999 / 2);
    CHECK(val(&r, "tasks_created", 0, 1e12) == 1111);
    val(&r, "ns_per_task", 1e-3, 1e9);
    val(&r, "peak_rss_kib", 1, 1e9);
    const char *bin[] = {"tasks=8", "fanout=2", "workers=1", NULL};
    run_ok(peer, "spawn", bin, &r);
    CHECK(val(&r, "sum", 0, 1e12) == 28);
    CHECK(val(&r, "tasks_created", 0, 1e12) == 15);
    /* live mode: Go holds the tasks; Boost.Fiber says it has no such
     * variant */
    const char *live[] = {"live=2000", "workers=1", NULL};
    if (strcmp(peer, "go") == 0) {
        run_ok(peer, "spawn", live, &r);
        CHECK(val(&r, "tasks_created", 0, 1e12) == 2000);
        val(&r, "ns_per_task", 1e-3, 1e9);
        val(&r, "rss_bytes_per_task", 0, 1e9);
        val(&r, "mappings", 1, 1e9);
    } else {
        char why[64];
        CHECK_EQ(bench_peer_run(peer, "spawn", live, 0, &r, why, sizeof why),
                 BENCH_PEER_UNSUPPORTED);
    }
}

TEST(peer_spawn) { PEERS(spawn_case(peer)); }

static void chat_case(const char *peer)
{
    bench_peer_result_t r;
    const char *args[] = {"rooms=2",      "users=3",   "messages=5",
                          "msg_bytes=16", "workers=2", NULL};
    run_ok(peer, "chat", args, &r);
    val(&r, "msgs_per_s", 1e-3, 1e12);
}

TEST(peer_chat) { PEERS(chat_case(peer)); }

/* Bad arguments exit 2 (reported as a failure); --help exits 0. */
static void usage_case(const char *peer)
{
    static const char *const bad[][3] = {
        {"tasks=0", NULL, NULL},         /* out of range      */
        {"tasks=abc", NULL, NULL},       /* not a number      */
        {"bogus=1", NULL, NULL},         /* unknown key       */
        {"tasks", NULL, NULL},           /* not key=value     */
        {"tasks=1", "tasks=2", NULL},    /* given twice       */
    };
    bench_peer_result_t r;
    char why[128];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(bench_peer_run(peer, "yield", bad[i], 0, &r, why, sizeof why),
                 BENCH_PEER_FAILED);
        CHECK_STR_CONTAINS(why, "exit 2");
    }
    const char *ten[] = {"tasks=12", "fanout=10", NULL}; /* not a power */
    CHECK_EQ(bench_peer_run(peer, "spawn", ten, 0, &r, why, sizeof why),
             BENCH_PEER_FAILED);
    CHECK_STR_CONTAINS(why, "exit 2");
    CHECK_EQ(bench_peer_run(peer, "nosuch", NULL, 0, &r, why, sizeof why),
             BENCH_PEER_FAILED);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "'%s/mqs-peer-%s' --help >/dev/null",
             getenv("MQS_PEER_DIR"), peer);
    CHECK_EQ(system(cmd), 0);
}

TEST(peer_bad_arguments_exit_2) { PEERS(usage_case(peer)); }

/* The yield experiment's go and fiber rows, through mqs-bench itself:
 * a value and fairness for a built peer, "not installed" for one that
 * is not, and exit status 0 either way; go1 and fiber1 run the same
 * programs on one thread where go and fiber use --workers 2. */
TEST(mqs_bench_yield_has_peer_rows)
{
    char dir[PATH_MAX / 2], cmd[PATH_MAX + 128];
    CHECK(exe_dir(dir, sizeof dir));
    unsetenv("MQS_PEER_DIR"); /* mqs-bench finds build/peers/ itself */
    snprintf(cmd, sizeof cmd, "%s../mqs-bench", dir);
    if (access(cmd, X_OK) != 0) {
        printf("SKIP: %s not built (MQS_BUILD_BENCH=OFF)\n", cmd);
        return;
    }
    /* A cross build runs mqs-bench under the emulator (tests/CMakeLists) */
    const char *emu = getenv("MQS_TEST_EMULATOR");
    snprintf(cmd, sizeof cmd,
             "%s '%s../mqs-bench' yield --policy go,fiber,go1,fiber1,floor "
             "--tasks 2 --workers 2 --seconds 0.02 --repeats 2 --budget 1 "
             "--csv",
             emu ? emu : "", dir);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, p)) {
        char row[16];
        if (sscanf(line, "yield,%15[^,],", row) != 1 || !bench_peer_is(row))
            continue;
        rows++;
        char program[16];
        snprintf(program, sizeof program, "%.*s", (int)strcspn(row, "1"), row);
        bool built = peer_built(program);
        /* ...,param,value,unit,ci95,frc,fair,zero,ndev,repeats,note */
        char *f[13] = {0};
        int n = 0;
        for (char *s = line; s && n < 13; n++) {
            f[n] = s;
            s = strchr(s, ',');
            if (s)
                *s++ = '\0';
        }
        CHECK_EQ(n, 13);
        if (built && bench_peer_one_thread(row))
            CHECK_EQ(atoi(f[2]), 1);
        else if (built)
            CHECK_EQ(atoi(f[2]), 2);
        if (built) {
            CHECK(strtod(f[4], NULL) > 0);
            CHECK(strtod(f[8], NULL) >= 0 && strtod(f[8], NULL) <= 1);
            CHECK(f[12][0] == '\n' || f[12][0] == '\0');
        } else {
            CHECK_STR_CONTAINS(f[12], "not installed");
        }
    }
    CHECK_EQ(pclose(p), 0);
    CHECK_EQ(rows, 4);
}
