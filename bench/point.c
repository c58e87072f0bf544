/*
 * point.c - the experiment toolkit's data-point driver, sweep and peer
 * row kind (expkit.h).
 *
 * A point is: open the row (a runtime, a thread mask, nothing for a
 * peer), one warm-up measurement thrown away, then measurements under
 * bench_repeat_until_precise until the 95% CI is tight or the budget is
 * spent (FRC), then close.  The extras an experiment reports next to its
 * value (wait time, migrations, peak RSS) are averaged over the same
 * repeats as the value, so a table line is one set of runs.
 *
 * bench_point_estimate() is the same loop for an experiment whose sample
 * is a function of the seconds to measure (ring, pipe, wake): it wraps
 * the function in a row kind rather than keeping a second copy of the
 * warm-up-and-repeat sequence.
 *
 * yield.c keeps its own loop: it also needs the worst-over-repeats
 * fairness, which a mean does not give.
 */
#include "expkit.h"

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

/* Warm-up (unless p->no_warm) and the repeats: the one loop. */
static int point_loop(bench_point_t *p, struct point_run *run,
                      bench_estimate_t *est)
{
    *est = (bench_estimate_t){.mean = NAN, .stdev = NAN, .ci95 = NAN,
                              .frc = true};
    int rc = p->no_warm ? 0 : point_warmup(p);
    if (rc == 0)
        rc = bench_repeat_until_precise(&p->o->prec, point_repeat, run, est);
    return rc;
}

int bench_point_run(bench_point_t *p, bench_result_t *res)
{
    struct point_run run = {.p = p};
    bench_estimate_t est;
    p->note[0] = '\0';
    int rc = p->kind->open(p);
    if (rc == 0)
        rc = point_loop(p, &run, &est);
    else
        est = (bench_estimate_t){.mean = NAN, .ci95 = NAN, .frc = true};
    p->kind->close(p);
    if (rc < 0 && !p->note[0])
        snprintf(p->note, sizeof p->note, "failed");
    point_fill(p, &run, &est, rc == 0, res);
    return rc < 0 ? -1 : 0;
}

/* ----- a sample function as a row kind ----- */

struct point_sample {
    bench_sample_fn fn;
    void *ctx;
};

static int point_sample_open(bench_point_t *p)
{
    (void)p;
    return 0;
}

static int point_sample_measure(bench_point_t *p, double *value,
                                double *extra)
{
    const struct point_sample *s = p->ctx;
    (void)extra;
    return s->fn(s->ctx, p->warmup ? p->o->seconds / 4 : p->o->seconds,
                 value);
}

static void point_sample_close(bench_point_t *p)
{
    (void)p;
}

static const bench_point_kind_t point_sample_kind = {
    point_sample_open, point_sample_measure, point_sample_close};

int bench_point_estimate(const bench_opts_t *o, bench_progress_t *pg,
                         const char *row, const char *param, bool warm,
                         bench_sample_fn fn, void *ctx, bench_estimate_t *est)
{
    struct point_sample s = {fn, ctx};
    bench_row_spec_t spec = {(char *)row, false};
    bench_point_t p = {.o = o, .progress = pg, .row = &spec,
                       .kind = &point_sample_kind, .ctx = &s,
                       .no_warm = !warm};
    struct point_run run = {.p = &p};
    snprintf(p.param, sizeof p.param, "%s", param);
    return point_loop(&p, &run, est);
}

bench_result_t bench_result_of(const char *row, const char *param,
                               int workers, const char *unit, int rc,
                               const bench_estimate_t *est, const char *note)
{
    bool ok = rc == 0;
    bench_result_t r = {
        .row = (char *)row,
        .param = (char *)param,
        .workers = workers,
        .value = ok ? est->mean : NAN,
        .ci95 = ok ? est->ci95 : NAN,
        .unit = unit,
        .frc = ok && est->frc,
        .note = ok ? NULL : note,
    };
    for (int i = 0; i < BENCH_MAX_EXTRA; i++)
        r.extra[i] = NAN;
    return r;
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
    int st = bench_peer_sample(p->row->spec, p->experiment, pp->args,
                               p->o->workers, p->o->seconds, &r, p->note,
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
