/*
 * task.c - the task API: spawn, join, exit, yield, sleep, self, priority
 * and affinity changes, task-local storage.
 *
 * A task's life: spawn maps (or reuses) a stack with the task struct at
 * its top, fills the scheduling entity from the attributes, and hands it
 * to the policy through the same path as a wake-up, or, spawned by a
 * running task, runs it at once with the spawner parked (child runs
 * first, runnext.c: a spawn/join tree then runs depth first).  The exit
 * makes no system call unless an external joiner sleeps on done_futex,
 * and the default name is formatted by hand (snprintf was a tenth of a
 * skynet task).  It runs fn(arg) on
 * its own stack from task_main; when fn returns, key destructors run,
 * mutexes it still holds are released marked "owner died" (sync.c),
 * joiners are woken, and the final switch away releases a detached task's
 * stack (mqs__finish_switch, once nothing runs on it).  A joinable task's
 * struct and stack stay until join has read the result.
 *
 * Changes of class, priority or affinity take the task's run-queue lock
 * when it is queued (dequeue, change, enqueue: the policy sees a
 * consistent task) and otherwise just write the fields: a running task is
 * re-placed at its next scheduling point, a blocked one when it wakes.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "internal.h"
#include "switch.h"

static int check_sched(mqs_class_t cls, int prio)
{
    switch (cls) {
    case MQS_CLASS_NORMAL:
        return prio >= -20 && prio <= 19 ? 0 : MQS_EINVAL;
    case MQS_CLASS_FIFO:
    case MQS_CLASS_RR:
        return prio >= 1 && prio <= 99 ? 0 : MQS_EINVAL;
    case MQS_CLASS_IDLE:
        return 0;
    default:
        return MQS_EINVAL;
    }
}

void mqs_task_attr_init(mqs_task_attr_t *attr)
{
    if (!attr)
        return;
    memset(attr, 0, sizeof *attr);
    attr->sched_class = MQS_CLASS_NORMAL;
}

/* Is mask non-empty within the runtime's workers?  Is it all of them? */
static int check_mask(const mqs_runtime_t *rt, const mqs_mask_t *m, bool *all)
{
    int n = 0;
    for (int i = 0; i < rt->nworkers; i++)
        n += mqs_mask_isset(m, i);
    *all = n == rt->nworkers;
    return n > 0 ? 0 : MQS_EINVAL;
}

static int check_attr(const mqs_runtime_t *rt, const mqs_task_attr_t *a)
{
    int prio = a->sched_class == MQS_CLASS_NORMAL ? a->nice : a->rt_priority;
    if (check_sched(a->sched_class, prio))
        return MQS_EINVAL;
    if (a->stack_size && (a->stack_size < MQS__MIN_STACK ||
                          a->stack_size > ((size_t)1 << 30)))
        return MQS_EINVAL;
    bool all;
    if (a->affinity && check_mask(rt, a->affinity, &all))
        return MQS_EINVAL;
    return 0;
}

static void task_main(void *arg, void *worker);

/* "task-<id>" without snprintf (a tenth of a skynet task's cost), two
 * digits per division: the divisions form one chain of dependent
 * multiplies, which was most of a spawn's own time at 10^5 ids. */
static void default_name(char *buf, uint64_t id)
{
    static const char pairs[] = "00010203040506070809"
                                "10111213141516171819"
                                "20212223242526272829"
                                "30313233343536373839"
                                "40414243444546474849"
                                "50515253545556575859"
                                "60616263646566676869"
                                "70717273747576777879"
                                "80818283848586878889"
                                "90919293949596979899";
    char digits[20];
    char *p = digits + sizeof digits;
    while (id >= 10) {
        unsigned r = (unsigned)(id % 100);
        id /= 100;
        p -= 2;
        memcpy(p, pairs + 2 * r, 2);
    }
    if (id || p == digits + sizeof digits)
        *--p = (char)('0' + id);
    size_t n = (size_t)(digits + sizeof digits - p);
    memcpy(buf, "task-", 5);
    memcpy(buf + 5, p, n);
    buf[5 + n] = 0;
}

