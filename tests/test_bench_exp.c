/*
 * test_bench_exp.c - the mixed, spawn, chat, wake and echo experiments
 * of mqs-bench:
 * their option rules, the /proc parsers, the tree and room arithmetic
 * against hand-computed values, a peer row through the toolkit's peer
 * kind, and one small real run of each experiment (policy and kernel
 * rows) whose correctness checks (leaf sum, delivery count) must pass.
 * The toolkit itself (options, driver) is tested in test_expkit.c.
 *
 * Like test_stats.c, the bench sources are compiled in directly; every
 * static there has its file's prefix, so they share this unit.
 */
#include <math.h>
#include <sys/stat.h>

#include "check.h"
#include "bench_check.h"

#include "../bench/chat.c"
#include "../bench/common.c"
#include "../bench/report_machine.c"
#include "../bench/echo.c"
#include "../bench/mixed.c"
#include "../bench/output.c"
#include "../bench/peer.c"
#include "../bench/plot.c"
#include "../bench/expkit.c"
#include "../bench/histogram.c"
#include "../bench/point.c"
#include "../bench/spawn.c"
#include "../bench/stats.c"
#include "../bench/wake.c"

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

TEST(wake_hog_yield_defaults_to_spinning)
{
    char *argv[] = {"wake", "--hogs", "2", NULL};
    int argc = 3;
    struct wake_args a = {0};
    bench_sweep_t sw = {.arg = &a};
    CHECK_EQ(wake_options(&sw, &argc, argv), 0);
    CHECK_EQ(a.cfg.hogs, 2);
    CHECK_EQ(a.cfg.hog_yield_us, 0);
    char *b[] = {"wake", "--hog-yield", "500", NULL};
    argc = 3;
    CHECK_EQ(wake_options(&sw, &argc, b), 0);
    CHECK_EQ(a.cfg.hog_yield_us, 500);
    char *c[] = {"wake", "--hog-slice", "500", NULL}; /* its old name */
    argc = 3;
    CHECK_EQ(wake_options(&sw, &argc, c), 0);
    CHECK_EQ(argc, 3); /* not taken: the common parser refuses it */
}

TEST(mixed_lists_must_pair)
{
    char *argv[] = {"mixed", "--short", "5,4", "--long", "5", NULL};
    int argc = 5;
    struct mixed_args a = {0};
    bench_sweep_t sw = {.arg = &a};
    CHECK_EQ(mixed_options(&sw, &argc, argv), BENCH_EXIT_USAGE);
    free(a.shorts);
    free(a.longs);
    char *b[] = {"mixed", "--short", "0", "--long", "0", NULL};
    argc = 5;
    a = (struct mixed_args){0};
    CHECK_EQ(mixed_options(&sw, &argc, b), BENCH_EXIT_USAGE);
    free(a.shorts);
    free(a.longs);
    char *c[] = {"mixed", NULL};
    argc = 1;
    a = (struct mixed_args){0};
    CHECK_EQ(mixed_options(&sw, &argc, c), 0);
    CHECK_EQ(a.n, 3);
    CHECK_EQ(a.shorts[2], 16);
    CHECK_EQ(a.longs[2], 0);
    CHECK(!a.checkpoint); /* long tasks: no scheduling point */
    free(a.shorts);
    free(a.longs);
    char *d[] = {"mixed", "--long-point", "checkpoint", NULL};
    argc = 3;
    a = (struct mixed_args){0};
    CHECK_EQ(mixed_options(&sw, &argc, d), 0);
    CHECK(a.checkpoint);
    free(a.shorts);
    free(a.longs);
    char *e[] = {"mixed", "--long-point=yield", NULL};
    argc = 2;
    a = (struct mixed_args){0};
    CHECK_EQ(mixed_options(&sw, &argc, e), BENCH_EXIT_USAGE);
    free(a.shorts);
    free(a.longs);
}

TEST(spawn_sizes_must_be_powers_of_the_fanout)
{
    CHECK(spawn_is_power(1000000, 10));
    CHECK(spawn_is_power(1, 10));
    CHECK(spawn_is_power(64, 2));
    CHECK(!spawn_is_power(1000, 3));
    CHECK(!spawn_is_power(0, 10));
    CHECK(!spawn_is_power(20, 10));
    bench_opts_t o = {0};
    int t[] = {100, 27};
    o.tasks = t;
    o.ntasks = 2;
    CHECK_EQ(spawn_check_sizes(&o, 10), BENCH_EXIT_USAGE);
    o.ntasks = 1;
    CHECK_EQ(spawn_check_sizes(&o, 10), 0);
}

