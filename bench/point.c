/*
 * point.c - the experiment toolkit's one driver (expkit.h): a data
 * point, the peer row kind, the sweep of every (row, parameter) point,
 * and an experiment's main from its table entry.
 *
 * A point is: open the row (a runtime, a thread mask, nothing for a
 * peer), one warm-up measurement thrown away, then measurements under
 * bench_repeat_until_precise until the 95% CI is tight or the budget is
 * spent (FRC), then close.  The extras an experiment reports next to its
 * value (wait time, migrations, peak RSS) are folded over the same
 * repeats as the value, so a table line is one set of runs: averaged by
 * default, the worst where a mean would hide it (yield's fairness), or
 * the number of repeats.  An experiment whose point is several lines
 * (wake's seven statistics of one run) emits them itself from the one
 * estimate.
 *
 * Peer rows have one kind for every experiment: the point's peer
 * arguments plus workers= and seconds=, one process per measurement (so
 * no warm-up: the next process would not see it), and a map from the
 * peer's keys to the value and extras.  A peer that is not installed or
 * does not implement the experiment is a skipped row, not a failure.
 *
 * Rejected: a sample-function adapter beside the row kinds (ring, pipe
 * and wake had one, and a private copy of the loop each; yield had a
 * fourth for its worst-case fairness), which made every rule of the loop
 * (the warm-up, the progress line, what a skipped peer is) exist in
 * several versions.
 */
#include "expkit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----- The driver ----- */

struct point_run {
    bench_point_t *p;
    double acc[BENCH_MAX_EXTRA];
    int have[BENCH_MAX_EXTRA];
};

static void point_preset(double *extra, int n)
{
    for (int i = 0; i < n; i++)
        extra[i] = NAN;
}

double bench_point_seconds(const bench_point_t *p)
{
    return p->warmup ? p->o->seconds / 4 : p->o->seconds;
}

static int point_fold_of(const bench_point_t *p, int i)
{
    return p->extras ? p->extras[i].fold : BENCH_FOLD_MEAN;
}

static void point_fold(struct point_run *run, int i, double x)
{
    int fold = point_fold_of(run->p, i);
    if (isnan(x) || fold == BENCH_FOLD_REPEATS)
        return;
    double *a = &run->acc[i];
    if (fold == BENCH_FOLD_MEAN || !run->have[i])
        *a = fold == BENCH_FOLD_MEAN ? *a + x : x;
    else
        *a = fold == BENCH_FOLD_MIN ? fmin(*a, x) : fmax(*a, x);
    run->have[i]++;
}

static int point_measure(bench_point_t *p, int shown, double *value,
                         double *extra)
{
    point_preset(extra, p->nextra);
    bench_progress_show(p->progress, p->row->spec, p->param, shown);
    return p->kind->measure(p, value, extra);
}

static int point_repeat(void *arg, int repeat, double *value)
{
    struct point_run *run = arg;
    double extra[BENCH_MAX_EXTRA];
    int rc = point_measure(run->p, repeat + 1, value, extra);
    for (int i = 0; rc == 0 && i < run->p->nextra; i++)
        point_fold(run, i, extra[i]);
    return rc;
}

static double point_extra(const struct point_run *run, int i,
                          const bench_estimate_t *est)
{
    int fold = point_fold_of(run->p, i);
    if (fold == BENCH_FOLD_REPEATS)
        return est->n;
    if (!run->have[i])
        return NAN;
    return fold == BENCH_FOLD_MEAN ? run->acc[i] / run->have[i] : run->acc[i];
}

static void point_fill(const bench_point_t *p, const struct point_run *run,
                       const bench_estimate_t *est, bench_result_t *res)
{
    bool ok = p->ok;
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
    point_preset(res->extra, BENCH_MAX_EXTRA);
    for (int i = 0; ok && i < p->nextra; i++)
        res->extra[i] = point_extra(run, i, est);
}

int bench_point_run(bench_point_t *p, bench_result_t *res)
{
    struct point_run run = {.p = p};
    bench_estimate_t est = {.mean = NAN, .stdev = NAN, .ci95 = NAN,
                            .frc = true};
    p->note[0] = '\0';
    int rc = p->kind->open(p);
    if (rc == 0 && !p->no_warm) { /* its value and extras are dropped */
        double v, extra[BENCH_MAX_EXTRA];
        p->warmup = true;
        rc = point_measure(p, 0, &v, extra);
        p->warmup = false;
    }
    if (rc == 0)
        rc = bench_repeat_until_precise(&p->o->prec, point_repeat, &run, &est);
    if (p->kind->close)
        p->kind->close(p);
    if (rc < 0 && !p->note[0])
        snprintf(p->note, sizeof p->note, "failed");
    p->ok = rc == 0;
    point_fill(p, &run, &est, res);
    return rc < 0 ? -1 : 0;
}

/* ----- Peer rows ----- */

/* Workers: what setup put in p->workers (ring's default is one), else
 * --workers, else every CPU allowed. */
static int peer_open(bench_point_t *p)
{
    if (!p->workers)
        p->workers = p->o->workers ? p->o->workers : bench_cpus_allowed();
    p->no_warm = true;
    return 0;
}

static double peer_scaled(const bench_peer_result_t *r, const char *key,
                          double scale)
{
    return key ? bench_peer_get(r, key) * (scale != 0 ? scale : 1) : NAN;
}

