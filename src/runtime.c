/*
 * runtime.c - creating and destroying a runtime, the worker threads, and
 * mqs_main.
 *
 * Create resolves the configuration (config.c), calibrates the clock,
 * allocates one cache-line-aligned worker per CPU it may use with its run
 * queue and the policy's per-queue state, and starts the worker threads
 * (pinned when asked).  Everything a runtime needs hangs off the runtime
 * object, so several runtimes can live in one process.
 *
 * Destroy has two modes.  Waiting: sleep on a futex until the count of
 * live tasks drops to zero; while waiting, if nothing is queued or due,
 * every live task is blocked and no thread holds the runtime, no task can
 * ever run again (a deadlock or a task blocked forever): take the blocked
 * tasks off what they wait on, report them and return MQS_EDEADLK
 * instead of hanging (the verdict is argued below, at settled()).  Reporting: stop the workers
 * at their next scheduling point and list what is alive.  Either way no
 * task is lost silently (invariant 5).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"


#define MQS__STR2(x) #x
#define MQS__STR(x) MQS__STR2(x)
#if defined(MQS_PROJECT_VERSION_MAJOR) &&                                \
    (MQS_PROJECT_VERSION_MAJOR != MQS_VERSION_MAJOR ||                   \
     MQS_PROJECT_VERSION_MINOR != MQS_VERSION_MINOR ||                   \
     MQS_PROJECT_VERSION_PATCH != MQS_VERSION_PATCH)
#error "include/mqs.h's MQS_VERSION_* differ from CMakeLists.txt's project()"
#endif

const char *mqs_version(void)
{
    return MQS__STR(MQS_VERSION_MAJOR) "." MQS__STR(MQS_VERSION_MINOR) "."
        MQS__STR(MQS_VERSION_PATCH);
}

const char *mqs_strerror(int err)
{
    switch (err) {
    case MQS_OK: return "success";
    case MQS_EINVAL: return "invalid argument";
    case MQS_ENOMEM: return "out of memory";
    case MQS_EPERM: return "not allowed here (task-only call outside a task, or not the owner)";
    case MQS_EBUSY: return "busy";
    case MQS_ETIMEDOUT: return "timed out";
    case MQS_ECLOSED: return "channel closed";
    case MQS_EAGAIN: return "would block";
    case MQS_ENOPOLICY: return "no such policy or tunable";
    case MQS_ESTATE: return "object in the wrong state";
    case MQS_EDEADLK: return "would wait forever";
    case MQS_ESYS: return "the operating system refused";
    case MQS_EOWNERDEAD: return "owner died holding the mutex (now yours)";
    case MQS_ESIGNAL: return "not from a signal handler that interrupted the runtime";
    default: {
        const char *os = mqs_os_errno(err) ? strerrordesc_np(mqs_os_errno(err))
                                           : NULL;
        return os ? os : "unknown error";
    }
    }
}

int mqs_os_errno(int err)
{
    return err < MQS_EOS_BASE && err > MQS_EOS_BASE - 4096
               ? MQS_EOS_BASE - err
               : 0;
}

static void *aligned_zalloc(size_t size)
{
    void *p = NULL;
    size = (size + MQS__CACHELINE - 1) / MQS__CACHELINE * MQS__CACHELINE;
    if (mqs__memalign(&p, MQS__CACHELINE, size ? size : MQS__CACHELINE))
        return NULL;
    memset(p, 0, size ? size : MQS__CACHELINE);
    return p;
}

/* ------------------------------------------------------------------ */
/* Worker threads                                                      */
/* ------------------------------------------------------------------ */

static void pin_to_cpu(struct mqs_worker *w, int nth)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    int seen = 0, ncpu = CPU_COUNT(&allowed);
    if (ncpu == 0)
        return;
    nth %= ncpu;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &allowed) || seen++ != nth)
            continue;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0)
            w->cpu = c;
        return;
    }
}

static void record_loop_stack(struct mqs_worker *w)
{
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    pthread_attr_getstack(&a, &w->loop_stack_lo, &w->loop_stack_size);
    pthread_attr_destroy(&a);
}

static void *worker_main(void *arg)
{
    struct mqs_worker *w = arg;
    mqs__worker_set_self(w);
    if (w->rt->pin)
        pin_to_cpu(w, w->index);
    record_loop_stack(w);
    w->tsan_fiber = mqs__fiber_current();
    mqs__preempt_worker_init(w);
    mqs__altstack_setup(w);
    w->next_balance = mqs__clock_ns(&w->clock) + 4000000;
    mqs__worker_loop(w);
    mqs__altstack_teardown(w);
    mqs__worker_set_self(NULL);
    return NULL;
}

