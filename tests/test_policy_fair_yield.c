/*
 * test_policy_fair_yield.c - the yield fast paths of cfs and eevdf (their
 * `yield` op, which makes the choice in one step and skips the tree
 * where it can) against the slow path the op stands for: enqueue(YIELD)
 * then pick.  Two runs from the same seed, on exact queue states
 * (tests/policy_harness.h), one through h_yield and one through h_stop +
 * h_pick, must run the same task at every step with the same virtual
 * runtime, slice and (eevdf) deadline.  Runs are drawn from a few fixed
 * lengths and tasks start together, so that equal keys and equal
 * deadlines (the tie rules) come up often; mixed nice levels make the
 * yielder now the leftmost, now not; some tasks block and wake.
 *
 * The same for their hand-off op, run_woken (MQS_POLICY_WAKE_NEXT: a
 * task woken by the one that then blocks runs without the queue), and
 * o1's and ule's, against the sync wake-up's enqueue then pick after the waker's
 * put_prev: a
 * ping-pong pair of mixed nice levels, with idle gaps, and now and then
 * a third task queued, when the op must decline.
 */
#include "check.h"
#include "helpers.h"
#include "policy_harness.h"
#include "../src/fair.h"
#include "../src/load_avg.h"

#define FY_TASKS 10
#define FY_STEPS 6000

struct fy_step {
    int task;
    uint64_t key, dl;
    int64_t slice;
};

struct fy_run {
    struct fy_step step[FY_STEPS];
    int kept;  /* yields after which the yielder ran on */
    int other; /* yields that ran another task          */
};

static int fy_index(struct mqs_sched_entity **se, struct mqs_sched_entity *x)
{
    for (int k = 0; k < FY_TASKS; k++)
        if (se[k] == x)
            return k;
    CHECK__FAIL("picked a task that is not the test's");
    return -1;
}

/* A yield of cur after ns of running, fast (the op) or slow. */
static struct mqs_sched_entity *fy_yield(struct harness *h,
                                         struct mqs_sched_entity *cur,
                                         uint64_t ns, bool fast)
{
    if (fast)
        return h_yield(h, 0, cur, ns);
    h_stop(h, 0, cur, ns, true);
    return h_pick(h, 0);
}

static void fy_trace(const char *spec, uint64_t seed, bool fast,
                     struct fy_run *out)
{
    static const uint64_t runs[] = {100, 1000, 1000, 1000, 50000, 3000000};
    struct harness h;
    struct mqs_sched_entity *se[FY_TASKS], *asleep[FY_TASKS];
    int ns = 0;
    uint64_t s = seed;
    h_init(&h, spec, 1);
    for (int k = 0; k < FY_TASKS; k++) {
        se[k] =
            h_task(&h, k, MQS_CLASS_NORMAL, (int)(rng_next(&s) % 3) * 5 - 5);
        h_enqueue(&h, 0, se[k], MQS_ENQ_NEW);
    }
    struct mqs_sched_entity *cur = h_pick(&h, 0);
    for (int i = 0; i < FY_STEPS; i++) {
        uint64_t r = rng_next(&s), ran = runs[r % 6];
        if (ns && (r >> 8) % 8 == 0) { /* a sleeper wakes; cur runs on */
            int j = (int)((r >> 16) % (uint64_t)ns);
            h_enqueue(&h, 0, asleep[j], MQS_ENQ_WAKEUP);
            asleep[j] = asleep[--ns];
        }
        struct mqs_sched_entity *next;
        if (ns < FY_TASKS - 1 && (r >> 24) % 10 == 0) { /* cur blocks */
            h_stop(&h, 0, cur, ran, false);
            asleep[ns++] = cur;
            next = h_pick(&h, 0);
        } else {
            next = fy_yield(&h, cur, ran, fast);
            if (next == cur)
                out->kept++;
            else
                out->other++;
        }
        CHECK(next != NULL);
        out->step[i] = (struct fy_step){fy_index(se, next), next->key,
                                        next->p[0], next->slice_ns};
        cur = next;
    }
    h_destroy(&h);
}