TEST(chat_options_defaults_and_ranges)
{
    char *argv[] = {"chat", "--msg-bytes", "8", NULL};
    int argc = 3;
    struct chat_args a = {0};
    bench_sweep_t sw = {.arg = &a};
    CHECK_EQ(chat_options(&sw, &argc, argv), BENCH_EXIT_USAGE);
    free(a.rooms);
    char *b[] = {"chat", "--rooms=3", NULL};
    argc = 2;
    a = (struct chat_args){0};
    CHECK_EQ(chat_options(&sw, &argc, b), 0);
    CHECK_EQ(a.nrooms, 1);
    CHECK_EQ(a.rooms[0], 3);
    CHECK_EQ(a.s.users, 20);
    CHECK_EQ(a.s.messages, 100);
    CHECK_EQ(a.s.bytes, 100);
    CHECK(a.s.tcp);
    free(a.rooms);
    char *c[] = {"chat", "--transport", "chan", NULL};
    argc = 3;
    a = (struct chat_args){0};
    CHECK_EQ(chat_options(&sw, &argc, c), 0);
    CHECK(!a.s.tcp);
    free(a.rooms);
    char *d[] = {"chat", "--transport=udp", NULL};
    argc = 2;
    a = (struct chat_args){0};
    CHECK_EQ(chat_options(&sw, &argc, d), BENCH_EXIT_USAGE);
    free(a.rooms);
}

/* ------------------------------------------------------------------ */
/* Pure arithmetic and parsing                                         */
/* ------------------------------------------------------------------ */

TEST(mixed_param_has_no_comma)
{
    char buf[48];
    mixed_param(buf, sizeof buf, 16, 0);
    CHECK_STREQ(buf, "short/long=16/0");
    CHECK(strchr(buf, ',') == NULL);
}

TEST(mixed_proc_parsers)
{
    uint64_t v = 0;
    CHECK_EQ(mixed_schedstat_wait("123456 789 42\n", &v), 0);
    CHECK_EQ(v, 789);
    CHECK_EQ(mixed_schedstat_wait("garbage", &v), -1);
    const char *sched = "x (1, #threads: 1)\n---\n"
                        "se.sum_exec_runtime      :   1.0\n"
                        "se.nr_migrations         :   17\n"
                        "nr_switches              :   3\n"
                        "nr_voluntary_switches    :   1\n"
                        "nr_involuntary_switches  :   2\n";
    CHECK_EQ(mixed_sched_field(sched, "se.nr_migrations", &v), 0);
    CHECK_EQ(v, 17);
    CHECK_EQ(mixed_sched_field(sched, "nr_involuntary_switches", &v), 0);
    CHECK_EQ(v, 2);
    CHECK_EQ(mixed_sched_field("nr_switches : 3\n", "se.nr_migrations", &v),
             -1);
}

TEST(mixed_rates_and_window_extras)
{
    CHECK_NEAR(mixed_rate(100, 300, 2000000000u), 100.0, 1e-9);
    CHECK(isnan(mixed_rate(1, 2, 0)));
    struct mixed_snap a = {.t = 1000000000u,
                           .wait = 0,
                           .migr = 10,
                           .stops = 100,
                           .wait_ok = true,
                           .migr_ok = true};
    struct mixed_snap b = a;
    b.t += 500000000u;   /* half a second */
    b.wait = 250000000u; /* 250 ms of waiting */
    b.migr = 20;
    b.stops = 150;
    b.rs.pulls_idle = 3;
    b.rs.pulls_newidle = 4;
    b.rs.pulls_periodic = 5;
    b.rs.pulls_priority = 6;
    double x[MIXED_X_COUNT];
    point_preset(x, MIXED_X_COUNT);
    mixed_extras_of(&a, &b, false, x);
    CHECK_NEAR(x[MIXED_X_WAIT], 500.0, 1e-9); /* ms per second */
    CHECK_NEAR(x[MIXED_X_MIGR], 20.0, 1e-9);
    CHECK_NEAR(x[MIXED_X_STOPS], 100.0, 1e-9);
    CHECK_NEAR(x[MIXED_X_IDLE], 6.0, 1e-9);
    CHECK_NEAR(x[MIXED_X_NEWIDLE], 8.0, 1e-9);
    CHECK_NEAR(x[MIXED_X_PERIODIC], 10.0, 1e-9);
    CHECK_NEAR(x[MIXED_X_PRIO], 12.0, 1e-9);
    point_preset(x, MIXED_X_COUNT);
    b.wait_ok = false;
    mixed_extras_of(&a, &b, true, x);
    CHECK(isnan(x[MIXED_X_WAIT]));
    CHECK_NEAR(x[MIXED_X_MIGR], 20.0, 1e-9);
    CHECK_NEAR(x[MIXED_X_STOPS], 100.0, 1e-9); /* the kernel's too */
    CHECK(isnan(x[MIXED_X_IDLE]));
    point_preset(x, MIXED_X_COUNT);
    b.migr_ok = false;
    mixed_extras_of(&a, &b, true, x);
    CHECK(isnan(x[MIXED_X_MIGR]));
    CHECK(isnan(x[MIXED_X_STOPS]));
}

