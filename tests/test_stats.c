/*
 * test_stats.c - mqs-bench's statistics, result output and option
 * parsing, checked against known inputs: hand-computed means, standard
 * deviations, medians, Student t critical values
 * from the published table, confidence half-widths, the stopping rule of
 * the repeat-until-precise driver, and the exact CSV header and quoting
 * the scripts downstream depend on.
 *
 * The bench sources are compiled into this test directly (tests are
 * single-file programs linked with the library).
 */
#include <errno.h>
#include <math.h>
#include <sys/stat.h>

#include "check.h"

#include "../bench/common.c"
#include "../bench/report_machine.c"
#include "../bench/output.c"
#include "../bench/peer.c"
#include "../bench/plot.c"
#include "../bench/stats.c"

#define N(a) (sizeof(a) / sizeof((a)[0]))

TEST(mean_and_stdev_known_values)
{
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    CHECK_NEAR(bench_mean(x, N(x)), 5.0, 1e-12);
    /* sum of squares 32, n - 1 = 7 */
    CHECK_NEAR(bench_stdev(x, N(x)), sqrt(32.0 / 7.0), 1e-12);
    CHECK(isnan(bench_stdev(x, 1)));
    CHECK(isnan(bench_mean(x, 0)));
}

TEST(stdev_keeps_digits_with_a_large_mean)
{
    const double x[] = {1e9 + 1, 1e9 + 2, 1e9 + 3};
    CHECK_NEAR(bench_stdev(x, N(x)), 1.0, 1e-6);
}

TEST(median_odd_and_even)
{
    double x[] = {9, 1, 5, 3, 7};
    bench_sort(x, N(x));
    CHECK_NEAR(x[0], 1, 0);
    CHECK_NEAR(x[4], 9, 0);
    CHECK_NEAR(bench_median(x, N(x)), 5, 0);
    const double y[] = {1, 2, 3, 4};
    CHECK_NEAR(bench_median(y, N(y)), 2.5, 0);
    CHECK(isnan(bench_median(y, 0)));
}

TEST(t_table_values)
{
    CHECK_NEAR(bench_t95(1), 12.706, 5e-4);
    CHECK_NEAR(bench_t95(2), 4.303, 5e-4);
    CHECK_NEAR(bench_t95(4), 2.776, 5e-4);
    CHECK_NEAR(bench_t95(5), 2.571, 5e-4);
    CHECK_NEAR(bench_t95(10), 2.228, 5e-4);
    CHECK_NEAR(bench_t95(20), 2.086, 5e-4);
    CHECK_NEAR(bench_t95(30), 2.042, 5e-4);
    CHECK(isnan(bench_t95(0)));
}

TEST(t_beyond_the_table)
{
    /* Published values: df 40 2.021, 60 2.000, 120 1.980; limit 1.960. */
    CHECK_NEAR(bench_t95(31), 2.0395, 5e-4);
    CHECK_NEAR(bench_t95(40), 2.021, 5e-4);
    CHECK_NEAR(bench_t95(60), 2.000, 5e-4);
    CHECK_NEAR(bench_t95(120), 1.980, 5e-4);
    CHECK_NEAR(bench_t95(1000000), 1.960, 5e-4);
    for (int df = 1; df < 2000; df++)
        if (!(bench_t95(df + 1) < bench_t95(df)))
            CHECK__FAIL("t95 not decreasing at df %d", df);
}

TEST(confidence_half_width)
{
    const double x[] = {10, 12, 14, 16, 18};
    double sd = bench_stdev(x, N(x)); /* sqrt(10) */
    CHECK_NEAR(bench_ci95(sd, 5), 2.7764 * sqrt(10.0) / sqrt(5.0), 1e-9);
    CHECK(isinf(bench_ci95(sd, 1)));
    bench_estimate_t e;
    bench_estimate_of(x, N(x), 0.01, &e);
    CHECK_NEAR(e.mean, 14, 1e-12);
    CHECK_EQ(e.n, 5);
    CHECK(e.frc); /* 3.93 is far above 1% of 14 */
    bench_estimate_of(x, N(x), 0.5, &e);
    CHECK(!e.frc);
}

/* Measurement stubs for the driver. */
struct fake {
    int calls;
    double spread; /* alternate mean +- spread */
    int fail_at;   /* return 7 at this call (-1: never) */
};