/* The value and extras from the keys of p->peer_map. */
static int peer_convert(bench_point_t *p, const bench_peer_result_t *r,
                        double *value, double *extra)
{
    const bench_peer_map_t *m = p->peer_map;
    if (m->convert)
        return m->convert(p, r, value, extra);
    *value = peer_scaled(r, m->value_key, m->value_scale);
    if (isnan(*value) || (m->check && m->check(r, p->ctx) != 0))
        return -1;
    for (int i = 0; i < p->nextra; i++)
        extra[i] = peer_scaled(r, m->extra_key[i], m->extra_scale[i]);
    return 0;
}

static int peer_measure(bench_point_t *p, double *value, double *extra)
{
    bench_peer_args_t a = p->peer_args; /* its list points into p's */
    bench_peer_result_t r;
    int workers = bench_peer_one_thread(p->row->spec) ? 1 : p->workers;
    if (bench_peer_args_common(&a, workers, bench_point_seconds(p))) {
        snprintf(p->note, sizeof p->note, "failed: too many peer arguments");
        return -1;
    }
    int st = bench_peer_run(p->row->spec, p->experiment, a.list, 0, &r, p->note,
                            sizeof p->note);
    if (st == BENCH_PEER_MISSING || st == BENCH_PEER_UNSUPPORTED)
        return BENCH_POINT_SKIP;
    if (st != BENCH_PEER_OK)
        return -1;
    if (peer_convert(p, &r, value, extra) != 0) {
        snprintf(p->note, sizeof p->note, "failed: bad %s output",
                 p->row->spec);
        return -1;
    }
    double w = bench_peer_get(&r, "workers"); /* what it really used */
    if (w >= 1)
        p->workers = (int)w;
    return 0;
}

const bench_point_kind_t bench_peer_kind = {peer_open, peer_measure, NULL};

/* ----- The sweep and an experiment's main ----- */

static const bench_point_kind_t *sweep_kind(const bench_exp_t *e,
                                            const bench_row_spec_t *row)
{
    for (const bench_row_kind_t *k = e->kinds; k && k->kind; k++)
        if (row->pseudo ? k->name && strcmp(k->name, row->spec) == 0
                        : !k->name)
            return k->kind; /* a peer row too, when the experiment says */
    if (bench_peer_is(row->spec))
        return &bench_peer_kind;
    return !row->pseudo || strcmp(row->spec, "kernel") == 0 ? e->kind : NULL;
}

/* Measure the point of row r at parameter i and add its results. */
static int sweep_point(bench_sweep_t *sw, bench_progress_t *prog, int r,
                       int i, bench_results_t *rs)
{
    const bench_row_spec_t *row = &sw->o->rows[r];
    bench_point_t p = {.experiment = sw->e->cli->name,
                       .o = sw->o,
                       .progress = prog,
                       .row = row,
                       .kind = sweep_kind(sw->e, row),
                       .extras = sw->extras,
                       .nextra = sw->nextra}; /* no peer args yet */
    if (!p.kind || sw->e->setup(sw, i, &p) != 0)
        return -2;
    bench_result_t res;
    int rc = bench_point_run(&p, &res);
    int add = p.emit ? p.emit(&p, &res, rs) : bench_results_add(rs, &res);
    return add ? -2 : rc;
}

int bench_sweep_run(bench_sweep_t *sw, bench_results_t *rs)
{
    const bench_opts_t *o = sw->o;
    bench_progress_t prog;
    bench_progress_init(&prog, o->nrows * sw->nparams);
    int failed = 0;
    for (int r = 0; r < o->nrows; r++) {
        for (int i = 0; i < sw->nparams; i++) {
            prog.index++;
            int rc = sweep_point(sw, &prog, r, i, rs);
            if (rc == -2)
                return -1;
            failed |= rc != 0;
        }
    }
    bench_progress_done(&prog);
    return failed ? -1 : 0;
}

/* The sweep, printed in sw->o->format: the exit status. */
static int exp_report(bench_sweep_t *sw)
{
    bench_results_t rs;
    bench_results_init(&rs, sw->e->cli->name, sw->title, sw->extras,
                       sw->nextra);
    int failed = bench_sweep_run(sw, &rs);
    int out = bench_output(&rs, sw->o);
    bench_results_free(&rs);
    return failed || out ? 1 : 0;
}

int bench_exp_main(const bench_exp_t *e, int argc, char **argv)
{
    bench_sweep_t sw = {.e = e,
                        .title = e->title,
                        .extras = e->extras,
                        .nextra = e->nextra,
                        .arg = calloc(1, e->arg_size)};
    bench_opts_t o;
    int rc = sw.arg ? 0 : 1;
    if (rc == 0 && e->options)
        rc = e->options(&sw, &argc, argv);
    if (rc == 0)
        rc = bench_parse_options(e->cli, argc, argv, &o);
    if (rc == 0) {
        sw.o = &o;
        sw.nparams = sw.nparams ? sw.nparams : o.ntasks;
        rc = e->prepare ? e->prepare(&sw) : 0;
        if (rc == 0)
            rc = exp_report(&sw);
        bench_opts_free(&o);
    }
    if (e->done && sw.arg)
        e->done(&sw);
    free(sw.arg);
    return rc == BENCH_HELP_SHOWN ? 0 : rc;
}
