/*
 * test_level_hint.c - the runtime-wide "levels queued somewhere" hint
 * (mqs_rq_publish in rq.c): a queued task's level always counts, and
 * an emptied queue's count, which the hint keeps while its worker is
 * busy (so a ping-pong pays no shared atomics), is dropped once the
 * worker idles.  A stale-high hint is allowed (readers look and find
 * nothing); a missing level is not.
 */
#include <stdatomic.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

#define ROUNDS 20000
#define WAIT_NS 2000000000ull /* 2 s to settle; it takes microseconds */

struct pingpong {
    mqs_sem_t a, b;
};

static void *ping(void *arg)
{
    struct pingpong *p = arg;
    for (int i = 0; i < ROUNDS; i++) {
        mqs_sem_post(&p->b);
        mqs_sem_wait(&p->a);
    }
    return NULL;
}

static void *pong(void *arg)
{
    struct pingpong *p = arg;
    for (int i = 0; i < ROUNDS; i++) {
        mqs_sem_wait(&p->b);
        mqs_sem_post(&p->a);
    }
    return NULL;
}

/* Poll until the hint reads no level, or WAIT_NS pass. */
static unsigned hint_after_settling(mqs_runtime_t *rt)
{
    uint64_t t0 = mqs_now_ns();
    unsigned h;
    while ((h = mqs_best_prio_anywhere(rt)) != MQS_PRIO_NONE &&
           mqs_now_ns() - t0 < WAIT_NS)
        sched_yield();
    return h;
}

TEST(emptied_queue_leaves_the_hint_once_its_worker_idles)
{
    mqs_runtime_t *rt = rt_new(2);
    struct pingpong p;
    CHECK_OK(mqs_sem_init(&p.a, 0));
    CHECK_OK(mqs_sem_init(&p.b, 0));
    /* Realtime: the level is one no other queue ever publishes. */
    mqs_task_t *x = spawn_prio_on(rt, 0, MQS_CLASS_FIFO, 10, ping, &p);
    mqs_task_t *y = spawn_prio_on(rt, 0, MQS_CLASS_FIFO, 10, pong, &p);
    CHECK_OK(mqs_join(x, NULL));
    CHECK_OK(mqs_join(y, NULL));
    CHECK_EQ(hint_after_settling(rt), MQS_PRIO_NONE);
    CHECK_OK(mqs_runtime_destroy(rt));
}

struct spinner {
    atomic_int started, release;
};

static void *spin_until_released(void *arg)
{
    struct spinner *s = arg;
    atomic_store(&s->started, 1);
    mqs_preempt_disable();
    while (!atomic_load(&s->release))
        mqs__cpu_relax(); /* no scheduling point: the queue stays full */
    mqs_preempt_enable();
    return NULL;
}

static void *nothing(void *arg)
{
    return arg;
}

TEST(a_queued_task_counts_its_level_in_the_hint)
{
    mqs_runtime_t *rt = rt_new(2);
    struct spinner s = {0, 0};
    mqs_task_t *x = spawn_on(rt, 0, spin_until_released, &s);
    while (!atomic_load(&s.started))
        sched_yield();
    /* Worker 0 is busy and y may run nowhere else: y stays queued. */
    mqs_task_t *y = spawn_prio_on(rt, 0, MQS_CLASS_RR, 20, nothing, NULL);
    unsigned level = mqs__task_of(y)->se.prio;
    for (int i = 0; i < 1000; i++)
        CHECK(mqs_best_prio_anywhere(rt) <= level);
    CHECK_EQ(mqs_rq_best_prio(mqs_rq_of(rt, 0)), level);
    atomic_store(&s.release, 1);
    CHECK_OK(mqs_join(y, NULL));
    CHECK_OK(mqs_join(x, NULL));
    CHECK_EQ(hint_after_settling(rt), MQS_PRIO_NONE);
    CHECK_OK(mqs_runtime_destroy(rt));
}