static void task_init(struct mqs_task *t, mqs_runtime_t *rt,
                      const mqs_task_attr_t *a, mqs_task_fn fn, void *arg,
                      uint64_t id)
{
    t->rt = rt;
    t->fn = fn;
    t->arg = arg;
    t->id = id;
    if (a->name)
        strncpy(t->name, a->name, MQS__NAME_MAX - 1);
    else
        default_name(t->name, t->id);
    t->detached = a->detached;
    int prio = a->sched_class == MQS_CLASS_NORMAL ? a->nice : a->rt_priority;
    mqs__se_set_class(&t->se, a->sched_class, prio);
    t->se.last_worker = -1;
    t->pinned = false;
    t->handoff_score = 2; /* hand-offs tried until they miss */
    t->preempt_off = 0;
    t->preempt_pending = false;
    if (a->affinity) {
        t->se.affinity = *a->affinity;
        check_mask(rt, a->affinity, &t->se.any_worker);
    } else {
        for (int i = 0; i < rt->nworkers; i++)
            mqs_mask_set(&t->se.affinity, i);
        t->se.any_worker = true;
    }
    mqs__list_init(&t->se.node);
    mqs__list_init(&t->se.node2);
    mqs__list_init(&t->wait_node);
    mqs__list_init(&t->wait_level_node);
    mqs__waitq_init(&t->joinq);
    atomic_init(&t->queued_on, -1);
    t->timer_index = -1;
    t->trace_flow = 0;
    t->trace_ready = 0;
    t->sp = mqs__ctx_make(t->stack_hi, task_main, t);
    t->tsan_fiber = NULL;
}

int mqs_spawn(mqs_runtime_t *rt, mqs_task_t **out, const mqs_task_attr_t *attr,
              mqs_task_fn fn, void *arg)
{
    mqs_task_attr_t def;
    if (!attr) {
        mqs_task_attr_init(&def);
        attr = &def;
    }
    if (!rt || !fn || (!out && !attr->detached) || check_attr(rt, attr))
        return MQS_EINVAL;
    if (atomic_load(&rt->stopping) || mqs__forked(rt))
        return MQS_ESTATE;
    struct mqs_worker *self = mqs__worker_self(), *me = self;
    int rc = mqs__rt_gate(me);
    if (rc)
        return rc;
    /* The stack cache and the task lists are owner-only or locked:
     * inside the runtime until the spawn is done. */
    if (me)
        mqs__rt_enter(me);
    if (self && self->rt != rt)
        self = NULL;
    size_t size = attr->stack_size ? attr->stack_size : rt->stack_size;
    uint64_t id = mqs__task_id_next(rt, self);
    struct mqs_task *t =
        mqs__stack_alloc(rt, self, size, mqs__stack_serial(rt, self, id));
    if (!t) {
        if (me)
            mqs__rt_leave(me);
        return MQS_ENOMEM;
    }
    task_init(t, rt, attr, fn, arg, id);
    if (!mqs__handle_attach(rt, self, t)) {
        mqs__stack_free(rt, self, t);
        if (me)
            mqs__rt_leave(me);
        return MQS_ENOMEM;
    }
    t->tsan_fiber = mqs__fiber_create();
    mqs__live_get(rt, self);
    if (self)
        MQS__STAT_ADD(self->stats.spawns, 1);
    else
        atomic_fetch_add(&rt->ext_spawns, 1);
    if (out)
        *out = mqs__handle_of(t);
    /* The policy's task_new (Linux's task_fork): the child inherits from
     * its parent before anyone can queue or run it.  No lock: the child
     * is the spawner's alone until it is queued, and the parent, running
     * here, is changed by no one else. */
    if (rt->policy->task_new) {
        MQS__CHK_UNLOCKED_OP(rt, "task_new");
        rt->policy->task_new(self ? &self->rq : &rt->workers[0]->rq, &t->se,
                             self && self->curr ? &self->curr->se : NULL);
    }
    if (MQS__UNLIKELY(rt->trace.on))
        mqs__trace_spawn(rt, t, attr->name != NULL);
    atomic_store_explicit(&t->state, MQS__RUNNABLE, memory_order_relaxed);
    if (self && mqs__child_first(self, self->curr, t))
        mqs__run_child(self, self->curr, t);
    else
        mqs__enqueue_task(rt, t, MQS_ENQ_NEW);
    if (me) /* the spawner may resume on another worker */
        mqs__rt_leave(mqs__worker_self());
    return 0;
}

