/*
 * report_plan.c - the budget planner of `mqs-bench report`: how much of
 * the time budget each experiment gets, and the options that make it fit.
 *
 * What a step costs is known from the shared driver (bench/stats.h):
 * each data point is a warm-up run, then at least --repeats runs of
 * --seconds, then more until the CI target is met or --budget seconds
 * (counted from the first run) are spent, plus the one run in flight
 * when that happens.  So a point takes at most
 *     seconds (warm-up) + max(repeats x seconds, budget) + seconds
 * and a step's time is that times its points (--tasks entries x rows).
 * The planner splits the budget (less REPORT_RESERVE for start-up and
 * plotting) by the weights of the standard set (a step whose weighted
 * share is below its minimum gets the minimum, and the others share the
 * rest), divides each share by the step's points, and picks --seconds <=
 * share / points / (repeats + 2) and --budget = the rest of the point's
 * share (capped at the experiments' own default), so the bound above is
 * within the share.  The points are counted from the lists the step will
 * run with: the standard set's, or the experiment's own defaults, read
 * from its --help (every experiment prints them through bench/common.c).
 *
 * Rejected: measuring a calibration run first (it costs budget and the
 * driver's bound is already tight); letting experiments stop on their
 * own with no per-point budget (one slow policy would starve the rest).
 * The plan is an upper bound: a point that meets its CI target stops
 * early, so the report usually finishes well inside the budget.
 */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "mqs/policy.h"

#define RPLAN_MAX_ARGS 24

/* ----- What --help says ----- */

/* Copy the text after `marker` in line up to `stop` into out. */
static bool rplan_between(const char *text, const char *marker,
                          const char *stop, char *out, size_t n)
{
    const char *a = strstr(text, marker);
    if (!a)
        return false;
    a += strlen(marker);
    const char *b = strstr(a, stop);
    if (!b || (size_t)(b - a) >= n || memchr(a, '\n', (size_t)(b - a)))
        return false;
    snprintf(out, n, "%.*s", (int)(b - a), a);
    return true;
}

/* The line of text that starts with start, or NULL. */
static const char *rplan_line(const char *text, const char *start)
{
    size_t n = strlen(start);
    for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : p)
        if (strncmp(p, start, n) == 0)
            return p;
    return NULL;
}

void report_parse_help(const char *help, report_defaults_t *d)
{
    memset(d, 0, sizeof *d);
    if (!help)
        return;
    const char *t = rplan_line(help, "  --tasks ");
    if (t)
        rplan_between(t, "(default ", ")", d->tasks, sizeof d->tasks);
    rplan_between(help, "); default ", ".\n", d->policy, sizeof d->policy);
    rplan_between(help, "or a pseudo row (", ")", d->pseudo, sizeof d->pseudo);
    const char *s = rplan_line(help, "  --seconds ");
    char num[64];
    if (s && rplan_between(s, "(default ", ")", num, sizeof num))
        d->seconds = strtod(num, NULL);
}

int report_count_list(const char *list)
{
    if (!list || !*list)
        return 0;
    int n = 1;
    for (; *list; list++)
        n += *list == ',';
    return n;
}

static int rplan_policies(void)
{
    int n = 0;
    for (const struct mqs_policy *const *p = mqs_policy_list(); p && *p; p++)
        n++;
    return n;
}

int report_count_rows(const char *policy)
{
    int n = 0;
    for (const char *p = policy ? policy : ""; *p;) {
        size_t len = bench_rows_item_len(p);
        n += len == 3 && strncmp(p, "all", 3) == 0 ? rplan_policies() : 1;
        p += len + (p[len] == ',');
    }
    return n;
}

/* ----- Sizing each step ----- */

/* The --policy a step runs with (NULL: leave the experiment's default).
 * A user's --policy is passed as given; the standard rows lose those this
 * build's experiment does not have (a pseudo row that is not in its
 * --help, a policy not registered), which the report names.  (Its
 * --tasks is the standard set's, s->def->tasks, or the default.) */
static const char *rplan_policy(const report_t *rp, const report_step_t *s)
{
    if (rp->policy)
        return rp->policy;
    return s->def->policy && s->policy[0] ? s->policy : NULL;
}

/* Is the row item (name[:tunables]) one this build's experiment has? */
static bool rplan_row_known(const report_step_t *s, const char *item,
                            size_t len)
{
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)len, item);
    name[strcspn(name, ":")] = '\0';
    if (!strcmp(name, "all") || mqs_policy_find(name))
        return true;
    for (const char *p = s->defaults.pseudo; *p;) {
        size_t n = strcspn(p, ",");
        if (n == strlen(name) && !strncmp(p, name, n))
            return true;
        p += n;
        p += strspn(p, ", ");
    }
    return false;
}