/* Two short tasks and three long ones over half a second; one long task
 * made nothing. */
TEST(mixed_fairness_by_kind)
{
    uint64_t a[] = {0, 10, 100, 100, 7}, b[] = {50, 40, 600, 400, 7};
    double x[MIXED_X_COUNT];
    point_preset(x, MIXED_X_COUNT);
    mixed_fairness(a, b, 2, 5, 500000000u, x);
    CHECK_NEAR(x[MIXED_X_SHORT_MIN], 60, 1e-9);
    CHECK_NEAR(x[MIXED_X_SHORT_MEAN], 80, 1e-9);
    CHECK_NEAR(x[MIXED_X_LONG_MIN], 0, 1e-9);
    CHECK_NEAR(x[MIXED_X_LONG_MEAN], 1600.0 / 3, 1e-9);
    CHECK_NEAR(x[MIXED_X_STARVED], 1, 0);
    point_preset(x, MIXED_X_COUNT);
    mixed_fairness(a, b, 0, 2, 500000000u, x); /* no short tasks */
    CHECK(isnan(x[MIXED_X_SHORT_MIN]) && isnan(x[MIXED_X_SHORT_MEAN]));
    CHECK_NEAR(x[MIXED_X_LONG_MEAN], 80, 1e-9);
}

TEST(spawn_tree_arithmetic)
{
    CHECK_NEAR(spawn_tree_tasks(1000000, 10), 1111111, 0);
    CHECK_NEAR(spawn_tree_tasks(8, 2), 15, 0);
    CHECK_NEAR(spawn_tree_tasks(1, 10), 1, 0);
    CHECK_EQ(spawn_expected_sum(1000000), UINT64_C(499999500000));
    CHECK_EQ(spawn_expected_sum(1), 0);
}

TEST(spawn_peer_sum_is_checked)
{
    struct spawn_point sp = {100, 10, 10000, 0};
    bench_peer_result_t r;
    CHECK_EQ(bench_peer_parse("ns_per_task=300 sum=4950", &r), 0);
    CHECK_EQ(spawn_peer_check(&r, &sp), 0);
    CHECK_EQ(bench_peer_parse("ns_per_task=300 sum=4949", &r), 0);
    CHECK_EQ(spawn_peer_check(&r, &sp), -1);
    CHECK_EQ(bench_peer_parse("ns_per_task=300", &r), 0);
    CHECK_EQ(spawn_peer_check(&r, &sp), -1);
}

