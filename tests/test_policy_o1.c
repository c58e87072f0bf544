/*
 * test_policy_o1.c - the O(1) scheduler's own rules: slices by static
 * priority, the sleep_avg bonus, interactive tasks staying in the active
 * array, EXPIRED_STARVING, yield, sync wake-ups and child-runs-first,
 * and periodic balancing of cache-hot tasks.  Policy ops are driven
 * directly (tests/policy_harness.h); the child-first and placement cases
 * run real tasks and check what ran first or where, the balancing case
 * real tasks on two workers.
 */
#include "check.h"
#include "helpers.h"
#include "internal.h"
#include "policy_harness.h"

/* se->p[] words of o1.c */
/* p[] words of o1.c; the dynamic level is se->level */
enum { ARRAY = 0, SLEEP_AVG = 2, SYNC = 3 };

#define MS 1000000ull
#define SEC 1000000000ull

static struct harness h;

/* A runtime of `workers` workers under policy spec, environment ignored. */
static mqs_runtime_t *rt_spec(const char *spec, int workers)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = workers;
    cfg.policy = spec;
    return rt_create(&cfg);
}

/* Task k of the harness. */
static struct mqs_sched_entity *task(int k)
{
    return &h.t[k]->se;
}

/* A nice-0 task woken after sleeping slept_ns (sleep_avg starts at 0). */
static void wake(int k, uint64_t slept_ns)
{
    struct mqs_sched_entity *x = h_task(&h, k, MQS_CLASS_NORMAL, 0);
    x->slept_at_ns = 1000;
    x->woke_at_ns = 1000 + slept_ns;
    h_enqueue(&h, 0, x, MQS_ENQ_WAKEUP);
}

/* Run x for its whole slice and re-queue it as preempted. */
static void spend_slice(struct mqs_sched_entity *x)
{
    h_stop(&h, 0, x, (uint64_t)x->slice_ns, false);
    h_enqueue(&h, 0, x, MQS_ENQ_PREEMPTED);
}

/* A slice by static priority, after a first one of min_slice_ns for a
 * task spawned from outside the runtime (the harness's spawns are). */
TEST(timeslice_by_static_priority)
{
    h_init(&h, "o1", 1);
    static const int nice[] = {-20, 0, 19};
    static const int64_t want[] = {200000000, 102564102, 10000000};
    for (int i = 0; i < 3; i++) {
        h_task(&h, i, MQS_CLASS_NORMAL, nice[i]);
        h_enqueue(&h, 0, task(i), MQS_ENQ_NEW);
        CHECK_EQ(task(i)->slice_ns, 10 * (int64_t)MS);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(h_pick(&h, 0) == task(i));
        spend_slice(task(i));
        CHECK_EQ(task(i)->slice_ns, want[i]);
    }
    h_destroy(&h);
}

TEST(sleep_avg_gives_bonus_minus5_to_plus5)
{
    h_init(&h, "o1", 1);
    wake(0, 0);
    wake(1, SEC / 20); /* counted ten times from a sleep_avg of 0 */
    wake(2, 5 * SEC); /* capped at max_sleep_avg_ns */
    CHECK_EQ(task(0)->level, 125);
    CHECK_EQ(task(1)->level, 120);
    CHECK_EQ(task(2)->level, 115);
    CHECK_EQ(task(2)->p[SLEEP_AVG], SEC);
    /* most urgent dynamic priority first */
    CHECK(h_pick(&h, 0) == task(2));
    CHECK(h_pick(&h, 0) == task(1));
    CHECK(h_pick(&h, 0) == task(0));
    h_destroy(&h);
}

/* With outside_sleep_pct=100 a task spawned from outside the runtime
 * inherits, less CHILD_PENALTY, the history of a parent that has mostly
 * slept (a program's main thread, as 2.6 saw one started from a shell):
 * interactive from the start, level 116.  A task's child inherits its
 * parent's own (here 0: level 125), and by default (0) outside spawns
 * start at 0.  An outside spawn's first slice is min_slice_ns (2.6 split
 * the parent's slice with each child: a main thread starting several
 * threads leaves the later ones the least); a task's child gets a whole
 * one. */