/* s->policy: the standard rows less those not in this build. */
static void rplan_filter_rows(report_step_t *s)
{
    s->policy[0] = s->dropped[0] = '\0';
    for (const char *p = s->def->policy ? s->def->policy : ""; *p;) {
        size_t len = bench_rows_item_len(p);
        char *dst = rplan_row_known(s, p, len) ? s->policy : s->dropped;
        size_t cap = dst == s->policy ? sizeof s->policy : sizeof s->dropped;
        size_t at = strlen(dst);
        snprintf(dst + at, cap - at, "%s%.*s",
                 at ? (dst == s->policy ? "," : ", ") : "", (int)len, p);
        p += len + (p[len] == ',');
    }
}

static int rplan_points(const report_t *rp, const report_step_t *s)
{
    const char *t = s->def->tasks, *p = rplan_policy(rp, s);
    int nt = report_count_list(t ? t : s->defaults.tasks);
    int nr = report_count_rows(p ? p : s->defaults.policy);
    int np = s->def->params > 0 ? s->def->params : 1;
    return (nt ? nt : REPORT_GUESS_TASKS) * (nr ? nr : REPORT_GUESS_ROWS) * np;
}

static double rplan_cap(const report_step_t *s)
{
    if (s->def->max_seconds > 0)
        return s->def->max_seconds;
    return s->defaults.seconds > 0 ? s->defaults.seconds : 0.2;
}

/* What a data point can cost at most: the warm-up and the run in flight
 * when the budget ends (2 x seconds), the budget, and each run's start-up
 * (spawning, settling, joining), of which there are 2 + budget/seconds. */
double report_point_cost(double seconds, double budget)
{
    return 2 * seconds + budget + (2 + budget / seconds) * REPORT_RUN_COST_S;
}

/* The least a step can be planned with: every run REPORT_MIN_SECONDS
 * long, the per-point budget just the repeats. */
static double rplan_min_share(const report_step_t *s)
{
    return s->points * report_point_cost(REPORT_MIN_SECONDS,
                                         REPORT_REPEATS * REPORT_MIN_SECONDS);
}

/* The sum of the minimum shares of the steps to plan. */
static double rplan_min_total(const report_t *rp)
{
    double sum = 0;
    for (int i = 0; i < rp->nsteps; i++)
        if (rp->steps[i].status == REPORT_PLANNED)
            sum += rplan_min_share(&rp->steps[i]);
    return sum;
}

/* One pass of the split: the unfixed steps share what the fixed ones
 * leave, by weight; one whose share is below its minimum is fixed at it.
 * True when a step was fixed (the split must be redone). */
static bool rplan_split_pass(report_t *rp, double usable, bool *fixed)
{
    double left = usable, w = 0;
    bool again = false;
    for (int i = 0; i < rp->nsteps; i++) {
        report_step_t *s = &rp->steps[i];
        if (s->status == REPORT_PLANNED && fixed[i])
            left -= s->share_s;
        else if (s->status == REPORT_PLANNED)
            w += s->def->weight;
    }
    for (int i = 0; i < rp->nsteps; i++) {
        report_step_t *s = &rp->steps[i];
        if (s->status != REPORT_PLANNED || fixed[i])
            continue;
        s->share_s = left * s->def->weight / w;
        if (s->share_s < rplan_min_share(s)) {
            s->share_s = rplan_min_share(s);
            fixed[i] = again = true;
        }
    }
    return again;
}

/* Split usable seconds between the steps by weight, except that a step
 * whose weighted share would be below its minimum gets its minimum and
 * the others share the rest: one experiment with many points must not
 * make the whole report refuse a budget that fits.  The caller has
 * checked that the minimums fit. */
static int rplan_split(report_t *rp, double usable)
{
    bool *fixed = calloc((size_t)rp->nsteps + 1, sizeof *fixed);
    if (!fixed)
        return -1;
    while (rplan_split_pass(rp, usable, fixed))
        ;
    free(fixed);
    return 0;
}

/* Size a step from its share.  --seconds: the cap, or less so that half
 * the point's share covers the warm-up, the repeats and the overshoot
 * (the other half pays the runs' start-up and more repeats).  --budget:
 * the rest of the point's share (solving report_point_cost = share), but
 * no less than the repeats and no more than the experiments' own default
 * (max(2, 10 x seconds)): past that, a point that missed its CI target
 * will not meet it by running longer, it is noise.  given_s is then what
 * the step can take at most: the share, or less. */