TEST(chat_arithmetic_and_validity)
{
    struct chat_shape s = {10, 20, 100, 100, true};
    CHECK_NEAR(chat_deliveries(&s), 380000, 0);
    struct chat_head h = {2, 5, 0};
    CHECK(chat_valid(&h, 2, 4, 20));
    CHECK(!chat_valid(&h, 2, 5, 20)); /* its own message */
    CHECK(!chat_valid(&h, 1, 4, 20)); /* another room's */
    CHECK(!chat_valid(&h, 2, 4, 5));  /* no such user */
    /* The heads of a stream of 16-byte messages read in pieces that cut
     * them anywhere, a head included. */
    struct chat_run run = {.s = {1, 20, 1, 16, true}};
    struct chat_user u = {.run = &run, .room = 2, .user = 4};
    unsigned char stream[48] = {0};
    for (int m = 0; m < 3; m++)
        memcpy(stream + 16 * m, &h, sizeof h);
    CHECK(chat_heads_ok(&u, (char *)stream, 5, 0));
    CHECK(chat_heads_ok(&u, (char *)stream + 5, 20, 5));
    CHECK(chat_heads_ok(&u, (char *)stream + 25, 23, 25));
    h.user = 4; /* then one from itself, cut in its head */
    memcpy(stream + 16, &h, sizeof h);
    CHECK(chat_heads_ok(&u, (char *)stream, 20, 0));
    CHECK(!chat_heads_ok(&u, (char *)stream + 20, 28, 20));
}

TEST(peer_row_missing_is_a_note)
{
    setenv("MQS_PEER_DIR", "/nonexistent-mqs-peer-dir", 1);
    bench_opts_t o = {0};
    o.prec = (bench_precision_t){2, 2, 0.01, 10};
    o.seconds = 0.1;
    bench_progress_t prog = {0};
    bench_row_spec_t row = {"go", true};
    struct chat_shape cp = {1, 3, 2, 16, true};
    bench_point_t p = {.experiment = "chat",
                       .o = &o,
                       .progress = &prog,
                       .row = &row,
                       .unit = "msgs/s",
                       .nextra = 1,
                       .kind = &bench_peer_kind,
                       .ctx = &cp};
    bench_peer_args_init(&p.peer_args);
    chat_peer_args(&p, &cp);
    CHECK_STREQ(p.peer_args.list[0], "rooms=1");
    CHECK_STREQ(p.peer_args.list[3], "msg_bytes=16");
    CHECK_STREQ(p.peer_args.list[4], "transport=tcp");
    bench_result_t r;
    CHECK_EQ(bench_point_run(&p, &r), 0);
    CHECK(isnan(r.value));
    CHECK_STREQ(r.note, "not installed");
}

/* ------------------------------------------------------------------ */
/* Small real runs                                                     */
/* ------------------------------------------------------------------ */

static bench_opts_t small_opts(void)
{
    bench_opts_t o = {0};
    o.workers = 2;
    o.seconds = 0.05;
    o.prec = (bench_precision_t){1, 1, 0.5, 0};
    return o;
}

static int run_point(const bench_opts_t *o, const char *rowname, bool pseudo,
                     const bench_point_kind_t *kind, void *ctx, int nextra,
                     bench_result_t *r)
{
    static bench_row_spec_t row;
    static bench_progress_t prog;
    row = (bench_row_spec_t){(char *)rowname, pseudo};
    bench_point_t p = {.experiment = "t",
                       .o = o,
                       .progress = &prog,
                       .row = &row,
                       .unit = "x",
                       .nextra = nextra,
                       .kind = kind,
                       .ctx = ctx};
    int rc = bench_point_run(&p, r);
    static char note[96]; /* r->note points into p, which ends here */
    snprintf(note, sizeof note, "%s", r->note ? r->note : "");
    r->note = note[0] ? note : NULL;
    return rc;
}

TEST(spawn_small_tree_sums_right_on_mq_and_kernel)
{
    bench_opts_t o = small_opts();
    bench_result_t r;
    for (int k = 0; k < 2; k++) {
        struct spawn_point sp = {1000, 10, 10000, 0};
        CHECK_EQ(run_point(&o, k ? "kernel" : "mq", k == 1, &spawn_kind, &sp,
                           SPAWN_X_COUNT, &r),
                 0);
        CHECK(r.value > 0 && isfinite(r.value));
        CHECK(r.extra[SPAWN_X_RSS] > 0);
    }
}

/* --trace: each point's runtimes are made in forked children, and each
 * child's trace gets its own file (the warm-up's t.json, the measured
 * run's t-2.json, ...), not one name they all overwrite. */