static int fake_measure(void *arg, int repeat, double *v)
{
    struct fake *f = arg;
    if (repeat != f->calls)
        return 99;
    if (f->calls == f->fail_at)
        return 7;
    *v = 100 + (f->calls++ % 2 ? f->spread : -f->spread);
    return 0;
}

TEST(driver_stops_at_min_repeats_when_precise)
{
    struct fake f = {.spread = 0.01, .fail_at = -1};
    bench_precision_t p = {.min_repeats = 5,
                           .max_repeats = 100,
                           .ci_target = 0.01,
                           .budget_s = 60};
    bench_estimate_t e;
    CHECK_EQ(bench_repeat_until_precise(&p, fake_measure, &f, &e), 0);
    CHECK_EQ(e.n, 5);
    CHECK_EQ(f.calls, 5);
    CHECK(!e.frc);
    CHECK_NEAR(e.mean, 100 - 0.01 / 5, 1e-9);
}

TEST(driver_flags_frc_when_budget_spent)
{
    struct fake f = {.spread = 50, .fail_at = -1};
    bench_precision_t p = {
        .min_repeats = 3, .max_repeats = 100, .ci_target = 0.01, .budget_s = 0};
    bench_estimate_t e;
    CHECK_EQ(bench_repeat_until_precise(&p, fake_measure, &f, &e), 0);
    CHECK_EQ(e.n, 3); /* the minimum is always taken */
    CHECK(e.frc);
}

TEST(driver_flags_frc_at_max_repeats)
{
    struct fake f = {.spread = 50, .fail_at = -1};
    bench_precision_t p = {.min_repeats = 2,
                           .max_repeats = 12,
                           .ci_target = 0.001,
                           .budget_s = 60};
    bench_estimate_t e;
    CHECK_EQ(bench_repeat_until_precise(&p, fake_measure, &f, &e), 0);
    CHECK_EQ(e.n, 12);
    CHECK(e.frc);
}

TEST(driver_repeats_until_precise)
{
    /* Alternating 100 +- 1: half-width t(n-1) * ~1 / sqrt(n) drops under
     * 1% of 100 (= 1) once t95(n-1)/sqrt(n) < 1: at n = 7. */
    struct fake f = {.spread = 1, .fail_at = -1};
    bench_precision_t p = {.min_repeats = 2,
                           .max_repeats = 1000,
                           .ci_target = 0.01,
                           .budget_s = 60};
    bench_estimate_t e;
    CHECK_EQ(bench_repeat_until_precise(&p, fake_measure, &f, &e), 0);
    CHECK(!e.frc);
    CHECK_LE(e.ci95, 1.0);
    CHECK_GE(e.n, 6);
    CHECK_LE(e.n, 8);
}

TEST(driver_passes_errors_back)
{
    struct fake f = {.spread = 1, .fail_at = 2};
    bench_precision_t p = {
        .min_repeats = 5, .max_repeats = 10, .ci_target = 0.01, .budget_s = 60};
    bench_estimate_t e;
    CHECK_EQ(bench_repeat_until_precise(&p, fake_measure, &f, &e), 7);
    bench_precision_t bad = {
        .min_repeats = 0, .max_repeats = 10, .ci_target = 0.01, .budget_s = 1};
    CHECK_EQ(bench_repeat_until_precise(&bad, fake_measure, &f, &e), -1);
}

/* ----- output ----- */

static const bench_extra_col_t test_extras[] = {
    {"fairness_min_over_mean", "min/mean", 3, 0},
    {"zero_work_tasks", "zero", 0, 0},
    {"norm_dev", "ndev", 3, 0},
    {"repeats", NULL, 0, 0},
};

static void add(bench_results_t *rs, const char *row, const char *param,
                double v, double ci, bool frc)
{
    bench_result_t r = {.row = (char *)row,
                        .param = (char *)param,
                        .workers = 2,
                        .value = v,
                        .ci95 = ci,
                        .unit = "ns",
                        .frc = frc,
                        .extra = {0.5, 3, 0.25, 5}};
    CHECK_EQ(bench_results_add(rs, &r), 0);
}

/* Print rs in fmt into a malloc'd string. */
static char *render(const bench_results_t *rs, bench_format_t fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    CHECK_EQ(bench_results_print(rs, fmt, f), 0);
    fclose(f);
    return buf;
}

