/*
 * trace.c - MQS_TRACE=FILE: what the scheduler did, event by event, written
 * at runtime destroy as Chrome trace-event JSON, which ui.perfetto.dev and
 * chrome://tracing open (docs/tracing.md shows one).
 *
 * Vocabulary.
 *   record  32 bytes: when (ns since the runtime started, from the
 *           runtime's clock as calibrated at create, never re-anchored,
 *           so one time base for every thread; exact even under tick
 *           accounting) and what
 *           (kind) in one word, the task it is about, two arguments.
 *   ring    an array of records with one writer: each worker has its own
 *           (w->trace), written with plain stores, since only that worker
 *           records into it; threads outside the runtime (a spawn or a
 *           wake-up from a plain thread, the monitor's poll) share one
 *           more behind a mutex.
 *   spill   a ring that fills is written, whole, to its own anonymous
 *           temporary file (tmpfile(3)): the recorder pays one write(2)
 *           every MQS__TRACE_RING records and memory stays bounded however
 *           long the program runs.
 *   flow    a wake-up's number (from one counter), carried by the woken
 *           task to its next run: the JSON draws an arrow from the waker
 *           to that run.
 *
 * Who records what (each at a point where the runtime holds the worker,
 * in_runtime > 0 or inside the runtime's text, so the preemption handler
 * never stops a recorder half-way and never records itself):
 *   START    a task starts a run on this worker (sched.c, worker.c,
 *            runnext.c): a = the flow that woke it, b = when it became
 *            runnable (a wake-up or its spawn; 0 after a yield or a stop)
 *   STOP     its run ends: a = why (yield, preempt, block, exit, move,
 *            child first), b = for a block, the object; then a BLOCK
 *            record names the object's kind
 *   MIGRATE  before a START on another worker than its last: a = from
 *   WAKE     place.c and sched.c: task woken, a = waker's task id (0:
 *            none), b = flow << 24 | source << 20 | sync << 17 |
 *            hand-off << 16 | worker it was queued on
 *   PULL     tasks taken from another worker's queue: a = balance kind,
 *            b = how many
 *   PARK, UNPARK  the worker sleeps on its futex or in epoll, and wakes
 *   SPAWN    a = parent's task id (0: from outside), b = 1 when a NAME
 *            record with its chosen name follows (else "task-<id>")
 *   NAME     followed by one record holding the name's bytes
 *
 * Off (the default), the cost is a test of w->trace, NULL, at each place
 * above: on the yield path one, in the switch, on a line it reads
 * anyway.  On, a record is a clock read and four stores.
 *
 * The JSON, written by mqs_runtime_destroy once the workers have stopped:
 * process 1 has one thread per worker (and one for outside threads),
 * with a complete event ("X") per run named after the task and a
 * "parked" one per sleep, instant events for wake-ups, blocks,
 * migrations, pulls, preemptions and spawns; process 2 has one thread
 * per task, with its runs ("on w<i>") and its runnable spans (from its
 * wake-up or spawn to its run).  Flow events ("s" at the wake-up, "f"
 * bound to the next run) join each wake-up to the run it caused.  Each
 * spill file is read once, in order: everything a JSON event needs is in
 * its own worker's records (a run starts and stops on one worker; the
 * wake-up's time and flow ride in the START record), so nothing is
 * sorted or merged, and Perfetto orders the events itself.
 *
 * Rejected: a lock-free shared ring (every record a contended atomic);
 * writing JSON as events come (a printf per record on the switch path,
 * and the file's text is five times the records); keeping every record
 * in memory until destroy (a long run grows without bound).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

_Static_assert(sizeof(struct mqs__trace_rec) == 32, "a record is 32 bytes");

/* ------------------------------------------------------------------ */
/* Recording                                                           */
/* ------------------------------------------------------------------ */

/* Write the ring's records to its spill file, as many as the runtime's
 * limit leaves room for (the first records of the run are kept, the
 * rest counted in capped); on a failed write the records are dropped
 * and counted in lost. */
