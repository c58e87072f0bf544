/*
 * report.c - `mqs-bench report --out DIR [--budget MINUTES] [--workers W]
 * [--policy LIST] [--dry-run]`: the standard set of experiments, run
 * within a time budget, into DIR/index.html and DIR/results.json.
 *
 * The standard set is the table below, one line per experiment: the rows
 * and task counts it runs with (or its own defaults) and its weight, its
 * share of the budget.  Adjust it there.  The run:
 *
 *   1. probe: `mqs-bench <experiment> --help` for each; one that fails is
 *      "not in this build", and the help text gives the defaults the
 *      planner counts points from;
 *   2. plan (report_plan.c): each present experiment's share of the
 *      budget and the --seconds/--repeats/--budget that fit it, printed
 *      before anything runs;
 *   3. run each as a child process (report_run.c), killed if it overruns
 *      its share by half (or the whole budget ends), so one crash or hang
 *      costs only that experiment;
 *   4. write index.html and results.json (report_write.c) from the files
 *      the children left, with the machine (report_machine.c).
 *
 * Honesty rules: the report shows the command each experiment ran with,
 * exactly (the planner's choices are on it), every row it printed, its
 * stderr when it failed, and the total time; nothing is re-measured or
 * summarised.  The exit status is 0 when every experiment in the build
 * ran ok, 1 when one failed or was killed (the report is still written),
 * 2 for a usage error.
 */
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "plot.h"

/* Every policy of the build, the kernel and both peers (yield adds its
 * floor row). */
#define REPORT_ROWS "all,kernel,go,fiber"

/* The standard set.  weight: relative share of the budget (yield has the
 * most rows); max_seconds: a cap on one measurement's length; params:
 * the points per row the experiment's own parameter adds (its default
 * list's length), for the planner's count. */
static const report_def_t report_standard[] = {
    {"yield", "all,kernel,floor,go,fiber", "1,2,8,64,512,4096", 3.0, 0.2, 1},
    {"pipe", REPORT_ROWS, NULL, 1.0, 0, 3},  /* modes same, cross, bw */
    {"wake", REPORT_ROWS, NULL, 1.5, 0, 1},
    {"mixed", REPORT_ROWS, NULL, 1.5, 0, 3}, /* mixes 5/5, 4/2, 16/0 */
    /* 10^4 only: a 10^6 tree a row and a repeat (Go's takes seconds, the
     * kernel row caps its threads at 10^4 anyway) would take the other
     * experiments' share of the budget; `mqs-bench spawn` runs both */
    {"spawn", REPORT_ROWS, "10000", 1.0, 0, 1},
    {"chat", REPORT_ROWS, NULL, 1.5, 0, 2}, /* rooms 1, 10 */
    {"ring", REPORT_ROWS, NULL, 1.0, 0, 1},
    /* 10^4 connections is past Go's descriptors here and long per run */
    {"echo", "all,kernel,epoll,go,fiber", "1,100,1000", 1.5, 0, 1},
};
static const int report_nstandard =
    (int)(sizeof report_standard / sizeof report_standard[0]);

#define REPORT_DEFAULT_MINUTES 9.0 /* under 10 minutes on 2 cores */
#define REPORT_OVERRUN 1.5         /* a step is killed past this x its time */
#define REPORT_OVERRUN_S 15.0      /* ... plus this (start-up, plotting)    */
#define REPORT_MIN_LEFT_S 5.0      /* less budget left: skip the step       */
#define REPORT_HARD_END 1.1        /* no step runs past this x the budget   */

enum { ROPT_OUT = 256, ROPT_BUDGET, ROPT_WORKERS, ROPT_POLICY, ROPT_DRY,
       ROPT_HELP };

static const struct option report_opts[] = {
    {"out", required_argument, NULL, ROPT_OUT},
    {"budget", required_argument, NULL, ROPT_BUDGET},
    {"workers", required_argument, NULL, ROPT_WORKERS},
    {"policy", required_argument, NULL, ROPT_POLICY},
    {"dry-run", no_argument, NULL, ROPT_DRY},
    {"help", no_argument, NULL, ROPT_HELP},
    {NULL, 0, NULL, 0},
};