static void sample_results(bench_results_t *rs)
{
    bench_results_init(rs, "yield", "ns per yield", test_extras, 4);
    add(rs, "mq", "tasks=16", 41.25, 0.13, false);
    add(rs, "kernel", "tasks=16", 2400, 30, true);
    add(rs, "mq", "tasks=1024", 50.5, NAN, false);
}

TEST(csv_header_is_exact)
{
    bench_results_t rs;
    sample_results(&rs);
    char *s = render(&rs, BENCH_CSV);
    const char *header = "experiment,row,workers,param,value,unit,ci95,frc,"
                         "fairness_min_over_mean,zero_work_tasks,norm_dev,"
                         "repeats,note\n";
    CHECK(strncmp(s, header, strlen(header)) == 0);
    CHECK_STR_CONTAINS(s,
                       "\nyield,mq,2,tasks=16,41.25,ns,0.13,0,0.5,3,0.25,5,\n");
    CHECK_STR_CONTAINS(s, "\nyield,kernel,2,tasks=16,2400,ns,30,1,");
    CHECK_STR_CONTAINS(s, "\nyield,mq,2,tasks=1024,50.5,ns,nan,0,");
    int lines = 0;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    CHECK_EQ(lines, 4);
    free(s);
    bench_results_free(&rs);
}

TEST(csv_quotes_fields_with_commas)
{
    bench_results_t rs;
    bench_results_init(&rs, "yield", "ns per yield", test_extras, 4);
    add(&rs, "mq:a=1,b=\"2\"", "tasks=1", 1, 0.1, false);
    char *s = render(&rs, BENCH_CSV);
    CHECK_STR_CONTAINS(s, "\nyield,\"mq:a=1,b=\"\"2\"\"\",2,tasks=1,");
    free(s);
    bench_results_free(&rs);
}

TEST(json_has_the_same_keys)
{
    bench_results_t rs;
    sample_results(&rs);
    char *s = render(&rs, BENCH_JSON);
    CHECK(strncmp(s, "{\"header\": null,\n \"rows\": [", 26) == 0);
    CHECK_STR_CONTAINS(s, "{\"experiment\": \"yield\", \"row\": \"mq\", "
                          "\"workers\": 2, \"param\": \"tasks=16\", "
                          "\"value\": 41.25, \"unit\": \"ns\", \"ci95\": "
                          "0.13, \"frc\": false, \"fairness_min_over_mean\": "
                          "0.5, \"zero_work_tasks\": 3, \"norm_dev\": 0.25, "
                          "\"repeats\": 5, \"note\": null}");
    CHECK_STR_CONTAINS(s, "\"frc\": true");
    CHECK_STR_CONTAINS(s, "\"ci95\": null");
    CHECK_STR_CONTAINS(s, "}\n ]}\n");
    free(s);
    bench_results_free(&rs);
}

TEST(table_pivots_rows_into_columns)
{
    bench_results_t rs;
    sample_results(&rs);
    char *s = render(&rs, BENCH_TABLE);
    CHECK_STR_CONTAINS(s, "yield: ns per yield");
    CHECK_STR_CONTAINS(s, "tasks");
    CHECK_STR_CONTAINS(s, "41.25 ±0.13");
    CHECK_STR_CONTAINS(s, "2400 ±30 FRC");
    CHECK_STR_CONTAINS(s, "min/mean");
    /* title, two heading lines, one line per param */
    int lines = 0;
    for (const char *p = s; *p; p++)
        lines += *p == '\n';
    CHECK_EQ(lines, 5);
    /* the kernel column has no tasks=1024 entry */
    CHECK_STR_CONTAINS(strstr(s, "\n 1024 |"), " - ");
    free(s);
    bench_results_free(&rs);
}

TEST(table_lines_are_aligned)
{
    bench_results_t rs;
    sample_results(&rs);
    char *s = render(&rs, BENCH_TABLE);
    char *line2 = strchr(strchr(s, '\n') + 1, '\n') + 1; /* column labels */
    char *p16 = strchr(line2, '\n') + 1;
    char *p1024 = strchr(p16, '\n') + 1;
    /* The group separators line up on every line after the headings. */
    CHECK_EQ(strstr(p16, " | ") - p16, strstr(p1024, " | ") - p1024);
    free(s);
    bench_results_free(&rs);
}