/* Run key destructors (as pthreads does, a few rounds). */
static void run_key_dtors(struct mqs_task *t)
{
    mqs_runtime_t *rt = t->rt;
    if (!t->keys_set)
        return;
    for (int round = 0; round < 4; round++) {
        bool any = false;
        for (int k = 0; k < MQS_KEYS_MAX; k++) {
            void *v = t->keys[k];
            void (*dtor)(void *) = rt->key_dtor[k];
            if (!v)
                continue;
            t->keys[k] = NULL;
            if (dtor) {
                dtor(v);
                any = true;
            }
        }
        if (!any)
            break;
    }
    /* A destructor that kept setting keys: the stack's next task must
     * start with none (layout() does not clear them). */
    memset(t->keys, 0, sizeof t->keys);
    t->keys_set = false;
}

void mqs__task_exit(struct mqs_task *t)
{
    run_key_dtors(t);
    if (t->held_mutexes)
        mqs__mutex_release_dead(t);
    struct mqs_worker *w = mqs__worker_self();
    /* Inside the runtime for good: the final switch never returns, and
     * the context switched to restores its own depth. */
    mqs__rt_enter(w);
    mqs__waitq_lock_in(&t->joinq);
    /* Readers look under joinq.lock, or without it for DEAD (join's
     * fast path, which then waits for on_cpu), or at done_futex. */
    atomic_store_explicit(&t->state, MQS__DEAD, memory_order_release);
    struct mqs_task *joiner = mqs__waitq_pop(&t->joinq, 0);
    bool outside_joiner = t->outside_joiner;
    mqs__waitq_unlock(&t->joinq);
    /* Only a joiner outside the runtime, which announced itself under
     * the lock above, sleeps on done_futex: one plain store otherwise
     * (an exchange here was the dearest instruction of an exit). */
    atomic_store_explicit(&t->done_futex, MQS__DONE, memory_order_release);
    if (outside_joiner)
        mqs__futex_wake(&t->done_futex, 1 << 30);
    if (joiner)
        mqs__wake(joiner);
    w = mqs__worker_self();
    mqs__schedule(w, t, MQS__SW_EXIT);
    mqs__panic("task %s ran after it exited", t->name);
}

static void task_main(void *arg, void *worker)
{
    struct mqs_task *t = arg;
    struct mqs_worker *w = worker;
    mqs__switch_leave(NULL);
    mqs__finish_switch(w);
    atomic_signal_fence(memory_order_seq_cst);
    w->in_runtime = 0; /* a new context starts in its own code */
    t->result = t->fn(t->arg);
    mqs__task_exit(t);
}

int mqs_join(mqs_task_t *h, void **result)
{
    if (!h)
        return MQS_EINVAL;
    struct mqs_task *self = mqs__current();
    if (self && self->handle == (uintptr_t)h)
        return MQS_EDEADLK;
    int rc = mqs__rt_gate(mqs__worker_self());
    if (rc)
        return rc;
    struct mqs_task *t = mqs__handle_claim_join(h, &rc);
    if (!t)
        return rc;
    if (mqs__forked(t->rt))
        return MQS_ESTATE; /* its worker threads are not in this process */
    /* Ended already (a child that ran first has): no lock; the exit is
     * past its last use of the wait queue, and on_cpu below covers the
     * rest. */
    if (atomic_load_explicit(&t->state, memory_order_acquire) == MQS__DEAD) {
    } else if (self && self->rt == t->rt) {
        if (mqs__waitq_lock(&t->joinq))
            mqs__panic("join of %s: inside the runtime", t->name);
        if (atomic_load(&t->state) != MQS__DEAD)
            mqs__block(&t->joinq, 0, "join", t);
        else
            mqs__waitq_unlock(&t->joinq);
    } else {
        if (mqs__waitq_lock(&t->joinq))
            mqs__panic("join of %s: inside the runtime", t->name);
        bool dead = atomic_load(&t->state) == MQS__DEAD;
        t->outside_joiner = !dead;
        mqs__waitq_unlock(&t->joinq);
        while (!dead && atomic_load_explicit(&t->done_futex,
                                             memory_order_acquire) != MQS__DONE)
            mqs__futex_wait(&t->done_futex, 0, UINT64_MAX);
    }
    /* The exit's final switch also ran finish (live count): wait for the
     * worker that ran it to have left the stack entirely.  That is a few
     * instructions away unless the kernel preempted that worker: then
     * give it the CPU rather than spin out a time slice. */
    for (unsigned spins = 0;
         atomic_load_explicit(&t->on_cpu, memory_order_acquire); spins++) {
        if (spins < 1024)
            mqs__cpu_relax();
        else
            sched_yield();
    }
    if (result)
        *result = t->result;
    struct mqs_worker *w = mqs__worker_self(); /* after the block */
    if (w)
        mqs__rt_enter(w);
    mqs__task_release(t);
    if (w)
        mqs__rt_leave(w);
    return 0;
}

