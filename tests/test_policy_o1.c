/*
 * test_policy_o1.c - the O(1) scheduler's own rules: slices by static
 * priority, the sleep_avg bonus, interactive tasks staying in the active
 * array, EXPIRED_STARVING, yield, sync wake-ups and child-runs-first.
 * Policy ops are driven directly (tests/policy_harness.h); the last two
 * cases run real tasks on one worker and check what ran first.
 */
#include "check.h"
#include "internal.h"
#include "helpers.h"
#include "policy_harness_ph.h"

/* se->p[] words of o1.c */
enum { ARRAY = 0, PRIO = 1, SLEEP_AVG = 2, SYNC = 3 };

#define MS 1000000ull
#define SEC 1000000000ull

static struct ph h;
static struct mqs_task t[8];

/* A nice-0 task woken after sleeping slept_ns (sleep_avg starts at 0). */
static void wake(struct mqs_task *x, const char *name, uint64_t slept_ns)
{
    ph_task(x, MQS_CLASS_NORMAL, 0, name);
    x->se.slept_at_ns = 1000;
    x->se.woke_at_ns = 1000 + slept_ns;
    ph_enqueue(&h, 0, x, MQS_ENQ_WAKEUP);
}

/* Run x for its whole slice and re-queue it as preempted. */
static void spend_slice(struct mqs_task *x)
{
    ph_stop(&h, 0, x, (uint64_t)x->se.slice_ns);
    ph_enqueue(&h, 0, x, MQS_ENQ_PREEMPTED);
}

TEST(timeslice_by_static_priority)
{
    ph_init(&h, "o1", 1);
    static const int nice[] = {-20, 0, 19};
    static const int64_t want[] = {200000000, 102564102, 10000000};
    for (int i = 0; i < 3; i++) {
        ph_task(&t[i], MQS_CLASS_NORMAL, nice[i], "n");
        ph_enqueue(&h, 0, &t[i], MQS_ENQ_NEW);
        CHECK_EQ(t[i].se.slice_ns, want[i]);
    }
    ph_destroy(&h);
}

TEST(sleep_avg_gives_bonus_minus5_to_plus5)
{
    ph_init(&h, "o1", 1);
    wake(&t[0], "hog", 0);
    wake(&t[1], "half", SEC / 2);
    wake(&t[2], "sleeper", 5 * SEC); /* capped at max_sleep_avg_ns */
    CHECK_EQ(t[0].se.p[PRIO], 125);
    CHECK_EQ(t[1].se.p[PRIO], 120);
    CHECK_EQ(t[2].se.p[PRIO], 115);
    CHECK_EQ(t[2].se.p[SLEEP_AVG], SEC);
    /* most urgent dynamic priority first */
    CHECK(ph_pick(&h, 0) == &t[2]);
    CHECK(ph_pick(&h, 0) == &t[1]);
    CHECK(ph_pick(&h, 0) == &t[0]);
    ph_destroy(&h);
}

TEST(interactive_task_stays_in_active_array)
{
    ph_init(&h, "o1", 1);
    wake(&t[0], "sleeper", SEC);
    wake(&t[1], "hog", 0);
    struct mqs_task *s = ph_pick(&h, 0);
    CHECK(s == &t[0]);
    spend_slice(s); /* sleep_avg 1 s - 102 ms: still interactive */
    CHECK_EQ(s->se.p[PRIO], 117);
    CHECK_EQ(s->se.p[ARRAY], t[1].se.p[ARRAY]); /* active, with the hog */
    CHECK(ph_pick(&h, 0) == s); /* and ahead of it */
    ph_stop(&h, 0, s, 0);       /* s blocks */
    struct mqs_task *hog = ph_pick(&h, 0);
    CHECK(hog == &t[1]);
    unsigned active = (unsigned)hog->se.p[ARRAY];
    spend_slice(hog);
    CHECK(hog->se.p[ARRAY] != active); /* the hog expired */
    ph_destroy(&h);
}