/* ----- option parsing ----- */

TEST(int_lists)
{
    int *v = NULL, n = 0;
    CHECK_EQ(bench_parse_int_list("t", "--tasks", "16,1024", 1, 4096, &v, &n),
             0);
    CHECK_EQ(n, 2);
    CHECK_EQ(v[0], 16);
    CHECK_EQ(v[1], 1024);
    free(v);
    CHECK_EQ(bench_parse_int_list("t", "--tasks", "0", 1, 9, &v, &n), 2);
    CHECK_EQ(bench_parse_int_list("t", "--tasks", "1,,2", 1, 9, &v, &n), 2);
    CHECK_EQ(bench_parse_int_list("t", "--tasks", "1,", 1, 9, &v, &n), 2);
    CHECK_EQ(bench_parse_int_list("t", "--tasks", "x", 1, 9, &v, &n), 2);
    double d = -1;
    CHECK_EQ(bench_parse_double("t", "--seconds", "-1", 0.001, 10, &d), 2);
    CHECK_EQ(bench_parse_double("t", "--seconds", "0.5", 0.001, 10, &d), 0);
    CHECK_NEAR(d, 0.5, 0);
}

TEST(policy_items_split_on_commas_not_tunables)
{
    CHECK_EQ(bench_rows_item_len("mq,kernel"), 2);
    CHECK_EQ(bench_rows_item_len("mq:a=1,b=2,kernel"), 10);
    CHECK_EQ(bench_rows_item_len("mq:a=1,b=2"), 10);
    CHECK_EQ(bench_rows_item_len("floor"), 5);
    CHECK_EQ(bench_rows_item_len("mq:a=1,cfs:b=2"), 6);
}

TEST(policy_rows_known_and_unknown)
{
    static const char *const pseudo[] = {"kernel", "floor", NULL};
    bench_row_spec_t *rows = NULL;
    int n = 0;
    CHECK_EQ(bench_parse_rows("t", "kernel,floor", pseudo, &rows, &n), 0);
    CHECK_EQ(n, 2);
    CHECK(rows[0].pseudo && rows[1].pseudo);
    rows_free(rows, n);
    CHECK_EQ(bench_parse_rows("t", "no-such-policy", pseudo, &rows, &n), 2);
    CHECK_EQ(bench_parse_rows("t", "kernel,kernel", pseudo, &rows, &n), 2);
    CHECK_EQ(bench_parse_rows("t", "kernel,", pseudo, &rows, &n), 2);
    CHECK_EQ(bench_parse_rows("t", "a=1,kernel", pseudo, &rows, &n), 2);
    CHECK_EQ(bench_parse_rows("t", "all", pseudo, &rows, &n), 0);
    CHECK_GE(n, 1);
    CHECK(!rows[0].pseudo);
    CHECK(mqs_policy_find(rows[0].spec) != NULL);
    rows_free(rows, n);
}

static const bench_cli_t test_cli = {
    .name = "t",
    .summary = "s",
    .details = "",
    .default_tasks = "1,2",
    .default_policy = "kernel",
    .pseudo = (const char *const[]){"kernel", NULL},
    .default_seconds = 0.2,
    .default_repeats = 5,
};

static int parse(bench_opts_t *o, int argc, char **argv)
{
    return bench_parse_options(&test_cli, argc, argv, o);
}