TEST(spawn_children_trace_into_files_of_their_own)
{
    char dir[] = "/tmp/mqs-spawn-trace-XXXXXX", path[64], name[80];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.json", dir);
    bench_trace_set(path);
    bench_opts_t o = small_opts();
    bench_result_t r;
    struct spawn_point sp = {100, 10, 10000, 0};
    CHECK_EQ(run_point(&o, "mq", false, &spawn_kind, &sp, SPAWN_X_COUNT, &r),
             0);
    bench_trace_set(NULL);
    int files = 0;
    struct stat st;
    for (int n = 1; n <= 8; n++) {
        if (n == 1)
            snprintf(name, sizeof name, "%s", path);
        else
            snprintf(name, sizeof name, "%s/t-%d.json", dir, n);
        if (stat(name, &st) != 0)
            break;
        CHECK(st.st_size > 0);
        files++;
        unlink(name);
    }
    rmdir(dir);
    CHECK_GE(files, 2); /* the warm-up and at least one measured run */
}

/* --live: every task alive at once, a few mappings for all of them (the
 * stacks' slabs), RSS per task of about a page; the kernel row is not
 * run. */
TEST(spawn_live_holds_every_task)
{
    bench_opts_t o = small_opts();
    bench_result_t r;
    struct spawn_point sp = {1, 10, 10000, 5000};
    CHECK_EQ(run_point(&o, "mq", false, &spawn_kind, &sp, SPAWN_L_COUNT, &r),
             0);
    CHECK(r.value > 0 && isfinite(r.value));
    CHECK_GT(r.extra[SPAWN_L_RSS], 1024);
    CHECK_GT(r.extra[SPAWN_L_MAPS], 0);
#ifndef MQS_TSAN
    /* TSan keeps a fiber's state per task (937 KB of RSS a task, and
     * mappings of its own): the bounds hold in the other builds, the
     * mappings' where guards are markers (not mprotect: before Linux
     * 6.13, or under qemu-user). */
    CHECK_LT(r.extra[SPAWN_L_RSS], 64 * 1024);
    if (mqs__stack_guard_markers())
        CHECK_LT(r.extra[SPAWN_L_MAPS], 200);
#endif
    CHECK_EQ(run_point(&o, "kernel", true, &spawn_kind, &sp, SPAWN_L_COUNT,
                       &r),
             0);
    CHECK(isnan(r.value));
    CHECK(r.note && strstr(r.note, "--live"));
}

TEST(spawn_kernel_above_its_cap_is_skipped)
{
    bench_opts_t o = small_opts();
    bench_result_t r;
    struct spawn_point sp = {1000, 10, 100, 0};
    CHECK_EQ(run_point(&o, "kernel", true, &spawn_kind, &sp, SPAWN_X_COUNT, &r),
             0);
    CHECK(isnan(r.value));
    CHECK(r.note && strstr(r.note, "--kernel-tasks 100"));
}

TEST(chat_small_rooms_deliver_everything)
{
    bench_opts_t o = small_opts();
    bench_result_t r;
    const char *rows[3] = {"mq", "kernel", "epoll"};
    for (int k = 0; k < 6; k++) { /* each row over tcp, then over chan */
        struct chat_shape cp = {2, 4, 50, 100, k < 3};
        CHECK_EQ(run_point(&o, rows[k % 3], k % 3 != 0, &chat_kind, &cp,
                           CHAT_X_COUNT, &r),
                 0);
        CHECK(r.value > 0 && isfinite(r.value));
        CHECK_NEAR(r.extra[CHAT_X_TASKS], 32, 0);
    }
}

TEST(chat_mq_run_counts_every_delivery)
{
    mqs_runtime_t *rt;
    CHECK_EQ(bench_runtime_open("chat", "mq", 2, 0, &rt), 0);
    double secs;
    for (int tcp = 0; tcp < 2; tcp++) { /* twice each: one runtime */
        for (int again = 0; again < 2; again++) {
            struct chat_run run = {
                .s = {3, 5, 40, 32, tcp}, .rt = rt, .row = "mq"};
            /* A lost or misrouted message makes chat_check fail it. */
            CHECK_EQ(chat_run_all(&run, &secs), 0);
            CHECK(secs > 0);
        }
    }
    CHECK_EQ(bench_runtime_close("chat", rt), 0);
}

/* The epoll row through send buffers of a few KiB: 100-byte messages
 * that fill out-queue rings (a reader stopped, and resumed at its
 * writer's EPOLLOUT), and 64 KiB ones that every write cuts short.
 * Every receiver checks each message's head and its count (chat_check),
 * so a cut write resumed at the wrong byte, or a reader never resumed
 * (its loop idles out), fails the run. */