static void fy_compare(const char *spec, uint64_t seed)
{
    static struct fy_run fast, slow;
    memset(&fast, 0, sizeof fast);
    memset(&slow, 0, sizeof slow);
    fy_trace(spec, seed, true, &fast);
    fy_trace(spec, seed, false, &slow);
    int diverged = -1;
    for (int i = 0; i < FY_STEPS && diverged < 0; i++) {
        const struct fy_step *a = &fast.step[i], *b = &slow.step[i];
        if (a->task != b->task || a->key != b->key || a->dl != b->dl ||
            a->slice != b->slice)
            diverged = i;
    }
    /* the steps up to the first difference, for whoever debugs it */
    for (int i = diverged - 3 < 0 ? 0 : diverged - 3; diverged >= 0 && i <= diverged;
         i++)
        fprintf(stderr, "  step %d: fast task %d key %llu slice %lld, "
                        "slow task %d key %llu slice %lld\n",
                i, fast.step[i].task, (unsigned long long)fast.step[i].key,
                (long long)fast.step[i].slice, slow.step[i].task,
                (unsigned long long)slow.step[i].key,
                (long long)slow.step[i].slice);
    fprintf(stderr,
            "  %s seed %llu: %d yields ran on, %d switched; "
            "first difference at step %d\n",
            spec, (unsigned long long)seed, fast.kept, fast.other, diverged);
    CHECK_EQ(diverged, -1);
    CHECK_GT(fast.kept, 50);    /* the yielder-stays-first path ran */
    CHECK_GT(fast.other, 1000); /* and the switching one */
}

TEST(cfs_yield_fast_path_matches_enqueue_and_pick)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        fy_compare("cfs:steal_check_ns=0", seed);
}

TEST(eevdf_yield_fast_path_matches_enqueue_and_pick)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        fy_compare("eevdf:steal_check_ns=0", seed);
}

/* A yield brings the yielder's load signal up to date only when a period
 * boundary has passed (se->due_ns, src/fair.h), and then it must: two
 * tasks yielding to each other every 10 us for 100 ms keep their signals
 * within a period of the clock, and full (both always runnable). */
static void fy_signals_follow(const char *spec)
{
    struct harness h;
    struct mqs_sched_entity *a, *b;
    h_pair(&h, spec, 1, &a, &b);
    struct mqs_sched_entity *run = h_pick(&h, 0);
    uint64_t end = h.now + 100000000ull;
    int yields = 0;
    while (h.now < end) {
        run = h_yield(&h, 0, run, 10000);
        yields++;
    }
    CHECK(yields >= 9000);
    uint64_t period = (uint64_t)MQS__LOAD_PERIOD << MQS__LOAD_UNIT_SHIFT;
    for (int i = 0; i < 2; i++) {
        struct mqs_sched_entity *se = i ? b : a;
        CHECK(h.now - se->load.last_ns <= 2 * period);
        CHECK(se->due_ns > se->load.last_ns);
        CHECK(se->due_ns - se->load.last_ns <= period);
        CHECK(se->load.avg >= 1000);
    }
    h_destroy(&h);
}

TEST(cfs_yields_keep_load_signals_current)
{
    fy_signals_follow("cfs:steal_check_ns=0");
}

TEST(eevdf_yields_keep_load_signals_current)
{
    fy_signals_follow("eevdf:steal_check_ns=0");
}

/* ----- The hand-off: run_woken against enqueue(WAKEUP) + pick ----- */

#define HW_STEPS 4000

/* What the started task and its queue look like: the entity's fields
 * every policy may set, and the fair frame's load for cfs and eevdf. */
struct hw_step {
    int task;
    unsigned level;
    uint64_t key, p[6], weight, load, nr_queued;
    int64_t slice;
};

static int hw_handed; /* wakees the op set running */

/* woken starts on worker 0 after the waker's put_prev: through the op
 * (fast) or enqueue(WAKEUP) + pick.  The op must decline exactly when
 * something is queued there. */
static struct mqs_sched_entity *hw_start(struct harness *h,
                                         struct mqs_sched_entity *woken,
                                         bool queued, bool fast)
{
    if (fast) {
        struct mqs_rq *rq = h_rq(h, 0);
        mqs_rq_lock(rq);
        bool ran = h->pol->run_woken(rq, woken);
        mqs_rq_unlock(rq);
        CHECK_EQ(ran, !queued);
        if (ran) {
            hw_handed++;
            h_started(h, 0, woken);
            return woken;
        }
    }
    h_enqueue(h, 0, woken, MQS_ENQ_WAKEUP | MQS_ENQ_SYNC | MQS_ENQ_TASK);
    return h_pick(h, 0);
}