TEST(options_defaults_and_errors)
{
    bench_opts_t o;
    char *a0[] = {"t", NULL};
    CHECK_EQ(parse(&o, 1, a0), 0);
    CHECK_EQ(o.ntasks, 2);
    CHECK_EQ(o.nrows, 1);
    CHECK_EQ(o.workers, 0);
    CHECK_NEAR(o.seconds, 0.2, 0);
    CHECK_NEAR(o.prec.budget_s, 2.0, 0);
    CHECK_EQ(o.prec.min_repeats, 5);
    CHECK_EQ(o.format, BENCH_TABLE);
    bench_opts_free(&o);
    char *a1[] = {"t", "--seconds", "1", "--csv", "--tasks=3", NULL};
    CHECK_EQ(parse(&o, 5, a1), 0);
    CHECK_NEAR(o.prec.budget_s, 10.0, 0);
    CHECK_EQ(o.format, BENCH_CSV);
    CHECK_EQ(o.tasks[0], 3);
    bench_opts_free(&o);
    char *bad1[] = {"t", "--tasks", "0", NULL};
    CHECK_EQ(parse(&o, 3, bad1), 2);
    char *bad2[] = {"t", "--seconds", "-1", NULL};
    CHECK_EQ(parse(&o, 3, bad2), 2);
    char *bad3[] = {"t", "--frobnicate", NULL};
    CHECK_EQ(parse(&o, 2, bad3), 2);
    char *bad4[] = {"t", "--csv", "--json", NULL};
    CHECK_EQ(parse(&o, 3, bad4), 2);
    char *bad5[] = {"t", "--workers", NULL};
    CHECK_EQ(parse(&o, 2, bad5), 2);
    char *bad6[] = {"t", "stray", NULL};
    CHECK_EQ(parse(&o, 2, bad6), 2);
}

/* ----- rows without a value, and peer output lines ----- */

TEST(note_replaces_a_missing_value)
{
    bench_results_t rs;
    bench_results_init(&rs, "yield", "ns per yield", test_extras, 4);
    bench_result_t r = {.row = (char *)"go", .param = (char *)"tasks=16",
                        .workers = 2, .value = NAN, .ci95 = NAN, .unit = "ns",
                        .note = "not installed"};
    for (int e = 0; e < 4; e++)
        r.extra[e] = NAN;
    CHECK_EQ(bench_results_add(&rs, &r), 0);
    char *csv = render(&rs, BENCH_CSV);
    CHECK_STR_CONTAINS(csv, ",not installed\n");
    char *json = render(&rs, BENCH_JSON);
    CHECK_STR_CONTAINS(json, "\"note\": \"not installed\"");
    char *table = render(&rs, BENCH_TABLE);
    CHECK_STR_CONTAINS(table, "not installed");
    free(csv);
    free(json);
    free(table);
    bench_results_free(&rs);
}

TEST(peer_lines_parse_into_keys)
{
    bench_peer_result_t r;
    CHECK_EQ(bench_peer_parse("ns=130.5 fairness=0.97 zero=0\n", &r), 0);
    CHECK_EQ(r.n, 3);
    CHECK(bench_peer_get(&r, "ns") == 130.5);
    CHECK(bench_peer_get(&r, "zero") == 0);
    CHECK(isnan(bench_peer_get(&r, "absent")));
    CHECK_EQ(bench_peer_parse("ns=abc", &r), -1);
    CHECK_EQ(bench_peer_parse("novalue", &r), -1);
    CHECK_EQ(bench_peer_parse("=3", &r), -1);
    CHECK_EQ(bench_peer_parse("", &r), 0);
    CHECK_EQ(r.n, 0);
}

TEST(missing_peer_says_not_installed)
{
    setenv("MQS_PEER_DIR", "/nonexistent-mqs-peer-dir", 1);
    bench_peer_result_t r;
    char why[64] = "";
    const char *args[] = {"tasks=1", NULL};
    CHECK_EQ(bench_peer_run("go", "yield", args, 0, &r, why, sizeof why),
             BENCH_PEER_MISSING);
    CHECK_STR_CONTAINS(why, "not installed");
    CHECK(bench_peer_is("go"));
    CHECK(bench_peer_is("fiber"));
    CHECK(bench_peer_is("go1"));
    CHECK(!bench_peer_is("mq"));
    CHECK(bench_peer_one_thread("fiber1"));
    CHECK(!bench_peer_one_thread("go"));
    CHECK(!bench_peer_one_thread("mq1"));
}

/* ----- the peer runner: arguments, time bound, exit statuses ----- */

