/*
 * test_placement.c - the core's default wake placement
 * (mqs_select_default), the rule of issue 2: an idle allowed worker
 * first (the task's last worker if it is idle), else the waker's worker
 * for a synchronous wake-up (MQS_ENQ_SYNC: pipe and channel partners)
 * or a normal task's wake-up by a task (MQS_ENQ_TASK), else the task's
 * last worker.  Driven on the policy harness, where no worker is idle
 * until a case marks one, and on a runtime.
 */
#include "policy_harness.h"
#include "helpers.h"

static int place(struct harness *h, struct mqs_sched_entity *se, int waker,
                 int flags)
{
    return mqs_select_default(h->rt, se, waker, MQS_ENQ_WAKEUP | flags);
}

static void mark_idle(struct harness *h, int w)
{
    atomic_fetch_or(&h->rt->idle_bits[0], UINT64_C(1) << w);
}

TEST(sync_wake_stays_on_the_wakers_worker)
{
    struct harness h;
    h_init(&h, "mq", 3);
    struct mqs_sched_entity *se = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    se->last_worker = 2;
    CHECK_EQ(place(&h, se, 0, MQS_ENQ_SYNC), 0);
    CHECK_EQ(place(&h, se, 1, MQS_ENQ_SYNC), 1);
}

TEST(plain_wake_goes_back_to_the_last_worker)
{
    struct harness h;
    h_init(&h, "mq", 3);
    struct mqs_sched_entity *se = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    se->last_worker = 2;
    CHECK_EQ(place(&h, se, 0, 0), 2);
}

/* A wake-up by a task (a post, not a sync hand-off) also goes to the
 * waker's worker when none is idle; a realtime task's keeps its last
 * worker, where it stops a normal task at once. */
TEST(task_wake_goes_to_the_wakers_worker)
{
    struct harness h;
    h_init(&h, "mq", 3);
    struct mqs_sched_entity *se = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    se->last_worker = 2;
    CHECK_EQ(place(&h, se, 0, MQS_ENQ_TASK), 0);
    CHECK_EQ(place(&h, se, 1, MQS_ENQ_TASK), 1);
    CHECK_EQ(place(&h, se, -1, MQS_ENQ_TASK), 2); /* no waker worker */
    mark_idle(&h, 1);
    CHECK_EQ(place(&h, se, 0, MQS_ENQ_TASK), 1); /* an idle one first */
    struct mqs_sched_entity *rt = h_task(&h, 1, MQS_CLASS_RR, 10);
    rt->last_worker = 2;
    CHECK_EQ(place(&h, rt, 0, MQS_ENQ_TASK), 2);
    h_destroy(&h);
}

TEST(an_idle_allowed_worker_comes_first)
{
    struct harness h;
    h_init(&h, "mq", 3);
    struct mqs_sched_entity *se = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    se->last_worker = 2;
    mark_idle(&h, 1);
    CHECK_EQ(place(&h, se, 0, MQS_ENQ_SYNC), 1);
    /* claimed: the mark is gone, so the next wake-up is sync again */
    CHECK_EQ(place(&h, se, 0, MQS_ENQ_SYNC), 0);
    mark_idle(&h, 1);
    mark_idle(&h, 2);
    CHECK_EQ(place(&h, se, 0, MQS_ENQ_SYNC), 2); /* its last one first */
}

/* The idle search reads the idle map a word at a time under the
 * affinity mask: an idle worker outside the mask is never chosen, one
 * in a later word is found, and with none idle and allowed the other
 * rules apply. */
