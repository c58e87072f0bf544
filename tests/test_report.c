/*
 * test_report.c - `--plot` and `mqs-bench report` checked on known
 * inputs: the gnuplot script generated from known results (the log-x
 * decision, the CDF for pct params, groups for names, panels per unit,
 * NAN rows left out and named), gnuplot run for real when installed, the
 * --plot option, the CSV reader (quoted fields), index.html and
 * results.json from a known CSV (escaping), the budget planner, the
 * defaults read from --help, and the step runner against a stand-in
 * program (a shell script) that succeeds, crashes, hangs, or is absent.
 *
 * The bench sources are compiled into this test directly, as in
 * test_stats.c.
 */
#include <math.h>
#include <sys/stat.h>

#include "check.h"
#include "bench_check.h"

#include "../bench/common.c"
#include "../bench/output.c"
#include "../bench/peer.c"
#include "../bench/plot.c"
#include "../bench/report.c"
#include "../bench/report_csv.c"
#include "../bench/report_machine.c"
#include "../bench/report_plan.c"
#include "../bench/report_run.c"
#include "../bench/report_write.c"
#include "../bench/stats.c"

/* ----- results to plot ----- */

static void add_result(bench_results_t *rs, const char *row, const char *param,
                    double v, double ci, const char *unit, const char *note)
{
    bench_result_t r = {.row = (char *)row,
                        .param = (char *)param,
                        .workers = 2,
                        .value = v,
                        .ci95 = ci,
                        .unit = unit,
                        .note = note};
    CHECK_EQ(bench_results_add(rs, &r), 0);
}

/* yield-like: tasks 1..4096, mq and kernel, go not installed. */
static void yield_results(bench_results_t *rs)
{
    bench_results_init(rs, "yield", "ns per yield", NULL, 0);
    const char *tasks[] = {"tasks=1", "tasks=16", "tasks=256", "tasks=4096"};
    for (int i = 0; i < 4; i++) {
        add_result(rs, "mq", tasks[i], 40 + i, 1, "ns", NULL);
        add_result(rs, "kernel", tasks[i], 2000 + 100 * i, 50, "ns", NULL);
        add_result(rs, "go", tasks[i], NAN, NAN, "ns", "not installed");
    }
}

static char *script_of(const bench_results_t *rs)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    CHECK_EQ(bench_plot_script(rs, "/tmp/out.svg", f), 0);
    fclose(f);
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

TEST(plot_numeric_params_are_lines_with_log_x_past_a_factor_of_ten)
{
    bench_results_t rs;
    yield_results(&rs);
    bench_plot_shape_t sh;
    bench_plot_shape_of(&rs, "ns", &sh);
    CHECK_EQ(sh.kind, BENCH_PLOT_LINES);
    CHECK(sh.logx);
    CHECK_EQ(sh.logx_base, 2); /* all powers of two */
    CHECK(sh.logy);            /* 40 vs 2300: more than 50x */
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "set logscale x 2\n");
    CHECK_STR_CONTAINS(s, "with yerrorlines");
    CHECK_STR_CONTAINS(s, "title 'mq'");
    CHECK_STR_CONTAINS(s, "title 'kernel'");
    CHECK_STR_CONTAINS(s, "set output '/tmp/out.svg'");
    CHECK_STR_CONTAINS(s, "\n4096 2300 50\n"); /* x y ci */
    free(s);
    bench_results_free(&rs);

    /* a span of exactly 10 stays linear; base 10 for non-powers of two */
    bench_results_init(&rs, "x", "t", NULL, 0);
    add_result(&rs, "mq", "size=10", 5, 1, "us", NULL);
    add_result(&rs, "mq", "size=100", 6, 1, "us", NULL);
    bench_plot_shape_of(&rs, "us", &sh);
    CHECK_EQ(sh.kind, BENCH_PLOT_LINES);
    CHECK(!sh.logx);
    CHECK(!sh.logy);
    CHECK(sh.from_zero);
    add_result(&rs, "mq", "size=1000", 7, 1, "us", NULL);
    bench_plot_shape_of(&rs, "us", &sh);
    CHECK(sh.logx);
    CHECK_EQ(sh.logx_base, 10);
    s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "set logscale x 10\n");
    CHECK_STR_CONTAINS(s, "set yrange [0:*]\n");
    CHECK(!strstr(s, "logscale y"));
    free(s);
    bench_results_free(&rs);
}

TEST(plot_points_are_sorted_by_x)
{
    bench_results_t rs;
    bench_results_init(&rs, "x", "t", NULL, 0);
    add_result(&rs, "mq", "tasks=64", 3, 0, "ns", NULL);
    add_result(&rs, "mq", "tasks=1", 1, 0, "ns", NULL);
    add_result(&rs, "mq", "tasks=8", 2, 0, "ns", NULL);
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "$P0S0 << EOD\n1 1 0\n8 2 0\n64 3 0\nEOD\n");
    free(s);
    bench_results_free(&rs);
}

TEST(plot_pct_params_are_a_cdf)
{
    bench_results_t rs;
    bench_results_init(&rs, "wake", "wake-up latency", NULL, 0);
    const char *p[] = {"pct=50", "pct=90", "pct=99", "pct=99.9"};
    for (int i = 0; i < 4; i++) {
        add_result(&rs, "mq", p[i], 2000 * (i + 1), 10, "ns", NULL);
        add_result(&rs, "kernel", p[i], 50000 * (i + 1), 10, "ns", NULL);
    }
    bench_plot_shape_t sh;
    bench_plot_shape_of(&rs, "ns", &sh);
    CHECK_EQ(sh.kind, BENCH_PLOT_CDF);
    CHECK(sh.logx); /* 2000 .. 200000 */
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "with xerrorlines");
    CHECK_STR_CONTAINS(s, "set ylabel 'percentile'");
    /* the nines scale: 90 -> 1, 99 -> 2, 99.9 -> 3 */
    CHECK_STR_CONTAINS(s, "'90' 1,");
    CHECK_STR_CONTAINS(s, "'99' 2,");
    CHECK_STR_CONTAINS(s, "'99.9' 3");
    /* x is the latency, y the percentile */
    CHECK_STR_CONTAINS(s, "\n6000 2 10\n");
    free(s);
    CHECK(!sh.pct_only);
    /* params that are not percentiles (wake's stat=max, a pct=100) are
     * left to the table and said to be there; the CDF stays */
    add_result(&rs, "mq", "pct=100", 1e6, 0, "ns", NULL);
    add_result(&rs, "mq", "stat=max", 7e6, 0, "ns", NULL);
    bench_plot_shape_of(&rs, "ns", &sh);
    CHECK_EQ(sh.kind, BENCH_PLOT_CDF);
    CHECK(sh.pct_only);
    CHECK(sh.logx);
    s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "the 2 values that are not percentiles");
    CHECK(!strstr(s, "\n1000000 "));
    CHECK(!strstr(s, "\n7000000 "));
    CHECK_EQ(count_of(s, "'99.9' 3"), 1); /* each tic once */
    free(s);
    /* one percentile among other statistics is no distribution */
    bench_results_free(&rs);
    bench_results_init(&rs, "wake", "wake-up latency", NULL, 0);
    add_result(&rs, "mq", "pct=50", 2000, 10, "ns", NULL);
    add_result(&rs, "mq", "stat=max", 9000, 10, "ns", NULL);
    bench_plot_shape_of(&rs, "ns", &sh);
    CHECK(sh.kind != BENCH_PLOT_CDF);
    bench_results_free(&rs);
}