static struct mqs_worker *worker_new(mqs_runtime_t *rt, int i)
{
    struct mqs_worker *w = aligned_zalloc(sizeof *w);
    if (!w)
        return NULL;
    w->index = i;
    w->rt = rt;
    w->cpu = -1;
    w->clock = rt->clock;
    mqs__spin_init(&w->rq.own_lock);
    w->rq.lock = &w->rq.own_lock;
    w->rq.worker = i;
    w->rq.rt = rt;
    atomic_init(&w->rq.best_prio, MQS_PRIO_NONE);
    w->rq.hint_prio = MQS_PRIO_NONE;
    mqs__spin_init(&w->timers.lock);
    atomic_init(&w->timers.next, UINT64_MAX);
    atomic_init(&w->rq.curr_level, MQS_PRIO_NONE);
    if (rt->policy->rq_size &&
        !(w->rq.pstate = aligned_zalloc(rt->policy->rq_size))) {
        free(w);
        return NULL;
    }
    if (mqs__altstack_alloc(w) != 0) {
        free(w->rq.pstate);
        free(w);
        return NULL;
    }
    return w;
}

static void worker_free(struct mqs_worker *w)
{
    if (!w)
        return;
    mqs__stack_cache_drain(&w->stacks);
    mqs__timer_heap_free(&w->timers);
    mqs__altstack_free(w);
    free(w->rq.pstate);
    free(w);
}

/* ------------------------------------------------------------------ */
/* Create                                                              */
/* ------------------------------------------------------------------ */

static void runtime_free(mqs_runtime_t *rt)
{
    if (!rt)
        return;
    mqs__trace_close(rt, false); /* written by destroy, if it came */
    mqs__offload_fini(rt);
    mqs__poll_fini(rt);
    for (int i = 0; rt->workers && i < rt->nworkers; i++)
        worker_free(rt->workers[i]);
    mqs__stack_cache_drain(&rt->ext_stacks);
    mqs__handle_table_free(rt);
    mqs__stack_slabs_free(rt);
    pthread_mutex_destroy(&rt->slab_lock);
    pthread_mutex_destroy(&rt->hold_lock);
    free(rt->workers);
    free(rt->pstate);
    free(rt);
}

/* Policy state: tunables first (int64_t each, in table order), then
 * whatever the policy keeps. */
static int policy_setup(mqs_runtime_t *rt, const mqs_config_t *c, char *err,
                        size_t n)
{
    int64_t values[64];
    const char *spec = c->policy;
    int rc = mqs__policy_parse_ops(spec, c->policy_ops, &rt->policy, values,
                                   err, n);
    if (rc)
        return rc;
    snprintf(rt->policy_spec, sizeof rt->policy_spec, "%s", spec);
    size_t size = rt->policy->rt_size;
    rt->pstate = aligned_zalloc(size);
    if (!rt->pstate)
        return MQS_ENOMEM;
    int i = 0;
    for (const struct mqs_tunable *t = rt->policy->tunables; t && t->name;
         t++, i++)
        memcpy((char *)rt->pstate + t->offset, &values[i], sizeof(int64_t));
    return 0;
}

/* fork(): see mqs.h.  One word for the process, mqs__fork_gen (base.c),
 * like the overflow handler (design.md): a child of fork() bumps it, so every runtime it
 * inherited compares unequal; and the forking thread, if a worker, is
 * marked inside the runtime for good, so a task that forked gets
 * MQS_ESTATE from its scheduling and blocking calls in the child. */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
    atomic_fetch_add(&mqs__fork_gen, 1);
    struct mqs_worker *w = mqs__worker_self();
    if (w)
        w->in_runtime += MQS__RT_FORKED;
}

