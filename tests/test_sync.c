/*
 * test_sync.c - mutex, condition variable, semaphore, wait group and
 * barrier.  Every case makes its own runtime.  Where a case needs a task
 * to be blocked before it goes on, it polls the task's state (internal.h)
 * after the task has announced what it is about to wait on: assertions
 * rest on counts and orderings, never on how long something took.
 */
#include <stdatomic.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

/* ------------------------------------------------------------------ */
/* Mutex                                                               */
/* ------------------------------------------------------------------ */

#define CNT_TASKS 8
#define CNT_ITERS 20000

struct counter {
    mqs_mutex_t m;
    uint64_t value; /* under m, deliberately not atomic */
    atomic_int inside;
};

static void *count_task(void *arg)
{
    struct counter *c = arg;
    for (int i = 0; i < CNT_ITERS; i++) {
        CHECK_OK(mqs_mutex_lock(&c->m));
        CHECK_EQ(atomic_fetch_add(&c->inside, 1), 0);
        c->value++;
        if (i % 256 == 0) /* hold it across a switch: force waiters */
            mqs_yield();
        atomic_fetch_sub(&c->inside, 1);
        CHECK_OK(mqs_mutex_unlock(&c->m));
    }
    return NULL;
}

TEST(mutex_counter_exact)
{
    mqs_runtime_t *rt = rt_new(2);
    struct counter c = {.value = 0};
    CHECK_OK(mqs_mutex_init(&c.m));
    mqs_task_t *t[CNT_TASKS];
    for (int i = 0; i < CNT_TASKS; i++)
        t[i] = spawn(rt, count_task, &c);
    for (int i = 0; i < CNT_TASKS; i++)
        join(t[i]);
    CHECK_EQ(c.value, (uint64_t)CNT_TASKS * CNT_ITERS);
    CHECK_OK(mqs_mutex_destroy(&c.m));
    CHECK_OK(mqs_runtime_destroy(rt));
}

struct owner_test {
    mqs_mutex_t m;
    atomic_int step;
};

static void *other_locker(void *arg)
{
    struct owner_test *o = arg;
    CHECK_ERR(mqs_mutex_trylock(&o->m), MQS_EBUSY);
    CHECK_ERR(mqs_mutex_unlock(&o->m), MQS_EPERM);
    CHECK_ERR(mqs_mutex_timedlock(&o->m, 0), MQS_ETIMEDOUT);
    CHECK_ERR(mqs_mutex_timedlock(&o->m, 1000000), MQS_ETIMEDOUT);
    return NULL;
}

static void *owner_task(void *arg)
{
    struct owner_test *o = arg;
    CHECK_OK(mqs_mutex_lock(&o->m));
    CHECK_ERR(mqs_mutex_lock(&o->m), MQS_EDEADLK);
    CHECK_ERR(mqs_mutex_timedlock(&o->m, 1000), MQS_EDEADLK);
    CHECK_ERR(mqs_mutex_trylock(&o->m), MQS_EBUSY);
    CHECK_ERR(mqs_mutex_destroy(&o->m), MQS_EBUSY);
    join(spawn(mqs_runtime_self(), other_locker, o));
    CHECK_OK(mqs_mutex_unlock(&o->m));
    CHECK_ERR(mqs_mutex_unlock(&o->m), MQS_EPERM);
    /* The timed-out waiter left nothing behind. */
    CHECK_OK(mqs_mutex_trylock(&o->m));
    CHECK_OK(mqs_mutex_unlock(&o->m));
    CHECK_OK(mqs_mutex_timedlock(&o->m, 1000000));
    CHECK_OK(mqs_mutex_unlock(&o->m));
    CHECK_OK(mqs_mutex_destroy(&o->m));
    return NULL;
}

TEST(mutex_owner_errors_and_timeouts)
{
    struct owner_test o;
    CHECK_OK(mqs_mutex_init(&o.m));
    run_in_task(2, owner_task, &o);
}

/* Priority order: waiters queued one by one (so arrival order is known)
 * on a held mutex, released once; each records when it got the mutex.
 * The controlling task is nice 19, less urgent than every waiter, so on
 * one worker its yields let each new waiter run up to its block. */
#define PW 7
struct prio_test {
    mqs_runtime_t *rt;
    mqs_mutex_t m;
    mqs_sem_t s;
    atomic_int announced[PW];
    int order[PW]; /* under m */
    int n;         /* under m */
};
struct prio_waiter {
    struct prio_test *p;
    int id;
};

static void *mutex_prio_waiter(void *arg)
{
    struct prio_waiter *w = arg;
    atomic_store(&w->p->announced[w->id], 1);
    CHECK_OK(mqs_mutex_lock(&w->p->m));
    w->p->order[w->p->n++] = w->id;
    CHECK_OK(mqs_mutex_unlock(&w->p->m));
    return NULL;
}