static void rplan_size(report_step_t *s, double share)
{
    double point = share / s->points, o = REPORT_RUN_COST_S;
    s->repeats = REPORT_REPEATS;
    s->seconds = fmin(rplan_cap(s), point / (2.0 * (s->repeats + 2)));
    s->seconds = fmax(REPORT_MIN_SECONDS, s->seconds);
    /* three decimals on the command line: round down, not up */
    s->seconds = floor(s->seconds * 1000 + 1e-6) / 1000;
    double b = (point - 2 * s->seconds - 2 * o) / (1 + o / s->seconds);
    b = fmin(b, fmax(2.0, 10 * s->seconds));
    b = fmax(b, s->repeats * s->seconds);
    s->point_budget_s = floor(b * 100 + 1e-6) / 100;
    s->given_s = s->points * report_point_cost(s->seconds, s->point_budget_s);
}

/* ----- The command line ----- */

static bool rplan_plain(const char *w)
{
    if (!*w)
        return false;
    for (; *w; w++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789-_./:=,+%@",
                    *w))
            return false;
    return true;
}

char *report_shell_join(char *const *argv)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    for (int i = 0; argv[i]; i++) {
        fputs(i ? " " : "", f);
        if (rplan_plain(argv[i])) {
            fputs(argv[i], f);
            continue;
        }
        fputc('\'', f);
        for (const char *c = argv[i]; *c; c++) {
            if (*c == '\'')
                fputs("'\\'", f); /* close, escaped quote, reopen */
            fputc(*c, f);
        }
        fputc('\'', f);
    }
    return fclose(f) == 0 ? buf : (free(buf), NULL);
}

static int rplan_arg(char **argv, int *n, const char *a)
{
    if (*n >= RPLAN_MAX_ARGS - 1 || !(argv[*n] = strdup(a)))
        return -1;
    (*n)++;
    return 0;
}

static int rplan_argf(char **argv, int *n, const char *fmt, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    return rplan_arg(argv, n, buf);
}

static int rplan_argv(const report_t *rp, report_step_t *s)
{
    char **a = calloc(RPLAN_MAX_ARGS, sizeof *a);
    if (!(s->argv = a))
        return -1;
    int n = 0, rc = rplan_arg(a, &n, rp->exe);
    rc = rc ? rc : rplan_arg(a, &n, s->def->experiment);
    const char *p = rplan_policy(rp, s), *t = s->def->tasks;
    if (p && !rc)
        rc = rplan_arg(a, &n, "--policy") || rplan_arg(a, &n, p);
    if (t && !rc)
        rc = rplan_arg(a, &n, "--tasks") || rplan_arg(a, &n, t);
    if (rp->workers && !rc)
        rc = rplan_arg(a, &n, "--workers") ||
             rplan_argf(a, &n, "%.0f", rp->workers);
    rc = rc ? rc
            : rplan_arg(a, &n, "--seconds") ||
                  rplan_argf(a, &n, "%.3f", s->seconds) ||
                  rplan_arg(a, &n, "--repeats") ||
                  rplan_argf(a, &n, "%.0f", s->repeats) ||
                  rplan_arg(a, &n, "--budget") ||
                  rplan_argf(a, &n, "%.2f", s->point_budget_s) ||
                  rplan_arg(a, &n, "--csv");
    if (rp->plots && !rc) {
        char svg[4096];
        snprintf(svg, sizeof svg, "%s/%s.svg", rp->out_dir,
                 s->def->experiment);
        rc = rplan_arg(a, &n, "--plot") || rplan_arg(a, &n, svg);
    }
    return rc;
}

/* The command shown: argv with the program as the reader would type it. */
static int rplan_command(const report_t *rp, report_step_t *s)
{
    char *exe = s->argv[0];
    s->argv[0] = (char *)rp->exe_shown;
    s->command = report_shell_join(s->argv);
    s->argv[0] = exe;
    return s->command ? 0 : -1;
}

int report_plan(report_t *rp, char *err, size_t errlen)
{
    double usable = rp->budget_s * (1 - REPORT_RESERVE);
    for (int i = 0; i < rp->nsteps; i++) {
        rplan_filter_rows(&rp->steps[i]);
        rp->steps[i].points = rplan_points(rp, &rp->steps[i]);
    }
    double need = rplan_min_total(rp) / (1 - REPORT_RESERVE);
    if (need > rp->budget_s) {
        snprintf(err, errlen,
                 "a budget of %.1f minutes is too small for the standard "
                 "set here: it needs at least %.1f",
                 rp->budget_s / 60, ceil(need / 6) / 10);
        return -1;
    }
    if (rplan_split(rp, usable) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < rp->nsteps; i++) {
        report_step_t *s = &rp->steps[i];
        if (s->status != REPORT_PLANNED)
            continue;
        rplan_size(s, s->share_s);
        if (rplan_argv(rp, s) || rplan_command(rp, s)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}