/* "lc rgb '#rrggbb' pt N" of the series titled `title` in panel text s
 * from `from` on, into style; false when there is none. */
static bool style_of(const char *s, const char *title, char *style,
                     size_t n)
{
    char want[64];
    snprintf(want, sizeof want, "title '%s'", title);
    const char *t = strstr(s, want);
    if (!t)
        return false;
    const char *lc = t;
    while (lc > s && strncmp(lc, "lc rgb", 6))
        lc--;
    const char *dt = strstr(lc, " ps ");
    if (lc == s || !dt || dt > t)
        return false;
    snprintf(style, n, "%.*s", (int)(dt - lc), lc);
    return true;
}

TEST(plot_gives_each_row_its_own_colour_and_marker)
{
    bench_results_t rs;
    bench_results_init(&rs, "yield", "ns per yield", NULL, 0);
    static const char *const rows[] = {"mq", "global", "o1", "ule", "cfs",
                                       "eevdf", "bfs", "ws", "kernel",
                                       "floor", "go", "fiber"};
    for (int i = 0; i < 12; i++) {
        add_result(&rs, rows[i], "tasks=1", 10 + i, 1, "ns", NULL);
        add_result(&rs, rows[i], "tasks=16", 12 + i, 1, "ns", NULL);
    }
    char *s = script_of(&rs);
    char st[12][64];
    for (int i = 0; i < 12; i++) {
        CHECK(style_of(s, rows[i], st[i], sizeof st[i]));
        for (int j = 0; j < i; j++) {
            char ci[16], cj[16];
            int pi, pj;
            CHECK_EQ(sscanf(st[i], "lc rgb '%15[^']' pt %d", ci, &pi), 2);
            CHECK_EQ(sscanf(st[j], "lc rgb '%15[^']' pt %d", cj, &pj), 2);
            if (!strcmp(ci, cj) || pi == pj)
                CHECK__FAIL("%s and %s share a colour or marker: %s / %s",
                            rows[i], rows[j], st[i], st[j]);
        }
    }
    free(s);
    bench_results_free(&rs);
}

/* Yield-like results: floor, mq, cfs and (with_kernel) kernel threads
 * two orders of magnitude above them. */
static void zoom_results(bench_results_t *rs, bool with_kernel)
{
    const double v[][2] = {{5, 9}, {16, 21}, {27, 30}, {2000, 100000}};
    const char *rows[] = {"floor", "mq", "cfs", "kernel"};
    bench_results_init(rs, "yield", "ns per yield", NULL, 0);
    for (int i = 0; i < (with_kernel ? 4 : 3); i++) {
        add_result(rs, rows[i], "tasks=1", v[i][0], 0.1, "ns", NULL);
        add_result(rs, rows[i], "tasks=1024", v[i][1], 0.1, "ns", NULL);
    }
}

TEST(plot_zooms_on_rows_bundled_at_the_bottom_of_a_log_axis)
{
    bench_results_t rs;
    zoom_results(&rs, true);
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "set multiplot layout 2,1\n");
    CHECK_STR_CONTAINS(s, "set terminal svg size 960,960 ");
    CHECK(strstr(s, "the rows of the panel above") != NULL);
    const char *zoom = strstr(s, "reset\n");
    CHECK(zoom != NULL);
    zoom = strstr(zoom + 1, "reset\n"); /* the second panel's script */
    CHECK(zoom != NULL);
    CHECK_EQ(count_of(s, "title 'kernel'"), 1); /* not in the zoom */
    CHECK_EQ(count_of(s, "title 'mq'"), 2);
    CHECK(!strstr(zoom, "set logscale y"));
    CHECK_STR_CONTAINS(zoom, "set yrange [0:*]");
    /* the same row keeps its colour and marker in the zoom */
    char a[64], b[64];
    CHECK(style_of(s, "mq", a, sizeof a));
    CHECK(style_of(zoom, "mq", b, sizeof b));
    CHECK(!strcmp(a, b));
    free(s);
    /* nothing bundles on a linear axis: no zoom */
    bench_results_free(&rs);
    zoom_results(&rs, false);
    s = script_of(&rs);
    CHECK(!strstr(s, "multiplot"));
    free(s);
    bench_results_free(&rs);
}

TEST(plot_one_x_value_is_bars)
{
    bench_results_t rs;
    bench_results_init(&rs, "pipe", "bandwidth", NULL, 0);
    add_result(&rs, "mq", "bytes=65536", 5000, 50, "MB/s", NULL);
    add_result(&rs, "kernel", "bytes=65536", 3000, 50, "MB/s", NULL);
    bench_plot_shape_t sh;
    bench_plot_shape_of(&rs, "MB/s", &sh);
    CHECK_EQ(sh.kind, BENCH_PLOT_GROUPS);
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "with boxerrorbars");
    CHECK_STR_CONTAINS(s, "set boxwidth 0.35 absolute");
    CHECK_STR_CONTAINS(s, "set xtics ('65536' 0)");
    CHECK_STR_CONTAINS(s, "set xlabel 'bytes'.");
    free(s);
    bench_results_free(&rs);
}