static void ring_spill(struct mqs__trace_ring *r)
{
    uint64_t n = r->n;
    if (n) {
        uint64_t before =
            atomic_fetch_add_explicit(r->kept, n, memory_order_relaxed);
        uint64_t room = before < r->max ? r->max - before : 0;
        r->capped += n > room ? n - room : 0;
        n = n > room ? room : n;
    }
    const char *p = (const char *)r->rec;
    size_t left = (size_t)n * sizeof *r->rec;
    while (left && r->spill && !r->err) {
        ssize_t k = write(fileno(r->spill), p, left);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            r->err = k < 0 ? errno : EIO;
            break;
        }
        p += k;
        left -= (size_t)k;
    }
    if (left)
        r->lost += left / sizeof *r->rec;
    r->n = 0;
}

static struct mqs__trace_rec *ring_slot(struct mqs__trace_ring *r)
{
    if (MQS__UNLIKELY(r->n == MQS__TRACE_RING))
        ring_spill(r);
    return &r->rec[r->n++];
}

/* Returns the record's time. */
static uint64_t ring_put(struct mqs__trace_ring *r, unsigned kind,
                         uint64_t task, uint64_t a, uint64_t b)
{
    uint64_t now = mqs__clock_ns(r->clock) - r->t0;
    struct mqs__trace_rec *e = ring_slot(r);
    e->tk = now << 8 | kind;
    e->task = task;
    e->a = a;
    e->b = b;
    return now;
}

void mqs__trace_put(struct mqs__trace_ring *r, unsigned kind, uint64_t task,
                    uint64_t a, uint64_t b)
{
    (void)ring_put(r, kind, task, a, b);
}

static uint64_t ext_put(mqs_runtime_t *rt, unsigned kind, uint64_t task,
                        uint64_t a, uint64_t b)
{
    pthread_mutex_lock(&rt->trace.ext_lock);
    uint64_t now = ring_put(&rt->trace.ext, kind, task, a, b);
    pthread_mutex_unlock(&rt->trace.ext_lock);
    return now;
}

/* A record of kind k for task t, from whichever thread calls: its own
 * worker's ring, or the shared one.  Returns its time. */
static uint64_t trace_any(mqs_runtime_t *rt, unsigned kind, uint64_t task,
                          uint64_t a, uint64_t b)
{
    struct mqs_worker *self = mqs__worker_self();
    if (self && self->rt == rt)
        return ring_put(self->trace, kind, task, a, b);
    return ext_put(rt, kind, task, a, b);
}

void mqs__trace_start(struct mqs_worker *w, struct mqs_task *t)
{
    if (t->se.last_worker >= 0 && t->se.last_worker != w->index)
        mqs__trace_put(w->trace, MQS__TR_MIGRATE, t->id,
                       (uint64_t)t->se.last_worker, 0);
    mqs__trace_put(w->trace, MQS__TR_START, t->id, t->trace_flow,
                   t->trace_ready);
    t->trace_flow = 0;
    t->trace_ready = 0;
}

void mqs__trace_stop(struct mqs_worker *w, struct mqs_task *t, int why)
{
    bool block = why == MQS__TR_WHY_BLOCK;
    mqs__trace_put(w->trace, MQS__TR_STOP, t->id, (uint64_t)why,
                   block ? (uint64_t)(uintptr_t)t->wait_obj : 0);
    if (block)
        mqs__trace_put(w->trace, MQS__TR_BLOCK, t->id,
                       (uint64_t)(uintptr_t)t->wait_what, 0);
}