TEST(chat_epoll_row_resumes_readers_stopped_by_full_rings)
{
    double secs;
    for (int k = 0; k < 4; k++) { /* chan, tcp; small and big messages */
        bool big = k >= 2;
        struct chat_run run = {
            .s = {big ? 2 : 3, 4, big ? 20 : 300, big ? 65536 : 100, k % 2},
            .loop = true,
            .workers = 2,
            .row = "epoll",
            .loop_sockbuf = 4096};
        CHECK_EQ(chat_run_all(&run, &secs), 0);
        CHECK(secs > 0);
        /* the small shape reaches the path it is here for */
        CHECK(big || atomic_load(&run.loop_stalls) > 0);
    }
}

TEST(mixed_small_window_on_mq_and_kernel)
{
    bench_opts_t o = small_opts();
    bench_result_t r;
    for (int k = 0; k < 2; k++) {
        struct mixed_point mp = {.nshort = 2, .nlong = 1, .n = 3, .burst = 50};
        int rc = run_point(&o, k ? "kernel" : "mq", k == 1,
                           &mixed_kind, &mp,
                           MIXED_X_COUNT, &r);
        CHECK_EQ(rc, 0);
        CHECK(mp.flags == NULL && mp.slots == NULL); /* close freed them */
        CHECK(r.value > 0 && isfinite(r.value));
        CHECK_NEAR(r.extra[MIXED_X_BURST], 50, 0);
        CHECK(r.extra[MIXED_X_SHORT_MIN] >= 0);
        CHECK(r.extra[MIXED_X_SHORT_MEAN] >= r.extra[MIXED_X_SHORT_MIN]);
        CHECK(r.extra[MIXED_X_LONG_MEAN] >= r.extra[MIXED_X_LONG_MIN]);
        CHECK(r.extra[MIXED_X_STARVED] >= 0 && r.extra[MIXED_X_STARVED] <= 3);
        CHECK(r.note == NULL);
        if (k == 0) {
            CHECK(r.extra[MIXED_X_WAIT] >= 0);
            CHECK(r.extra[MIXED_X_IDLE] >= 0);
        } else {
            CHECK(isnan(r.extra[MIXED_X_IDLE]));
        }
    }
}

/* A spinning hog: a preempting runtime and the kernel still run the
 * clients; a runtime without preemption is refused with a note rather
 * than left to hang. */
static void wake_sweep(bool preempt, bench_results_t *rs)
{
    if (!preempt)
        setenv("MQS_PREEMPT", "0", 1);
    bench_row_spec_t rows[] = {{"mq", false}, {"kernel", true}};
    bench_opts_t o = small_opts();
    o.rows = rows;
    o.nrows = 2;
    o.seconds = 0.2;
    struct wake_args a = {.cfg = {.clients = 2, .hogs = 1}};
    bench_sweep_t sw = {.e = &bench_wake_exp, .o = &o, .nparams = 1,
                        .extras = wake_extras, .nextra = WX_COUNT, .arg = &a};
    bench_results_init(rs, "wake", "us", wake_extras, WX_COUNT);
    CHECK_EQ(bench_sweep_run(&sw, rs), 0);
    CHECK_EQ(rs->n, 2 * WS_N);
}

TEST(wake_spinning_hogs_need_preemption)
{
    bench_results_t rs;
    wake_sweep(true, &rs);
    for (int i = 0; i < rs.n; i++)
        CHECK(rs.r[i].extra[WX_SAMPLES] >= 2 && isfinite(rs.r[i].value));
    bench_results_free(&rs);
    wake_sweep(false, &rs);
    CHECK(isnan(rs.r[0].value));
    CHECK_STR_CONTAINS(rs.r[0].note, "--hog-yield");
    CHECK(isfinite(rs.r[WS_N].value)); /* the kernel row */
    bench_results_free(&rs);
}

/* Without preemption the long tasks checkpoint (they would keep their
 * workers from the short tasks), and the row says so. */
TEST(mixed_without_preemption_checkpoints)
{
    setenv("MQS_PREEMPT", "0", 1);
    bench_opts_t o = small_opts();
    bench_result_t r;
    struct mixed_point mp = {.nshort = 2, .nlong = 2, .n = 4, .burst = 50};
    CHECK_EQ(run_point(&o, "mq", false, &mixed_kind, &mp, MIXED_X_COUNT, &r),
             0);
    CHECK(mp.checkpoint);
    CHECK(r.value > 0 && isfinite(r.value));
    CHECK_STR_CONTAINS(r.note, "long tasks checkpoint");
}