/* Spawn order and priorities; `expect` is the order of acquisition. */
static const mqs_class_t prio_cls[PW] = {
    MQS_CLASS_NORMAL, MQS_CLASS_NORMAL, MQS_CLASS_NORMAL, MQS_CLASS_FIFO,
    MQS_CLASS_NORMAL, MQS_CLASS_FIFO, MQS_CLASS_NORMAL};
static const int prio_val[PW] = {10, 18, 0, 10, -10, 50, 0};
static const int prio_expect[PW] = {5, 3, 4, 2, 6, 0, 1};

static void spawn_prio_waiters(struct prio_test *p, struct prio_waiter *w,
                               mqs_task_t **t, mqs_task_fn fn)
{
    for (int i = 0; i < PW; i++) {
        w[i] = (struct prio_waiter){p, i};
        t[i] = spawn_prio(p->rt, prio_cls[i], prio_val[i], fn, &w[i]);
        wait_blocked(t[i], &p->announced[i]);
    }
}

static void *mutex_prio_main(void *arg)
{
    struct prio_test *p = arg;
    struct prio_waiter w[PW];
    mqs_task_t *t[PW];
    CHECK_OK(mqs_mutex_lock(&p->m));
    spawn_prio_waiters(p, w, t, mutex_prio_waiter);
    CHECK_ERR(mqs_mutex_destroy(&p->m), MQS_EBUSY);
    CHECK_OK(mqs_mutex_unlock(&p->m));
    for (int i = 0; i < PW; i++)
        join(t[i]);
    for (int i = 0; i < PW; i++)
        CHECK_EQ(p->order[i], prio_expect[i]);
    return NULL;
}

TEST(mutex_priority_order)
{
    struct prio_test p = {.rt = rt_new(1)};
    CHECK_OK(mqs_mutex_init(&p.m));
    join(spawn_prio(p.rt, MQS_CLASS_NORMAL, 19, mutex_prio_main, &p));
    CHECK_OK(mqs_mutex_destroy(&p.m));
    CHECK_OK(mqs_runtime_destroy(p.rt));
}

/* A waiter that has waited past MQS_MUTEX_STARVE_NS gets the mutex handed
 * to it: right after unlock it is already the owner. */
struct handoff_test {
    mqs_mutex_t m;
    mqs_sem_t go;
    atomic_int announced;
};

static void *handoff_waiter(void *arg)
{
    struct handoff_test *h = arg;
    atomic_store(&h->announced, 1);
    CHECK_OK(mqs_mutex_lock(&h->m));
    CHECK_OK(mqs_sem_wait(&h->go));
    CHECK_OK(mqs_mutex_unlock(&h->m));
    return NULL;
}

static void *handoff_main(void *arg)
{
    struct handoff_test *h = arg;
    CHECK_OK(mqs_mutex_lock(&h->m));
    mqs_task_t *w = spawn(mqs_runtime_self(), handoff_waiter, h);
    wait_blocked(w, &h->announced);
    CHECK_OK(mqs_sleep(2 * MQS_MUTEX_STARVE_NS));
    CHECK_OK(mqs_mutex_unlock(&h->m));
    CHECK_ERR(mqs_mutex_trylock(&h->m), MQS_EBUSY); /* no barging */
    CHECK_ERR(mqs_mutex_unlock(&h->m), MQS_EPERM);  /* not ours now */
    CHECK_OK(mqs_sem_post(&h->go));
    join(w);
    CHECK_OK(mqs_mutex_trylock(&h->m));
    CHECK_OK(mqs_mutex_unlock(&h->m));
    return NULL;
}

TEST(mutex_starved_waiter_gets_handoff)
{
    for (int workers = 1; workers <= 2; workers++) {
        struct handoff_test h = {.announced = 0};
        CHECK_OK(mqs_mutex_init(&h.m));
        CHECK_OK(mqs_sem_init(&h.go, 0));
        run_in_task(workers, handoff_main, &h);
        CHECK_OK(mqs_mutex_destroy(&h.m));
    }
}

/* Robustness: a task that exits holding a mutex releases it "owner
 * died".  On one worker a joined task's stack is the next spawn's, so
 * the tasks after the exited owner land on its address: none of them is
 * taken for the owner. */
struct dead_owner {
    mqs_mutex_t m[3];
    struct mqs_task *dead; /* address of the exited owner (compared only) */
    bool reused;      /* some later task had that address */
};

static void *lock_and_exit(void *arg)
{
    struct dead_owner *d = arg;
    CHECK_OK(mqs_mutex_lock(&d->m[0]));
    return NULL;
}

static void *never_locked(void *arg)
{
    struct dead_owner *d = arg;
    d->reused |= mqs__current() == d->dead;
    CHECK_ERR(mqs_mutex_unlock(&d->m[0]), MQS_EPERM);
    return NULL;
}

static void *lock_owner_dead(void *arg)
{
    struct dead_owner *d = arg;
    d->reused |= mqs__current() == d->dead;
    CHECK_ERR(mqs_mutex_lock(&d->m[0]), MQS_EOWNERDEAD);
    CHECK_ERR(mqs_mutex_lock(&d->m[0]), MQS_EDEADLK); /* ours now */
    CHECK_OK(mqs_mutex_unlock(&d->m[0]));
    CHECK_ERR(mqs_mutex_unlock(&d->m[0]), MQS_EPERM);
    return NULL;
}