static void report_help(FILE *out)
{
    fprintf(out,
            "usage: mqs-bench report --out DIR [--budget MINUTES] "
            "[--workers W]\n"
            "                        [--policy LIST] [--dry-run]\n"
            "Run the standard set of experiments within a time budget into "
            "DIR/index.html\n(tables, plots, the commands) and "
            "DIR/results.json (every row, the machine).\n\n"
            "  --out DIR         where the report goes (created if needed)\n"
            "  --budget MINUTES  total time (default %.0f); the plan, printed "
            "first,\n"
            "                    gives each experiment a share by weight\n"
            "  --workers W       passed to every experiment\n"
            "  --policy LIST     passed to every experiment in place of its "
            "rows\n"
            "  --dry-run         print the plan and the commands, run "
            "nothing\n\n"
            "standard set:",
            REPORT_DEFAULT_MINUTES);
    for (int i = 0; i < report_nstandard; i++)
        fprintf(out, " %s", report_standard[i].experiment);
    fputs("\nExit status: 0 all ran ok, 1 one failed or overran (the report "
          "is still written),\n2 a usage error.\n",
          out);
}

struct report_cli {
    const char *out, *policy;
    double minutes;
    int workers;
    bool dry;
};

static int report_parse(int argc, char **argv, struct report_cli *c)
{
    *c = (struct report_cli){.minutes = REPORT_DEFAULT_MINUTES};
    optind = 1;
    opterr = 0;
    int key, rc = 0;
    while (rc == 0 &&
           (key = getopt_long(argc, argv, ":h", report_opts, NULL)) != -1) {
        if (key == ROPT_OUT)
            c->out = optarg;
        else if (key == ROPT_BUDGET)
            rc = bench_parse_double("report", "--budget", optarg, 0.1, 1440,
                                    &c->minutes);
        else if (key == ROPT_WORKERS)
            rc = bench_parse_int("report", "--workers", optarg, 1, 4096,
                                 &c->workers);
        else if (key == ROPT_POLICY)
            c->policy = optarg;
        else if (key == ROPT_DRY)
            c->dry = true;
        else if (key == ROPT_HELP || key == 'h') {
            report_help(stdout);
            return BENCH_HELP_SHOWN;
        } else {
            rc =
                bench_usage("report", "%s '%s' (see mqs-bench report --help)",
                            key == ':' ? "missing value for" : "unknown option",
                            argv[optind - 1]);
        }
    }
    if (rc == 0 && optind < argc)
        rc = bench_usage("report", "unexpected argument '%s'", argv[optind]);
    if (rc == 0 && (!c->out || !*c->out))
        rc = bench_usage("report", "--out DIR is required");
    return rc;
}

