/*
 * test_expkit.c - the experiment toolkit every experiment shares
 * (bench/expkit.h: expkit.c and point.c), each function once: lifting
 * an experiment's own options out of argv before the common parser sees
 * them and refusing options that do not apply, the kernel rows' CPU
 * list and mask, the policy-row runtime and its MQS_POLICY relabel
 * check, and the data-point driver's averaging and skip/failure rules
 * with a scripted row kind, also through the sample-function adapter.
 * (The peer row kind is tested in test_bench_exp.c with chat's args.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "bench_check.h"

#include "../bench/common.c"
#include "../bench/report_machine.c"
#include "../bench/expkit.c"
#include "../bench/output.c"
#include "../bench/peer.c"
#include "../bench/plot.c"
#include "../bench/point.c"
#include "../bench/stats.c"

#define N(a) (sizeof(a) / sizeof((a)[0]))


TEST(take_options_both_spellings)
{
    char *argv[] = {"wake", "--clients", "8", "--csv", "--hogs=3",
                    "--seconds", "1", NULL};
    int argc = (int)N(argv) - 1;
    const char *clients = "4", *hogs = "0", *cls = "normal";
    const bench_xopt_t xo[] = {{"clients", &clients, NULL, 0, 0},
                               {"hogs", &hogs, NULL, 0, 0},
                               {"class", &cls, NULL, 0, 0},
                               {0}};
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
    const bench_xopt_t xo[] = {{"size", &size, NULL, 0, 0}, {0}};
    CHECK_EQ(bench_take_options("ring", &argc, argv, xo, NULL), 0);
    CHECK_EQ(argc, 6);
    CHECK(strcmp(size, "0") == 0);
    CHECK(strcmp(argv[4], "--size") == 0);
}

TEST(take_options_errors)
{
    const char *v = NULL;
    const bench_xopt_t xo[] = {{"size", &v, NULL, 0, 0}, {0}};
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

/* An option with an int target is parsed in range, given or not. */
TEST(take_options_parses_integers)
{
    const char *v = "3";
    int size = 0;
    const bench_xopt_t xo[] = {{"size", &v, &size, 0, 9}, {0}};
    char *a1[] = {"ring", NULL};
    int n1 = 1;
    CHECK_EQ(bench_take_options("ring", &n1, a1, xo, NULL), 0);
    CHECK_EQ(size, 3);
    char *a2[] = {"ring", "--size=7", NULL};
    int n2 = 2;
    CHECK_EQ(bench_take_options("ring", &n2, a2, xo, NULL), 0);
    CHECK_EQ(size, 7);
    char *a3[] = {"ring", "--size", "10", NULL};
    int n3 = 3;
    CHECK_EQ(bench_take_options("ring", &n3, a3, xo, NULL), BENCH_EXIT_USAGE);
}

TEST(cpu_list_first_w)
{
    int all[MQS_MAX_WORKERS] = {0}, one[MQS_MAX_WORKERS] = {0};
    int n = bench_cpu_list(0, all, MQS_MAX_WORKERS);
    CHECK_EQ(n, bench_cpus_allowed());
    CHECK_EQ(bench_cpu_list(1, one, MQS_MAX_WORKERS), 1);
    CHECK_EQ(one[0], all[0]);
    for (int i = 1; i < n; i++)
        CHECK_LT(all[i - 1], all[i]);
    cpu_set_t set;
    bench_cpuset_of(all, n, &set);
    CHECK_EQ(CPU_COUNT(&set), n);
    cpu_set_t k1;
    CHECK_EQ(bench_kernel_cpus(1, &k1), 1);
    CHECK(CPU_ISSET(all[0], &k1));
    CHECK_EQ(CPU_COUNT(&k1), 1);
    CHECK_EQ(bench_kernel_cpus(0, &k1), n);
    CHECK(CPU_EQUAL(&k1, &set));
}

/* A row runs the policy it names; MQS_POLICY overriding it is refused
 * rather than silently relabelling the row. */
TEST(runtime_open_refuses_a_relabelled_row)
{
    mqs_runtime_t *rt = NULL;
    unsetenv("MQS_POLICY");
    CHECK_EQ(bench_runtime_open("t", "mq", 1, 0, &rt), 0);
    CHECK(rt != NULL);
    CHECK_STREQ(mqs_runtime_policy(rt), "mq");
    CHECK_EQ(bench_runtime_close("t", rt), 0);
    CHECK_EQ(bench_runtime_close("t", NULL), 0);
    CHECK_EQ(bench_runtime_open("t", "no-such-policy", 1, 0, &rt), -1);
    CHECK(rt == NULL);
    /* Only mq is registered in this tree, so MQS_POLICY cannot name
     * another policy here: the check itself, on names. */
    CHECK(kit_same_policy("mq", "mq"));
    CHECK(kit_same_policy("mq", "mq:steal=4"));
    CHECK(!kit_same_policy("cfs", "mq"));
    CHECK(!kit_same_policy("mq", "mqx"));
    CHECK(!kit_same_policy("mqx", "mq:a=1"));
    CHECK(!kit_same_policy(NULL, "mq"));
}