TEST(idle_search_spans_words_and_honours_affinity)
{
    struct harness h;
    h_init(&h, "mq", 130);
    struct mqs_sched_entity *se = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    se->any_worker = false;
    mqs_mask_zero(&se->affinity);
    mqs_mask_set(&se->affinity, 70);
    mqs_mask_set(&se->affinity, 129);
    se->last_worker = 70;
    atomic_fetch_or(&h.rt->idle_bits[0], UINT64_C(1) << 5);
    atomic_fetch_or(&h.rt->idle_bits[2], UINT64_C(1) << 1); /* worker 129 */
    CHECK_EQ(place(&h, se, 0, 0), 129);
    CHECK_EQ(atomic_load(&h.rt->idle_bits[2]), 0u); /* claimed */
    CHECK_EQ(place(&h, se, 0, 0), 70); /* only worker 5 idles: last one */
    CHECK_EQ(atomic_load(&h.rt->idle_bits[0]), UINT64_C(1) << 5);
    h_destroy(&h);
}

TEST(sync_wake_respects_affinity)
{
    struct harness h;
    h_init(&h, "mq", 3);
    struct mqs_sched_entity *se = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    h_pin(se, 2);
    se->last_worker = 2;
    CHECK_EQ(place(&h, se, 0, MQS_ENQ_SYNC), 2);
}

/* From outside the runtime (no waker), consecutive new tasks take turns
 * while the queues are within one task of each other, so that a batch
 * of spawns splits by spawn order: a worker's tasks then cover the stack
 * tops' staggered cache offsets evenly (place.c, two_choices).  A queue
 * shorter by two or more still wins. */
TEST(outside_placements_take_turns)
{
    struct harness h;
    h_init(&h, "mq", 2);
    int last = -1, on[2] = {0, 0};
    for (int k = 0; k < 32; k++) {
        struct mqs_sched_entity *se = h_task(&h, k, MQS_CLASS_NORMAL, 0);
        int w = mqs_select_default(h.rt, se, -1, MQS_ENQ_NEW);
        CHECK(w == 0 || w == 1);
        if (k > 0)
            CHECK(w != last);
        last = w;
        on[w]++;
        h_enqueue(&h, w, se, MQS_ENQ_NEW);
    }
    CHECK_EQ(on[0], 16);
    CHECK_EQ(on[1], 16);
    /* One more on worker 0 (17 against 16): still turns. */
    struct mqs_sched_entity *extra = h_task(&h, 32, MQS_CLASS_NORMAL, 0);
    h_pin(extra, 0);
    h_enqueue(&h, 0, extra, MQS_ENQ_NEW);
    struct mqs_sched_entity *se = h_task(&h, 33, MQS_CLASS_NORMAL, 0);
    int first = mqs_select_default(h.rt, se, -1, MQS_ENQ_NEW);
    CHECK(mqs_select_default(h.rt, se, -1, MQS_ENQ_NEW) != first);
    /* Two more (18 against 16): the shorter queue, whoever's turn. */
    extra = h_task(&h, 34, MQS_CLASS_NORMAL, 0);
    h_pin(extra, 0);
    h_enqueue(&h, 0, extra, MQS_ENQ_NEW);
    CHECK_EQ(mqs_select_default(h.rt, se, -1, MQS_ENQ_NEW), 1);
    CHECK_EQ(mqs_select_default(h.rt, se, -1, MQS_ENQ_NEW), 1);
    h_destroy(&h);
}

/* ------------------------------------------------------------------ */
/* A channel partner is woken synchronously (on a real runtime)        */
/* ------------------------------------------------------------------ */

/* A task that keeps worker 1 busy (no scheduling point; the runtimes of
 * these cases do not preempt) until released,
 * or 2 s: a task queued behind it fails the case, not hangs it. */
struct busy {
    atomic_int spinning, release;
};

static void *busy_spinner(void *arg)
{
    struct busy *b = arg;
    atomic_store(&b->spinning, 1);
    uint64_t t0 = mqs_now_ns();
    while (!atomic_load(&b->release) && mqs_now_ns() - t0 < 2000000000ull)
        mqs__cpu_relax();
    return NULL;
}

