/*
 * expkit.c - the experiment toolkit's options, rows and sample window
 * (expkit.h; the data-point driver is point.c).
 *
 * Experiment options: bench_parse_options() knows only the common set
 * and rejects anything else, which keeps every experiment's CLI uniform.
 * An experiment with options of its own (--size, --clients, --short, ...)
 * lifts them out of argv first with bench_take_options(), so the common
 * parser and its --help stay one piece of code; the experiment lists its
 * own options in the details paragraph of its help, and a misspelt
 * option still reaches the common parser and is reported there as
 * unknown.  Rejected: a second getopt pass with a merged table (getopt's
 * state is global and the common parser resets it), widening the common
 * table with every experiment's options (each would accept the others'
 * options), and a names[]/values[] pair of arrays (the point kit's
 * version: it could not refuse an option that does not apply).
 *
 * Rows: one runtime-open with the MQS_POLICY check and one CPU list for
 * every experiment, so a kernel row of one experiment runs on the same
 * CPUs as the kernel row of another.
 */
#include "expkit.h"

#include <stdlib.h>
#include <string.h>

/* ----- Options ----- */

static bool xopt_named(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg + 2, name, n) == 0 &&
           (arg[2 + n] == '\0' || arg[2 + n] == '=');
}

static const bench_xopt_t *xopt_find(const char *arg, const bench_xopt_t *xo)
{
    for (; xo && xo->name; xo++)
        if (xopt_named(arg, xo->name))
            return xo;
    return NULL;
}

static bool xopt_refused(const char *arg, const char *const *refuse)
{
    for (; refuse && *refuse; refuse++)
        if (xopt_named(arg, *refuse))
            return true;
    return false;
}

int bench_take_options(const char *exp, int *argc, char **argv,
                       const bench_xopt_t *xo, const char *const *refuse)
{
    int out = 1, i = 1;
    for (; i < *argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        const bench_xopt_t *x = strncmp(a, "--", 2) == 0 ? xopt_find(a, xo)
                                                          : NULL;
        if (strncmp(a, "--", 2) == 0 && xopt_refused(a, refuse))
            return bench_usage(exp, "%s does not apply to %s", a, exp);
        if (!x) {
            argv[out++] = argv[i];
            continue;
        }
        const char *eq = strchr(a, '=');
        if (!eq && i + 1 == *argc)
            return bench_usage(exp, "missing value for '%s'", a);
        *x->value = eq ? eq + 1 : argv[++i];
    }
    while (i < *argc)
        argv[out++] = argv[i++];
    argv[out] = NULL;
    *argc = out;
    for (; xo && xo->name; xo++) {
        char opt[64];
        snprintf(opt, sizeof opt, "--%s", xo->name);
        if (xo->out &&
            bench_parse_int(exp, opt, *xo->value, xo->min, xo->max, xo->out))
            return BENCH_EXIT_USAGE;
    }
    return 0;
}

/* ----- Rows ----- */

/* Does the runtime's policy name match the row "name[:tunables]"?  The
 * runtime reads MQS_* variables, and MQS_POLICY would silently relabel
 * every row. */
static bool kit_same_policy(const char *name, const char *spec)
{
    size_t n = strcspn(spec, ":");
    return name && strlen(name) == n && strncmp(name, spec, n) == 0;
}

int bench_runtime_open(const char *exp, const char *spec, int workers,
                       size_t stack_size, mqs_runtime_t **rt)
{
    char trace[300];
    char err[256] = "";
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.workers = workers;
    cfg.policy = spec;
    cfg.stack_size = stack_size;
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    if (bench_trace_next(trace, sizeof trace)) {
        cfg.trace_file = trace;
        fprintf(stderr, "mqs-bench %s: %s: trace in %s\n", exp, spec, trace);
    }
    *rt = NULL;
    int rc = mqs_runtime_create(rt, &cfg);
    if (rc != 0) {
        fprintf(stderr, "mqs-bench %s: %s: runtime: %s\n", exp, spec,
                err[0] ? err : mqs_strerror(rc));
        return -1; /* *rt is left NULL */
    }
    if (!kit_same_policy(mqs_runtime_policy(*rt), spec)) {
        fprintf(stderr,
                "mqs-bench %s: row %s ran policy %s: MQS_POLICY in the "
                "environment overrides --policy; unset it\n",
                exp, spec, mqs_runtime_policy(*rt));
        bench_runtime_close(exp, *rt);
        *rt = NULL;
        return -1;
    }
    return 0;
}