/* ------------------------------------------------------------------ */
/* The driver, with a scripted kind                                    */
/* ------------------------------------------------------------------ */

struct script {
    int open_rc, fail_at, calls;
    double values[4];
};

static int script_open(bench_point_t *p)
{
    struct script *s = p->ctx;
    p->workers = 3;
    if (s->open_rc == BENCH_POINT_SKIP)
        snprintf(p->note, sizeof p->note, "not installed");
    return s->open_rc;
}

/* Warm-up gives 1000 (must not count), then the values in turn. */
static int script_measure(bench_point_t *p, double *value, double *extra)
{
    struct script *s = p->ctx;
    int i = s->calls++;
    if (i == s->fail_at)
        return -1;
    *value = p->warmup ? 1000 : s->values[(i - 1) % 4];
    extra[0] = *value * 2;
    return 0;
}

static void script_close(bench_point_t *p)
{
    (void)p;
}

static const bench_point_kind_t script_kind = {script_open, script_measure,
                                               script_close};

static int script_run(struct script *s, int repeats, bench_result_t *res)
{
    bench_opts_t o = {0};
    o.prec = (bench_precision_t){repeats, repeats, 1e-9, 100};
    bench_progress_t prog = {0};
    bench_row_spec_t row = {"mq", false};
    bench_point_t p = {.experiment = "t",
                       .o = &o,
                       .progress = &prog,
                       .row = &row,
                       .unit = "x",
                       .nextra = 2,
                       .kind = &script_kind,
                       .ctx = s};
    snprintf(p.param, sizeof p.param, "n=1");
    int rc = bench_point_run(&p, res);
    /* the note lives in p: copy what the test looks at */
    static char note[96];
    snprintf(note, sizeof note, "%s", res->note ? res->note : "");
    res->note = note[0] ? note : NULL;
    return rc;
}

TEST(point_driver_averages_repeats_not_warmup)
{
    struct script s = {.fail_at = -1, .values = {10, 20, 30, 40}};
    bench_result_t r;
    CHECK_EQ(script_run(&s, 4, &r), 0);
    CHECK_EQ(s.calls, 5); /* warm-up + 4 */
    CHECK_NEAR(r.value, 25, 1e-12);
    CHECK_NEAR(r.extra[0], 50, 1e-12);
    CHECK(isnan(r.extra[1])); /* never filled */
    CHECK(isnan(r.extra[2]));
    CHECK_EQ(r.workers, 3);
    CHECK(r.frc); /* max repeats reached with a CI target of 1e-9 */
    CHECK(r.note == NULL);
}

TEST(point_driver_skip_and_failure)
{
    struct script skip = {.open_rc = BENCH_POINT_SKIP, .fail_at = -1};
    bench_result_t r;
    CHECK_EQ(script_run(&skip, 2, &r), 0);
    CHECK(isnan(r.value));
    CHECK_STREQ(r.note, "not installed");
    CHECK_EQ(skip.calls, 0);
    struct script fail = {.fail_at = 2, .values = {1, 2, 3, 4}};
    CHECK_EQ(script_run(&fail, 4, &r), -1);
    CHECK(isnan(r.value));
    CHECK(isnan(r.extra[0]));
    CHECK_STREQ(r.note, "failed");
}

/* The warm-up runs a quarter of the seconds and is not counted, unless
 * the point says no warm-up. */
struct sampler {
    int calls;
    double seconds[8];
};

static int sampler_open(bench_point_t *p)
{
    (void)p;
    return 0;
}

static int sampler_measure(bench_point_t *p, double *value, double *extra)
{
    struct sampler *s = p->ctx;
    s->seconds[s->calls++ % 8] = bench_point_seconds(p);
    *value = s->calls == 1 ? 1000 : 7;
    extra[0] = s->calls;      /* folded by the least */
    extra[1] = 10 * s->calls; /* by the greatest */
    return 0;
}

static const bench_point_kind_t sampler_kind = {sampler_open, sampler_measure,
                                                NULL};

static const bench_extra_col_t sampler_extras[3] = {
    {"least", NULL, 0, BENCH_FOLD_MIN},
    {"greatest", NULL, 0, BENCH_FOLD_MAX},
    {"repeats", NULL, 0, BENCH_FOLD_REPEATS}};