static mqs_task_t *busy_start(mqs_runtime_t *rt, struct busy *b)
{
    mqs_task_t *t = spawn_on(rt, 1, busy_spinner, b);
    while (!atomic_load(&b->spinning))
        sched_yield();
    return t;
}

/* The calling task (pinned to worker 1) may run on both workers from its
 * next enqueue. */
static void allow_both_workers(void)
{
    mqs_mask_t all;
    mqs_mask_zero(&all);
    mqs_mask_set(&all, 0);
    mqs_mask_set(&all, 1);
    CHECK_OK(mqs_task_set_affinity(mqs_self(), &all));
}

struct partner {
    mqs_chan_t *ch;
    mqs_sem_t sem;
    atomic_int ready;
    struct busy b;
    int woke_on;
    int ran_by_yields; /* the receiver ran within the sender's yields */
};

static void *receiver(void *arg)
{
    struct partner *p = arg;
    allow_both_workers();
    atomic_store(&p->ready, 1);
    int v;
    CHECK_OK(mqs_chan_recv(p->ch, &v));
    p->woke_on = mqs_worker_self();
    atomic_store(&p->b.release, 1);
    return NULL;
}

static void *sender(void *arg)
{
    struct partner *p = arg;
    int v = 7;
    CHECK_OK(mqs_chan_send(p->ch, &v));
    /* A sync wake-up is a bet that the waker yields the worker soon:
     * it does, and the receiver must run at once, here.  Without it the
     * receiver sits behind the spinner until a balancer moves it (ms). */
    for (int i = 0; i < 100 && !atomic_load(&p->b.release); i++)
        mqs_yield();
    p->ran_by_yields = atomic_load(&p->b.release);
    atomic_store(&p->b.release, 1);
    return NULL;
}

/* The waiter blocks on worker 1 (allowed both), worker 1 gets busy,
 * and the waker runs on worker 0: the waiter must run there within the
 * waker's yields. */