int mqs_yield(void)
{
    struct mqs_worker *w = mqs__worker_entry();
    if (!w)
        return MQS_EPERM;
    if (MQS__UNLIKELY(w->in_runtime))
        return mqs__rt_refused(w->in_runtime); /* handler, or fork */
    if (!w->curr)
        return MQS_EPERM;
    struct mqs_task *t = w->curr;
    MQS__STAT_ADD(t->stats.yields, 1);
    MQS__STAT_ADD(w->stats.yields, 1);
    mqs__schedule(w, t, MQS__SW_YIELD);
    return 0;
}

int mqs_checkpoint(void)
{
    struct mqs_worker *w = mqs__worker_self();
    if (!w)
        return MQS_EPERM;
    if (MQS__UNLIKELY(w->in_runtime))
        return mqs__rt_refused(w->in_runtime);
    if (!w->curr)
        return MQS_EPERM;
    struct mqs_task *t = w->curr;
    const struct mqs_policy *p = w->rt->policy;
    uint64_t now = mqs__clock_ns(&w->clock);
    bool due = now >= atomic_load_explicit(&w->timers.next,
                                           memory_order_relaxed);
    bool urgent = mqs_best_prio_anywhere(w->rt) < t->se.level;
    /* The random-schedule mode yields at one checkpoint in four. */
    bool shuffled = mqs__shuffle_coin(w, 2);
#ifdef MQS_CONTRACT_CHECKS
    if (p->tick)
        MQS__CHK_UNLOCKED_OP(w->rt, "tick");
#endif
    if (due || urgent || shuffled ||
        (p->tick && p->tick(&w->rq, &t->se, mqs__tick_time(w, now)) <= 0))
        mqs__schedule(w, t, MQS__SW_YIELD);
    return 0;
}

int mqs_sleep(uint64_t ns)
{
    struct mqs_worker *w = mqs__worker_self();
    if (!w)
        return MQS_EPERM;
    if (MQS__UNLIKELY(w->in_runtime))
        return mqs__rt_refused(w->in_runtime);
    if (!w->curr)
        return MQS_EPERM;
    uint64_t deadline = mqs__deadline(ns ? ns : 1);
    int rc = mqs__block(NULL, deadline, "sleep", NULL);
    return rc == MQS_ETIMEDOUT ? 0 : rc;
}

mqs_task_t *mqs_self(void)
{
    struct mqs_task *t = mqs__current();
    return t ? mqs__handle_of(t) : NULL;
}

mqs_runtime_t *mqs_runtime_self(void)
{
    struct mqs_worker *w = mqs__worker_self();
    return w ? w->rt : NULL;
}

int mqs_worker_self(void)
{
    struct mqs_worker *w = mqs__worker_self();
    return w && w->curr ? w->index : -1;
}

const char *mqs_task_name(const mqs_task_t *h)
{
    struct mqs_task *t = mqs__handle_pin(h);
    if (!t)
        return NULL;
    const char *name = t->name;
    mqs__handle_unpin(t);
    return name;
}

uint64_t mqs_task_id(const mqs_task_t *h)
{
    struct mqs_task *t = mqs__handle_pin(h);
    if (!t)
        return 0;
    uint64_t id = t->id;
    mqs__handle_unpin(t);
    return id;
}