TEST(plot_names_are_groups)
{
    bench_results_t rs;
    bench_results_init(&rs, "pipe", "round trip", NULL, 0);
    add_result(&rs, "mq", "placement=same", 900, 5, "ns", NULL);
    add_result(&rs, "mq", "placement=cross", 4000, 5, "ns", NULL);
    add_result(&rs, "kernel", "placement=same", 3000, 5, "ns", NULL);
    add_result(&rs, "kernel", "placement=cross", 6000, 5, "ns", NULL);
    bench_plot_shape_t sh;
    bench_plot_shape_of(&rs, "ns", &sh);
    CHECK_EQ(sh.kind, BENCH_PLOT_GROUPS);
    CHECK(!sh.logx);
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "set xtics ('same' 0, 'cross' 1)");
    CHECK_STR_CONTAINS(s, "set xlabel 'placement'.");
    CHECK_STR_CONTAINS(s, "with boxerrorbars"); /* bars */
    /* two series side by side in each group: offsets -0.175 and 0.175 */
    CHECK_STR_CONTAINS(s, "$P0S0 << EOD\n-0.175 900 5\n0.825 4000 5\n");
    CHECK_STR_CONTAINS(s, "$P0S1 << EOD\n0.175 3000 5\n1.175 6000 5\n");
    free(s);
    /* params with different keys keep their whole names */
    add_result(&rs, "mq", "size=big", 100, 5, "ns", NULL);
    s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "set xtics ('placement=same' 0, 'placement=cross' "
                          "1, 'size=big' 2)");
    free(s);
    bench_results_free(&rs);
}

TEST(plot_leaves_out_rows_without_a_value_and_names_them)
{
    bench_results_t rs;
    yield_results(&rs);
    add_result(&rs, "fiber", "tasks=1", NAN, NAN, "ns", "not installed");
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "not plotted (no value): go (not installed), "
                          "fiber (not installed)");
    CHECK(!strstr(s, "title 'go'"));
    CHECK(!strstr(s, "title 'fiber'"));
    CHECK_EQ(count_of(s, "<< EOD"), 2); /* mq and kernel only */
    CHECK(!strstr(s, "nan"));
    free(s);
    bench_results_free(&rs);

    /* nothing has a value: still a plot, saying so */
    bench_results_init(&rs, "yield", "ns per yield", NULL, 0);
    add_result(&rs, "go", "tasks=1", NAN, NAN, "ns", "not installed");
    s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "no values to plot");
    CHECK_STR_CONTAINS(s, "go (not installed)");
    free(s);
    bench_results_free(&rs);
}

TEST(plot_counts_frc_points_and_splits_units_into_panels)
{
    bench_results_t rs;
    bench_results_init(&rs, "pipe", "pipe", NULL, 0);
    add_result(&rs, "mq", "tasks=2", 900, 5, "ns", NULL);
    add_result(&rs, "mq", "tasks=2", 300, 5, "MB/s", NULL);
    rs.r[0].frc = true;
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "set multiplot layout 2,1\n");
    CHECK_STR_CONTAINS(s, "set ylabel 'ns'");
    CHECK_STR_CONTAINS(s, "set ylabel 'MB/s'");
    CHECK_STR_CONTAINS(s, "1 of 1 points FRC");
    CHECK_STR_CONTAINS(s, "set terminal svg size 960,960 ");
    free(s);
    bench_results_free(&rs);
}

TEST(plot_strings_are_single_quoted)
{
    bench_results_t rs;
    bench_results_init(&rs, "x", "it's `date`", NULL, 0);
    add_result(&rs, "o'brien", "tasks=1", 1, 0, "ns", NULL);
    char *s = script_of(&rs);
    CHECK_STR_CONTAINS(s, "title 'o''brien'");
    CHECK_STR_CONTAINS(s, "set title 'x: it''s `date`'");
    /* double quotes appear only around the "\n" joining caption lines */
    for (const char *p = s; (p = strchr(p, '"')); p += 4)
        CHECK(strncmp(p, "\"\\n\"", 4) == 0);
    free(s);
    bench_results_free(&rs);
}

TEST(plot_gnuplot_draws_a_self_contained_svg)
{
    char gp[4096];
    if (!bench_plot_find_gnuplot(gp, sizeof gp)) {
        printf("SKIP plot_gnuplot_draws_a_self_contained_svg: gnuplot is "
               "not installed (apt-get install gnuplot-nox)\n");
        return;
    }
    char path[] = "/tmp/mqs-test-plot-XXXXXX.svg";
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0);
    close(fd);
    bench_results_t rs;
    yield_results(&rs);
    CHECK_EQ(bench_plot_svg(&rs, path), 0);
    char *svg = bench_read_file(path, 0);
    unlink(path);
    CHECK(svg != NULL);
    CHECK_GT(strlen(svg), 1000);
    CHECK_STR_CONTAINS(svg, "<svg");
    CHECK_STR_CONTAINS(svg, "</svg>");
    CHECK_STR_CONTAINS(svg, ">kernel</text>");
    /* self-contained: every reference is to an id inside the file */
    for (const char *p = svg; (p = strstr(p, "href=")); p += 5)
        CHECK(p[6] == '#');
    free(svg);
    bench_results_free(&rs);
}

/* The parser's view of a yield-like experiment, for the option tests. */
static const char *const yield_pseudo[] = {"kernel", NULL};
static const bench_cli_t yield_cli = {.name = "yield",
                                      .summary = "s",
                                      .details = "",
                                      .default_tasks = "1",
                                      .default_policy = "mq",
                                      .pseudo = yield_pseudo,
                                      .default_seconds = 0.1,
                                      .default_repeats = 1};

TEST(plot_without_gnuplot_says_so_and_fails)
{
    setenv("PATH", "/nonexistent-mqs-test", 1);
    bench_results_t rs;
    yield_results(&rs);
    CHECK_EQ(bench_plot_svg(&rs, "/tmp/never.svg"), 1);
    bench_results_free(&rs);
    const bench_cli_t cli = yield_cli;
    char *argv[] = {"yield", "--plot", "x.svg", NULL};
    bench_opts_t o;
    CHECK_EQ(bench_parse_options(&cli, 3, argv, &o), 1);
}

TEST(plot_option_is_parsed)
{
    const bench_cli_t cli = yield_cli;
    char gp[4096];
    bench_opts_t o;
    char *none[] = {"yield", NULL};
    CHECK_EQ(bench_parse_options(&cli, 1, none, &o), 0);
    CHECK(o.plot == NULL);
    bench_opts_free(&o);
    char *empty[] = {"yield", "--plot", "", NULL};
    CHECK_EQ(bench_parse_options(&cli, 3, empty, &o), BENCH_EXIT_USAGE);
    if (!bench_plot_find_gnuplot(gp, sizeof gp))
        return;
    CHECK_EQ(mkdir("/tmp/mqs-test out dir", 0700) == 0 || errno == EEXIST,
             1);
    char *argv[] = {"yield", "--plot", "/tmp/mqs-test out dir/y.svg", "--csv",
                    NULL};
    CHECK_EQ(bench_parse_options(&cli, 4, argv, &o), 0);
    CHECK(o.plot && strcmp(o.plot, "/tmp/mqs-test out dir/y.svg") == 0);
    CHECK_EQ(o.format, BENCH_CSV);
    bench_opts_free(&o);
    CHECK(o.plot == NULL);
    rmdir("/tmp/mqs-test out dir");
    /* A folder that is not there: refused before anything is measured. */
    char *missing[] = {"yield", "--plot", "/nonexistent-mqs-test/y.svg",
                       NULL};
    CHECK_EQ(bench_parse_options(&cli, 3, missing, &o), BENCH_EXIT_USAGE);
}

