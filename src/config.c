/*
 * config.c - turning a mqs_config_t plus MQS_* environment variables into
 * checked values, and parsing policy specs ("mq:rr_slice_ns=1000000").
 *
 * Precedence: an environment variable beats the struct (so a deployed
 * binary can be retuned), the struct beats the default.  Defaults come
 * from what this process may really use: the CPUs in its affinity mask,
 * capped by a cgroup v2 CPU quota (cpu.max) rounded up.  Every bad value
 * is refused with a message that names the variable or field and the
 * accepted range; nothing is created.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define DEFAULT_STACK (256u * 1024u)
#define DEFAULT_IDLE_SPIN_NS 50000
#define MAX_STACK ((size_t)1 << 30)
/* The stall watchdog is a debugging net: on in debug builds (and set
 * explicitly by the conformance suite), off in release builds, where a
 * long wait may be what the program asked for (an RT task hogging). */
#ifdef NDEBUG
#define DEFAULT_STALL_NS 0
#else
#define DEFAULT_STALL_NS 10000000000LL
#endif
#define MIN_STALL_NS 1000000LL
#define MAX_STALL_NS 3600000000000LL

static int fail(char *err, size_t n, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t n, int code, const char *fmt, ...)
{
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* CPUs in the affinity mask, capped by the cgroup v2 quota. */
static int default_workers(void)
{
    cpu_set_t set;
    int n = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (f) {
        char quota[32];
        long long period;
        if (fscanf(f, "%31s %lld", quota, &period) == 2 &&
            strcmp(quota, "max") != 0 && period > 0) {
            long long q = atoll(quota);
            int cap = (int)((q + period - 1) / period);
            if (cap >= 1 && cap < n)
                n = cap;
        }
        fclose(f);
    }
    if (n > MQS_MAX_WORKERS)
        n = MQS_MAX_WORKERS;
    return n < 1 ? 1 : n;
}

/* Parse a whole decimal integer; false if anything else is there. */
static bool parse_ll(const char *s, long long *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end)
        return false;
    *out = v;
    return true;
}

/* A size with an optional K/M/G suffix (powers of 1024). */
static bool parse_size(const char *s, unsigned long long *out)
{
    if (!s || !*s || *s == '-')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end || v > (ULLONG_MAX >> shift))
        return false;
    *out = v << shift;
    return true;
}

