/*
 * test_handles.c - task handles are never confused by reuse: a handle
 * that outlived its task (joined, or detached and ended) gets
 * MQS_EINVAL from every call, never a hang, a crash or another task,
 * even when a new task sits at the old one's address.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "check.h"
#include "helpers.h"

static mqs_task_t *spawn_stack(mqs_runtime_t *rt, size_t stack, void *arg)
{
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.stack_size = stack;
    return spawn_attr(rt, &a, ret_arg, arg);
}

/* Joined once, the handle is stale: the second join says so, with the
 * default stack and with a small one (which crashed before). */
TEST(second_join_is_einval)
{
    mqs_runtime_t *rt = rt_new(1);
    size_t sizes[] = {0, 64 * 1024};
    for (int i = 0; i < 2; i++) {
        mqs_task_t *t = spawn_stack(rt, sizes[i], (void *)1);
        void *res = NULL;
        CHECK_OK(mqs_join(t, &res));
        CHECK(res == (void *)1);
        CHECK_ERR(mqs_join(t, &res), MQS_EINVAL);
    }
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* The new task reuses the old one's memory (the outside pool hands the
 * joined stack to the next spawn), yet the old handle does not reach it. */
TEST(stale_handle_does_not_reach_the_new_task)
{
    mqs_runtime_t *rt = rt_new(1);
    mqs_task_t *old = spawn(rt, ret_arg, (void *)1);
    struct mqs_task *old_addr = mqs__task_of(old);
    join(old);
    int reused = 0;
    for (int i = 0; i < 16; i++) {
        mqs_task_t *t = spawn(rt, ret_arg, (void *)2);
        reused += mqs__task_of(t) == old_addr;
        CHECK(t != old);
        CHECK_ERR(mqs_join(old, NULL), MQS_EINVAL);
        CHECK(mqs_task_name(old) == NULL);
        CHECK_EQ(mqs_task_id(old), 0);
        mqs_task_stats_t st;
        CHECK_ERR(mqs_task_stats(old, &st), MQS_EINVAL);
        CHECK_ERR(mqs_task_set_sched(old, MQS_CLASS_NORMAL, 5), MQS_EINVAL);
        mqs_class_t cls;
        int prio;
        CHECK_ERR(mqs_task_get_sched(old, &cls, &prio), MQS_EINVAL);
        mqs_mask_t m;
        mqs_mask_zero(&m);
        mqs_mask_set(&m, 0);
        CHECK_ERR(mqs_task_set_affinity(old, &m), MQS_EINVAL);
        CHECK(join(t) == (void *)2);
    }
    /* The point of the case: the memory was in fact reused. */
    CHECK_GT(reused, 0);
    CHECK_OK(mqs_runtime_destroy(rt));
}

struct det {
    mqs_task_t *self;
    atomic_int done;
};

static void *detached_body(void *arg)
{
    struct det *d = arg;
    d->self = mqs_self();
    atomic_store(&d->done, 1);
    return NULL;
}

static void *wait_on_sem(void *arg)
{
    CHECK_OK(mqs_sem_wait(arg));
    return NULL;
}

/* A detached task that ended: join returns MQS_EINVAL (it hung on a
 * futex before). */
TEST(join_of_ended_detached_task_is_einval)
{
    mqs_runtime_t *rt = rt_new(2);
    struct det d = {NULL, 0};
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.detached = true;
    mqs_task_t *h = NULL;
    CHECK_OK(mqs_spawn(rt, &h, &a, detached_body, &d));
    wait_count(&d.done, 1);
    CHECK(d.self == h);
    /* Live or ended, a detached task cannot be joined. */
    CHECK_ERR(mqs_join(h, NULL), MQS_EINVAL);
    /* New joinable tasks take the ended one's memory and wait: the old
     * handle must not join one of them (it hung on it before). */
    static mqs_sem_t go;
    CHECK_OK(mqs_sem_init(&go, 0));
    mqs_task_t *t[8];
    for (int i = 0; i < 8; i++)
        t[i] = spawn(rt, wait_on_sem, &go);
    CHECK_ERR(mqs_join(h, NULL), MQS_EINVAL);
    for (int i = 0; i < 8; i++)
        CHECK_OK(mqs_sem_post(&go));
    for (int i = 0; i < 8; i++)
        join(t[i]);
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(self_matches_the_spawn_handle)
{
    mqs_runtime_t *rt = rt_new(1);
    struct det d = {NULL, 0};
    mqs_task_t *t = spawn(rt, detached_body, &d);
    wait_count(&d.done, 1);
    CHECK(d.self == t);
    CHECK(mqs_task_name(t) != NULL);
    CHECK_GT(mqs_task_id(t), 0);
    join(t);
    CHECK(mqs_self() == NULL);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* Many threads join one handle at once: exactly one joins, the others
 * get MQS_ESTATE (a join in progress) or MQS_EINVAL (already joined). */
#define JOINERS 8
struct race {
    mqs_task_t *t;
    atomic_int go, ok, estate, einval;
};

static void *race_joiner(void *arg)
{
    struct race *r = arg;
    while (!atomic_load(&r->go))
        ;
    int rc = mqs_join(r->t, NULL);
    atomic_fetch_add(rc == 0                ? &r->ok
                     : rc == MQS_ESTATE     ? &r->estate
                                            : &r->einval,
                     1);
    CHECK(rc == 0 || rc == MQS_ESTATE || rc == MQS_EINVAL);
    return NULL;
}

TEST(concurrent_joins_join_once)
{
    mqs_runtime_t *rt = rt_new(2);
    for (int round = 0; round < 50; round++) {
        struct race r = {.go = 0, .ok = 0, .estate = 0, .einval = 0};
        r.t = spawn(rt, ret_arg, NULL);
        pthread_t th[JOINERS];
        for (int i = 0; i < JOINERS; i++)
            CHECK_EQ(pthread_create(&th[i], NULL, race_joiner, &r), 0);
        atomic_store(&r.go, 1);
        for (int i = 0; i < JOINERS; i++)
            pthread_join(th[i], NULL);
        CHECK_EQ(atomic_load(&r.ok), 1);
        CHECK_EQ(atomic_load(&r.ok) + atomic_load(&r.estate) +
                     atomic_load(&r.einval),
                 JOINERS);
    }
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* Many spawns and joins: every handle is distinct from every live one,
 * and each stale one stays stale (slots and generations cycle). */
TEST(handles_cycle_without_collisions)
{
    mqs_runtime_t *rt = rt_new(2);
    enum { N = 64, ROUNDS = 200 };
    mqs_task_t *stale[N];
    for (int r = 0; r < ROUNDS; r++) {
        mqs_task_t *t[N];
        for (int i = 0; i < N; i++)
            t[i] = spawn(rt, ret_arg, NULL);
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < i; j++)
                CHECK(t[i] != t[j]);
            if (r > 0)
                for (int j = 0; j < N; j++)
                    CHECK(t[i] != stale[j]);
        }
        for (int i = 0; i < N; i++)
            join(t[i]);
        for (int i = 0; i < N; i++) {
            CHECK_ERR(mqs_join(t[i], NULL), MQS_EINVAL);
            stale[i] = t[i];
        }
    }
    CHECK_OK(mqs_runtime_destroy(rt));
}