static struct mqs_sched_entity *spawned(int k, const char *spec,
                                        const struct mqs_sched_entity *parent)
{
    if (!h.rt)
        h_init(&h, spec, 1);
    struct mqs_sched_entity *x = h_task(&h, k, MQS_CLASS_NORMAL, 0);
    struct mqs_rq *rq = h_rq(&h, 0);
    h.pol->task_new(rq, x, parent); /* h_enqueue's is parentless */
    mqs_rq_lock(rq);
    h_queued(&h, 0, x);
    h.pol->enqueue(rq, x, MQS_ENQ_NEW);
    mqs_rq_unlock(rq);
    return x;
}

TEST(outside_spawns_may_start_with_a_sleeping_parents_history)
{
    struct mqs_sched_entity *a = spawned(0, "o1:outside_sleep_pct=100", NULL);
    CHECK_EQ(a->p[SLEEP_AVG], SEC * 95 / 100);
    CHECK_EQ(a->level, 116);
    struct mqs_sched_entity *parent = h_task(&h, 1, MQS_CLASS_NORMAL, 0);
    struct mqs_sched_entity *b = spawned(2, "o1:outside_sleep_pct=100",
                                        parent);
    CHECK_EQ(b->p[SLEEP_AVG], 0);
    CHECK_EQ(b->level, 125);
    /* first slices: the shortest from outside, a whole one from a task */
    CHECK_EQ(a->slice_ns, 10 * (int64_t)MS);
    CHECK_EQ(b->slice_ns, 102564102);
    CHECK(h_pick(&h, 0) == a);
    h_destroy(&h);
    memset(&h, 0, sizeof h);
    struct mqs_sched_entity *c = spawned(0, "o1", NULL);
    CHECK_EQ(c->p[SLEEP_AVG], 0);
    CHECK_EQ(c->level, 125);
    h_destroy(&h);
}

/* A sleep counts (10 - bonus) times, at least once (2.6's
 * recalc_task_prio): the lower the sleep_avg, the faster it rises. */
TEST(sleep_raises_a_low_sleep_avg_faster)
{
    h_init(&h, "o1", 1);
    struct mqs_sched_entity *x = h_task(&h, 0, MQS_CLASS_NORMAL, 0);
    uint64_t avg[] = {0, 450 * MS, 950 * MS};
    uint64_t want[] = {90 * MS, 450 * MS + 9 * MS * 6, 959 * MS};
    for (int i = 0; i < 3; i++) {
        x->p[SLEEP_AVG] = avg[i];
        x->slept_at_ns = 1000;
        x->woke_at_ns = 1000 + 9 * MS;
        h_enqueue(&h, 0, x, MQS_ENQ_WAKEUP);
        CHECK_EQ(x->p[SLEEP_AVG], want[i]);
        CHECK(h_pick(&h, 0) == x);
        h_stop(&h, 0, x, 0, false);
    }
    /* A task sleeping 9 ms of every 10 (a 1 ms run) earns the bonus that
     * puts it ahead of a spinner (prio 125) at its second wake-up. */
    x->p[SLEEP_AVG] = 0;
    for (int i = 0; i < 2; i++) {
        x->slept_at_ns = 1000;
        x->woke_at_ns = 1000 + 9 * MS;
        h_enqueue(&h, 0, x, MQS_ENQ_WAKEUP);
        CHECK(h_pick(&h, 0) == x);
        h_stop(&h, 0, x, MS, false);
    }
    CHECK_LT(x->level, 125);
    h_destroy(&h);
}

TEST(interactive_task_stays_in_active_array)
{
    h_init(&h, "o1", 1);
    wake(0, SEC);
    wake(1, 0);
    struct mqs_sched_entity *s = h_pick(&h, 0);
    CHECK(s == task(0));
    spend_slice(s); /* sleep_avg 1 s - 102 ms: still interactive */
    CHECK_EQ(s->level, 117);
    CHECK_EQ(s->p[ARRAY], task(1)->p[ARRAY]); /* active, with the hog */
    CHECK(h_pick(&h, 0) == s);                /* and ahead of it */
    h_stop(&h, 0, s, 0, false);               /* s blocks */
    struct mqs_sched_entity *hog = h_pick(&h, 0);
    CHECK(hog == task(1));
    unsigned active = (unsigned)hog->p[ARRAY];
    spend_slice(hog);
    CHECK(hog->p[ARRAY] != active); /* the hog expired */
    h_destroy(&h);
}