/* The runtime's settings from the environment are checked with the
 * options, before any row is measured: MQS_WORKERS=0 printed a table of
 * failed rows and exited 1. */
TEST(bad_runtime_settings_are_refused_before_measuring)
{
    const bench_cli_t cli = yield_cli;
    bench_opts_t o;
    char *argv[] = {"yield", NULL};
    setenv("MQS_WORKERS", "0", 1);
    CHECK_EQ(bench_parse_options(&cli, 1, argv, &o), BENCH_EXIT_USAGE);
    /* kernel rows alone need no runtime */
    char *kernel[] = {"yield", "--policy", "kernel", NULL};
    CHECK_EQ(bench_parse_options(&cli, 3, kernel, &o), 0);
    bench_opts_free(&o);
    unsetenv("MQS_WORKERS");
    CHECK_EQ(bench_parse_options(&cli, 1, argv, &o), 0);
    bench_opts_free(&o);
}

/* ----- CSV ----- */

TEST(csv_reads_quoted_fields)
{
    const char *text = "a,b,c\r\n"
                       "1,\"x, y\",\"say \"\"hi\"\"\"\r\n"
                       "\"multi\nline\",,end\n"
                       "\n";
    report_csv_t c;
    char err[128] = "";
    CHECK_EQ(report_csv_parse(text, &c, err, sizeof err), 0);
    CHECK_EQ(c.ncol, 3);
    CHECK_EQ(c.nrow, 2);
    CHECK(!strcmp(c.head[2], "c"));
    CHECK(!strcmp(c.cell[0][1], "x, y"));
    CHECK(!strcmp(c.cell[0][2], "say \"hi\""));
    CHECK(!strcmp(c.cell[1][0], "multi\nline"));
    CHECK(!strcmp(c.cell[1][1], ""));
    CHECK(!strcmp(c.cell[1][2], "end"));
    CHECK_EQ(report_csv_col(&c, "b"), 1);
    CHECK_EQ(report_csv_col(&c, "z"), -1);
    report_csv_free(&c);
}