int bench_runtime_close(const char *exp, mqs_runtime_t *rt)
{
    if (!rt)
        return 0;
    int rc = mqs_runtime_destroy(rt);
    if (rc)
        fprintf(stderr, "mqs-bench %s: mqs_runtime_destroy: %s\n", exp,
                mqs_strerror(rc));
    return rc ? -1 : 0;
}

int bench_cpu_list(int workers, int *cpus, int max)
{
    cpu_set_t allowed;
    int n = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        cpus[0] = 0;
        return 1;
    }
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &allowed) && (!workers || n < workers))
            cpus[n++] = c;
    return n;
}

void bench_cpuset_of(const int *cpus, int n, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (int i = 0; i < n; i++)
        CPU_SET(cpus[i], set);
}

int bench_kernel_cpus(int workers, cpu_set_t *set)
{
    int cpus[CPU_SETSIZE] = {0};
    int n = bench_cpu_list(workers, cpus, CPU_SETSIZE);
    bench_cpuset_of(cpus, n, set);
    return n;
}

int bench_row_open(bench_point_t *p)
{
    cpu_set_t set;
    p->rt = NULL;
    if (p->row->pseudo) {
        p->workers = bench_kernel_cpus(p->o->workers, &set);
        return 0;
    }
    if (bench_runtime_open(p->experiment, p->row->spec, p->o->workers, 0,
                           &p->rt))
        return -1;
    p->workers = mqs_runtime_workers(p->rt);
    return 0;
}

void bench_row_close(bench_point_t *p)
{
    bench_runtime_close(p->experiment, p->rt);
    p->rt = NULL;
}

void bench_window(_Atomic int *started, _Atomic int *stop, double seconds)
{
    while (!atomic_load_explicit(started, memory_order_relaxed))
        bench_sleep_ns(50000);
    bench_sleep_ns((uint64_t)(seconds * 1e9));
    atomic_store(stop, 1);
}

/* ----- A measurement's tasks ----- */

void bench_thread_attr(pthread_attr_t *a, int workers, size_t stack)
{
    cpu_set_t set;
    bench_kernel_cpus(workers, &set);
    pthread_attr_init(a);
    if (stack)
        pthread_attr_setstacksize(a, stack);
    pthread_attr_setaffinity_np(a, sizeof set, &set);
}

int bench_task_start(bench_task_t *t, mqs_runtime_t *rt,
                     const mqs_task_attr_t *a, const pthread_attr_t *ka,
                     void *(*fn)(void *), void *arg)
{
    t->kernel = !rt;
    int rc = rt ? mqs_spawn(rt, &t->task, a, fn, arg)
                : pthread_create(&t->thread, ka, fn, arg);
    t->started = rc == 0;
    return rc;
}

void bench_task_error(const char *exp, const char *row, bool kernel, int rc)
{
    fprintf(stderr, "mqs-bench %s: %s: %s: %s\n", exp, row,
            kernel ? "pthread_create" : "mqs_spawn",
            kernel ? strerror(rc) : mqs_strerror(rc));
}

int bench_task_join(bench_task_t *t)
{
    int rc = !t->started ? 0
             : t->kernel ? pthread_join(t->thread, NULL)
                         : mqs_join(t->task, NULL);
    t->started = false;
    return rc;
}

int bench_group_start(bench_group_t *g, const char *exp, const char *row,
                      int n, void *(*fn)(void *), void *arg, size_t stride)
{
    g->exp = exp;
    g->started = 0;
    g->t = calloc((size_t)n, sizeof *g->t);
    if (!g->t)
        return -1;
    pthread_attr_t attr;
    bench_thread_attr(&attr, g->workers, g->stack);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    char name[32];
    int rc = 0;
    for (; g->started < n && rc == 0; g->started += rc == 0) {
        snprintf(name, sizeof name, "%s-%d", g->name ? g->name : "",
                 g->started);
        a.name = g->name ? name : NULL;
        rc = bench_task_start(&g->t[g->started], g->rt, &a, &attr, fn,
                              (char *)arg + (size_t)g->started * stride);
    }
    pthread_attr_destroy(&attr);
    if (rc)
        bench_task_error(exp, row, !g->rt, rc);
    return rc ? -1 : 0;
}

int bench_group_join(bench_group_t *g)
{
    int rc = 0;
    for (int i = 0; i < g->started; i++) {
        int r = bench_task_join(&g->t[i]);
        rc = rc ? rc : r;
    }
    free(g->t);
    g->t = NULL;
    g->started = 0;
    if (rc)
        fprintf(stderr, "mqs-bench %s: %s: %s\n", g->exp,
                g->rt ? "mqs_join" : "pthread_join",
                g->rt ? mqs_strerror(rc) : strerror(rc));
    return rc ? -1 : 0;
}