TEST(hogs_expire_and_wait_for_the_swap)
{
    h_init(&h, "o1", 1);
    wake(0, 0);
    wake(1, 0);
    struct mqs_sched_entity *a = h_pick(&h, 0);
    spend_slice(a);
    struct mqs_sched_entity *b = h_pick(&h, 0);
    CHECK(b != a);
    h_stop(&h, 0, b, MS, false); /* b yields with slice left: stays active */
    h_enqueue(&h, 0, b, MQS_ENQ_YIELD);
    CHECK(h_pick(&h, 0) == b);
    spend_slice(b);
    CHECK(h_pick(&h, 0) == a); /* swap: a's new slice */
    CHECK_EQ(a->slice_ns, 102564102);
    h_destroy(&h);
}

TEST(expired_starving_sends_interactive_tasks_to_expired)
{
    h_init(&h, "o1:starvation_ns=1", 1);
    wake(0, SEC);
    wake(1, 0);
    struct mqs_sched_entity *s = h_pick(&h, 0), *hog = h_pick(&h, 0);
    spend_slice(hog);             /* expired from now on */
    h_set_now(&h, h.now + 10000); /* past 1 ns * queue length */
    spend_slice(s);
    CHECK_EQ(s->p[ARRAY], hog->p[ARRAY]);
    h_destroy(&h);

    h_init(&h, "o1:starvation_ns=0", 1); /* check off: stays active */
    wake(0, SEC);
    wake(1, 0);
    s = h_pick(&h, 0);
    hog = h_pick(&h, 0);
    spend_slice(hog);
    spend_slice(s);
    CHECK(s->p[ARRAY] != hog->p[ARRAY]);
    h_destroy(&h);
}

TEST(yield_rotates_in_active_or_expires_as_2_6_0)
{
    h_init(&h, "o1", 1);
    wake(0, 0);
    wake(1, 0);
    struct mqs_sched_entity *a = h_pick(&h, 0);
    struct mqs_sched_entity *b = h_yield(&h, 0, a, 1000);
    CHECK(b == task(1));
    CHECK(h_yield(&h, 0, b, 1000) == a);
    CHECK_EQ(a->p[ARRAY], b->p[ARRAY]); /* both still active */
    h_destroy(&h);

    h_init(&h, "o1:yield_expired=1", 1);
    wake(0, 0);
    wake(1, 0);
    wake(2, 0);
    a = h_pick(&h, 0);
    unsigned active = (unsigned)a->p[ARRAY];
    b = h_yield(&h, 0, a, 1000);
    CHECK(a->p[ARRAY] != active); /* expired */
    struct mqs_sched_entity *c = h_yield(&h, 0, b, 1000);
    CHECK(c == task(2));
    CHECK(h_yield(&h, 0, c, 1000) == a); /* swap: a first again */
    h_destroy(&h);
}

TEST(sync_wakeup_does_not_preempt_normal_tasks)
{
    h_init(&h, "o1", 1);
    wake(0, 0);
    wake(1, SEC);
    h_task(&h, 2, MQS_CLASS_FIFO, 10);
    task(2)->p[SYNC] = 1;
    CHECK(h.pol->wake_preempt(h_rq(&h, 0), task(0), task(1)));
    task(1)->p[SYNC] = 1;
    CHECK(!h.pol->wake_preempt(h_rq(&h, 0), task(0), task(1)));
    CHECK(h.pol->wake_preempt(h_rq(&h, 0), task(0), task(2)));
    h_destroy(&h);
}

/* ----- with real tasks ----- */

static atomic_int child_ran;

static void *child(void *arg)
{
    (void)arg;
    atomic_store(&child_ran, 1);
    return NULL;
}

static void *parent(void *arg)
{
    (void)arg;
    mqs_task_t *c;
    CHECK_OK(mqs_spawn(mqs_runtime_self(), &c, NULL, child, NULL));
    CHECK_OK(mqs_checkpoint()); /* child_first: gives way here */
    int ran = atomic_load(&child_ran);
    CHECK_OK(mqs_join(c, NULL));
    return (void *)(intptr_t)ran;
}

static int parent_saw_child(const char *spec)
{
    mqs_runtime_t *rt = rt_spec(spec, 1);
    atomic_store(&child_ran, 0);
    int ran = (int)(intptr_t)join(spawn(rt, parent, NULL));
    CHECK_OK(mqs_runtime_destroy(rt));
    return ran;
}

TEST(child_runs_first)
{
    CHECK_EQ(parent_saw_child("o1"), 1);
    CHECK_EQ(parent_saw_child("o1:child_first=0"), 0);
}

/* Where o1 places a woken task that last ran on worker 1, asked from a
 * task running on worker 0 (select_worker needs a waking task). */