static void hw_trace(const char *spec, bool fair, uint64_t seed, bool fast,
                     struct hw_step *out)
{
    static const uint64_t runs[] = {100, 1000, 1000, 20000, 700000, 3000000};
    struct harness h;
    uint64_t s = seed;
    h_init(&h, spec, 1);
    CHECK(h.pol->flags & MQS_POLICY_WAKE_NEXT);
    CHECK(h.pol->run_woken != NULL);
    struct mqs_sched_entity *se[3];
    for (int k = 0; k < 3; k++)
        se[k] = h_task(&h, k, MQS_CLASS_NORMAL, (int)(rng_next(&s) % 3) * 5 - 5);
    h_enqueue(&h, 0, se[0], MQS_ENQ_NEW);
    h_enqueue(&h, 0, se[1], MQS_ENQ_NEW);
    struct mqs_sched_entity *cur = h_pick(&h, 0);
    h_stop(&h, 0, cur, 1000, false); /* the first blocks: the pair */
    cur = h_pick(&h, 0);
    struct mqs_sched_entity *asleep = cur == se[0] ? se[1] : se[0];
    bool third_queued = false;
    for (int i = 0; i < HW_STEPS; i++) {
        uint64_t r = rng_next(&s), ran = runs[r % 6];
        struct mqs_sched_entity *next;
        if (!third_queued && (r >> 8) % 16 == 0) {
            /* cur also wakes the third task (queued as any wake-up) */
            h_enqueue(&h, 0, se[2], MQS_ENQ_WAKEUP);
            third_queued = true;
        }
        if ((r >> 16) % 12 == 0) {
            /* cur blocks without waking; the worker idles, then a
             * wake-up from elsewhere queues its partner */
            h_stop(&h, 0, cur, ran, false);
            cur->slept_at_ns = h.now;
            if (!third_queued)
                h_set_now(&h, h.now + runs[(r >> 24) % 6]);
            asleep->woke_at_ns = h.now;
            h_enqueue(&h, 0, asleep, MQS_ENQ_WAKEUP);
            next = h_pick(&h, 0);
        } else {
            /* cur wakes its partner and blocks: the hand-off */
            asleep->woke_at_ns = h.now + ran;
            h_stop(&h, 0, cur, ran, false);
            cur->slept_at_ns = h.now;
            next = hw_start(&h, asleep, third_queued, fast);
        }
        if (next == se[2]) { /* the third runs a while, then blocks */
            third_queued = false;
            h_stop(&h, 0, next, ran, false);
            next->slept_at_ns = h.now;
            next = h_pick(&h, 0);
        }
        CHECK(next == asleep); /* the pair takes turns */
        asleep = cur;
        struct mqs_rq *rq = h_rq(&h, 0);
        out[i] = (struct hw_step){
            .task = next == se[0] ? 0 : 1,
            .level = next->level,
            .key = next->key,
            .weight = fair ? mqs__fair(rq)->weight : 0,
            .load = fair ? mqs__fair(rq)->load.avg : 0,
            .nr_queued = atomic_load(&rq->nr_queued),
            .slice = next->slice_ns};
        memcpy(out[i].p, next->p, sizeof out[i].p);
        if (fair) /* the tree's insertion stamp: no insertion, no stamp */
            out[i].p[MQS__FAIR_P_SEQ] = 0;
        cur = next;
    }
    h_destroy(&h);
}

static void hw_compare(const char *spec, bool fair, uint64_t seed)
{
    static struct hw_step fast[HW_STEPS], slow[HW_STEPS];
    memset(fast, 0, sizeof fast); /* compared whole, padding included */
    memset(slow, 0, sizeof slow);
    hw_handed = 0;
    hw_trace(spec, fair, seed, true, fast);
    int handed = hw_handed;
    hw_trace(spec, fair, seed, false, slow);
    int diverged = -1;
    for (int i = 0; i < HW_STEPS && diverged < 0; i++)
        if (memcmp(&fast[i], &slow[i], sizeof fast[i]))
            diverged = i;
    if (diverged >= 0) {
        const struct hw_step *a = &fast[diverged], *b = &slow[diverged];
        for (int k = 0; k < 2; k++) {
            const struct hw_step *x = k ? b : a;
            fprintf(stderr, "  step %d, %s: task %d level %u key %llu p0-3 "
                            "%llu %llu %llu %llu weight %llu load %llu "
                            "queued %llu slice %lld\n",
                    diverged, k ? "enqueue+pick" : "run_woken", x->task,
                    x->level, (unsigned long long)x->key,
                    (unsigned long long)x->p[0], (unsigned long long)x->p[1],
                    (unsigned long long)x->p[2], (unsigned long long)x->p[3],
                    (unsigned long long)x->weight,
                    (unsigned long long)x->load,
                    (unsigned long long)x->nr_queued, (long long)x->slice);
        }
    }
    fprintf(stderr, "  %s seed %llu: %d of %d wakees handed off; first "
            "difference at step %d\n", spec, (unsigned long long)seed,
            handed, HW_STEPS, diverged);
    CHECK_EQ(diverged, -1);
    CHECK_GT(handed, HW_STEPS / 2);
}

TEST(cfs_hand_off_matches_enqueue_and_pick)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        hw_compare("cfs:steal_check_ns=0", true, seed);
}

TEST(eevdf_hand_off_matches_enqueue_and_pick)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        hw_compare("eevdf:steal_check_ns=0", true, seed);
}

TEST(o1_hand_off_matches_enqueue_and_pick)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        hw_compare("o1", false, seed);
}

TEST(ule_hand_off_matches_enqueue_and_pick)
{
    for (uint64_t seed = 1; seed <= 4; seed++)
        hw_compare("ule", false, seed);
}