static const char *env(const mqs_config_t *cfg, const char *name)
{
    if (cfg->ignore_env)
        return NULL;
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int apply_workers(const mqs_config_t *cfg, mqs_config_t *out,
                         char *err, size_t n)
{
    const char *e = env(cfg, "MQS_WORKERS");
    long long v = cfg->workers;
    if (e && !parse_ll(e, &v))
        v = -1;
    if (e && (v < 1 || v > MQS_MAX_WORKERS))
        return fail(err, n, MQS_EINVAL,
                    "MQS_WORKERS=%s: expected a whole number from 1 to %d", e,
                    MQS_MAX_WORKERS);
    if (!e && (v < 0 || v > MQS_MAX_WORKERS))
        return fail(err, n, MQS_EINVAL,
                    "config.workers=%lld: expected 0 (default) or 1 to %d", v,
                    MQS_MAX_WORKERS);
    out->workers = v ? (int)v : default_workers();
    return 0;
}

static int apply_pin(const mqs_config_t *cfg, mqs_config_t *out, char *err,
                     size_t n)
{
    const char *e = env(cfg, "MQS_PIN");
    long long v = cfg->pin;
    if (e && (!parse_ll(e, &v) || (v != 0 && v != 1)))
        return fail(err, n, MQS_EINVAL, "MQS_PIN=%s: expected 0 or 1", e);
    if (!e && (v < -1 || v > 1))
        return fail(err, n, MQS_EINVAL,
                    "config.pin=%lld: expected -1 (default), 0 or 1", v);
    out->pin = v == 1;
    return 0;
}

static int apply_stack(const mqs_config_t *cfg, mqs_config_t *out, char *err,
                       size_t n)
{
    const char *e = env(cfg, "MQS_STACK_SIZE");
    unsigned long long v = cfg->stack_size;
    if (e && !parse_size(e, &v))
        v = 1;
    if ((e || v) && (v < MQS__MIN_STACK || v > MAX_STACK))
        return fail(err, n, MQS_EINVAL,
                    "%s%s%s: stack size must be from 16K to 1G bytes "
                    "(suffix K, M or G allowed)",
                    e ? "MQS_STACK_SIZE=" : "config.stack_size", e ? e : "",
                    "");
    out->stack_size = v ? (size_t)v : DEFAULT_STACK;
    return 0;
}

/* Whole pages, one at least; 1 GiB at most, like a stack. */
static int apply_guard(const mqs_config_t *cfg, mqs_config_t *out, char *err,
                       size_t n)
{
    const char *e = env(cfg, "MQS_GUARD_SIZE");
    unsigned long long v = cfg->guard_size;
    unsigned long long ps = (unsigned long long)sysconf(_SC_PAGESIZE);
    if (e && !parse_size(e, &v))
        v = 1;
    if ((e || v) && (v < ps || v > MAX_STACK))
        return fail(err, n, MQS_EINVAL,
                    "%s%s: guard size must be from one page (%lluK) to 1G "
                    "bytes (suffix K, M or G allowed)",
                    e ? "MQS_GUARD_SIZE=" : "config.guard_size", e ? e : "",
                    ps / 1024);
    v = v ? v : MQS__DEFAULT_GUARD;
    out->guard_size = (size_t)((v + ps - 1) / ps * ps);
    return 0;
}

static int apply_spin(const mqs_config_t *cfg, mqs_config_t *out, char *err,
                      size_t n)
{
    const char *e = env(cfg, "MQS_IDLE_SPIN_NS");
    long long v = cfg->idle_spin_ns;
    if (e && (!parse_ll(e, &v) || v < 0 || v > 1000000000))
        return fail(err, n, MQS_EINVAL,
                    "MQS_IDLE_SPIN_NS=%s: expected a whole number of "
                    "nanoseconds from 0 to 1000000000", e);
    if (!e && (v < -1 || v > 1000000000))
        return fail(err, n, MQS_EINVAL,
                    "config.idle_spin_ns=%lld: expected -1 (default) or 0 to "
                    "1000000000", v);
    out->idle_spin_ns = v < 0 ? DEFAULT_IDLE_SPIN_NS : v;
    return 0;
}

static int apply_stall(const mqs_config_t *cfg, mqs_config_t *out,
                       char *err, size_t n)
{
    const char *e = env(cfg, "MQS_STALL_NS");
    long long v = cfg->stall_ns;
    bool bad = e ? !parse_ll(e, &v) || v < 0 : v < -1;
    if (!bad && v > 0 && (v < MIN_STALL_NS || v > MAX_STALL_NS))
        bad = true;
    if (bad && e)
        return fail(err, n, MQS_EINVAL,
                    "MQS_STALL_NS=%s: expected 0 (off) or a whole number of "
                    "nanoseconds from %lld to %lld", e, MIN_STALL_NS,
                    MAX_STALL_NS);
    if (bad)
        return fail(err, n, MQS_EINVAL,
                    "config.stall_ns=%lld: expected -1 (default), 0 (off) or "
                    "%lld to %lld", v, MIN_STALL_NS, MAX_STALL_NS);
    out->stall_ns = v < 0 ? DEFAULT_STALL_NS : v;
    return 0;
}

#define DEFAULT_TICK_NS 1000000LL
#define MIN_TICK_NS 20000LL
#define MAX_TICK_NS 1000000000LL

static int apply_preempt(const mqs_config_t *cfg, mqs_config_t *out,
                         char *err, size_t n)
{
    const char *e = env(cfg, "MQS_PREEMPT");
    long long v = cfg->preempt;
    if (e && (!parse_ll(e, &v) || (v != 0 && v != 1)))
        return fail(err, n, MQS_EINVAL, "MQS_PREEMPT=%s: expected 0 or 1", e);
    if (!e && (v < -1 || v > 1))
        return fail(err, n, MQS_EINVAL,
                    "config.preempt=%lld: expected -1 (default), 0 or 1", v);
    out->preempt = v != 0;
    e = env(cfg, "MQS_PREEMPT_TICK_NS");
    v = cfg->preempt_tick_ns;
    if (e && (!parse_ll(e, &v) || v < MIN_TICK_NS || v > MAX_TICK_NS))
        return fail(err, n, MQS_EINVAL,
                    "MQS_PREEMPT_TICK_NS=%s: expected a whole number of "
                    "nanoseconds from %lld to %lld", e, MIN_TICK_NS,
                    MAX_TICK_NS);
    if (!e && v != -1 && (v < MIN_TICK_NS || v > MAX_TICK_NS))
        return fail(err, n, MQS_EINVAL,
                    "config.preempt_tick_ns=%lld: expected -1 (default) or "
                    "%lld to %lld", v, MIN_TICK_NS, MAX_TICK_NS);
    out->preempt_tick_ns = v == -1 ? DEFAULT_TICK_NS : v;
    return 0;
}

static int apply_accounting(const mqs_config_t *cfg, mqs_config_t *out,
                            char *err, size_t n)
{
    const char *e = env(cfg, "MQS_ACCOUNTING");
    if (e && strcmp(e, "policy") && strcmp(e, "exact"))
        return fail(err, n, MQS_EINVAL,
                    "MQS_ACCOUNTING=%s: expected policy or exact", e);
    int v = cfg->accounting;
    if (!e && v != -1 && v != MQS_ACCOUNTING_POLICY &&
        v != MQS_ACCOUNTING_EXACT)
        return fail(err, n, MQS_EINVAL,
                    "config.accounting=%d: expected -1 (default), "
                    "MQS_ACCOUNTING_POLICY (0) or MQS_ACCOUNTING_EXACT (1)",
                    v);
    out->accounting = e ? (strcmp(e, "exact") ? MQS_ACCOUNTING_POLICY
                                               : MQS_ACCOUNTING_EXACT)
                        : v == -1 ? MQS_ACCOUNTING_POLICY : v;
    return 0;
}

/* The offload pool's bound (offload.c): 4 threads a worker, at least 16.
 * The calls it runs mostly wait (a disk, a name server), so it is wider
 * than the workers; bounded so that a burst of them queues instead of
 * starting thousands of threads. */
#define MAX_OFFLOAD_THREADS 4096

static int apply_offload(const mqs_config_t *cfg, mqs_config_t *out,
                         char *err, size_t n)
{
    const char *e = env(cfg, "MQS_OFFLOAD_THREADS");
    long long v = cfg->offload_threads;
    if (e && (!parse_ll(e, &v) || v < 1 || v > MAX_OFFLOAD_THREADS))
        return fail(err, n, MQS_EINVAL,
                    "MQS_OFFLOAD_THREADS=%s: expected a whole number from 1 "
                    "to %d", e, MAX_OFFLOAD_THREADS);
    if (!e && (v < 0 || v > MAX_OFFLOAD_THREADS))
        return fail(err, n, MQS_EINVAL,
                    "config.offload_threads=%lld: expected 0 (default) or 1 "
                    "to %d", v, MAX_OFFLOAD_THREADS);
    long long def = 4LL * out->workers;
    out->offload_threads =
        (int)(v ? v : def < 16 ? 16 : def > MAX_OFFLOAD_THREADS
                                           ? MAX_OFFLOAD_THREADS
                                           : def);
    return 0;
}

#define MAX_SCHEDTRACE_MS 3600000LL

static int apply_schedtrace(const mqs_config_t *cfg, mqs_config_t *out,
                            char *err, size_t n)
{
    const char *e = env(cfg, "MQS_SCHEDTRACE");
    long long v = cfg->schedtrace_ms;
    if (e && (!parse_ll(e, &v) || v < 0 || v > MAX_SCHEDTRACE_MS))
        return fail(err, n, MQS_EINVAL,
                    "MQS_SCHEDTRACE=%s: expected milliseconds between lines, "
                    "a whole number from 1 to %lld (0: off)",
                    e, MAX_SCHEDTRACE_MS);
    if (!e && (v < 0 || v > MAX_SCHEDTRACE_MS))
        return fail(err, n, MQS_EINVAL,
                    "config.schedtrace_ms=%lld: expected 0 (off) or 1 to "
                    "%lld", v, MAX_SCHEDTRACE_MS);
    out->schedtrace_ms = v;
    return 0;
}

/* MQS_TRACE=FILE: the trace (trace.c); the file itself is opened by
 * runtime create, which says so when it cannot be.  MQS_TRACE_MAX_MB:
 * the most records it keeps (a yield loop makes gigabytes of them a second;
 * 256 MiB is 8 M records, some 0.8 GB of JSON, about what Perfetto's
 * page opens). */
#define MAX_TRACE_MB 1048576LL
#define DEFAULT_TRACE_MB 256
static int apply_trace(const mqs_config_t *cfg, mqs_config_t *out,
                       char *err, size_t n)
{
    const char *e = env(cfg, "MQS_TRACE");
    const char *v = e ? e : cfg->trace_file;
    if (v && (!*v || strlen(v) >= 256))
        return fail(err, n, MQS_EINVAL,
                    "%s=%s: expected the trace's file name (1 to 255 "
                    "bytes), or unset for no trace",
                    e ? "MQS_TRACE" : "config.trace_file", v);
    out->trace_file = v;
    const char *m = env(cfg, "MQS_TRACE_MAX_MB");
    long long mb = cfg->trace_max_mb;
    if (m && (!parse_ll(m, &mb) || mb < 1 || mb > MAX_TRACE_MB))
        return fail(err, n, MQS_EINVAL,
                    "MQS_TRACE_MAX_MB=%s: expected the most MiB of records "
                    "a trace keeps, a whole number from 1 to %lld", m,
                    MAX_TRACE_MB);
    if (!m && (mb < 0 || mb > MAX_TRACE_MB))
        return fail(err, n, MQS_EINVAL,
                    "config.trace_max_mb=%lld: expected 0 (default) or 1 "
                    "to %lld", mb, MAX_TRACE_MB);
    out->trace_max_mb = mb ? mb : DEFAULT_TRACE_MB;
    return 0;
}

static int apply_shuffle(const mqs_config_t *cfg, mqs_config_t *out,
                         char *err, size_t n)
{
    const char *e = env(cfg, "MQS_SHUFFLE");
    if (!e)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 0);
    if (errno || end == e || *end || *e == '-')
        return fail(err, n, MQS_EINVAL,
                    "MQS_SHUFFLE=%s: expected a seed, a whole number from 0 "
                    "(off) to 2^64-1", e);
    out->shuffle_seed = v;
    return 0;
}

