/*
 * point.c - the data-point driver and the row-kind helpers shared by the
 * mixed, spawn and chat experiments (see point.h).
 *
 * A point is: open the row (a runtime, a thread mask, nothing for a
 * peer), one warm-up measurement thrown away, then measurements under
 * bench_repeat_until_precise until the 95% CI is tight or the budget is
 * spent (FRC), then close.  The extras an experiment reports next to its
 * value (wait time, migrations, peak RSS) are averaged over the same
 * repeats as the value, so a table line is one set of runs.
 *
 * yield.c predates this file and keeps its own loop: it also needs the
 * worst-over-repeats fairness, which a mean does not give.
 *
 * Experiment options: the common parser (common.c) knows a fixed set of
 * options, and each experiment here has two or three of its own
 * (--short, --fanout, --rooms...).  Rather than widen the common
 * parser's interface for every experiment, an experiment takes its own
 * options out of argv first (bench_point_take_options) and hands the rest on;
 * a misspelt option still reaches the common parser and is reported
 * there as unknown.
 */
#include "point.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The driver                                                          */
/* ------------------------------------------------------------------ */

struct point_run {
    bench_point_t *p;
    double sum[BENCH_MAX_EXTRA];
    int have[BENCH_MAX_EXTRA];
};

static void point_preset(double *extra, int n)
{
    for (int i = 0; i < n; i++)
        extra[i] = NAN;
}

static int point_repeat(void *arg, int repeat, double *value)
{
    struct point_run *run = arg;
    bench_point_t *p = run->p;
    double extra[BENCH_MAX_EXTRA];
    point_preset(extra, p->nextra);
    bench_progress_show(p->progress, p->row->spec, p->param, repeat + 1);
    int rc = p->kind->measure(p, value, extra);
    if (rc != 0)
        return rc;
    for (int i = 0; i < p->nextra; i++) {
        if (isnan(extra[i]))
            continue;
        run->sum[i] += extra[i];
        run->have[i]++;
    }
    return 0;
}

static int point_warmup(bench_point_t *p)
{
    double v, extra[BENCH_MAX_EXTRA];
    point_preset(extra, p->nextra);
    bench_progress_show(p->progress, p->row->spec, p->param, 0);
    p->warmup = true;
    int rc = p->kind->measure(p, &v, extra);
    p->warmup = false;
    return rc;
}

static void point_fill(const bench_point_t *p, const struct point_run *run,
                       const bench_estimate_t *est, bool ok,
                       bench_result_t *res)
{
    *res = (bench_result_t){
        .row = p->row->spec,
        .param = (char *)p->param,
        .workers = p->workers,
        .value = ok ? est->mean : NAN,
        .ci95 = ok ? est->ci95 : NAN,
        .unit = p->unit,
        .frc = ok && est->frc,
        .note = p->note[0] ? p->note : NULL,
    };
    for (int i = 0; i < BENCH_MAX_EXTRA; i++)
        res->extra[i] = NAN;
    for (int i = 0; ok && i < p->nextra; i++)
        if (run->have[i])
            res->extra[i] = run->sum[i] / run->have[i];
}

int bench_point_run(bench_point_t *p, bench_result_t *res)
{
    struct point_run run = {.p = p};
    bench_estimate_t est = {.mean = NAN, .ci95 = NAN, .frc = true};
    p->note[0] = '\0';
    int rc = p->kind->open(p);
    if (rc == 0)
        rc = point_warmup(p);
    if (rc == 0)
        rc = bench_repeat_until_precise(&p->o->prec, point_repeat, &run, &est);
    p->kind->close(p);
    if (rc < 0 && !p->note[0])
        snprintf(p->note, sizeof p->note, "failed");
    point_fill(p, &run, &est, rc == 0, res);
    return rc < 0 ? -1 : 0;
}

int bench_sweep_run(bench_sweep_t *sw, bench_results_t *rs)
{
    const bench_opts_t *o = sw->o;
    bench_progress_t prog;
    bench_progress_init(&prog, o->nrows * sw->nparams);
    int failed = 0;
    for (int r = 0; r < o->nrows; r++) {
        for (int i = 0; i < sw->nparams; i++) {
            bench_point_t p = {.experiment = sw->experiment,
                               .o = o,
                               .progress = &prog,
                               .row = &o->rows[r]};
            prog.index++;
            if (sw->setup(sw, i, &p) != 0)
                return -1;
            bench_result_t res;
            failed |= bench_point_run(&p, &res) != 0;
            if (bench_results_add(rs, &res) != 0)
                return -1;
        }
    }
    bench_progress_done(&prog);
    return failed ? -1 : 0;
}