static void fork_register(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

static int runtime_build(mqs_runtime_t *rt, const mqs_config_t *c, char *err,
                         size_t n)
{
    pthread_once(&fork_once, fork_register);
    rt->fork_gen = atomic_load(&mqs__fork_gen);
    rt->nworkers = c->workers;
    rt->stack_size = c->stack_size;
    rt->guard_size = c->guard_size;
    rt->idle_spin_ns = c->idle_spin_ns;
    rt->pin = c->pin;
    atomic_init(&rt->next_id, 1);
    mqs__spin_init(&rt->keys_lock);
    mqs__spin_init(&rt->ext_stacks_lock);
    mqs__spin_init(&rt->hpool_lock);
    pthread_mutex_init(&rt->slab_lock, NULL);
    pthread_mutex_init(&rt->hold_lock, NULL);
    mqs__poll_init(rt);
    int rc = mqs__offload_init(rt, c->offload_threads);
    if (rc)
        return rc;
    mqs__clock_init(&rt->clock);
    rt->stall_ns = c->stall_ns;
    rt->pre.on = c->preempt;
    rt->pre.tick_ns = (uint64_t)c->preempt_tick_ns;
    rt->pre.calm = 1;
    rc = policy_setup(rt, c, err, n);
    if (rc)
        return rc;
    rt->workers = mqs__calloc((size_t)rt->nworkers, sizeof *rt->workers);
    if (!rt->workers)
        return MQS_ENOMEM;
    for (int i = 0; i < rt->nworkers; i++)
        if (!(rt->workers[i] = worker_new(rt, i)))
            return MQS_ENOMEM;
    /* A policy with one queue for the runtime (2.4's runqueue_lock, BFS)
     * has every rq under worker 0's lock. */
    for (int i = 1; (rt->policy->flags & MQS_POLICY_SHARED_RQ) &&
                    i < rt->nworkers; i++)
        rt->workers[i]->rq.lock = &rt->workers[0]->rq.own_lock;
    mqs__accounting_setup(rt, c->accounting);
    /* Random-schedule mode: a generator per worker (never 0: xorshift). */
    rt->shuffle_seed = c->shuffle_seed;
    for (int i = 0; rt->shuffle_seed && i < rt->nworkers; i++)
        rt->workers[i]->shuffle =
            mqs__shuffle_mix(rt->shuffle_seed + (uint64_t)i) | 1;
    if (rt->policy->init && (rc = rt->policy->init(rt, rt->pstate)))
        return rc;
    for (int i = 0; rt->policy->init_rq && i < rt->nworkers; i++)
        rt->policy->init_rq(&rt->workers[i]->rq);
    if ((rc = mqs__trace_open(rt, c->trace_file, c->trace_max_mb, err, n)))
        return rc;
    return mqs__overflow_handler_install();
}

static void stop_workers(mqs_runtime_t *rt, int started)
{
    mqs__schedtrace_stop(rt);
    atomic_store(&rt->stopping, 1);
    for (int i = 0; i < started; i++)
        mqs__kick(rt->workers[i]);
    /* The monitor stops last: a task that never yields reaches a
     * scheduling point only through it. */
    for (int i = 0; i < started; i++)
        pthread_join(rt->workers[i]->thread, NULL);
    mqs__preempt_stop(rt);
}

int mqs_runtime_create(mqs_runtime_t **out, const mqs_config_t *cfg)
{
    char err[256] = "";
    if (!out)
        return MQS_EINVAL;
    mqs_config_t c;
    int rc = mqs__config_apply(cfg, &c, err, sizeof err);
    if (rc) {
        mqs__report_error(cfg, err);
        return rc;
    }
    mqs_runtime_t *rt = aligned_zalloc(sizeof *rt);
    if (!rt)
        return MQS_ENOMEM;
    rc = runtime_build(rt, &c, err, sizeof err);
    if (rc == 0)
        rt->bias_ok = mqs__bias_register(rt);
    for (int i = 0; rc == 0 && i < rt->nworkers; i++) {
        if (pthread_create(&rt->workers[i]->thread, NULL, worker_main,
                           rt->workers[i]) != 0) {
            stop_workers(rt, i);
            rc = MQS_ESYS;
            snprintf(err, sizeof err, "could not start worker thread %d", i);
        }
    }
    if (rc == 0 && (rc = mqs__preempt_start(rt)) != 0) {
        stop_workers(rt, rt->nworkers);
        snprintf(err, sizeof err, "could not start the preemption monitor");
    }
    if (rc == 0 && (rc = mqs__schedtrace_start(rt, c.schedtrace_ms,
                                               c.schedtrace_file)) != 0) {
        stop_workers(rt, rt->nworkers);
        snprintf(err, sizeof err, "could not start the schedtrace thread");
    }
    if (rc) {
        if (err[0])
            mqs__report_error(cfg, err);
        runtime_free(rt);
        return rc;
    }
    *out = rt;
    return 0;
}

int mqs_runtime_workers(const mqs_runtime_t *rt)
{
    return rt ? rt->nworkers : MQS_EINVAL;
}

const char *mqs_runtime_policy(const mqs_runtime_t *rt)
{
    return rt ? rt->policy->name : NULL;
}

/* ------------------------------------------------------------------ */
/* Destroy                                                             */
/* ------------------------------------------------------------------ */

static const char *state_name(int s)
{
    static const char *const names[] = {"new", "runnable", "running",
                                        "blocked", "waking", "dead"};
    return s >= 0 && s <= MQS__DEAD ? names[s] : "?";
}

void mqs__task_describe(const struct mqs_task *t, char *buf, size_t n)
{
    int s = atomic_load(&t->state);
    if (s == MQS__BLOCKED && t->wait_what)
        snprintf(buf, n, "task %s (id %llu): %s, waiting on %s %p", t->name,
                 (unsigned long long)t->id, state_name(s), t->wait_what,
                 t->wait_obj);
    else
        snprintf(buf, n, "task %s (id %llu): %s", t->name,
                 (unsigned long long)t->id, state_name(s));
}

/* Report (when out is set) and free every task still registered;
 * counts those that were alive (not dead).  Only from destroy, with the
 * workers stopped: then fn may free what it visits. */
struct reap {
    mqs_runtime_t *rt;
    FILE *out;
    int alive;
};

static void reap_one(struct mqs_task *t, void *ctx)
{
    struct reap *r = ctx;
    if (atomic_load(&t->state) != MQS__DEAD) {
        char line[256];
        r->alive++;
        mqs__task_describe(t, line, sizeof line);
        if (r->out)
            fprintf(r->out, "mqs: still alive at shutdown: %s\n", line);
    }
    /* Freed owning mutexes: released as its exit would have (their
     * waiters of this runtime were taken off them already, so nobody is
     * woken here). */
    if (t->held_mutexes)
        mqs__mutex_release_dead(t);
    mqs__fiber_destroy(t->tsan_fiber);
    mqs__stack_reap(r->rt, t);
}

static int reap_all(mqs_runtime_t *rt, FILE *out)
{
    struct reap r = {rt, out, 0};
    mqs__tasks_each(rt, reap_one, &r);
    return r.alive;
}

/*
 * The deadlock verdict.  No task can ever run again when nothing is
 * queued or due anywhere and every live task is blocked: a blocked task
 * is woken only by a running task, a timer or a thread outside the
 * runtime.  Running tasks and timers the runtime sees; outside threads it
 * cannot, so a program whose threads may still wake a task holds the
 * runtime (mqs_runtime_hold) for that time, and no verdict is given while
 * it is held.  The task states are read one task at a time, so one pass
 * is not a snapshot: a task seen blocked may have been woken by one seen
 * blocked later.  Such a wake-up runs a task, which counts a switch on
 * its worker; a pass is taken only when the sum of the switch counters is
 * the same before and after it, and the verdict needs three such passes
 * in a row, SETTLE_NS apart.  (The first version trusted the workers'
 * idle marks: a placement can clear a mark and queue nothing there, and
 * the worker then parked unmarked, so destroy hung.)
 */
#define SETTLE_NS 10000000ull
#define SETTLE_PASSES 3

static uint64_t switches_sum(mqs_runtime_t *rt)
{
    uint64_t sum = 0;
    /* seq_cst loads: ordered with the task-state loads between the two
     * sums. */
    for (int i = 0; i < rt->nworkers; i++)
        sum += atomic_load(&rt->workers[i]->stats.switches);
    return sum;
}

/* Every task dead or blocked with no timer. */
static void check_blocked(struct mqs_task *t, void *ctx)
{
    int s = atomic_load(&t->state);
    if (s != MQS__DEAD && (s != MQS__BLOCKED || t->timer_index >= 0))
        *(bool *)ctx = false;
}

static bool tasks_all_blocked(mqs_runtime_t *rt)
{
    bool ok = true;
    mqs__tasks_each(rt, check_blocked, &ok);
    return ok;
}

/* Every worker parked, nothing queued or due, every task blocked or
 * dead, no switch meanwhile, no hold.  "Parked" matters: a task is DEAD
 * from the start of its exit, and its worker gives the live count back
 * only after the switch away; a worker the host stopped in between (for
 * the three passes' 30 ms: seen under a load of 20 on two CPUs) made no
 * switch, so without it the verdict fell on a runtime about to end. */
static bool settled(mqs_runtime_t *rt)
{
    uint64_t before = switches_sum(rt);
    for (int i = 0; i < rt->nworkers; i++) {
        struct mqs_worker *w = rt->workers[i];
        if (!atomic_load(&w->parked) || mqs_rq_nr_queued(&w->rq) ||
            mqs__runnext_any(&w->runnext) ||
            atomic_load(&w->timers.next) != UINT64_MAX)
            return false;
    }
    return tasks_all_blocked(rt) && switches_sum(rt) == before &&
           atomic_load(&rt->holds) == 0 &&
           atomic_load(&rt->poll.waiting) == 0;
}

/* Take every blocked task off what it waits on, so that the objects stay
 * usable once the tasks are freed.  A task that a thread breaking the
 * hold contract woke meanwhile is not taken; it is stopped and reported
 * with the rest. */
static void cancel_blocked(struct mqs_task *t, void *ctx)
{
    (void)ctx;
    /* Unlinked, it is destroy's alone: back to "blocked" for the
     * report. */
    if (atomic_load(&t->state) == MQS__BLOCKED &&
        mqs__waitq_cancel(t, MQS_EDEADLK))
        atomic_store(&t->state, MQS__BLOCKED);
}

static void cancel_all_blocked(mqs_runtime_t *rt)
{
    mqs__tasks_each(rt, cancel_blocked, NULL);
}

/* Every task ended and no thread holds the runtime: an outside waker
 * may still be inside its wake-up call after the task it woke ended. */
static bool all_done(mqs_runtime_t *rt)
{
    return atomic_load(&rt->live) == 0 && atomic_load(&rt->holds) == 0;
}

static int wait_for_tasks(mqs_runtime_t *rt)
{
    int passes = 0;
    for (;;) {
        unsigned seen = atomic_load(&rt->live_futex);
        if (all_done(rt))
            return 0;
        mqs__futex_wait(&rt->live_futex, seen, SETTLE_NS);
        if (all_done(rt))
            return 0;
        passes = settled(rt) ? passes + 1 : 0;
        if (passes >= SETTLE_PASSES)
            return MQS_EDEADLK;
    }
}

int mqs_runtime_hold(mqs_runtime_t *rt)
{
    if (!rt)
        return MQS_EINVAL;
    mqs__hold_get(rt);
    return 0;
}

int mqs_runtime_release(mqs_runtime_t *rt)
{
    if (!rt)
        return MQS_EINVAL;
    return mqs__hold_put(rt) ? 0 : MQS_ESTATE;
}

int mqs_runtime_destroy_ex(mqs_runtime_t *rt, int flags, FILE *out)
{
    if (!rt || (flags & ~MQS_DESTROY_REPORT))
        return MQS_EINVAL;
    if (mqs__forked(rt))
        return MQS_ESTATE; /* a parent's: its threads are not here (leaked) */
    struct mqs_worker *self = mqs__worker_self();
    if (self && self->rt == rt)
        return MQS_EPERM;
    int rc = 0;
    if (!(flags & MQS_DESTROY_REPORT)) {
        rc = wait_for_tasks(rt);
        if (rc == MQS_EDEADLK)
            fprintf(stderr, "mqs: runtime destroy: no task can run again "
                            "but some are alive (deadlock?)\n");
    }
    /* Even a destroy that does not wait for tasks waits for holds: a
     * holder may be inside a call on this runtime. */
    while (atomic_load(&rt->holds) > 0) {
        unsigned seen = atomic_load(&rt->live_futex);
        if (atomic_load(&rt->holds) > 0)
            mqs__futex_wait(&rt->live_futex, seen, SETTLE_NS);
    }
    /* The last release may still be waking us: let it finish. */
    pthread_mutex_lock(&rt->hold_lock);
    pthread_mutex_unlock(&rt->hold_lock);
    stop_workers(rt, rt->nworkers);
    /* What is still blocked is freed below: off its objects first. */
    cancel_all_blocked(rt);
    int alive = reap_all(rt, rc || (flags & MQS_DESTROY_REPORT)
                                 ? (out ? out : stderr) : NULL);
    mqs__trace_close(rt, true);
    runtime_free(rt);
    if (flags & MQS_DESTROY_REPORT)
        return alive;
    return rc;
}

int mqs_runtime_destroy(mqs_runtime_t *rt)
{
    return mqs_runtime_destroy_ex(rt, 0, NULL);
}

/* ------------------------------------------------------------------ */
/* mqs_main                                                            */
/* ------------------------------------------------------------------ */

int mqs_main(const mqs_config_t *cfg, mqs_task_fn fn, void *arg, void **result)
{
    if (!fn)
        return MQS_EINVAL;
    mqs_runtime_t *rt;
    int rc = mqs_runtime_create(&rt, cfg);
    if (rc)
        return rc;
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.name = "main";
    mqs_task_t *t;
    rc = mqs_spawn(rt, &t, &a, fn, arg);
    if (rc == 0)
        rc = mqs_join(t, result);
    int drc = mqs_runtime_destroy(rt);
    return rc ? rc : drc;
}