static void *lock_normally(void *arg)
{
    struct dead_owner *d = arg;
    CHECK_OK(mqs_mutex_lock(&d->m[0]));
    CHECK_OK(mqs_mutex_unlock(&d->m[0]));
    return NULL;
}

/* Holds three, unlocks the middle one of its list, exits with two. */
static void *lock_three_exit_two(void *arg)
{
    struct dead_owner *d = arg;
    for (int i = 0; i < 3; i++)
        CHECK_OK(mqs_mutex_lock(&d->m[i]));
    CHECK_OK(mqs_mutex_unlock(&d->m[1]));
    return NULL;
}

static void *try_owner_dead(void *arg)
{
    struct dead_owner *d = arg;
    CHECK_ERR(mqs_mutex_trylock(&d->m[0]), MQS_EOWNERDEAD);
    CHECK_OK(mqs_mutex_timedlock(&d->m[1], 0));
    CHECK_ERR(mqs_mutex_timedlock(&d->m[2], 0), MQS_EOWNERDEAD);
    for (int i = 0; i < 3; i++)
        CHECK_OK(mqs_mutex_unlock(&d->m[i]));
    CHECK_OK(mqs_mutex_trylock(&d->m[2])); /* the mark went with it */
    CHECK_OK(mqs_mutex_unlock(&d->m[2]));
    return NULL;
}

static void *dead_owner_main(void *arg)
{
    struct dead_owner *d = arg;
    mqs_runtime_t *rt = mqs_runtime_self();
    mqs_task_t *h = spawn(rt, lock_and_exit, d);
    d->dead = mqs__task_of(h);
    join(h);
    for (int i = 0; i < 4; i++)
        join(spawn(rt, never_locked, d));
    CHECK(d->reused); /* else the case proves nothing */
    join(spawn(rt, lock_owner_dead, d));
    join(spawn(rt, lock_normally, d));
    join(spawn(rt, lock_three_exit_two, d));
    join(spawn(rt, try_owner_dead, d));
    return NULL;
}

TEST(mutex_owner_exit_releases_owner_dead)
{
    struct dead_owner d = {.reused = false};
    for (int i = 0; i < 3; i++)
        CHECK_OK(mqs_mutex_init(&d.m[i]));
    run_in_task(1, dead_owner_main, &d);
    for (int i = 0; i < 3; i++)
        CHECK_OK(mqs_mutex_destroy(&d.m[i]));
}

/* Waiters blocked on the mutex when its owner exits: the first is woken
 * owning it with MQS_EOWNERDEAD, the next gets it from that one as usual.
 * And a condition waiter whose relock finds the owner gone. */
struct dead_wait {
    mqs_mutex_t m;
    mqs_cond_t c;
    mqs_sem_t go;
    atomic_int announced[3];
    int rc[2];
};

static void *owner_waits_then_exits(void *arg)
{
    struct dead_wait *d = arg;
    CHECK_OK(mqs_mutex_lock(&d->m));
    atomic_store(&d->announced[0], 1);
    CHECK_OK(mqs_sem_wait(&d->go));
    return NULL; /* still holding m */
}

static void *dead_waiter1(void *arg)
{
    struct dead_wait *d = arg;
    atomic_store(&d->announced[1], 1);
    d->rc[0] = mqs_mutex_lock(&d->m);
    CHECK_ERR(mqs_mutex_trylock(&d->m), MQS_EBUSY); /* ours */
    CHECK_OK(mqs_mutex_unlock(&d->m));
    return NULL;
}

static void *dead_waiter2(void *arg)
{
    struct dead_wait *d = arg;
    atomic_store(&d->announced[2], 1);
    d->rc[1] = mqs_mutex_lock(&d->m);
    CHECK_OK(mqs_mutex_unlock(&d->m));
    return NULL;
}

static void *cond_waiter(void *arg)
{
    struct dead_wait *d = arg;
    CHECK_OK(mqs_mutex_lock(&d->m));
    atomic_store(&d->announced[0], 1);
    d->rc[0] = mqs_cond_wait(&d->c, &d->m);
    CHECK_OK(mqs_mutex_unlock(&d->m));
    return NULL;
}

static void *signal_and_exit(void *arg)
{
    struct dead_wait *d = arg;
    CHECK_OK(mqs_mutex_lock(&d->m));
    CHECK_OK(mqs_cond_signal(&d->c));
    return NULL; /* still holding m */
}