static int sampler_run(struct sampler *s, bool warm, bench_result_t *r)
{
    bench_opts_t o = {0};
    o.prec = (bench_precision_t){3, 3, 1e-9, 100};
    o.seconds = 0.4;
    bench_progress_t prog = {0};
    bench_row_spec_t row = {"mq", false};
    bench_point_t p = {.o = &o, .progress = &prog, .row = &row, .unit = "x",
                       .nextra = 3, .kind = &sampler_kind,
                       .extras = sampler_extras, .ctx = s, .no_warm = !warm};
    return bench_point_run(&p, r);
}

TEST(point_driver_warms_up_a_quarter_and_folds)
{
    struct sampler s = {0};
    bench_result_t r;
    CHECK_EQ(sampler_run(&s, true, &r), 0);
    CHECK_EQ(s.calls, 4);
    CHECK_NEAR(s.seconds[0], 0.1, 1e-12);
    CHECK_NEAR(s.seconds[1], 0.4, 1e-12);
    CHECK_NEAR(s.seconds[3], 0.4, 1e-12);
    CHECK_NEAR(r.value, 7, 1e-12);
    CHECK_NEAR(r.extra[0], 2, 1e-12);  /* least of calls 2..4 */
    CHECK_NEAR(r.extra[1], 40, 1e-12); /* greatest of 20..40 */
    CHECK_NEAR(r.extra[2], 3, 1e-12);  /* repeats */
    struct sampler cold = {0};
    CHECK_EQ(sampler_run(&cold, false, &r), 0);
    CHECK_EQ(cold.calls, 3);
    CHECK_NEAR(cold.seconds[0], 0.4, 1e-12);
    CHECK_NEAR(r.value, (1000 + 7 + 7) / 3.0, 1e-9);
    CHECK_NEAR(r.extra[0], 1, 1e-12);
}

/* ------------------------------------------------------------------ */
/* The sweep over a table entry                                        */
/* ------------------------------------------------------------------ */

struct table_run {
    struct script s;
    int setups, emitted;
};

/* Every point emits its result twice, the second with its param
 * suffixed, as an experiment with several lines per point does. */
static int table_emit(bench_point_t *p, bench_result_t *res,
                      bench_results_t *rs)
{
    struct table_run *t = p->ctx;
    char param[64];
    t->emitted++;
    if (bench_results_add(rs, res))
        return -1;
    snprintf(param, sizeof param, "%s+", res->param);
    res->param = param;
    return bench_results_add(rs, res);
}

static int table_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct table_run *t = sw->arg;
    t->setups++;
    t->s = (struct script){.fail_at = -1, .values = {1, 2, 3, 4}};
    snprintf(p->param, sizeof p->param, "n=%d", sw->o->tasks[i]);
    p->unit = "x";
    p->nextra = 1;
    p->ctx = t;
    p->emit = table_emit;
    static const bench_peer_map_t map = {.value_key = "v"};
    p->peer_map = &map;
    return 0;
}

/* The script kind reads its struct script at the start of ctx. */
static const bench_row_kind_t table_kinds[] = {
    {NULL, &script_kind}, {"kernel", &script_kind}, {NULL, NULL}};

static const bench_cli_t table_cli = {.name = "t"};

static const bench_exp_t table_exp = {.cli = &table_cli,
                                      .kinds = table_kinds,
                                      .setup = table_setup};

TEST(sweep_runs_every_row_and_param_by_the_table)
{
    setenv("MQS_PEER_DIR", "/nonexistent-mqs-peer-dir", 1);
    int tasks[] = {1, 2};
    bench_row_spec_t rows[] = {{"mq", false}, {"kernel", true},
                               {"go", true}};
    bench_opts_t o = {.tasks = tasks, .ntasks = 2, .rows = rows, .nrows = 3};
    o.prec = (bench_precision_t){2, 2, 1e-9, 100};
    o.seconds = 0.01;
    struct table_run t = {0};
    bench_sweep_t sw = {.e = &table_exp, .o = &o, .nparams = 2, .arg = &t};
    bench_results_t rs;
    bench_results_init(&rs, "t", "x", NULL, 0);
    CHECK_EQ(bench_sweep_run(&sw, &rs), 0);
    CHECK_EQ(t.setups, 6);
    CHECK_EQ(t.emitted, 6);
    CHECK_EQ(rs.n, 12);
    CHECK_STREQ(rs.r[0].row, "mq");
    CHECK_STREQ(rs.r[0].param, "n=1");
    CHECK_STREQ(rs.r[1].param, "n=1+");
    CHECK_NEAR(rs.r[0].value, 1.5, 1e-12); /* repeats 1, 2; warm-up not */
    CHECK_STREQ(rs.r[4].row, "kernel");
    CHECK_STREQ(rs.r[10].row, "go");
    CHECK_STREQ(rs.r[10].param, "n=2");
    CHECK(isnan(rs.r[10].value));
    CHECK_STREQ(rs.r[10].note, "not installed");
    bench_results_free(&rs);
}