TEST(csv_rejects_what_it_cannot_read)
{
    report_csv_t c;
    char err[128] = "";
    CHECK_EQ(report_csv_parse("a,b\n1,\"open\n", &c, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "line 2: unterminated quote");
    CHECK_EQ(report_csv_parse("a,b\n1,2,3\n", &c, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "line 2: 3 fields, the header has 2");
    CHECK_EQ(report_csv_parse("", &c, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "no header");
    CHECK_EQ(report_csv_parse("a,b\n", &c, err, sizeof err), 0);
    CHECK_EQ(c.nrow, 0);
    report_csv_free(&c);
}

TEST(csv_reads_back_what_output_writes)
{
    bench_results_t rs;
    bench_results_init(&rs, "yield", "t", NULL, 0);
    add_result(&rs, "mq:a=1,b=2", "tasks=16", 41.25, 0.5, "ns", NULL);
    add_result(&rs, "go", "tasks=16", NAN, NAN, "ns", "not \"installed\", sorry");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_EQ(bench_results_print(&rs, BENCH_CSV, f), 0);
    fclose(f);
    report_csv_t c;
    char err[128];
    CHECK_EQ(report_csv_parse(buf, &c, err, sizeof err), 0);
    CHECK_EQ(c.nrow, 2);
    int row = report_csv_col(&c, "row"), note = report_csv_col(&c, "note");
    CHECK(!strcmp(c.cell[0][row], "mq:a=1,b=2"));
    CHECK(!strcmp(c.cell[1][note], "not \"installed\", sorry"));
    CHECK(!strcmp(c.cell[1][report_csv_col(&c, "value")], "nan"));
    report_csv_free(&c);
    free(buf);
    bench_results_free(&rs);
}

/* ----- index.html and results.json ----- */

static const report_def_t test_defs[] = {
    {"yield", "all,kernel,go", "1,2,8", 2.0, 0.2, 0},
    {"pipe", NULL, NULL, 1.0, 0, 0},
    {"wake", NULL, NULL, 1.0, 0, 0},
    {"ring", NULL, NULL, 1.0, 0, 0},
};

static const char known_csv[] =
    "experiment,row,workers,param,value,unit,ci95,frc,repeats,note,"
    "zero_work_tasks\n"
    "yield,<script>alert(1)</script>,2,tasks=1,12.5,ns,0.25,1,5,,0\n"
    "yield,go,2,tasks=1,nan,ns,nan,0,nan,\"a&b \"\"q\"\", <i>\",nan\n";

/* A finished report: yield ok (from known_csv), pipe failed with a
 * stderr holding a newline and a byte that is not UTF-8, wake absent,
 * ring skipped. */
static void known_report(report_t *rp)
{
    memset(rp, 0, sizeof *rp);
    rp->out_dir = "out";
    rp->exe = rp->exe_shown = "/usr/bin/mqs-bench";
    rp->budget_s = 540;
    rp->total_s = 321;
    rp->plots = true;
    rp->invocation = strdup("mqs-bench report --out out");
    snprintf(rp->machine.cpu, sizeof rp->machine.cpu, "Test CPU <3 & co");
    rp->machine.cores_online = rp->machine.cores_allowed = 2;
    rp->machine.mem_gib = 8;
    snprintf(rp->machine.net, sizeof rp->machine.net,
             "TCP congestion control bbr; default qdisc fq");
    rp->nsteps = 4;
    rp->steps = calloc(4, sizeof *rp->steps);
    for (int i = 0; i < 4; i++)
        rp->steps[i].def = &test_defs[i];
    snprintf(rp->steps[0].defaults.pseudo, sizeof rp->steps[0].defaults.pseudo,
             "kernel, floor");
    rp->steps[2].status = REPORT_ABSENT;
    CHECK_EQ(report_plan(rp, (char[128]){0}, 128), 0);
    report_step_t *y = &rp->steps[0], *p = &rp->steps[1];
    y->status = REPORT_OK;
    y->have_plot = true;
    char err[128];
    CHECK_EQ(report_csv_parse(known_csv, &y->csv, err, sizeof err), 0);
    y->have_csv = true;
    p->status = REPORT_FAILED;
    p->exit_status = -11;
    p->err_text = strdup("boom <here>\nbad \xff byte");
    p->csv_error = strdup("no output");
    rp->steps[3].status = REPORT_SKIPPED;
}

static char *html_of(const report_t *rp)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_EQ(report_write_html(rp, f), 0);
    fclose(f);
    return buf;
}

static char *json_of(const report_t *rp)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_EQ(report_write_json(rp, f), 0);
    fclose(f);
    return buf;
}

/* The table's cells: what the issue found (nan, 2.29879e+07,
 * 0.00435078) and the ordinary cases. */
TEST(numbers_in_tables_read_with_three_significant_digits)
{
    static const char *const in[][2] = {
        {"nan", "\u2013"},       {"-inf", "\u2013"},
        {"2.29879e+07", "23 M"}, {"23772057", "23.8 M"},
        {"1.5e9", "1.5 G"},      {"0.00435078", "0.00435"},
        {"17.3456", "17.3"},     {"5.685", "5.68"},
        {"1024", "1024"},        {"479337", "479337"},
        {"0", "0"},              {"0.5", "0.500"},
        {"327.9", "328"},        {"3.2e-05", "3.20e-05"},
        {"short/long=5/5", "short/long=5/5"}, {"", ""},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        char buf[64];
        report_number(in[i][0], buf, sizeof buf);
        if (strcmp(buf, in[i][1]))
            CHECK__FAIL("%s shown as '%s', expected '%s'", in[i][0], buf,
                        in[i][1]);
    }
    /* ... and in the HTML (known_csv has nan cells) */
    report_t rp;
    known_report(&rp);
    char *h = html_of(&rp);
    CHECK(!strstr(h, ">nan<"));
    CHECK_STR_CONTAINS(h, "<td class=\"n\">\u2013</td>");
    free(h);
    report_free(&rp);
}

TEST(html_has_every_section_and_escapes)
{
    report_t rp;
    known_report(&rp);
    char *h = html_of(&rp);
    CHECK(!strstr(h, "<script>"));
    CHECK(!strstr(h, "<i>"));
    CHECK_STR_CONTAINS(h, "&lt;script&gt;alert(1)&lt;/script&gt;");
    CHECK_STR_CONTAINS(h, "a&amp;b &quot;q&quot;, &lt;i&gt;");
    CHECK_STR_CONTAINS(h, "Test CPU &lt;3 &amp; co");
    CHECK_STR_CONTAINS(h, "<img src=\"yield.svg\"");
    CHECK_STR_CONTAINS(h, "<tr class=\"frc\">");
    /* the target, and how many rows missed it */
    CHECK_STR_CONTAINS(h, "most 1% of the mean");
    CHECK_STR_CONTAINS(h, "1 of 2 rows missed the CI target (shaded)");
    /* the command as it ran, rows not in the build named */
    CHECK_STR_CONTAINS(h, "/usr/bin/mqs-bench yield --policy all,kernel "
                          "--tasks 1,2,8 --seconds ");
    CHECK_STR_CONTAINS(h, "--csv --plot out/yield.svg</pre>");
    CHECK_STR_CONTAINS(h, "not in this build, left out: go");
    /* the failure, its stderr shown open, the byte replaced */
    CHECK_STR_CONTAINS(h, "killed by signal 11");
    CHECK_STR_CONTAINS(h, "<details open><summary>stderr</summary><pre>boom "
                          "&lt;here&gt;\nbad \xEF\xBF\xBD byte</pre>");
    CHECK_STR_CONTAINS(h, "no table: no output");
    CHECK_STR_CONTAINS(h, "not in this build: &#39;mqs-bench wake --help&#39;"
                          " failed");
    CHECK_STR_CONTAINS(h, "the budget was spent before its turn");
    CHECK_EQ(count_of(h, "<section "), 4);
    CHECK_STR_CONTAINS(h, "</html>\n");
    /* long column names may wrap; the machine's rows are all there */
    CHECK_STR_CONTAINS(h, "_<wbr>");
    static const char *const rows[] = {"topology", "clock",
                                       "virtualisation", "network", "load",
                                       "build", "peers"};
    for (int i = 0; i < 7; i++) {
        char th[64];
        snprintf(th, sizeof th, "<tr><th>%s</th>", rows[i]);
        CHECK_STR_CONTAINS(h, th);
    }
    free(h);
    report_free(&rp);
}

/* mixed's table: twenty columns do not fit the page; it comes in parts
 * of at most RWRITE_PART_COLS (10) columns, each naming its rows. */
TEST(wide_tables_are_split_into_parts_that_name_their_rows)
{
    char csv[2048], err[128];
    int n = snprintf(csv, sizeof csv, "experiment,row,workers,param");
    for (int i = 0; i < 17; i++)
        n += snprintf(csv + n, sizeof csv - (size_t)n, ",col_%d", i);
    n += snprintf(csv + n, sizeof csv - (size_t)n, "\nmixed,mq,2,x=1");
    for (int i = 0; i < 17; i++)
        n += snprintf(csv + n, sizeof csv - (size_t)n, ",%d", 100 + i);
    snprintf(csv + n, sizeof csv - (size_t)n, "\n");
    report_csv_t c;
    CHECK_EQ(report_csv_parse(csv, &c, err, sizeof err), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rwrite_table(f, &c);
    fclose(f);
    /* 17 columns: two parts of 9 and 8 */
    CHECK_EQ(count_of(buf, "<table class=\"results\">"), 2);
    CHECK_STR_CONTAINS(buf, "columns 1 to 9 of 17:");
    CHECK_STR_CONTAINS(buf, "columns 10 to 17 of 17:");
    CHECK_EQ(count_of(buf, "<th>row</th>"), 2);
    CHECK_EQ(count_of(buf, "<th>param</th>"), 2);
    CHECK_EQ(count_of(buf, "<td>mq</td>"), 2);
    CHECK_EQ(count_of(buf, "<th>col_<wbr>16</th>"), 1);
    CHECK_EQ(count_of(buf, "<td class=\"n\">116</td>"), 1);
    free(buf);
    report_csv_free(&c);
}

/* The machine as this one describes itself: every field says something
 * (Linux has /proc and /sys), and the load line comes after the run. */
TEST(machine_says_clock_topology_virtualisation_network_load_build_and_peers)
{
    report_machine_t m;
    report_machine_describe(&m);
    CHECK_STR_CONTAINS(m.clock, "kernel clock source ");
    CHECK_STR_CONTAINS(m.clock, "cycle counter: ");
    CHECK_STR_CONTAINS(m.topology, "socket(s)");
    CHECK_STR_CONTAINS(m.topology, "NUMA node(s)");
    CHECK(!strncmp(m.virt, "none seen", 9) ||
          !strncmp(m.virt, "a virtual machine", 17));
    CHECK_STR_CONTAINS(m.build, ": "); /* "<build type>: <flags>" */
    CHECK_STR_CONTAINS(m.peers, "go: ");
    CHECK_STR_CONTAINS(m.peers, "; fiber: ");
    /* The network line names what /proc says (read here another way). */
    const char *const sysctl[2] = {"/proc/sys/net/ipv4/tcp_congestion_control",
                                   "/proc/sys/net/core/default_qdisc"};
    const char *const label[2] = {"TCP congestion control ",
                                  "; default qdisc "};
    for (int i = 0; i < 2; i++) {
        char v[64] = "unknown", want[128];
        FILE *f = fopen(sysctl[i], "r");
        if (f) {
            if (fscanf(f, "%63s", v) != 1)
                snprintf(v, sizeof v, "unknown");
            fclose(f);
        }
        snprintf(want, sizeof want, "%s%s", label[i], v);
        CHECK_STR_CONTAINS(m.net, want);
    }
    CHECK_STR_CONTAINS(m.load, "not measured");
    report_machine_finish(&m);
    CHECK_STR_CONTAINS(m.load, "1-minute load average ");
    CHECK_STR_CONTAINS(m.load, " after");
    fprintf(stderr, "  %s\n  %s\n  %s\n  %s\n  %s\n  %s\n  %s\n", m.clock,
            m.topology, m.virt, m.net, m.load, m.build, m.peers);
}

TEST(json_has_rows_machine_commands_and_escapes)
{
    report_t rp;
    known_report(&rp);
    char *j = json_of(&rp);
    CHECK_STR_CONTAINS(j, "\"row\": \"<script>alert(1)</script>\"");
    CHECK_STR_CONTAINS(j, "\"note\": \"a&b \\\"q\\\", <i>\"");
    CHECK_STR_CONTAINS(j, "\"value\": 12.5, \"unit\": \"ns\", \"ci95\": 0.25,"
                          " \"frc\": true, \"repeats\": 5");
    CHECK_STR_CONTAINS(j, "\"value\": null");
    CHECK_STR_CONTAINS(j, "\"workers\": 2");
    CHECK_STR_CONTAINS(j, "\"cpu\": \"Test CPU <3 & co\"");
    CHECK_STR_CONTAINS(j, "\"topology\": ");
    CHECK_STR_CONTAINS(j, "\"virtualisation\": ");
    CHECK_STR_CONTAINS(
        j, "\"network\": \"TCP congestion control bbr; default qdisc fq\"");
    CHECK_STR_CONTAINS(j, "\"peers\": ");
    CHECK_STR_CONTAINS(j, "\"stderr\": \"boom <here>\\nbad \\ufffd byte\"");
    CHECK_STR_CONTAINS(j, "\"status\": \"not in this build\"");
    CHECK_STR_CONTAINS(j, "\"argv\": [\"/usr/bin/mqs-bench\", \"yield\", "
                          "\"--policy\", \"all,kernel\"");
    CHECK_STR_CONTAINS(j, "\"rows_not_in_build\": \"go\"");
    CHECK_STR_CONTAINS(j, "\"plot\": \"yield.svg\"");
    CHECK_EQ(count_of(j, "{\"experiment\": \"yield\", \"row\""), 2);
    /* balanced, with nothing raw that JSON forbids */
    int depth = 0;
    bool in = false;
    for (const char *c = j; *c; c++) {
        if (in && *c == '\\') {
            c++;
            continue;
        }
        if (*c == '"')
            in = !in;
        CHECK(!in || (unsigned char)*c >= 0x20);
        depth += !in && (*c == '{' || *c == '[');
        depth -= !in && (*c == '}' || *c == ']');
        CHECK_GE(depth, 0);
    }
    CHECK_EQ(depth, 0);
    CHECK(!in);
    free(j);
    report_free(&rp);
}

/* ----- the planner ----- */

static void plan_steps(report_t *rp, double budget_s, int absent)
{
    memset(rp, 0, sizeof *rp);
    rp->out_dir = "R";
    rp->exe = rp->exe_shown = "mqs-bench";
    rp->budget_s = budget_s;
    rp->plots = true;
    rp->nsteps = 4;
    rp->steps = calloc(4, sizeof *rp->steps);
    for (int i = 0; i < 4; i++) {
        rp->steps[i].def = &test_defs[i];
        snprintf(rp->steps[i].defaults.tasks, sizeof rp->steps[i].defaults.tasks,
                 "1,2,4,8,16");
        snprintf(rp->steps[i].defaults.policy,
                 sizeof rp->steps[i].defaults.policy, "mq,kernel");
        snprintf(rp->steps[i].defaults.pseudo,
                 sizeof rp->steps[i].defaults.pseudo, "kernel, floor");
        rp->steps[i].defaults.seconds = 0.5;
    }
    if (absent >= 0)
        rp->steps[absent].status = REPORT_ABSENT;
}

static bool argv_has(char **argv, const char *a, const char *b)
{
    for (int i = 0; argv[i]; i++)
        if (!strcmp(argv[i], a) && (!b || (argv[i + 1] && !strcmp(argv[i + 1], b))))
            return true;
    return false;
}

TEST(plan_fits_each_step_in_its_share)
{
    report_t rp;
    char err[256] = "";
    plan_steps(&rp, 600, -1);
    CHECK_EQ(report_plan(&rp, err, sizeof err), 0);
    double usable = 600 * (1 - REPORT_RESERVE), total = 0;
    for (int i = 0; i < 4; i++) {
        report_step_t *s = &rp.steps[i];
        double share = usable * s->def->weight / 5.0;
        CHECK(fabs(s->share_s - share) < 1e-9);
        total += s->given_s;
        CHECK(s->given_s <= share + 1e-9);
        CHECK(s->seconds >= REPORT_MIN_SECONDS);
        CHECK(s->point_budget_s >= s->repeats * s->seconds - 1e-9);
        CHECK(fabs(s->given_s - s->points * report_point_cost(
                                   s->seconds, s->point_budget_s)) < 1e-9);
        CHECK(argv_has(s->argv, "--csv", NULL));
        CHECK(argv_has(s->argv, "--repeats", "3"));
        CHECK(!argv_has(s->argv, "--workers", NULL));
    }
    CHECK(total <= usable + 1e-9);
    /* yield: its own lists, capped at 0.2 s, less the row it lacks:
     * (registered + kernel) x 3 tasks */
    report_step_t *y = &rp.steps[0];
    CHECK_EQ(y->points, (rplan_policies() + 1) * 3);
    CHECK(y->seconds <= 0.2);
    CHECK(!strcmp(y->policy, "all,kernel"));
    CHECK(!strcmp(y->dropped, "go"));
    CHECK(argv_has(y->argv, "--plot", "R/yield.svg"));
    CHECK(argv_has(y->argv, "--tasks", "1,2,8"));
    /* pipe: the experiment's defaults from --help (5 tasks x 2 rows),
     * neither list on its command line */
    report_step_t *p = &rp.steps[1];
    CHECK_EQ(p->points, 10);
    CHECK(p->seconds <= 0.5);
    CHECK(!argv_has(p->argv, "--policy", NULL));
    CHECK(!argv_has(p->argv, "--tasks", NULL));
    report_free(&rp);
}

TEST(plan_gives_an_absent_steps_share_to_the_others)
{
    report_t a, b;
    char err[256];
    plan_steps(&a, 120, -1);
    plan_steps(&b, 120, 2);
    CHECK_EQ(report_plan(&a, err, sizeof err), 0);
    CHECK_EQ(report_plan(&b, err, sizeof err), 0);
    CHECK(b.steps[2].argv == NULL);
    CHECK_EQ(b.steps[2].given_s, 0);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            CHECK(b.steps[i].point_budget_s >= a.steps[i].point_budget_s);
    CHECK(b.steps[3].point_budget_s > a.steps[3].point_budget_s);
    report_free(&a);
    report_free(&b);
}

TEST(plan_passes_policy_and_workers_through)
{
    report_t rp;
    char err[256];
    plan_steps(&rp, 600, -1);
    rp.policy = "mq:rr_slice_ns=1000000,kernel";
    rp.workers = 2;
    rp.plots = false;
    CHECK_EQ(report_plan(&rp, err, sizeof err), 0);
    for (int i = 0; i < 4; i++) {
        CHECK(argv_has(rp.steps[i].argv, "--policy",
                       "mq:rr_slice_ns=1000000,kernel"));
        CHECK(argv_has(rp.steps[i].argv, "--workers", "2"));
        CHECK(!argv_has(rp.steps[i].argv, "--plot", NULL));
    }
    CHECK_EQ(rp.steps[1].points, 5 * 2);
    CHECK_STR_CONTAINS(rp.steps[0].command,
                       "mqs-bench yield --policy mq:rr_slice_ns=1000000,kernel"
                       " --tasks 1,2,8 --workers 2 --seconds ");
    report_free(&rp);
}

/* An experiment's own parameter (pipe's modes) multiplies its points. */
TEST(plan_counts_an_experiments_own_parameter)
{
    report_t rp;
    char err[256];
    plan_steps(&rp, 600, -1);
    report_def_t pipe3 = test_defs[1];
    pipe3.params = 3;
    rp.steps[1].def = &pipe3;
    CHECK_EQ(report_plan(&rp, err, sizeof err), 0);
    CHECK_EQ(rp.steps[1].points, 5 * 2 * 3);
    CHECK_EQ(rp.steps[2].points, 5 * 2); /* params 0 counts as 1 */
    report_free(&rp);
}

TEST(plan_gives_a_big_step_its_minimum_and_splits_the_rest)
{
    report_t rp;
    char err[256] = "";
    plan_steps(&rp, 120, -1);
    /* ring: 200 x 2 = 400 points, a minimum of 200 s: more than 120 s */
    char big[512] = "1";
    for (int i = 2; i <= 200; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), ",%d", i % 9 + 1);
    CHECK_EQ(report_count_list(big), 200);
    snprintf(rp.steps[3].defaults.tasks, sizeof rp.steps[3].defaults.tasks,
             "%s", big);
    CHECK_EQ(report_plan(&rp, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "needs at least");
    report_free(&rp);

    /* 100 points (min 50 s) in 600 s: its weighted share (108 s) is
     * enough; with weight 0.1 (10.8 s) it gets its minimum instead */
    static const report_def_t defs[] = {
        {"a", NULL, NULL, 2.0, 0, 0}, {"b", NULL, NULL, 2.0, 0, 0},
        {"c", NULL, NULL, 0.9, 0, 0}, {"d", NULL, NULL, 0.1, 0, 0}};
    plan_steps(&rp, 600, -1);
    for (int i = 0; i < 4; i++)
        rp.steps[i].def = &defs[i];
    snprintf(rp.steps[3].defaults.tasks, sizeof rp.steps[3].defaults.tasks,
             "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,"
             "24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,"
             "44,45,46,47,48,49,50");
    CHECK_EQ(report_plan(&rp, err, sizeof err), 0);
    report_step_t *d = &rp.steps[3];
    CHECK_EQ(d->points, 100);
    double min = 100 * report_point_cost(REPORT_MIN_SECONDS,
                                         REPORT_REPEATS * REPORT_MIN_SECONDS);
    CHECK(fabs(d->share_s - min) < 1e-9);
    CHECK(d->given_s <= d->share_s + 1e-9);
    double sum = 0;
    for (int i = 0; i < 4; i++)
        sum += rp.steps[i].share_s;
    CHECK(fabs(sum - 600 * (1 - REPORT_RESERVE)) < 1e-6);
    /* a and b keep equal weights, so equal shares of the rest */
    CHECK(fabs(rp.steps[0].share_s - rp.steps[1].share_s) < 1e-9);
    CHECK(fabs(rp.steps[0].share_s - (540 - min) * 2.0 / 4.9) < 1e-6);
    report_free(&rp);
}

TEST(plan_refuses_a_budget_too_small)
{
    report_t rp;
    char err[256] = "";
    plan_steps(&rp, 6, -1);
    CHECK_EQ(report_plan(&rp, err, sizeof err), -1);
    CHECK_STR_CONTAINS(err, "too small");
    CHECK_STR_CONTAINS(err, "needs at least");
    report_free(&rp);
}

TEST(plan_counts_rows_and_lists)
{
    CHECK_EQ(report_count_list("1,2,4"), 3);
    CHECK_EQ(report_count_list(""), 0);
    CHECK_EQ(report_count_list(NULL), 0);
    CHECK_EQ(report_count_rows("mq:a=1,b=2,kernel"), 2);
    CHECK_EQ(report_count_rows("all,kernel,floor"), rplan_policies() + 2);
    CHECK_GE(rplan_policies(), 1);
}

TEST(help_text_gives_the_defaults)
{
    static const char *const pseudo[] = {"kernel", "floor", NULL};
    static const bench_cli_t cli = {.name = "demo",
                                    .summary = "a demo",
                                    .details = "see (default x) here\n",
                                    .default_tasks = "1,2,4,8",
                                    .default_policy = "mq,kernel",
                                    .pseudo = pseudo,
                                    .default_seconds = 0.25,
                                    .default_repeats = 4};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    print_help(&cli, f);
    fclose(f);
    report_defaults_t d;
    report_parse_help(buf, &d);
    CHECK(!strcmp(d.tasks, "1,2,4,8"));
    CHECK(!strcmp(d.policy, "mq,kernel"));
    CHECK(!strcmp(d.pseudo, "kernel, floor"));
    CHECK(fabs(d.seconds - 0.25) < 1e-12);
    report_parse_help("no options here", &d);
    CHECK(!d.tasks[0] && !d.policy[0] && d.seconds == 0);
    free(buf);
}

TEST(shell_join_quotes_what_needs_it)
{
    char *argv[] = {"mqs-bench", "yield", "a b", "it's", "--plot", "r/y.svg",
                    NULL};
    char *s = report_shell_join(argv);
    CHECK(s && !strcmp(s, "mqs-bench yield 'a b' 'it'\\''s' --plot r/y.svg"));
    free(s);
}

/* ----- running steps against a stand-in program ----- */

static const char fake_program[] =
    "#!/bin/sh\n"
    "case \"$1\" in\n"
    "ok) [ \"$2\" = --help ] && { echo '  --tasks N (default 1,2)'; exit 0; }\n"
    "    echo 'experiment,row,workers,param,value,unit,ci95,frc,note'\n"
    "    echo 'ok,mq,2,tasks=1,5,ns,0.1,0,'\n"
    "    echo 'working' >&2; exit 0 ;;\n"
    "crash) [ \"$2\" = --help ] && exit 0\n"
    "    echo 'about to crash' >&2; kill -SEGV $$ ;;\n"
    "hang) [ \"$2\" = --help ] && exit 0\n"
    "    exec sleep 60 ;;\n"
    "garbage) [ \"$2\" = --help ] && exit 0\n"
    "    printf 'a,b\\n\"open\\n'; exit 0 ;;\n"
    "*) echo \"unknown experiment '$1'\" >&2; exit 2 ;;\n"
    "esac\n";

static const report_def_t fake_defs[] = {
    {"ok", NULL, NULL, 1, 0.1, 0},     {"crash", NULL, NULL, 1, 0.1, 0},
    {"hang", NULL, NULL, 1, 0.1, 0},   {"garbage", NULL, NULL, 1, 0.1, 0},
    {"absent", NULL, NULL, 1, 0.1, 0},
};

TEST(steps_run_as_children_and_failures_stay_theirs)
{
    char dir[] = "/tmp/mqs-test-report-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char exe[256];
    snprintf(exe, sizeof exe, "%s/fake-bench", dir);
    FILE *f = fopen(exe, "w");
    CHECK(f != NULL);
    fputs(fake_program, f);
    fclose(f);
    CHECK_EQ(chmod(exe, 0755), 0);

    report_t rp = {.out_dir = dir, .exe = exe, .exe_shown = "mqs-bench",
                   .budget_s = 60, .nsteps = 5};
    rp.steps = calloc(5, sizeof *rp.steps);
    for (int i = 0; i < 5; i++) {
        rp.steps[i].def = &fake_defs[i];
        report_probe(&rp, &rp.steps[i]);
    }
    CHECK_EQ(rp.steps[4].status, REPORT_ABSENT);
    CHECK_EQ(rp.steps[0].status, REPORT_PLANNED);
    CHECK(!strcmp(rp.steps[0].defaults.tasks, "1,2"));
    char err[256];
    CHECK_EQ(report_plan(&rp, err, sizeof err), 0);
    double now = (double)bench_now_ns() / 1e9;
    for (int i = 0; i < 4; i++)
        report_run_step(&rp, &rp.steps[i], i + 1, now + (i == 2 ? 1 : 30));

    report_step_t *ok = &rp.steps[0], *crash = &rp.steps[1],
                  *hang = &rp.steps[2], *garbage = &rp.steps[3];
    CHECK_EQ(ok->status, REPORT_OK);
    CHECK_EQ(ok->exit_status, 0);
    CHECK(ok->have_csv);
    CHECK_EQ(ok->csv.nrow, 1);
    CHECK_STR_CONTAINS(ok->err_text, "working");
    CHECK_EQ(crash->status, REPORT_FAILED);
    CHECK_EQ(crash->exit_status, -SIGSEGV);
    CHECK_STR_CONTAINS(crash->err_text, "about to crash");
    CHECK_EQ(hang->status, REPORT_TIMED_OUT);
    CHECK_EQ(garbage->status, REPORT_FAILED);
    CHECK_STR_CONTAINS(garbage->csv_error, "unterminated quote");

    /* and the report says all of it */
    char *h = html_of(&rp);
    CHECK_STR_CONTAINS(h, "killed by signal 11");
    CHECK_STR_CONTAINS(h, "it overran the");
    CHECK_STR_CONTAINS(h, "exited 0 after");
    CHECK_STR_CONTAINS(h, "not in this build: &#39;mqs-bench absent --help");
    free(h);
    report_free(&rp);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
}

/* --json's header: the machine, the build and the command as given, an
 * argument with a space or a quote quoted as a shell would read it. */
TEST(json_header_names_machine_commit_and_command)
{
    const bench_cli_t cli = yield_cli;
    bench_opts_t o;
    char *argv[] = {"yield", "--json", "--tasks", "1", NULL};
    CHECK_EQ(bench_parse_options(&cli, 4, argv, &o), 0);
    CHECK_STREQ(o.command, "mqs-bench yield --json --tasks 1");
    bench_opts_free(&o);
    char *odd[] = {"yield", "--policy", "mq:x=it's a b", NULL};
    char *line = command_line(3, odd);
    CHECK_STREQ(line, "mqs-bench yield --policy 'mq:x=it'\\''s a b'");
    free(line);
    char *h = report_machine_json("mqs-bench yield \"q\"");
    CHECK(h != NULL);
    CHECK_STR_CONTAINS(h, "\"command\": \"mqs-bench yield \\\"q\\\"\"");
    CHECK_STR_CONTAINS(h, "\"commit\": ");
    CHECK_STR_CONTAINS(h, "\"machine\": {\"cpu\": ");
    CHECK_STR_CONTAINS(h, "\"cores_online\": ");
    CHECK_STR_CONTAINS(h, "\"network\": \"TCP congestion control ");
    CHECK_STR_CONTAINS(h, "\"date\": \"20");
    CHECK(h[0] == '{' && h[strlen(h) - 1] == '}');
    free(h);
}