int mqs__config_apply(const mqs_config_t *cfg, mqs_config_t *out, char *err,
                      size_t n)
{
    mqs_config_t def;
    if (!cfg) {
        mqs_config_init(&def);
        cfg = &def;
    }
    *out = *cfg;
    int rc;
    if ((rc = apply_workers(cfg, out, err, n)) ||
        (rc = apply_pin(cfg, out, err, n)) ||
        (rc = apply_stack(cfg, out, err, n)) ||
        (rc = apply_guard(cfg, out, err, n)) ||
        (rc = apply_spin(cfg, out, err, n)) ||
        (rc = apply_stall(cfg, out, err, n)) ||
        (rc = apply_preempt(cfg, out, err, n)) ||
        (rc = apply_accounting(cfg, out, err, n)) ||
        (rc = apply_offload(cfg, out, err, n)) ||
        (rc = apply_schedtrace(cfg, out, err, n)) ||
        (rc = apply_trace(cfg, out, err, n)) ||
        (rc = apply_shuffle(cfg, out, err, n)))
        return rc;
    const char *e = env(cfg, "MQS_POLICY");
    const char *dname = cfg->policy_ops && cfg->policy_ops->name
                          ? cfg->policy_ops->name
                          : "mq";
    out->policy = e ? e : (cfg->policy ? cfg->policy : dname);
    int64_t values[64];
    const struct mqs_policy *pol;
    rc = mqs__policy_parse_ops(out->policy, cfg->policy_ops, &pol, values,
                               err, n);
    if (rc && e) {
        char inner[256];
        snprintf(inner, sizeof inner, "%s", err ? err : "");
        return fail(err, n, rc, "MQS_POLICY=%s: %s", e, inner);
    }
    return rc;
}