TEST(echo_size_option_range)
{
    struct echo_args a = {0};
    bench_sweep_t sw = {.arg = &a};
    char *argv[] = {"echo", NULL};
    int argc = 1;
    CHECK_EQ(echo_options(&sw, &argc, argv), 0);
    CHECK_EQ(a.size, 64);
    char *b[] = {"echo", "--size", "0", NULL};
    argc = 3;
    CHECK_EQ(echo_options(&sw, &argc, b), BENCH_EXIT_USAGE);
    char *c[] = {"echo", "--size=65537", NULL};
    argc = 2;
    CHECK_EQ(echo_options(&sw, &argc, c), BENCH_EXIT_USAGE);
}

/* --connections (the and the help's name) is --tasks under
 * another name: handed on to the common parser as "--tasks=V", and
 * refused beside an explicit --tasks. */
TEST(echo_connections_is_tasks)
{
    struct echo_args a = {0};
    bench_sweep_t sw = {.arg = &a};
    char *b[] = {"echo", "--connections", "5,6", "--size", "100", NULL};
    int argc = 5;
    CHECK_EQ(echo_options(&sw, &argc, b), 0);
    CHECK_EQ(argc, 2);
    CHECK(strcmp(b[1], "--tasks=5,6") == 0);
    CHECK(b[2] == NULL);
    CHECK_EQ(a.size, 100);
    char *c[] = {"echo", "--policy", "mq", "--connections=7", "--", "x",
                 NULL};
    argc = 6;
    CHECK_EQ(echo_options(&sw, &argc, c), 0);
    CHECK_EQ(argc, 6);
    CHECK(strcmp(c[1], "--tasks=7") == 0 && strcmp(c[2], "--policy") == 0);
    CHECK(strcmp(c[4], "--") == 0 && c[6] == NULL);
    char *d[] = {"echo", "--tasks", "1", "--connections", "2", NULL};
    argc = 5;
    CHECK_EQ(echo_options(&sw, &argc, d), BENCH_EXIT_USAGE);
}

/* The server's CPU time a request and over the client's are measured:
 * positive, and the ratio within what a server that reads and writes
 * once a request, as the client does, can cost against it.  A server
 * figure of this thread alone (nearly none), or a go row's without its
 * peer process, falls under the bound; a client that reports no CPU
 * time leaves the columns empty. */
static void check_echo_cpu(const char *row, const bench_result_t *r)
{
    printf("%s: server %.2f us a request, %.2f of the client's\n", row,
           r->extra[EX_SRV_US], r->extra[EX_SRV_CLI]);
    fflush(stdout); /* not again in a forked client's buffer */
    CHECK(isfinite(r->extra[EX_SRV_US]) && r->extra[EX_SRV_US] > 0);
    CHECK(isfinite(r->extra[EX_SRV_CLI]));
    CHECK(r->extra[EX_SRV_CLI] > 0.05 && r->extra[EX_SRV_CLI] < 20);
}

/* Every server row answers every request of a real run: the client
 * (a child process) checks each byte, and a server that saw a cut
 * request or an error fails the run.  Requests of 100 bytes, and of
 * 64 KiB, more than one loopback segment (so reads come in pieces).
 * A window of 0.3 s: under TSan the first request a process's first
 * runtime serves took 5-18 ms, and 60-100 ms on a busy host, past the
 * end of a 50 ms window (the row then rightly says no request
 * completed). */
TEST(echo_every_row_answers_every_request)
{
    bench_opts_t o = small_opts();
    o.seconds = 0.3;
    bench_result_t r;
    const char *rows[] = {"mq", "kernel", "epoll", "cfs"};
    for (int k = 0; k < 8; k++) {
        int shape[2] = {k % 2 ? 3 : 1, k < 4 ? 100 : 65536};
        CHECK_EQ(run_point(&o, rows[k % 4], k % 4 == 1 || k % 4 == 2,
                           &echo_kind, shape, EX_COUNT, &r),
                 0);
        CHECK(r.value > 0 && isfinite(r.value));
        CHECK(r.extra[EX_P50] > 0);
        CHECK(r.extra[EX_P50] <= r.extra[EX_P99]);
        CHECK(r.extra[EX_P99] <= r.extra[EX_P999]);
        check_echo_cpu(rows[k % 4], &r);
    }
}