/* mkdir -p */
static int report_mkdirs(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

void report_free(report_t *rp)
{
    for (int i = 0; i < rp->nsteps; i++) {
        report_step_t *s = &rp->steps[i];
        for (int a = 0; s->argv && s->argv[a]; a++)
            free(s->argv[a]);
        free(s->argv);
        free(s->command);
        free(s->err_text);
        free(s->csv_error);
        if (s->have_csv)
            report_csv_free(&s->csv);
    }
    free(rp->steps);
    free(rp->invocation);
    rp->steps = NULL;
    rp->nsteps = 0;
    rp->invocation = NULL;
}

/* ----- The plan, as printed ----- */

static void report_print_plan(const report_t *rp, FILE *out)
{
    fprintf(out,
            "mqs-bench report: budget %.1f minutes (%.0f s, %.0f%% kept for "
            "start-up and plots), into %s/\n"
            "  %-8s %7s %8s %9s %9s  %s\n",
            rp->budget_s / 60, rp->budget_s, REPORT_RESERVE * 100,
            rp->out_dir, "step", "points", "given", "--seconds", "--budget",
            "command");
    for (int i = 0; i < rp->nsteps; i++) {
        const report_step_t *s = &rp->steps[i];
        if (s->status == REPORT_ABSENT) {
            fprintf(out, "  %-8s not in this build\n", s->def->experiment);
            continue;
        }
        fprintf(out, "  %-8s %7d %6.0f s %9.3f %7.2f s  %s\n",
                s->def->experiment, s->points, s->given_s, s->seconds,
                s->point_budget_s, s->command);
        if (s->dropped[0])
            fprintf(out, "  %-8s (standard rows not in this build: %s)\n", "",
                    s->dropped);
    }
    if (!rp->plots)
        fputs("  (no plots: gnuplot not found on PATH; install gnuplot-nox)\n",
              out);
    fflush(out);
}

/* ----- The run ----- */

static int report_setup(report_t *rp, const struct report_cli *c, int argc,
                        char **argv, char *exe_shown, size_t n)
{
    memset(rp, 0, sizeof *rp);
    rp->out_dir = c->out;
    rp->exe = "/proc/self/exe";
    if (!realpath("/proc/self/exe", exe_shown))
        snprintf(exe_shown, n, "mqs-bench");
    rp->exe_shown = exe_shown;
    rp->budget_s = c->minutes * 60;
    rp->workers = c->workers;
    rp->policy = c->policy;
    char gp[PATH_MAX];
    rp->plots = bench_plot_find_gnuplot(gp, sizeof gp);
    rp->tty = isatty(STDERR_FILENO);
    /* argv[0] is "report": the command shown is exe_shown report ... */
    char **words = calloc((size_t)argc + 2, sizeof *words);
    if (words) {
        words[0] = exe_shown;
        memcpy(words + 1, argv, (size_t)argc * sizeof *words);
        rp->invocation = report_shell_join(words);
    }
    free(words);
    rp->steps = calloc((size_t)report_nstandard, sizeof *rp->steps);
    if (!rp->steps || !rp->invocation)
        return -1;
    rp->nsteps = report_nstandard;
    for (int i = 0; i < rp->nsteps; i++) {
        rp->steps[i].def = &report_standard[i];
        report_probe(rp, &rp->steps[i]);
    }
    return 0;
}

/* When step i must be done by: its time with room to overrun (the plan is
 * an estimate, and the machine may be busy), but never past the whole
 * budget plus 10%: killing a step loses all its rows, so a step that is
 * nearly done is let finish rather than cut at the budget's last second. */
static double report_deadline(const report_step_t *s, double now, double end)
{
    return fmin(now + s->given_s * REPORT_OVERRUN + REPORT_OVERRUN_S, end);
}

static void report_run_all(report_t *rp)
{
    double t0 = (double)bench_now_ns() / 1e9, end = t0 + rp->budget_s;
    double hard_end = t0 + rp->budget_s * REPORT_HARD_END;
    for (int i = 0; i < rp->nsteps; i++) {
        report_step_t *s = &rp->steps[i];
        double now = (double)bench_now_ns() / 1e9;
        if (s->status != REPORT_PLANNED)
            continue;
        if (end - now < REPORT_MIN_LEFT_S) {
            s->status = REPORT_SKIPPED;
            printf("[%d/%d] %s: skipped, the budget is spent\n", i + 1,
                   rp->nsteps, s->def->experiment);
            continue;
        }
        printf("[%d/%d] %s: running, given %.0f s (%.0f s of %.0f s used)\n",
               i + 1, rp->nsteps, s->def->experiment, s->given_s, now - t0,
               rp->budget_s);
        fflush(stdout);
        report_run_step(rp, s, i + 1, report_deadline(s, now, hard_end));
        printf("[%d/%d] %s: %s in %.0f s, %d rows\n", i + 1, rp->nsteps,
               s->def->experiment, report_status_name(s->status), s->took_s,
               s->have_csv ? s->csv.nrow : 0);
        fflush(stdout);
    }
    rp->total_s = (double)bench_now_ns() / 1e9 - t0;
}

static int report_write_file(const report_t *rp, const char *name,
                             int (*write)(const report_t *, FILE *))
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", rp->out_dir, name);
    FILE *f = fopen(path, "w");
    int rc = f ? write(rp, f) : -1;
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc)
        fprintf(stderr, "mqs-bench report: writing %s failed: %s\n", path,
                strerror(errno));
    return rc;
}

static int report_exit_status(const report_t *rp)
{
    for (int i = 0; i < rp->nsteps; i++) {
        report_status_t st = rp->steps[i].status;
        if (st == REPORT_FAILED || st == REPORT_TIMED_OUT ||
            st == REPORT_SKIPPED)
            return 1;
    }
    return 0;
}

static int report_go(report_t *rp, bool dry)
{
    char err[256];
    if (report_plan(rp, err, sizeof err) != 0)
        return bench_usage("report", "%s", err);
    report_print_plan(rp, stdout);
    if (dry)
        return 0;
    report_machine_describe(&rp->machine);
    report_run_all(rp);
    report_machine_finish(&rp->machine);
    int w = report_write_file(rp, "index.html", report_write_html) |
            report_write_file(rp, "results.json", report_write_json);
    if (w)
        return 1;
    printf("mqs-bench report: %.0f s; wrote %s/index.html and "
           "%s/results.json\n",
           rp->total_s, rp->out_dir, rp->out_dir);
    return report_exit_status(rp);
}

int bench_report_main(int argc, char **argv)
{
    struct report_cli c;
    int rc = report_parse(argc, argv, &c);
    if (rc)
        return rc == BENCH_HELP_SHOWN ? 0 : rc;
    if (!c.dry && report_mkdirs(c.out) != 0) {
        fprintf(stderr, "mqs-bench report: --out %s: %s\n", c.out,
                strerror(errno));
        return 1;
    }
    report_t rp;
    char exe[PATH_MAX];
    rc = report_setup(&rp, &c, argc, argv, exe, sizeof exe);
    if (rc == 0)
        rc = report_go(&rp, c.dry);
    else
        fputs("mqs-bench report: out of memory\n", stderr);
    report_free(&rp);
    return rc;
}