void mqs_config_init(mqs_config_t *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->pin = -1;
    cfg->idle_spin_ns = -1;
    cfg->stall_ns = -1;
    cfg->preempt = -1;
    cfg->preempt_tick_ns = -1;
    cfg->accounting = -1;
}

int mqs_config_resolve(const mqs_config_t *cfg, mqs_config_t *out)
{
    if (!out)
        return MQS_EINVAL;
    char err[256] = "";
    mqs_config_t res;
    int rc = mqs__config_apply(cfg, &res, err, sizeof err);
    if (rc) {
        mqs__report_error(cfg, err);
        return rc;
    }
    *out = res;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Policy specs                                                        */
/* ------------------------------------------------------------------ */

static void list_policies(char *buf, size_t n)
{
    const struct mqs_policy *const *p = mqs_policy_list();
    size_t used = 0;
    buf[0] = 0;
    for (; *p && used < n; p++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s",
                                 used ? ", " : "", (*p)->name);
}

static void list_tunables(const struct mqs_policy *p, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (const struct mqs_tunable *t = p->tunables; t && t->name && used < n;
         t++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s (%lld..%lld)",
                                 used ? ", " : "", t->name,
                                 (long long)t->min, (long long)t->max);
    if (!used)
        snprintf(buf, n, "none");
}

static int set_tunable(const struct mqs_policy *p, const char *kv, size_t len,
                       int64_t *values, char *err, size_t n)
{
    char item[128], names[512];
    if (len >= sizeof item)
        len = sizeof item - 1;
    memcpy(item, kv, len);
    item[len] = 0;
    char *eq = strchr(item, '=');
    if (eq)
        *eq = 0;
    int i = 0;
    for (const struct mqs_tunable *t = p->tunables; t && t->name; t++, i++) {
        if (strcmp(t->name, item) != 0)
            continue;
        long long v;
        if (!eq || !parse_ll(eq + 1, &v) || v < t->min || v > t->max)
            return fail(err, n, MQS_EINVAL,
                        "policy %s: tunable %s needs a whole number from "
                        "%lld to %lld", p->name, t->name, (long long)t->min,
                        (long long)t->max);
        values[i] = v;
        return 0;
    }
    list_tunables(p, names, sizeof names);
    return fail(err, n, MQS_ENOPOLICY,
                "policy %s has no tunable '%s'; it has: %s", p->name, item,
                names);
}

/* A policy table handed in through config.policy_ops: the ops the core
 * cannot do without, and tunables that fit the state it allocates. */
static int check_custom(const struct mqs_policy *p, char *err, size_t n)
{
    if (!p->name || !*p->name || !p->enqueue || !p->pick)
        return fail(err, n, MQS_EINVAL,
                    "config.policy_ops: a policy needs .name, .enqueue and "
                    ".pick (policy '%s')", p->name ? p->name : "(null)");
    int i = 0;
    for (const struct mqs_tunable *t = p->tunables; t && t->name; t++, i++)
        if (i >= 64 || t->offset + sizeof(int64_t) > p->rt_size ||
            t->min > t->max || t->def < t->min || t->def > t->max)
            return fail(err, n, MQS_EINVAL,
                        "config.policy_ops: policy %s: tunable %s does not "
                        "fit rt_size or its range (at most 64 tunables)",
                        p->name, t->name);
    return 0;
}

int mqs__policy_parse(const char *spec, const struct mqs_policy **pol,
                      int64_t *values, char *err, size_t n)
{
    return mqs__policy_parse_ops(spec, NULL, pol, values, err, n);
}

int mqs__policy_parse_ops(const char *spec, const struct mqs_policy *custom,
                          const struct mqs_policy **pol, int64_t *values,
                          char *err, size_t n)
{
    char name[64], names[512];
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (len >= sizeof name)
        len = sizeof name - 1;
    memcpy(name, spec, len);
    name[len] = 0;
    if (custom) {
        int rc = check_custom(custom, err, n);
        if (rc)
            return rc;
    }
    const struct mqs_policy *p = custom && strcmp(custom->name, name) == 0
                                     ? custom
                                     : mqs_policy_find(name);
    if (!p) {
        list_policies(names, sizeof names);
        return fail(err, n, MQS_ENOPOLICY,
                    "unknown policy '%s'; registered policies: %s", name,
                    names);
    }
    int i = 0;
    for (const struct mqs_tunable *t = p->tunables; t && t->name && i < 64;
         t++, i++)
        values[i] = t->def;
    const char *s = colon ? colon + 1 : NULL;
    while (s && *s) {
        const char *comma = strchr(s, ',');
        size_t l = comma ? (size_t)(comma - s) : strlen(s);
        int rc = set_tunable(p, s, l, values, err, n);
        if (rc)
            return rc;
        s = comma ? comma + 1 : NULL;
    }
    *pol = p;
    return 0;
}