TEST(peer_args_build_a_null_terminated_list)
{
    bench_peer_args_t a;
    bench_peer_args_init(&a);
    CHECK(a.list[0] == NULL);
    CHECK_EQ(bench_peer_args_add(&a, "tasks", "%d", 16), 0);
    CHECK_EQ(bench_peer_args_common(&a, 2, 0.25), 0);
    const char *const *l = a.list;
    CHECK_EQ(strcmp(l[0], "tasks=16"), 0);
    CHECK_EQ(strcmp(l[1], "workers=2"), 0);
    CHECK_EQ(strcmp(l[2], "seconds=0.25"), 0);
    CHECK(l[3] == NULL);
    char big[100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_EQ(bench_peer_args_add(&a, "long", "%s", big), -1);
    CHECK_EQ(a.n, 3);
    while (a.n < BENCH_PEER_MAX_ARGS)
        CHECK_EQ(bench_peer_args_add(&a, "k", "%d", a.n), 0);
    CHECK_EQ(bench_peer_args_add(&a, "k", "%d", 0), -1);
}

TEST(peer_time_bound_follows_seconds)
{
    unsetenv("MQS_PEER_TIMEOUT");
    const char *two[] = {"tasks=1", "seconds=2", NULL};
    CHECK_EQ(bench_peer_timeout_ns(two),
             (uint64_t)(BENCH_PEER_GRACE_S + 2 * BENCH_PEER_PER_SECOND) *
                 1000000000u);
    const char *none[] = {"tasks=1", NULL};
    CHECK_EQ(bench_peer_timeout_ns(none),
             (uint64_t)(BENCH_PEER_GRACE_S + BENCH_PEER_PER_SECOND) *
                 1000000000u);
    setenv("MQS_PEER_TIMEOUT", "1.5", 1);
    CHECK_EQ(bench_peer_timeout_ns(two), 1500000000u);
}

/* A fake peer in a fresh directory: a shell script answering per
 * experiment.  Returns the directory (MQS_PEER_DIR is set to it). */
static const char *fake_peer(void)
{
    static char dir[] = "/tmp/mqs-fake-peer-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[sizeof dir + 32];
    snprintf(path, sizeof path, "%s/mqs-peer-go", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("#!/bin/sh\n"
          "case $1 in\n"
          "yield) echo \"ns_per_yield=5.5 args=$#\" ;;\n"
          "ring) echo 'no rings here'; exit 3 ;;\n"
          "pipe) exec sleep 30 ;;\n"
          "wake) echo 'p50_ns=lots' ;;\n"
          "*) echo 'x=1'; exit 1 ;;\n"
          "esac\n",
          f);
    fclose(f);
    CHECK_EQ(chmod(path, 0755), 0);
    setenv("MQS_PEER_DIR", dir, 1);
    return dir;
}

static void fake_peer_remove(const char *dir)
{
    char path[64];
    snprintf(path, sizeof path, "%s/mqs-peer-go", dir);
    unlink(path);
    rmdir(dir);
}

TEST(peer_runner_maps_exit_statuses_and_output)
{
    const char *dir = fake_peer();
    bench_peer_result_t r;
    char why[128];
    const char *args[] = {"tasks=16", "workers=2", NULL};
    CHECK_EQ(bench_peer_run("go", "yield", args, 0, &r, why, sizeof why),
             BENCH_PEER_OK);
    CHECK(bench_peer_get(&r, "ns_per_yield") == 5.5);
    CHECK(bench_peer_get(&r, "args") == 3); /* experiment + two keys */
    CHECK_EQ(bench_peer_run("go", "ring", args, 0, &r, why, sizeof why),
             BENCH_PEER_UNSUPPORTED);
    CHECK_STR_CONTAINS(why, "not supported: no rings here"); /* stdout */
    CHECK_EQ(bench_peer_run("go", "wake", args, 0, &r, why, sizeof why),
             BENCH_PEER_FAILED);
    CHECK_STR_CONTAINS(why, "bad output");
    CHECK_EQ(bench_peer_run("go", "chat", args, 0, &r, why, sizeof why),
             BENCH_PEER_FAILED);
    CHECK_STR_CONTAINS(why, "exit 1");
    fake_peer_remove(dir);
}

TEST(hanging_peer_is_killed_at_its_bound)
{
    const char *dir = fake_peer();
    bench_peer_result_t r;
    char why[128];
    const char *args[] = {"mode=latency", NULL};
    CHECK_EQ(
        bench_peer_run("go", "pipe", args, 200000000u, &r, why, sizeof why),
        BENCH_PEER_FAILED);
    CHECK_STR_CONTAINS(why, "timed out");
    /* reaped: no child of ours is left */
    CHECK_EQ(waitpid(-1, NULL, WNOHANG), -1);
    CHECK_EQ(errno, ECHILD);
    fake_peer_remove(dir);
}