TEST(hogs_expire_and_wait_for_the_swap)
{
    ph_init(&h, "o1", 1);
    wake(&t[0], "a", 0);
    wake(&t[1], "b", 0);
    struct mqs_task *a = ph_pick(&h, 0);
    spend_slice(a);
    struct mqs_task *b = ph_pick(&h, 0);
    CHECK(b != a);
    ph_stop(&h, 0, b, MS); /* b yields with slice left: stays active */
    ph_enqueue(&h, 0, b, MQS_ENQ_YIELD);
    CHECK(ph_pick(&h, 0) == b);
    spend_slice(b);
    CHECK(ph_pick(&h, 0) == a); /* swap: a's new slice */
    CHECK_EQ(a->se.slice_ns, 102564102);
    ph_destroy(&h);
}

TEST(expired_starving_sends_interactive_tasks_to_expired)
{
    ph_init(&h, "o1:starvation_ns=1", 1);
    wake(&t[0], "sleeper", SEC);
    wake(&t[1], "hog", 0);
    struct mqs_task *s = ph_pick(&h, 0), *hog = ph_pick(&h, 0);
    spend_slice(hog); /* expired from now on */
    uint64_t t0 = mqs_now_ns();
    while (mqs_now_ns() - t0 < 10000) /* past 1 ns * queue length */
        ;
    spend_slice(s);
    CHECK_EQ(s->se.p[ARRAY], hog->se.p[ARRAY]);
    ph_destroy(&h);

    ph_init(&h, "o1:starvation_ns=0", 1); /* check off: stays active */
    wake(&t[0], "sleeper", SEC);
    wake(&t[1], "hog", 0);
    s = ph_pick(&h, 0);
    hog = ph_pick(&h, 0);
    spend_slice(hog);
    spend_slice(s);
    CHECK(s->se.p[ARRAY] != hog->se.p[ARRAY]);
    ph_destroy(&h);
}

TEST(yield_rotates_in_active_or_expires_as_2_6_0)
{
    ph_init(&h, "o1", 1);
    wake(&t[0], "a", 0);
    wake(&t[1], "b", 0);
    struct mqs_task *a = ph_pick(&h, 0);
    struct mqs_task *b = ph_yield(&h, 0, a, 1000);
    CHECK(b == &t[1]);
    CHECK(ph_yield(&h, 0, b, 1000) == a);
    CHECK_EQ(a->se.p[ARRAY], b->se.p[ARRAY]); /* both still active */
    ph_destroy(&h);

    ph_init(&h, "o1:yield_expired=1", 1);
    wake(&t[0], "a", 0);
    wake(&t[1], "b", 0);
    wake(&t[2], "c", 0);
    a = ph_pick(&h, 0);
    unsigned active = (unsigned)a->se.p[ARRAY];
    b = ph_yield(&h, 0, a, 1000);
    CHECK(a->se.p[ARRAY] != active); /* expired */
    struct mqs_task *c = ph_yield(&h, 0, b, 1000);
    CHECK(c == &t[2]);
    CHECK(ph_yield(&h, 0, c, 1000) == a); /* swap: a first again */
    ph_destroy(&h);
}

TEST(sync_wakeup_does_not_preempt_normal_tasks)
{
    ph_init(&h, "o1", 1);
    wake(&t[0], "curr", 0);
    wake(&t[1], "woken", SEC);
    ph_task(&t[2], MQS_CLASS_FIFO, 10, "rt");
    t[2].se.p[SYNC] = 1;
    CHECK(h.pol->wake_preempt(ph_rq(&h, 0), &t[0].se, &t[1].se));
    t[1].se.p[SYNC] = 1;
    CHECK(!h.pol->wake_preempt(ph_rq(&h, 0), &t[0].se, &t[1].se));
    CHECK(h.pol->wake_preempt(ph_rq(&h, 0), &t[0].se, &t[2].se));
    ph_destroy(&h);
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
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1;
    cfg.policy = spec;
    mqs_runtime_t *rt = rt_create(&cfg);
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
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 2;
    cfg.policy = spec;
    mqs_runtime_t *rt = rt_create(&cfg);
    ph_task(&fake, cls, cls == MQS_CLASS_NORMAL ? 0 : 10, "woken");
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