TEST(mutex_waiter_woken_owner_dead)
{
    for (int workers = 1; workers <= 2; workers++) {
        mqs_runtime_t *rt = rt_new(workers);
        struct dead_wait d = {.rc = {1, 1}};
        CHECK_OK(mqs_mutex_init(&d.m));
        CHECK_OK(mqs_sem_init(&d.go, 0));
        mqs_task_t *o = spawn(rt, owner_waits_then_exits, &d);
        wait_blocked(o, &d.announced[0]);
        mqs_task_t *w1 = spawn(rt, dead_waiter1, &d);
        wait_blocked(w1, &d.announced[1]);
        /* Less urgent, so behind w1 whatever their waits' lengths. */
        mqs_task_t *w2 = spawn_prio(rt, MQS_CLASS_NORMAL, 5, dead_waiter2, &d);
        wait_blocked(w2, &d.announced[2]);
        CHECK_OK(mqs_sem_post(&d.go));
        join(o);
        join(w1);
        join(w2);
        CHECK_EQ(d.rc[0], MQS_EOWNERDEAD);
        CHECK_EQ(d.rc[1], 0);
        CHECK_OK(mqs_mutex_destroy(&d.m));
        CHECK_OK(mqs_runtime_destroy(rt));
    }
}

TEST(cond_wait_relock_owner_dead)
{
    mqs_runtime_t *rt = rt_new(2);
    struct dead_wait d = {.rc = {1, 1}};
    CHECK_OK(mqs_mutex_init(&d.m));
    CHECK_OK(mqs_cond_init(&d.c));
    mqs_task_t *w = spawn(rt, cond_waiter, &d);
    wait_blocked(w, &d.announced[0]);
    join(spawn(rt, signal_and_exit, &d));
    join(w);
    CHECK_EQ(d.rc[0], MQS_EOWNERDEAD);
    CHECK_OK(mqs_cond_destroy(&d.c));
    CHECK_OK(mqs_mutex_destroy(&d.m));
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Condition variable                                                  */
/* ------------------------------------------------------------------ */

#define PC_PRODUCERS 3
#define PC_CONSUMERS 3
#define PC_ITEMS 3000
#define PC_CAP 4

struct pc {
    mqs_mutex_t m;
    mqs_cond_t not_empty, not_full;
    uint64_t buf[PC_CAP]; /* all below under m */
    int head, len, producers_left;
    uint64_t consumed, sum;
};

static void *pc_producer(void *arg)
{
    struct pc *p = arg;
    for (uint64_t i = 1; i <= PC_ITEMS; i++) {
        CHECK_OK(mqs_mutex_lock(&p->m));
        while (p->len == PC_CAP)
            CHECK_OK(mqs_cond_wait(&p->not_full, &p->m));
        p->buf[(p->head + p->len++) % PC_CAP] = i;
        CHECK_OK(mqs_cond_signal(&p->not_empty));
        CHECK_OK(mqs_mutex_unlock(&p->m));
    }
    CHECK_OK(mqs_mutex_lock(&p->m));
    if (--p->producers_left == 0)
        CHECK_OK(mqs_cond_broadcast(&p->not_empty));
    CHECK_OK(mqs_mutex_unlock(&p->m));
    return NULL;
}

static void *pc_consumer(void *arg)
{
    struct pc *p = arg;
    CHECK_OK(mqs_mutex_lock(&p->m));
    for (;;) {
        while (p->len == 0 && p->producers_left > 0)
            CHECK_OK(mqs_cond_wait(&p->not_empty, &p->m));
        if (p->len == 0)
            break;
        p->sum += p->buf[p->head];
        p->head = (p->head + 1) % PC_CAP;
        p->len--;
        p->consumed++;
        CHECK_OK(mqs_cond_signal(&p->not_full));
    }
    CHECK_OK(mqs_mutex_unlock(&p->m));
    return NULL;
}

TEST(cond_producer_consumer)
{
    mqs_runtime_t *rt = rt_new(2);
    struct pc p = {.producers_left = PC_PRODUCERS};
    CHECK_OK(mqs_mutex_init(&p.m));
    CHECK_OK(mqs_cond_init(&p.not_empty));
    CHECK_OK(mqs_cond_init(&p.not_full));
    mqs_task_t *t[PC_PRODUCERS + PC_CONSUMERS];
    for (int i = 0; i < PC_CONSUMERS; i++)
        t[i] = spawn(rt, pc_consumer, &p);
    for (int i = 0; i < PC_PRODUCERS; i++)
        t[PC_CONSUMERS + i] = spawn(rt, pc_producer, &p);
    for (int i = 0; i < PC_PRODUCERS + PC_CONSUMERS; i++)
        join(t[i]);
    CHECK_EQ(p.consumed, (uint64_t)PC_PRODUCERS * PC_ITEMS);
    CHECK_EQ(p.sum, (uint64_t)PC_PRODUCERS * PC_ITEMS * (PC_ITEMS + 1) / 2);
    CHECK_EQ(p.len, 0);
    CHECK_OK(mqs_cond_destroy(&p.not_empty));
    CHECK_OK(mqs_cond_destroy(&p.not_full));
    CHECK_OK(mqs_mutex_destroy(&p.m));
    CHECK_OK(mqs_runtime_destroy(rt));
}

struct cv {
    mqs_mutex_t m;
    mqs_cond_t c;
    int waiting, tokens, returns, done; /* under m */
};

static void *cond_timed_task(void *arg)
{
    struct cv *v = arg;
    CHECK_OK(mqs_mutex_lock(&v->m));
    CHECK_ERR(mqs_cond_timedwait(&v->c, &v->m, 1000000), MQS_ETIMEDOUT);
    CHECK_OK(mqs_mutex_unlock(&v->m)); /* re-held: only the owner can */
    CHECK_OK(mqs_mutex_lock(&v->m));
    CHECK_ERR(mqs_cond_timedwait(&v->c, &v->m, 0), MQS_ETIMEDOUT);
    CHECK_OK(mqs_mutex_unlock(&v->m));
    /* Waiting needs the mutex held by the caller. */
    CHECK_ERR(mqs_cond_wait(&v->c, &v->m), MQS_EPERM);
    CHECK_OK(mqs_cond_destroy(&v->c)); /* the timed-out waiter is gone */
    return NULL;
}

TEST(cond_timedwait_times_out_with_mutex_held)
{
    struct cv v = {.waiting = 0};
    CHECK_OK(mqs_mutex_init(&v.m));
    CHECK_OK(mqs_cond_init(&v.c));
    run_in_task(2, cond_timed_task, &v);
    CHECK_OK(mqs_mutex_destroy(&v.m));
}

#define CV_WAITERS 10

static void *cond_token_waiter(void *arg)
{
    struct cv *v = arg;
    CHECK_OK(mqs_mutex_lock(&v->m));
    v->waiting++;
    while (v->tokens == 0) {
        CHECK_OK(mqs_cond_wait(&v->c, &v->m));
        v->returns++;
    }
    v->tokens--;
    v->done++;
    CHECK_OK(mqs_mutex_unlock(&v->m));
    return NULL;
}

static void *cond_signal_main(void *arg)
{
    struct cv *v = arg;
    mqs_task_t *t[CV_WAITERS];
    for (int i = 0; i < CV_WAITERS; i++)
        t[i] = spawn(mqs_runtime_self(), cond_token_waiter, v);
    for (;;) { /* every waiter has entered cond_wait */
        CHECK_OK(mqs_mutex_lock(&v->m));
        int w = v->waiting;
        CHECK_OK(mqs_mutex_unlock(&v->m));
        if (w == CV_WAITERS)
            break;
        pause_a_bit();
    }
    CHECK_ERR(mqs_cond_destroy(&v->c), MQS_EBUSY);
    for (int i = 0; i < CV_WAITERS; i++) {
        CHECK_OK(mqs_mutex_lock(&v->m));
        v->tokens++;
        CHECK_OK(mqs_cond_signal(&v->c));
        CHECK_OK(mqs_mutex_unlock(&v->m));
    }
    for (int i = 0; i < CV_WAITERS; i++)
        join(t[i]);
    /* One signal, one wake-up: no waiter woke for nothing. */
    CHECK_EQ(v->done, CV_WAITERS);
    CHECK_EQ(v->returns, CV_WAITERS);
    return NULL;
}

TEST(cond_signal_wakes_one_each)
{
    struct cv v = {.waiting = 0};
    CHECK_OK(mqs_mutex_init(&v.m));
    CHECK_OK(mqs_cond_init(&v.c));
    run_in_task(2, cond_signal_main, &v);
    CHECK_OK(mqs_cond_destroy(&v.c));
    CHECK_OK(mqs_mutex_destroy(&v.m));
}

static void *cond_bcast_waiter(void *arg)
{
    struct cv *v = arg;
    CHECK_OK(mqs_mutex_lock(&v->m));
    v->waiting++;
    while (!v->tokens)
        CHECK_OK(mqs_cond_wait(&v->c, &v->m));
    v->done++;
    CHECK_OK(mqs_mutex_unlock(&v->m));
    return NULL;
}

static void *cond_bcast_main(void *arg)
{
    struct cv *v = arg;
    mqs_task_t *t[CV_WAITERS];
    for (int i = 0; i < CV_WAITERS; i++)
        t[i] = spawn(mqs_runtime_self(), cond_bcast_waiter, v);
    for (;;) {
        CHECK_OK(mqs_mutex_lock(&v->m));
        if (v->waiting == CV_WAITERS)
            break; /* keep the mutex: nobody can have seen tokens */
        CHECK_OK(mqs_mutex_unlock(&v->m));
        pause_a_bit();
    }
    v->tokens = 1;
    CHECK_OK(mqs_cond_broadcast(&v->c));
    CHECK_OK(mqs_mutex_unlock(&v->m));
    for (int i = 0; i < CV_WAITERS; i++)
        join(t[i]);
    CHECK_EQ(v->done, CV_WAITERS);
    return NULL;
}

TEST(cond_broadcast_wakes_all)
{
    struct cv v = {.waiting = 0};
    CHECK_OK(mqs_mutex_init(&v.m));
    CHECK_OK(mqs_cond_init(&v.c));
    run_in_task(2, cond_bcast_main, &v);
    CHECK_OK(mqs_cond_destroy(&v.c));
    CHECK_OK(mqs_mutex_destroy(&v.m));
}

/* ------------------------------------------------------------------ */
/* Semaphore                                                           */
/* ------------------------------------------------------------------ */

static void *sem_basic_task(void *arg)
{
    mqs_sem_t *s = arg;
    CHECK_OK(mqs_sem_wait(s));
    CHECK_OK(mqs_sem_timedwait(s, 1000000));
    CHECK_ERR(mqs_sem_timedwait(s, 1000000), MQS_ETIMEDOUT);
    CHECK_ERR(mqs_sem_timedwait(s, 0), MQS_ETIMEDOUT);
    CHECK_ERR(mqs_sem_trywait(s), MQS_EAGAIN);
    CHECK_OK(mqs_sem_destroy(s)); /* the timed-out waiter is gone */
    return NULL;
}

TEST(sem_counts_trywait_timedwait)
{
    mqs_sem_t s;
    CHECK_OK(mqs_sem_init(&s, 3));
    for (int i = 0; i < 3; i++) /* from a thread that is not a task */
        CHECK_OK(mqs_sem_trywait(&s));
    CHECK_ERR(mqs_sem_trywait(&s), MQS_EAGAIN);
    CHECK_OK(mqs_sem_post(&s));
    CHECK_OK(mqs_sem_post(&s));
    run_in_task(2, sem_basic_task, &s);
}

#define SEM_TASKS 6
#define SEM_UNITS 2000

struct sem_test {
    mqs_sem_t s;
    atomic_int taken;
};

static void *sem_taker(void *arg)
{
    struct sem_test *st = arg;
    for (int i = 0; i < SEM_UNITS; i++) {
        CHECK_OK(mqs_sem_wait(&st->s));
        atomic_fetch_add(&st->taken, 1);
    }
    return NULL;
}

TEST(sem_posts_from_outside_each_unit_taken_once)
{
    mqs_runtime_t *rt = rt_new(2);
    struct sem_test st = {.taken = 0};
    CHECK_OK(mqs_sem_init(&st.s, 0));
    mqs_task_t *t[SEM_TASKS];
    for (int i = 0; i < SEM_TASKS; i++)
        t[i] = spawn(rt, sem_taker, &st);
    for (int i = 0; i < SEM_TASKS * SEM_UNITS; i++)
        CHECK_OK(mqs_sem_post(&st.s));
    for (int i = 0; i < SEM_TASKS; i++)
        join(t[i]);
    CHECK_EQ(atomic_load(&st.taken), SEM_TASKS * SEM_UNITS);
    CHECK_ERR(mqs_sem_trywait(&st.s), MQS_EAGAIN);
    CHECK_OK(mqs_sem_destroy(&st.s));
    CHECK_OK(mqs_runtime_destroy(rt));
}

static void *sem_prio_waiter(void *arg)
{
    struct prio_waiter *w = arg;
    atomic_store(&w->p->announced[w->id], 1);
    CHECK_OK(mqs_sem_wait(&w->p->s));
    CHECK_OK(mqs_mutex_lock(&w->p->m));
    w->p->order[w->p->n++] = w->id;
    CHECK_OK(mqs_mutex_unlock(&w->p->m));
    return NULL;
}

static void *sem_prio_main(void *arg)
{
    struct prio_test *p = arg;
    struct prio_waiter w[PW];
    mqs_task_t *t[PW];
    spawn_prio_waiters(p, w, t, sem_prio_waiter);
    CHECK_ERR(mqs_sem_destroy(&p->s), MQS_EBUSY);
    for (int i = 0; i < PW; i++) {
        CHECK_OK(mqs_sem_post(&p->s));
        for (int n = 0; n <= i;) { /* until the unit's taker records */
            pause_a_bit();
            CHECK_OK(mqs_mutex_lock(&p->m));
            n = p->n;
            CHECK_OK(mqs_mutex_unlock(&p->m));
        }
        CHECK_EQ(p->order[i], prio_expect[i]);
    }
    for (int i = 0; i < PW; i++)
        join(t[i]);
    CHECK_EQ(p->n, PW);
    return NULL;
}

TEST(sem_priority_order)
{
    struct prio_test p = {.rt = rt_new(1)};
    CHECK_OK(mqs_mutex_init(&p.m));
    CHECK_OK(mqs_sem_init(&p.s, 0));
    join(spawn_prio(p.rt, MQS_CLASS_NORMAL, 19, sem_prio_main, &p));
    CHECK_OK(mqs_sem_destroy(&p.s));
    CHECK_OK(mqs_runtime_destroy(p.rt));
}

/* ------------------------------------------------------------------ */
/* Wait group                                                          */
/* ------------------------------------------------------------------ */

#define WG_TASKS 100

struct wg_test {
    mqs_waitgroup_t wg;
    atomic_int finished, waiters_done;
};

static void *wg_worker(void *arg)
{
    struct wg_test *w = arg;
    mqs_yield();
    atomic_fetch_add(&w->finished, 1);
    CHECK_OK(mqs_waitgroup_done(&w->wg));
    return NULL;
}

static void *wg_waiter(void *arg)
{
    struct wg_test *w = arg;
    CHECK_OK(mqs_waitgroup_wait(&w->wg));
    CHECK_EQ(atomic_load(&w->finished), WG_TASKS);
    atomic_fetch_add(&w->waiters_done, 1);
    return NULL;
}

TEST(waitgroup_waits_for_all)
{
    mqs_runtime_t *rt = rt_new(2);
    struct wg_test w = {.finished = 0};
    CHECK_OK(mqs_waitgroup_init(&w.wg));
    CHECK_OK(mqs_waitgroup_add(&w.wg, WG_TASKS));
    mqs_task_t *waiters[4];
    for (int i = 0; i < 4; i++)
        waiters[i] = spawn(rt, wg_waiter, &w);
    for (int i = 0; i < WG_TASKS; i++) {
        mqs_task_attr_t a;
        mqs_task_attr_init(&a);
        a.detached = true;
        CHECK_OK(mqs_spawn(rt, NULL, &a, wg_worker, &w));
    }
    for (int i = 0; i < 4; i++)
        join(waiters[i]);
    CHECK_EQ(atomic_load(&w.waiters_done), 4);
    CHECK_OK(mqs_waitgroup_destroy(&w.wg));
    CHECK_OK(mqs_runtime_destroy(rt));
}

static void *wg_errors_task(void *arg)
{
    mqs_waitgroup_t *wg = arg;
    CHECK_OK(mqs_waitgroup_wait(wg)); /* zero: at once */
    CHECK_ERR(mqs_waitgroup_done(wg), MQS_EINVAL);
    CHECK_ERR(mqs_waitgroup_add(wg, -5), MQS_EINVAL);
    CHECK_OK(mqs_waitgroup_wait(wg)); /* still zero */
    CHECK_OK(mqs_waitgroup_add(wg, 2));
    CHECK_ERR(mqs_waitgroup_add(wg, -3), MQS_EINVAL);
    CHECK_ERR(mqs_waitgroup_add(wg, INT64_MAX), MQS_EINVAL);
    CHECK_OK(mqs_waitgroup_add(wg, -2)); /* unchanged by the errors */
    CHECK_OK(mqs_waitgroup_wait(wg));
    CHECK_OK(mqs_waitgroup_add(wg, 0));
    return NULL;
}

TEST(waitgroup_negative_is_einval)
{
    mqs_waitgroup_t wg;
    CHECK_OK(mqs_waitgroup_init(&wg));
    run_in_task(2, wg_errors_task, &wg);
    CHECK_OK(mqs_waitgroup_destroy(&wg));
}

/* ------------------------------------------------------------------ */
/* Barrier                                                             */
/* ------------------------------------------------------------------ */

#define BAR_TASKS 5
#define BAR_GENS 200

struct bar_test {
    mqs_barrier_t b;
    atomic_int arrived[BAR_GENS];
    atomic_int serial[BAR_GENS];
};

static void *bar_task(void *arg)
{
    struct bar_test *bt = arg;
    for (int g = 0; g < BAR_GENS; g++) {
        atomic_fetch_add(&bt->arrived[g], 1);
        int rc = mqs_barrier_wait(&bt->b);
        CHECK(rc == 0 || rc == 1);
        /* Nobody passes before everyone arrived. */
        CHECK_EQ(atomic_load(&bt->arrived[g]), BAR_TASKS);
        if (rc == 1)
            atomic_fetch_add(&bt->serial[g], 1);
        if (g % 7 == 0)
            mqs_yield();
    }
    return NULL;
}

TEST(barrier_generations)
{
    mqs_runtime_t *rt = rt_new(2);
    static struct bar_test bt;
    memset(&bt, 0, sizeof bt);
    CHECK_OK(mqs_barrier_init(&bt.b, BAR_TASKS));
    mqs_task_t *t[BAR_TASKS];
    for (int i = 0; i < BAR_TASKS; i++)
        t[i] = spawn(rt, bar_task, &bt);
    for (int i = 0; i < BAR_TASKS; i++)
        join(t[i]);
    for (int g = 0; g < BAR_GENS; g++)
        CHECK_EQ(atomic_load(&bt.serial[g]), 1);
    CHECK_EQ(bt.b.generation, BAR_GENS);
    CHECK_OK(mqs_barrier_destroy(&bt.b));
    CHECK_OK(mqs_runtime_destroy(rt));
}

struct bar_busy {
    mqs_barrier_t b;
    atomic_int announced;
};

static void *bar_one(void *arg)
{
    struct bar_busy *bb = arg;
    atomic_store(&bb->announced, 1);
    CHECK_EQ(mqs_barrier_wait(&bb->b), 0);
    return NULL;
}

static void *bar_busy_main(void *arg)
{
    struct bar_busy *bb = arg;
    mqs_barrier_t one;
    CHECK_OK(mqs_barrier_init(&one, 1));
    CHECK_EQ(mqs_barrier_wait(&one), 1);
    CHECK_EQ(mqs_barrier_wait(&one), 1);
    CHECK_OK(mqs_barrier_destroy(&one));
    mqs_task_t *t = spawn(mqs_runtime_self(), bar_one, bb);
    wait_blocked(t, &bb->announced);
    CHECK_ERR(mqs_barrier_destroy(&bb->b), MQS_EBUSY);
    CHECK_EQ(mqs_barrier_wait(&bb->b), 1);
    join(t);
    CHECK_OK(mqs_barrier_destroy(&bb->b));
    return NULL;
}

TEST(barrier_count_one_and_destroy_busy)
{
    struct bar_busy bb = {.announced = 0};
    CHECK_ERR(mqs_barrier_init(&bb.b, 0), MQS_EINVAL);
    CHECK_OK(mqs_barrier_init(&bb.b, 2));
    run_in_task(2, bar_busy_main, &bb);
}

/* ------------------------------------------------------------------ */
/* Bad input and calls from outside a task                             */
/* ------------------------------------------------------------------ */

TEST(sync_null_arguments)
{
    mqs_mutex_t m;
    CHECK_OK(mqs_mutex_init(&m));
    CHECK_ERR(mqs_mutex_init(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_mutex_destroy(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_mutex_lock(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_mutex_trylock(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_mutex_timedlock(NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_mutex_unlock(NULL), MQS_EINVAL);
    mqs_cond_t c;
    CHECK_OK(mqs_cond_init(&c));
    CHECK_ERR(mqs_cond_init(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_cond_destroy(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_cond_wait(NULL, &m), MQS_EINVAL);
    CHECK_ERR(mqs_cond_wait(&c, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_cond_timedwait(NULL, &m, 1), MQS_EINVAL);
    CHECK_ERR(mqs_cond_timedwait(&c, NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_cond_signal(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_cond_broadcast(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_sem_init(NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_sem_destroy(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_sem_wait(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_sem_trywait(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_sem_timedwait(NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_sem_post(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_waitgroup_init(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_waitgroup_destroy(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_waitgroup_add(NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_waitgroup_done(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_waitgroup_wait(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_barrier_init(NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_barrier_destroy(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_barrier_wait(NULL), MQS_EINVAL);
    CHECK_OK(mqs_cond_destroy(&c));
    CHECK_OK(mqs_mutex_destroy(&m));
}

TEST(sync_outside_a_task)
{
    mqs_runtime_t *rt = rt_new(2);
    mqs_mutex_t m;
    mqs_cond_t c;
    mqs_sem_t s;
    mqs_waitgroup_t wg;
    mqs_barrier_t b;
    CHECK_OK(mqs_mutex_init(&m));
    CHECK_OK(mqs_cond_init(&c));
    CHECK_OK(mqs_sem_init(&s, 1));
    CHECK_OK(mqs_waitgroup_init(&wg));
    CHECK_OK(mqs_barrier_init(&b, 2));
    /* Blocking calls, and the mutex (it needs an owner task). */
    CHECK_ERR(mqs_mutex_lock(&m), MQS_EPERM);
    CHECK_ERR(mqs_mutex_trylock(&m), MQS_EPERM);
    CHECK_ERR(mqs_mutex_timedlock(&m, 1), MQS_EPERM);
    CHECK_ERR(mqs_mutex_unlock(&m), MQS_EPERM);
    CHECK_ERR(mqs_cond_wait(&c, &m), MQS_EPERM);
    CHECK_ERR(mqs_cond_timedwait(&c, &m, 1), MQS_EPERM);
    CHECK_ERR(mqs_sem_wait(&s), MQS_EPERM);
    CHECK_ERR(mqs_sem_timedwait(&s, 1), MQS_EPERM);
    CHECK_ERR(mqs_waitgroup_wait(&wg), MQS_EPERM);
    CHECK_ERR(mqs_barrier_wait(&b), MQS_EPERM);
    /* Nothing changed: the unit is still there, nobody arrived. */
    CHECK_OK(mqs_sem_trywait(&s));
    CHECK_OK(mqs_barrier_destroy(&b));
    /* Non-blocking calls work from any thread. */
    CHECK_OK(mqs_sem_post(&s));
    CHECK_OK(mqs_cond_signal(&c));
    CHECK_OK(mqs_cond_broadcast(&c));
    CHECK_OK(mqs_waitgroup_add(&wg, 1));
    CHECK_OK(mqs_waitgroup_done(&wg));
    CHECK_OK(mqs_mutex_destroy(&m));
    CHECK_OK(mqs_cond_destroy(&c));
    CHECK_OK(mqs_sem_destroy(&s));
    CHECK_OK(mqs_waitgroup_destroy(&wg));
    CHECK_OK(mqs_runtime_destroy(rt));
}