void mqs__trace_wake(mqs_runtime_t *rt, struct mqs_task *t, int target,
                     unsigned src, int flags, bool handoff)
{
    struct mqs_worker *self = mqs__worker_self();
    uint64_t waker = 0;
    if (src == MQS__TR_SRC_TASK && self && self->rt == rt && self->curr)
        waker = self->curr->id;
    else if (src == MQS__TR_SRC_TASK)
        src = MQS__TR_SRC_OUTSIDE;
    uint64_t flow = atomic_fetch_add_explicit(&rt->trace.flows, 1,
                                              memory_order_relaxed) + 1;
    uint64_t b = flow << 24 | (uint64_t)src << 20 |
                 (uint64_t)((flags & MQS_ENQ_SYNC) != 0) << 17 |
                 (uint64_t)handoff << 16 | (uint64_t)(target & 0xffff);
    t->trace_flow = flow;
    t->trace_ready = trace_any(rt, MQS__TR_WAKE, t->id, waker, b);
}

void mqs__trace_spawn(mqs_runtime_t *rt, struct mqs_task *t, bool named)
{
    struct mqs_worker *self = mqs__worker_self();
    uint64_t parent = self && self->rt == rt && self->curr ? self->curr->id
                                                          : 0;
    bool own = self && self->rt == rt;
    struct mqs__trace_ring *r = own ? self->trace : &rt->trace.ext;
    t->trace_flow = 0;
    if (!own)
        pthread_mutex_lock(&rt->trace.ext_lock);
    t->trace_ready = ring_put(r, MQS__TR_SPAWN, t->id, parent, named);
    if (named) {
        ring_put(r, MQS__TR_NAME, t->id, 0, 0);
        memcpy(ring_slot(r), t->name, MQS__NAME_MAX);
    }
    if (!own)
        pthread_mutex_unlock(&rt->trace.ext_lock);
}

_Static_assert(MQS__NAME_MAX <= sizeof(struct mqs__trace_rec),
               "a name fits one record");

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

static int ring_init(struct mqs__trace_ring *r, struct mqs__trace *tr,
                     const mqs__clock_t *clock)
{
    r->rec = mqs__calloc(MQS__TRACE_RING, sizeof *r->rec);
    r->spill = tmpfile();
    r->clock = clock;
    r->t0 = tr->t0;
    r->kept = &tr->kept;
    r->max = (uint64_t)tr->max_mb * (1u << 20) / sizeof *r->rec;
    return r->rec && r->spill ? 0 : MQS_ENOMEM;
}

static void ring_fini(struct mqs__trace_ring *r)
{
    free(r->rec);
    r->rec = NULL;
    if (r->spill)
        fclose(r->spill);
    r->spill = NULL;
}

int mqs__trace_open(mqs_runtime_t *rt, const char *path, int64_t max_mb,
                    char *err, size_t n)
{
    struct mqs__trace *tr = &rt->trace;
    pthread_mutex_init(&tr->ext_lock, NULL);
    tr->inited = true;
    if (!path)
        return 0;
    tr->out = fopen(path, "w");
    if (!tr->out) {
        snprintf(err, n, "trace file %s: %s", path, strerror(errno));
        return MQS_ESYS;
    }
    snprintf(tr->path, sizeof tr->path, "%s", path);
    tr->t0 = mqs__clock_ns(&rt->clock);
    tr->max_mb = (uint64_t)max_mb;
    int rc = ring_init(&tr->ext, tr, &rt->clock);
    for (int i = 0; rc == 0 && i < rt->nworkers; i++) {
        struct mqs_worker *w = rt->workers[i];
        w->trace = mqs__calloc(1, sizeof *w->trace);
        /* The runtime's clock, not the worker's copy: the copies are
         * re-anchored at different times, and one time base lets a
         * wake-up on one worker be compared with a run on another. */
        rc = w->trace ? ring_init(w->trace, tr, &rt->clock) : MQS_ENOMEM;
    }
    if (rc)
        snprintf(err, n, "trace %s: no memory or temporary file for the "
                         "event rings", path);
    tr->on = rc == 0;
    return rc;
}

/* ------------------------------------------------------------------ */
/* The JSON                                                            */
/* ------------------------------------------------------------------ */