/* The uring row (the epoll row's loop with io_uring's multishot poll as
 * the readiness source) answers every request, of 100 bytes and of
 * 64 KiB (a request in pieces, a completion that reports data an
 * earlier read took): the client checks each byte, and a connection
 * ended early or a completion taken for another's fails the run.  A
 * SKIP line when built without liburing. */
TEST(echo_uring_row_answers_every_request)
{
#ifndef MQS_BENCH_URING
    printf("SKIP: built without liburing\n");
#else
    bench_opts_t o = small_opts();
    o.seconds = 0.3;
    bench_result_t r;
    for (int k = 0; k < 4; k++) {
        int shape[2] = {k % 2 ? 3 : 1, k < 2 ? 100 : 65536};
        CHECK_EQ(run_point(&o, "uring", true, &echo_kind, shape, EX_COUNT,
                           &r),
                 0);
        CHECK(r.value > 0 && isfinite(r.value));
        CHECK(r.extra[EX_P50] > 0);
        CHECK(r.extra[EX_P50] <= r.extra[EX_P99]);
        check_echo_cpu("uring", &r);
    }
#endif
}

/* The go rows serve the client every C row is measured with: the Go
 * peer in its server-only mode on the listening socket it inherits (the
 * client checks every byte and counts; a server that answers nothing,
 * or reports another count of connections, fails the point).  The
 * sweep picks echo's kind for them and leaves fiber to the peer kind.
 * A SKIP line when the Go peer is not built. */
TEST(echo_go_rows_serve_the_shared_client)
{
    bench_row_spec_t row = {"go", true}, fiber = {"fiber", true};
    CHECK(sweep_kind(&bench_echo_exp, &row) == &echo_kind);
    CHECK(sweep_kind(&bench_echo_exp, &fiber) == &bench_peer_kind);
    static char dir[PATH_MAX / 2];
    char path[PATH_MAX];
    CHECK(exe_dir(dir, sizeof dir - 16));
    strcat(dir, "../peers");
    snprintf(path, sizeof path, "%s/mqs-peer-go", dir);
    if (access(path, X_OK) != 0) {
        printf("SKIP: %s not built (make peers)\n", path);
        return;
    }
    setenv("MQS_PEER_DIR", dir, 1);
    bench_opts_t o = small_opts();
    o.seconds = 0.3;
    for (int k = 0; k < 2; k++) {
        row.spec = k ? "go1" : "go";
        bench_progress_t prog = {0};
        int shape[2] = {3, 100};
        bench_point_t p = {.experiment = "echo",
                           .o = &o,
                           .progress = &prog,
                           .row = &row,
                           .unit = "req/s",
                           .nextra = EX_COUNT,
                           .kind = &echo_kind,
                           .ctx = shape};
        bench_peer_args_init(&p.peer_args);
        CHECK_EQ(bench_peer_args_add(&p.peer_args, "connections", "%d",
                                     shape[0]) ||
                     bench_peer_args_add(&p.peer_args, "size", "%d",
                                         shape[1]),
                 0);
        bench_result_t r;
        CHECK_EQ(bench_point_run(&p, &r), 0);
        if (r.note)
            printf("%s: %s\n", row.spec, r.note);
        CHECK(r.value > 0 && isfinite(r.value));
        CHECK(r.extra[EX_P50] > 0);
        CHECK(r.extra[EX_P50] <= r.extra[EX_P99]);
        check_echo_cpu(row.spec, &r);
    }
}

/* More connections than the descriptor limit allows: a note, no run. */
TEST(echo_over_the_descriptor_limit_is_skipped)
{
    struct rlimit l = {100, 100};
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &l), 0);
    bench_opts_t o = small_opts();
    bench_result_t r;
    int shape[2] = {1000, 64};
    CHECK_EQ(run_point(&o, "kernel", true, &echo_kind, shape, EX_COUNT, &r),
             0);
    CHECK(isnan(r.value));
    CHECK(r.note && strstr(r.note, "needs 1064 descriptors"));
}
