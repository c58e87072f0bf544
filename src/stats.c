/*
 * stats.c - reading the counters and the schedstat-like dump.
 *
 * Counters live next to what they count (the worker's struct, the task's
 * struct), each written by one thread only with a plain load-add-store
 * (MQS__STAT_ADD), so the hot path has no locked instruction and no
 * shared cache line.  Readers here sum them without stopping anyone: a
 * value may be one update behind, never torn.
 *
 * The dump follows /proc/schedstat's spirit: one line per worker with
 * named fields, then (optionally) one line per live task with its run
 * time, wait time (schedstat's field 8 analogue) and switch count.
 */
#include <string.h>

#include "internal.h"

static void worker_read(const struct mqs_worker *w, mqs_worker_stats_t *o)
{
    const struct mqs__worker_counters *c = &w->stats;
    o->run_ns = MQS__STAT_GET(c->run_ns);
    o->idle_ns = MQS__STAT_GET(c->idle_ns);
    o->switches = MQS__STAT_GET(c->switches);
    o->yields = MQS__STAT_GET(c->yields);
    o->wakeups_local = MQS__STAT_GET(c->wakeups_local);
    o->wakeups_remote = MQS__STAT_GET(c->wakeups_remote);
    o->migrations = MQS__STAT_GET(c->migrations);
    o->pulls_idle = MQS__STAT_GET(c->pulls_idle);
    o->pulls_newidle = MQS__STAT_GET(c->pulls_newidle);
    o->pulls_periodic = MQS__STAT_GET(c->pulls_periodic);
    o->pulls_priority = MQS__STAT_GET(c->pulls_priority);
    o->parks = MQS__STAT_GET(c->parks);
    o->spawns = MQS__STAT_GET(c->spawns);
    o->exits = MQS__STAT_GET(c->exits);
    o->preemptions = MQS__STAT_GET(c->preemptions);
    o->preempt_deferred = MQS__STAT_GET(c->preempt_deferred);
    o->preempt_signals = MQS__STAT_GET(c->preempt_signals);
}

int mqs_worker_stats(const mqs_runtime_t *rt, int worker,
                     mqs_worker_stats_t *out)
{
    if (!rt || !out || worker < 0 || worker >= rt->nworkers)
        return MQS_EINVAL;
    worker_read(rt->workers[worker], out);
    return 0;
}

int mqs_runtime_stats(const mqs_runtime_t *rt, mqs_worker_stats_t *out)
{
    if (!rt || !out)
        return MQS_EINVAL;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < rt->nworkers; i++) {
        mqs_worker_stats_t s;
        worker_read(rt->workers[i], &s);
        uint64_t *dst = (uint64_t *)out;
        const uint64_t *src = (const uint64_t *)&s;
        for (size_t k = 0; k < sizeof s / sizeof(uint64_t); k++)
            dst[k] += src[k];
    }
    out->spawns += atomic_load(&((mqs_runtime_t *)rt)->ext_spawns);
    return 0;
}

static void task_stats(const struct mqs_task *t, mqs_task_stats_t *out)
{
    out->run_ns = MQS__STAT_GET(t->stats.run_ns);
    out->wait_ns = MQS__STAT_GET(t->stats.wait_ns);
    out->switches = MQS__STAT_GET(t->stats.switches);
    out->yields = MQS__STAT_GET(t->stats.yields);
    out->wakeups = MQS__STAT_GET(t->events.wakeups);
    out->migrations = MQS__STAT_GET(t->events.migrations);
}

int mqs_task_stats(const mqs_task_t *h, mqs_task_stats_t *out)
{
    struct mqs_task *t = out ? mqs__handle_pin(h) : NULL;
    if (!t)
        return MQS_EINVAL;
    task_stats(t, out);
    mqs__handle_unpin(t);
    return 0;
}

static void dump_worker(FILE *f, int i, const mqs_worker_stats_t *s)
{
    fprintf(f,
            "worker%d run_ns=%llu idle_ns=%llu switches=%llu yields=%llu "
            "wakeups_local=%llu wakeups_remote=%llu migrations=%llu "
            "pulls_idle=%llu pulls_newidle=%llu pulls_periodic=%llu "
            "pulls_priority=%llu parks=%llu spawns=%llu exits=%llu "
            "preemptions=%llu preempt_deferred=%llu preempt_signals=%llu\n",
            i, (unsigned long long)s->run_ns, (unsigned long long)s->idle_ns,
            (unsigned long long)s->switches, (unsigned long long)s->yields,
            (unsigned long long)s->wakeups_local,
            (unsigned long long)s->wakeups_remote,
            (unsigned long long)s->migrations,
            (unsigned long long)s->pulls_idle,
            (unsigned long long)s->pulls_newidle,
            (unsigned long long)s->pulls_periodic,
            (unsigned long long)s->pulls_priority,
            (unsigned long long)s->parks, (unsigned long long)s->spawns,
            (unsigned long long)s->exits,
            (unsigned long long)s->preemptions,
            (unsigned long long)s->preempt_deferred,
            (unsigned long long)s->preempt_signals);
}

static void dump_task(struct mqs_task *t, void *ctx)
{
    FILE *f = ctx;
    {
        mqs_task_stats_t s;
        task_stats(t, &s);
        fprintf(f,
                "task %llu %s prio=%u run_ns=%llu wait_ns=%llu "
                "switches=%llu yields=%llu wakeups=%llu migrations=%llu\n",
                (unsigned long long)t->id, t->name, t->se.prio,
                (unsigned long long)s.run_ns, (unsigned long long)s.wait_ns,
                (unsigned long long)s.switches, (unsigned long long)s.yields,
                (unsigned long long)s.wakeups,
                (unsigned long long)s.migrations);
    }
}

int mqs_stats_dump(const mqs_runtime_t *crt, FILE *out, bool tasks)
{
    if (!crt || !out)
        return MQS_EINVAL;
    mqs_runtime_t *rt = (mqs_runtime_t *)crt;
    /* Run and wait times are sampled at the tick under tick accounting:
     * the header says which, so a reader knows their resolution. */
    fprintf(out, "mqs schedstat version 1 policy %s workers %d "
                 "accounting %s\n",
            rt->policy->name, rt->nworkers,
            mqs_accounting_exact(rt) ? "exact" : "tick");
    for (int i = 0; i < rt->nworkers; i++) {
        mqs_worker_stats_t s;
        worker_read(rt->workers[i], &s);
        dump_worker(out, i, &s);
    }
    mqs__offload_dump(rt, out);
    if (!tasks)
        return 0;
    mqs__tasks_each(rt, dump_task, out);
    return 0;
}