/* Microseconds with three decimals, from ns. */
#define US(ns) (unsigned long long)((ns) / 1000), (unsigned)((ns) % 1000)
#define US_FMT "%llu.%03u"

struct jw {
    FILE *f;
};

static void json_str(FILE *f, const char *s, size_t max)
{
    fputc('"', f);
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\u%04x", c); /* bytes, not UTF-8: kept readable */
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static const char *const why_name[] = {
    [MQS__TR_WHY_YIELD] = "yield",   [MQS__TR_WHY_BLOCK] = "block",
    [MQS__TR_WHY_EXIT] = "exit",     [MQS__TR_WHY_MOVE] = "move",
    [MQS__TR_WHY_CHILD] = "child first", [MQS__TR_WHY_PREEMPT] = "preempt",
};

static const char *const src_name[] = {
    [MQS__TR_SRC_TASK] = "task",   [MQS__TR_SRC_TIMER] = "timer",
    [MQS__TR_SRC_POLL] = "poller", [MQS__TR_SRC_LEFT] = "left to the switch",
    [MQS__TR_SRC_OUTSIDE] = "outside thread",
    [MQS__TR_SRC_SLOT] = "hand-off slot, to the policy",
};

static const char *const pull_name[] = {
    [MQS_BALANCE_IDLE] = "idle", [MQS_BALANCE_NEWIDLE] = "newly idle",
    [MQS_BALANCE_PERIODIC] = "periodic",
};

static const char *name_of(const char *const *tab, size_t n, uint64_t i)
{
    return i < n && tab[i] ? tab[i] : "?";
}
#define NAME_OF(tab, i) name_of(tab, sizeof tab / sizeof *tab, i)

/* One instant event on thread tid of process 1. */
static void instant(const struct jw *j, int tid, uint64_t ts,
                    const char *name, uint64_t task)
{
    fprintf(j->f,
            ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%d,\"ts\":" US_FMT
            ",\"name\":\"%s\",\"args\":{\"task\":%" PRIu64 "}}",
            tid, US(ts), name, task);
}

static void task_name_meta(const struct jw *j, uint64_t task, const char *name)
{
    fprintf(j->f,
            ",\n{\"ph\":\"M\",\"pid\":2,\"tid\":%" PRIu64
            ",\"name\":\"thread_name\",\"args\":{\"name\":",
            task);
    if (name)
        json_str(j->f, name, MQS__NAME_MAX);
    else
        fprintf(j->f, "\"task-%" PRIu64 "\"", task);
    fprintf(j->f, "}}");
}

/* The state of one track while its records are read. */
struct track {
    uint64_t run_task, run_ts, park_ts;
    bool running, parked;
};

static void emit(const struct jw *j, int tid, struct track *k,
                 const struct mqs__trace_rec *e, const struct mqs__trace_rec *name)
{
    unsigned kind = (unsigned)(e->tk & 0xff);
    uint64_t ts = e->tk >> 8;
    FILE *f = j->f;
    switch (kind) {
    case MQS__TR_START:
        k->running = true;
        k->run_task = e->task;
        k->run_ts = ts;
        if (e->b && e->b <= ts)
            fprintf(f,
                    ",\n{\"ph\":\"X\",\"pid\":2,\"tid\":%" PRIu64
                    ",\"ts\":" US_FMT ",\"dur\":" US_FMT
                    ",\"name\":\"runnable\"}",
                    e->task, US(e->b), US(ts - e->b));
        if (e->a)
            fprintf(f,
                    ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"wake\","
                    "\"name\":\"wake\",\"id\":%" PRIu64
                    ",\"pid\":1,\"tid\":%d,\"ts\":" US_FMT "}",
                    e->a, tid, US(ts));
        break;
    case MQS__TR_STOP: {
        if (!k->running || k->run_task != e->task)
            break; /* its start was in records lost to a failed spill */
        k->running = false;
        const char *why = NAME_OF(why_name, e->a);
        fprintf(f,
                ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":" US_FMT
                ",\"dur\":" US_FMT ",\"name\":\"t%" PRIu64
                "\",\"args\":{\"task\":%" PRIu64 ",\"end\":\"%s\"}}",
                tid, US(k->run_ts), US(ts - k->run_ts), e->task, e->task,
                why);
        fprintf(f,
                ",\n{\"ph\":\"X\",\"pid\":2,\"tid\":%" PRIu64 ",\"ts\":" US_FMT
                ",\"dur\":" US_FMT ",\"name\":\"on w%d\",\"args\":{"
                "\"end\":\"%s\"}}",
                e->task, US(k->run_ts), US(ts - k->run_ts), tid, why);
        if (e->a == MQS__TR_WHY_PREEMPT)
            instant(j, tid, ts, "preempt", e->task);
        break;
    }
    case MQS__TR_BLOCK:
        fprintf(f,
                ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%d,\"ts\":"
                US_FMT ",\"name\":\"block on %s\",\"args\":{\"task\":%" PRIu64
                "}}",
                tid, US(ts), e->a ? (const char *)(uintptr_t)e->a : "?",
                e->task);
        break;
    case MQS__TR_MIGRATE:
        fprintf(f,
                ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%d,\"ts\":"
                US_FMT ",\"name\":\"migrate from w%" PRIu64
                "\",\"args\":{\"task\":%" PRIu64 "}}",
                tid, US(ts), e->a, e->task);
        break;
    case MQS__TR_WAKE: {
        uint64_t flow = e->b >> 24;
        unsigned src = (unsigned)(e->b >> 20 & 0xf);
        fprintf(f,
                ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%d,\"ts\":"
                US_FMT ",\"name\":\"wake t%" PRIu64 "\",\"args\":{\"task\":%"
                PRIu64 ",\"waker\":%" PRIu64 ",\"by\":\"%s\",\"to\":\"w%u\","
                "\"sync\":%s,\"handoff\":%s}}",
                tid, US(ts), e->task, e->task, e->a, NAME_OF(src_name, src),
                (unsigned)(e->b & 0xffff), e->b >> 17 & 1 ? "true" : "false",
                e->b >> 16 & 1 ? "true" : "false");
        fprintf(f,
                ",\n{\"ph\":\"s\",\"cat\":\"wake\",\"name\":\"wake\",\"id\":%"
                PRIu64 ",\"pid\":1,\"tid\":%d,\"ts\":" US_FMT "}",
                flow, tid, US(ts));
        break;
    }
    case MQS__TR_PULL:
        fprintf(f,
                ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%d,\"ts\":"
                US_FMT ",\"name\":\"pull (%s)\",\"args\":{\"tasks\":%" PRIu64
                "}}",
                tid, US(ts), e->a < 3 ? NAME_OF(pull_name, e->a) : "priority",
                e->b);
        break;
    case MQS__TR_PARK:
        k->parked = true;
        k->park_ts = ts;
        break;
    case MQS__TR_UNPARK:
        if (k->parked)
            fprintf(f,
                    ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":" US_FMT
                    ",\"dur\":" US_FMT ",\"name\":\"parked\"}",
                    tid, US(k->park_ts), US(ts - k->park_ts));
        k->parked = false;
        break;
    case MQS__TR_SPAWN:
        instant(j, tid, ts, "spawn", e->task);
        if (!e->b)
            task_name_meta(j, e->task, NULL);
        break;
    case MQS__TR_NAME:
        if (name)
            task_name_meta(j, e->task, (const char *)name);
        break;
    }
}

/* Every record of one ring's spill file, in order. */
static void emit_ring(const struct jw *j, int tid, struct mqs__trace_ring *r,
                      uint64_t *events)
{
    if (!r->spill || fflush(r->spill) != 0 || fseek(r->spill, 0, SEEK_SET))
        return;
    struct track k = {0};
    struct mqs__trace_rec e, name;
    while (fread(&e, sizeof e, 1, r->spill) == 1) {
        bool named = (e.tk & 0xff) == MQS__TR_NAME;
        if (named && fread(&name, sizeof name, 1, r->spill) != 1)
            break;
        emit(j, tid, &k, &e, named ? &name : NULL);
        ++*events;
    }
}

static void trace_write(mqs_runtime_t *rt)
{
    struct mqs__trace *tr = &rt->trace;
    struct jw j = {tr->out};
    FILE *f = tr->out;
    /* Every ring's last records first: the limit has then had its say,
     * and the header can tell how many records it cut. */
    uint64_t capped = 0;
    for (int i = 0; i <= rt->nworkers; i++) {
        struct mqs__trace_ring *r =
            i < rt->nworkers ? rt->workers[i]->trace : &tr->ext;
        ring_spill(r);
        capped += r->capped;
    }
    fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"policy\":");
    json_str(f, rt->policy_spec, sizeof rt->policy_spec);
    fprintf(f, ",\"workers\":%d,\"mqs\":\"%d.%d.%d\",\"limit_mb\":%" PRIu64
               ",\"records_past_limit\":%" PRIu64 "},\n\"traceEvents\":[\n"
               "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\","
               "\"args\":{\"name\":\"mqs workers (%s)\"}}",
            rt->nworkers, MQS_VERSION_MAJOR, MQS_VERSION_MINOR,
            MQS_VERSION_PATCH, tr->max_mb, capped, rt->policy->name);
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":2,\"name\":\"process_name\","
               "\"args\":{\"name\":\"mqs tasks\"}}");
    for (int i = 0; i <= rt->nworkers; i++) {
        char nm[32];
        if (i < rt->nworkers)
            snprintf(nm, sizeof nm, "w%d", i);
        else
            snprintf(nm, sizeof nm, "outside threads");
        fprintf(f,
                ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":"
                "\"thread_name\",\"args\":{\"name\":\"%s\"}}"
                ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":"
                "\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
                i, nm, i, i);
    }
    uint64_t events = 0, lost = 0;
    int err = 0;
    for (int i = 0; i <= rt->nworkers; i++) {
        struct mqs__trace_ring *r =
            i < rt->nworkers ? rt->workers[i]->trace : &tr->ext;
        emit_ring(&j, i, r, &events);
        lost += r->lost;
        if (r->err)
            err = r->err;
    }
    fprintf(f, "\n]}\n");
    if (capped)
        fprintf(stderr, "mqs: trace %s: its limit of %" PRIu64 " MiB of "
                        "records (MQS_TRACE_MAX_MB) was reached: the first "
                        "%" PRIu64 " events are in the file, %" PRIu64
                        " records after them are not\n",
                tr->path, tr->max_mb, events, capped);
    if (lost)
        fprintf(stderr, "mqs: trace %s: %" PRIu64 " events lost (writing "
                        "the temporary file: %s)\n",
                tr->path, lost, err ? strerror(err) : "short write");
    if (fclose(tr->out) != 0)
        fprintf(stderr, "mqs: trace %s: %s\n", tr->path, strerror(errno));
    tr->out = NULL;
}

void mqs__trace_close(mqs_runtime_t *rt, bool write)
{
    struct mqs__trace *tr = &rt->trace;
    if (!tr->inited)
        return;
    if (tr->on && write) {
        pthread_mutex_lock(&tr->ext_lock); /* a late outside thread waits */
        trace_write(rt);
        pthread_mutex_unlock(&tr->ext_lock);
    }
    if (tr->out)
        fclose(tr->out);
    tr->out = NULL;
    tr->on = false;
    ring_fini(&tr->ext);
    for (int i = 0; rt->workers && i < rt->nworkers; i++) {
        struct mqs_worker *w = rt->workers[i];
        if (w && w->trace) {
            ring_fini(w->trace);
            free(w->trace);
            w->trace = NULL;
        }
    }
    pthread_mutex_destroy(&tr->ext_lock);
    tr->inited = false;
}