static void woken_onto_the_wakers_worker(struct partner *p,
                                         mqs_task_fn waiter,
                                         mqs_task_fn waker)
{
    mqs_runtime_t *rt = rt_new_coop(2);
    p->woke_on = -1;
    mqs_task_t *r = spawn_on(rt, 1, waiter, p);
    wait_blocked(r, &p->ready);
    mqs_task_t *s1 = busy_start(rt, &p->b);
    mqs_task_t *s0 = spawn_on(rt, 0, waker, p);
    CHECK_OK(mqs_join(s0, NULL));
    CHECK_OK(mqs_join(r, NULL));
    CHECK_OK(mqs_join(s1, NULL));
    CHECK_EQ(p->ran_by_yields, 1);
    CHECK_EQ(p->woke_on, 0);
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(channel_partner_is_woken_onto_the_senders_worker)
{
    struct partner p = {0};
    CHECK_OK(mqs_chan_create(&p.ch, sizeof(int), 0));
    /* last worker 1 was busy and 0 the sender's: a sync wake-up */
    woken_onto_the_wakers_worker(&p, receiver, sender);
    mqs_chan_destroy(p.ch);
}

/* A semaphore post is no sync hand-off (its poster usually goes on),
 * but the waiter it wakes still comes to the poster's worker when its
 * last one is busy: the core marks a wake-up by a task MQS_ENQ_TASK. */
static void *sem_waiter(void *arg)
{
    struct partner *p = arg;
    allow_both_workers();
    atomic_store(&p->ready, 1);
    CHECK_OK(mqs_sem_wait(&p->sem));
    p->woke_on = mqs_worker_self();
    atomic_store(&p->b.release, 1);
    return NULL;
}

static void *sem_poster(void *arg)
{
    struct partner *p = arg;
    CHECK_OK(mqs_sem_post(&p->sem));
    for (int i = 0; i < 100 && !atomic_load(&p->b.release); i++)
        mqs_yield();
    p->ran_by_yields = atomic_load(&p->b.release);
    atomic_store(&p->b.release, 1);
    return NULL;
}

TEST(a_posted_waiter_comes_to_the_posters_worker)
{
    struct partner p = {0};
    CHECK_OK(mqs_sem_init(&p.sem, 0));
    woken_onto_the_wakers_worker(&p, sem_waiter, sem_poster);
    CHECK_OK(mqs_sem_destroy(&p.sem));
}

/* ------------------------------------------------------------------ */
/* A condition wait wakes its mutex's waiter synchronously             */
/* ------------------------------------------------------------------ */

struct condpair {
    mqs_mutex_t m;
    mqs_cond_t c;
    atomic_int held, ready, go, got;
    struct busy b;
    int woke_on;
    int ran_by_yields; /* the mutex waiter ran within the yielder's yields */
};

/* Worker 0: holds the mutex (and the worker: no scheduling point, so
 * the yielder queued behind it starts with its slice whole) until the
 * waiter is blocked on it, then waits on the condition, which releases
 * the mutex to the waiter. */
static void *cond_holder(void *arg)
{
    struct condpair *p = arg;
    CHECK_OK(mqs_mutex_lock(&p->m));
    atomic_store(&p->held, 1);
    while (!atomic_load(&p->go))
        mqs__cpu_relax();
    int rc = mqs_cond_timedwait(&p->c, &p->m, 2000000000ull);
    CHECK(rc == 0 || rc == MQS_ETIMEDOUT);
    CHECK_OK(mqs_mutex_unlock(&p->m));
    return NULL;
}

/* Worker 1 at first, allowed both: blocks on the held mutex. */
static void *mutex_waiter(void *arg)
{
    struct condpair *p = arg;
    allow_both_workers();
    atomic_store(&p->ready, 1);
    CHECK_OK(mqs_mutex_lock(&p->m));
    p->woke_on = mqs_worker_self();
    atomic_store(&p->got, 1);
    CHECK_OK(mqs_cond_signal(&p->c));
    CHECK_OK(mqs_mutex_unlock(&p->m));
    return NULL;
}

/* Worker 0 behind the holder: runs once the holder waits, and yields
 * a while. */
static void *cond_yielder(void *arg)
{
    struct condpair *p = arg;
    for (int i = 0; i < 100 && !atomic_load(&p->got); i++)
        mqs_yield();
    p->ran_by_yields = atomic_load(&p->got);
    atomic_store(&p->b.release, 1);
    return NULL;
}

TEST(cond_wait_hands_its_mutex_to_a_waiter_on_this_worker)
{
    mqs_runtime_t *rt = rt_new_coop(2);
    struct condpair p = {.woke_on = -1};
    CHECK_OK(mqs_mutex_init(&p.m));
    CHECK_OK(mqs_cond_init(&p.c));
    mqs_task_t *h = spawn_on(rt, 0, cond_holder, &p);
    while (!atomic_load(&p.held))
        sched_yield();
    mqs_task_t *w = spawn_on(rt, 1, mutex_waiter, &p);
    wait_blocked(w, &p.ready);
    mqs_task_t *s = busy_start(rt, &p.b);
    mqs_task_t *y = spawn_on(rt, 0, cond_yielder, &p);
    while (atomic_load_explicit(&mqs__task_of(y)->state, memory_order_acquire) !=
           MQS__RUNNABLE)
        pause_a_bit(); /* queued behind the spinning holder */
    atomic_store(&p.go, 1);
    CHECK_OK(mqs_join(y, NULL));
    CHECK_OK(mqs_join(w, NULL));
    CHECK_OK(mqs_join(h, NULL));
    CHECK_OK(mqs_join(s, NULL));
    /* its last worker was busy, the holder's blocked next: sync */
    CHECK_EQ(p.ran_by_yields, 1);
    CHECK_EQ(p.woke_on, 0);
    CHECK_OK(mqs_runtime_destroy(rt));
}