static struct mqs_task fake;

static void *place_from_worker0(void *arg)
{
    const struct mqs_policy *o1 = mqs_policy_find("o1");
    int w = o1->select_worker(mqs_runtime_self(), &fake.se, mqs_worker_self(),
                              MQS_ENQ_WAKEUP);
    (void)arg;
    return (void *)(intptr_t)w;
}

static int placed_on(const char *spec, mqs_class_t cls)
{
    mqs_runtime_t *rt = rt_spec(spec, 2);
    h_task_init(&fake, cls, cls == MQS_CLASS_NORMAL ? 0 : 10, "woken");
    fake.se.last_worker = 1;
    static mqs_mask_t zero;
    mqs_mask_zero(&zero);
    mqs_mask_set(&zero, 0);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.affinity = &zero;
    int w = (int)(intptr_t)join(spawn_attr(rt, &a, place_from_worker0, NULL));
    CHECK_OK(mqs_runtime_destroy(rt));
    return w;
}

/* A sync wake-up goes to the waker's worker; realtime tasks and plain
 * wake-ups go where the default placement puts them (the last worker). */
TEST(sync_wakeup_places_on_the_wakers_worker)
{
    CHECK_EQ(placed_on("o1:sync_wakeup=2", MQS_CLASS_NORMAL), 0);
    CHECK_EQ(placed_on("o1:sync_wakeup=2", MQS_CLASS_FIFO), 1);
    CHECK_EQ(placed_on("o1:sync_wakeup=0", MQS_CLASS_NORMAL), 1);
    CHECK_EQ(placed_on("o1:sync_wakeup=1", MQS_CLASS_NORMAL), 1); /* no flag */
}

/* ----- periodic balancing of cache-hot tasks ----- */

static atomic_int hot_stop, hot_moved;

/* Yields in a loop; with arg non-NULL, notes when it runs on worker 1. */
static void *hot_yielder(void *arg)
{
    while (!atomic_load(&hot_stop)) {
        if (arg && mqs_worker_self() == 1)
            atomic_store(&hot_moved, 1);
        CHECK_OK(mqs_yield());
    }
    return NULL;
}

/* Whether periodic balancing (every 100 ms) moved one of six yielders
 * from worker 0 to worker 1 within 2 s.  Worker 1 runs a pinned yielder
 * of its own, so it is busy and makes no idle pull; cache_hot_ns is 1 s,
 * so every task counts as hot however long the host keeps a worker
 * thread off its CPU (with 1 ms, a worker thread preempted for a
 * millisecond on a 2-vCPU machine made its tasks cold). */
static bool hot_tasks_balanced(const char *spec)
{
    mqs_runtime_t *rt = rt_spec(spec, 2);
    atomic_store(&hot_stop, 0);
    mqs_task_t *pinned = spawn_on(rt, 1, hot_yielder, NULL);
    mqs_task_t *t[6];
    for (int i = 0; i < 6; i++)
        t[i] = spawn_on(rt, 0, hot_yielder, &hot_moved);
    usleep(20000);
    atomic_store(&hot_moved, 0);
    mqs_mask_t both;
    mqs_mask_zero(&both);
    mqs_mask_set(&both, 0);
    mqs_mask_set(&both, 1);
    for (int i = 0; i < 6; i++)
        CHECK_OK(mqs_task_set_affinity(t[i], &both));
    for (int ms = 0; ms < 2000 && !atomic_load(&hot_moved); ms++)
        usleep(1000);
    bool moved = atomic_load(&hot_moved);
    atomic_store(&hot_stop, 1);
    for (int i = 0; i < 6; i++)
        join(t[i]);
    join(pinned);
    CHECK_OK(mqs_runtime_destroy(rt));
    return moved;
}

/* 2.6.0 never moved a cache-hot task between busy workers, so a 6/1
 * split of tasks that yield in a loop could stay; after cache_nice_tries
 * periodic tries in a row that moved nothing, the next one moves hot
 * tasks too (2.6.7's nr_balance_failed). */
TEST(periodic_balancing_moves_hot_tasks_after_failed_tries)
{
    CHECK(hot_tasks_balanced("o1:balance_ns=100000000,"
                             "cache_hot_ns=1000000000"));
    CHECK(!hot_tasks_balanced("o1:balance_ns=100000000,"
                              "cache_hot_ns=1000000000,"
                              "cache_nice_tries=1000000000"));
}