int bench_sweep_report(bench_sweep_t *sw, const char *title,
                       const bench_extra_col_t *extras, int nextra)
{
    bench_results_t rs;
    bench_results_init(&rs, sw->experiment, title, extras, nextra);
    int failed = bench_sweep_run(sw, &rs);
    int out = bench_output(&rs, sw->o);
    bench_results_free(&rs);
    return failed || out ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Policy rows                                                         */
/* ------------------------------------------------------------------ */

/* Does the runtime's policy name match the row "name[:tunables]"?  The
 * runtime reads MQS_* variables, and MQS_POLICY would silently relabel
 * every row. */
static bool point_same_policy(const char *name, const char *spec)
{
    size_t n = strcspn(spec, ":");
    return name && strlen(name) == n && strncmp(name, spec, n) == 0;
}

int bench_point_runtime_open(const char *exp, const char *spec, int workers,
                       size_t stack_size, mqs_runtime_t **rt)
{
    char err[256] = "";
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.workers = workers;
    cfg.policy = spec;
    cfg.stack_size = stack_size;
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    int rc = mqs_runtime_create(rt, &cfg);
    if (rc != 0) {
        fprintf(stderr, "mqs-bench %s: %s: runtime: %s\n", exp, spec,
                err[0] ? err : mqs_strerror(rc));
        *rt = NULL;
        return -1;
    }
    if (!point_same_policy(mqs_runtime_policy(*rt), spec)) {
        fprintf(stderr,
                "mqs-bench %s: row %s ran policy %s: MQS_POLICY in the "
                "environment overrides --policy; unset it\n",
                exp, spec, mqs_runtime_policy(*rt));
        mqs_runtime_destroy(*rt);
        *rt = NULL;
        return -1;
    }
    return 0;
}

int bench_point_runtime_close(const char *exp, mqs_runtime_t *rt)
{
    if (!rt)
        return 0;
    int rc = mqs_runtime_destroy(rt);
    if (rc)
        fprintf(stderr, "mqs-bench %s: mqs_runtime_destroy: %s\n", exp,
                mqs_strerror(rc));
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Kernel rows                                                         */
/* ------------------------------------------------------------------ */

int bench_kernel_cpus(int workers, cpu_set_t *set)
{
    cpu_set_t allowed;
    CPU_ZERO(set);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        int n = bench_cpus_allowed();
        for (int c = 0; c < n && c < CPU_SETSIZE; c++)
            CPU_SET(c, set);
        return n;
    }
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &allowed) || (workers && n == workers))
            continue;
        CPU_SET(c, set);
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Peer rows                                                           */
/* ------------------------------------------------------------------ */

void bench_peer_arg(bench_peer_point_t *pp, const char *key, double value)
{
    if (pp->nargs >= BENCH_PEER_MAX_KEYS)
        return;
    char *b = pp->argbuf[pp->nargs];
    snprintf(b, sizeof pp->argbuf[0], "%s=%.15g", key, value);
    pp->args[pp->nargs++] = b;
    pp->args[pp->nargs] = NULL;
}

static int point_peer_open(bench_point_t *p)
{
    p->workers = p->o->workers ? p->o->workers : bench_cpus_allowed();
    return 0;
}

static double point_scaled(const bench_peer_result_t *r, const char *key,
                           double scale)
{
    return key ? bench_peer_get(r, key) * (scale != 0 ? scale : 1) : NAN;
}

static int point_peer_measure(bench_point_t *p, double *value, double *extra)
{
    bench_peer_point_t *pp = p->ctx;
    const bench_peer_map_t *m = pp->map;
    bench_peer_result_t r;
    int st = bench_peer_run(p->row->spec, p->experiment, pp->args, &r, p->note,
                            sizeof p->note);
    if (st == BENCH_PEER_MISSING || st == BENCH_PEER_UNSUPPORTED)
        return BENCH_POINT_SKIP;
    if (st != BENCH_PEER_OK)
        return -1;
    *value = point_scaled(&r, m->value_key, m->value_scale);
    if (isnan(*value) || (m->check && m->check(&r, pp->check_ctx) != 0)) {
        snprintf(p->note, sizeof p->note, "failed: bad %s output",
                 p->row->spec);
        return -1;
    }
    for (int i = 0; i < p->nextra; i++)
        extra[i] = point_scaled(&r, m->extra_key[i], m->extra_scale[i]);
    return 0;
}

static void point_peer_close(bench_point_t *p)
{
    (void)p;
}

const bench_point_kind_t bench_peer_kind = {point_peer_open, point_peer_measure,
                                            point_peer_close};

/* ------------------------------------------------------------------ */
/* Experiment options                                                  */
/* ------------------------------------------------------------------ */

/* Index of the option arg names ("--name" or "--name=..."), or -1; *val
 * gets what follows '=' (NULL when the value is the next argument). */
static int point_match(const char *arg, const char *const *names,
                       const char **val)
{
    if (strncmp(arg, "--", 2) != 0)
        return -1;
    for (int i = 0; names[i]; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(arg + 2, names[i], n) != 0)
            continue;
        if (arg[2 + n] == '\0' || arg[2 + n] == '=') {
            *val = arg[2 + n] == '=' ? arg + 3 + n : NULL;
            return i;
        }
    }
    return -1;
}

int bench_point_take_options(const char *exp, int *argc, char **argv,
                       const char *const *names, const char **values)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *val = NULL;
        if (strcmp(argv[i], "--") == 0) {
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        }
        int k = point_match(argv[i], names, &val);
        if (k < 0) {
            argv[out++] = argv[i];
            continue;
        }
        if (!val && i + 1 >= *argc) {
            fprintf(stderr, "mqs-bench %s: missing value for '--%s'\n", exp,
                    names[k]);
            return BENCH_EXIT_USAGE;
        }
        values[k] = val ? val : argv[++i];
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}
