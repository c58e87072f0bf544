/*
 * test_chan.c - bounded and rendezvous channels.  Every case makes its
 * own runtime.  Message tests count every message and check the sum and
 * per-producer order, so a lost, duplicated or reordered element fails.
 * Where a case needs a task blocked in a channel call, it polls the
 * task's state after the task announced the call; nothing rests on time.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static void run_in_task_nice(int workers, int nice, mqs_task_fn fn,
                             void *arg)
{
    mqs_runtime_t *rt = rt_new(workers);
    CHECK(join(spawn_prio(rt, MQS_CLASS_NORMAL, nice, fn, arg)) == NULL);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Basics                                                              */
/* ------------------------------------------------------------------ */

TEST(chan_buffered_fifo_try)
{
    mqs_chan_t *ch;
    CHECK_OK(mqs_chan_create(&ch, sizeof(int), 4));
    int v;
    CHECK_ERR(mqs_chan_tryrecv(ch, &v), MQS_EAGAIN);
    for (int i = 0; i < 4; i++) /* from a thread that is not a task */
        CHECK_OK(mqs_chan_trysend(ch, &i));
    int extra = 99;
    CHECK_ERR(mqs_chan_trysend(ch, &extra), MQS_EAGAIN);
    CHECK_EQ(mqs_chan_len(ch), 4);
    for (int round = 0; round < 3; round++) { /* wrap the ring around */
        CHECK_OK(mqs_chan_tryrecv(ch, &v));
        CHECK_EQ(v, round);
        int next = 4 + round;
        CHECK_OK(mqs_chan_trysend(ch, &next));
    }
    for (int i = 3; i < 7; i++) {
        CHECK_OK(mqs_chan_tryrecv(ch, &v));
        CHECK_EQ(v, i);
    }
    CHECK_ERR(mqs_chan_tryrecv(ch, &v), MQS_EAGAIN);
    CHECK_EQ(mqs_chan_len(ch), 0);
    CHECK_OK(mqs_chan_destroy(ch));
}

static void *timed_task(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    mqs_chan_t *ch;
    CHECK_OK(mqs_chan_create(&ch, sizeof(uint64_t), cap));
    uint64_t v = 7, out = 0;
    CHECK_ERR(mqs_chan_timedrecv(ch, &out, 1000000), MQS_ETIMEDOUT);
    CHECK_ERR(mqs_chan_timedrecv(ch, &out, 0), MQS_ETIMEDOUT);
    for (size_t i = 0; i < cap; i++)
        CHECK_OK(mqs_chan_timedsend(ch, &v, 0));
    CHECK_ERR(mqs_chan_timedsend(ch, &v, 1000000), MQS_ETIMEDOUT);
    CHECK_ERR(mqs_chan_timedsend(ch, &v, 0), MQS_ETIMEDOUT);
    CHECK_EQ(mqs_chan_len(ch), cap);
    for (size_t i = 0; i < cap; i++) {
        CHECK_OK(mqs_chan_timedrecv(ch, &out, 1000000));
        CHECK_EQ(out, 7);
    }
    CHECK_EQ(out, cap ? 7 : 0);
    CHECK_OK(mqs_chan_destroy(ch)); /* timed-out waiters left nothing */
    return NULL;
}

TEST(chan_timed_variants_time_out)
{
    run_in_task(2, timed_task, (void *)(uintptr_t)0);
    run_in_task(2, timed_task, (void *)(uintptr_t)3);
}

struct one {
    mqs_chan_t *ch;
    atomic_int announced;
    uint64_t got;
    int rc;
};

static void *recv_one(void *arg)
{
    struct one *o = arg;
    atomic_store(&o->announced, 1);
    o->rc = mqs_chan_recv(o->ch, &o->got);
    return NULL;
}

static void *send_one(void *arg)
{
    struct one *o = arg;
    atomic_store(&o->announced, 1);
    o->rc = mqs_chan_send(o->ch, &o->got);
    return NULL;
}

static void *rendezvous_task(void *arg)
{
    (void)arg;
    mqs_runtime_t *rt = mqs_runtime_self();
    struct one o = {.got = 0};
    CHECK_OK(mqs_chan_create(&o.ch, sizeof(uint64_t), 0));
    uint64_t v = 42;
    CHECK_ERR(mqs_chan_trysend(o.ch, &v), MQS_EAGAIN); /* nobody there */
    CHECK_ERR(mqs_chan_tryrecv(o.ch, &v), MQS_EAGAIN);
    /* Receiver first: the sender hands straight into its buffer. */
    mqs_task_t *t = spawn(rt, recv_one, &o);
    wait_blocked(t, &o.announced);
    CHECK_ERR(mqs_chan_destroy(o.ch), MQS_EBUSY);
    CHECK_EQ(mqs_chan_len(o.ch), 0);
    CHECK_OK(mqs_chan_trysend(o.ch, &v));
    join(t);
    CHECK_OK(o.rc);
    CHECK_EQ(o.got, 42);
    /* Sender first: the receiver takes from the sender's element. */
    atomic_store(&o.announced, 0);
    o.got = 43;
    t = spawn(rt, send_one, &o);
    wait_blocked(t, &o.announced);
    CHECK_ERR(mqs_chan_destroy(o.ch), MQS_EBUSY);
    v = 0;
    CHECK_OK(mqs_chan_recv(o.ch, &v));
    join(t);
    CHECK_OK(o.rc);
    CHECK_EQ(v, 43);
    CHECK_OK(mqs_chan_destroy(o.ch));
    return NULL;
}

TEST(chan_rendezvous_both_orders)
{
    run_in_task(2, rendezvous_task, NULL);
}

/* A full buffered channel with a blocked sender: a receive takes the
 * head and moves the sender's element to the tail, keeping FIFO. */
static void *full_task(void *arg)
{
    (void)arg;
    struct one o = {.got = 100};
    CHECK_OK(mqs_chan_create(&o.ch, sizeof(uint64_t), 2));
    for (uint64_t i = 1; i <= 2; i++)
        CHECK_OK(mqs_chan_send(o.ch, &i));
    mqs_task_t *t = spawn(mqs_runtime_self(), send_one, &o);
    wait_blocked(t, &o.announced);
    uint64_t v;
    CHECK_OK(mqs_chan_recv(o.ch, &v));
    CHECK_EQ(v, 1);
    join(t);
    CHECK_OK(o.rc);
    CHECK_EQ(mqs_chan_len(o.ch), 2);
    CHECK_OK(mqs_chan_recv(o.ch, &v));
    CHECK_EQ(v, 2);
    CHECK_OK(mqs_chan_recv(o.ch, &v));
    CHECK_EQ(v, 100);
    CHECK_OK(mqs_chan_destroy(o.ch));
    return NULL;
}

TEST(chan_full_sender_keeps_fifo)
{
    run_in_task(2, full_task, NULL);
}

/* ------------------------------------------------------------------ */
/* Many producers and consumers                                        */
/* ------------------------------------------------------------------ */

#define MP_PRODUCERS 4
#define MP_CONSUMERS 3
#define MP_MSGS 4000

/* A 24-byte element: a torn or mixed copy shows in the check word. */
struct msg {
    uint64_t producer, seq, check;
};

struct mpmc {
    mqs_chan_t *ch;
    mqs_waitgroup_t producers;
    atomic_uchar seen[MP_PRODUCERS * MP_MSGS];
    _Atomic uint64_t sum, count;
};

struct producer {
    struct mpmc *m;
    uint64_t p;
};

static void *mp_producer(void *arg)
{
    struct mpmc *m = ((struct producer *)arg)->m;
    uint64_t p = ((struct producer *)arg)->p;
    for (uint64_t i = 0; i < MP_MSGS; i++) {
        struct msg msg = {p, i, (p * MP_MSGS + i) ^ UINT64_C(0x5bd1e995)};
        CHECK_OK(mqs_chan_send(m->ch, &msg));
    }
    CHECK_OK(mqs_waitgroup_done(&m->producers));
    return NULL;
}

static void *mp_consumer(void *arg)
{
    struct mpmc *m = arg;
    int64_t last[MP_PRODUCERS];
    for (int p = 0; p < MP_PRODUCERS; p++)
        last[p] = -1;
    struct msg msg;
    int rc;
    while ((rc = mqs_chan_recv(m->ch, &msg)) == 0) {
        CHECK_LT(msg.producer, MP_PRODUCERS);
        CHECK_LT(msg.seq, MP_MSGS);
        uint64_t id = msg.producer * MP_MSGS + msg.seq;
        CHECK_EQ(msg.check, id ^ UINT64_C(0x5bd1e995));
        CHECK_GT((int64_t)msg.seq, last[msg.producer]); /* FIFO per sender */
        last[msg.producer] = (int64_t)msg.seq;
        CHECK_EQ(atomic_fetch_add(&m->seen[id], 1), 0);
        atomic_fetch_add(&m->sum, id);
        atomic_fetch_add(&m->count, 1);
    }
    CHECK_ERR(rc, MQS_ECLOSED);
    return NULL;
}

static void *mp_closer(void *arg)
{
    struct mpmc *m = arg;
    CHECK_OK(mqs_waitgroup_wait(&m->producers));
    CHECK_OK(mqs_chan_close(m->ch));
    return NULL;
}

static void run_mpmc(size_t cap)
{
    static struct mpmc m;
    memset(&m, 0, sizeof m);
    struct producer args[MP_PRODUCERS];
    mqs_runtime_t *rt = rt_new(2);
    CHECK_OK(mqs_chan_create(&m.ch, sizeof(struct msg), cap));
    CHECK_OK(mqs_waitgroup_init(&m.producers));
    CHECK_OK(mqs_waitgroup_add(&m.producers, MP_PRODUCERS));
    mqs_task_t *t[MP_PRODUCERS + MP_CONSUMERS + 1];
    int n = 0;
    for (int i = 0; i < MP_CONSUMERS; i++)
        t[n++] = spawn(rt, mp_consumer, &m);
    for (int p = 0; p < MP_PRODUCERS; p++) {
        args[p] = (struct producer){&m, (uint64_t)p};
        t[n++] = spawn(rt, mp_producer, &args[p]);
    }
    t[n++] = spawn(rt, mp_closer, &m);
    for (int i = 0; i < n; i++)
        join(t[i]);
    uint64_t total = (uint64_t)MP_PRODUCERS * MP_MSGS;
    CHECK_EQ(atomic_load(&m.count), total);
    CHECK_EQ(atomic_load(&m.sum), total * (total - 1) / 2);
    for (uint64_t i = 0; i < total; i++)
        CHECK_EQ(atomic_load(&m.seen[i]), 1);
    CHECK_EQ(mqs_chan_len(m.ch), 0);
    CHECK_OK(mqs_chan_destroy(m.ch));
    CHECK_OK(mqs_waitgroup_destroy(&m.producers));
    CHECK_OK(mqs_runtime_destroy(rt));
}

TEST(chan_mpmc_buffered)
{
    run_mpmc(8);
}

TEST(chan_mpmc_capacity_one)
{
    run_mpmc(1);
}

TEST(chan_mpmc_rendezvous)
{
    run_mpmc(0);
}

/* ------------------------------------------------------------------ */
/* Close                                                               */
/* ------------------------------------------------------------------ */

TEST(chan_close_drains_then_closed)
{
    mqs_chan_t *ch;
    CHECK_OK(mqs_chan_create(&ch, sizeof(int), 4));
    for (int i = 0; i < 2; i++)
        CHECK_OK(mqs_chan_trysend(ch, &i));
    CHECK_OK(mqs_chan_close(ch));
    CHECK_ERR(mqs_chan_close(ch), MQS_ECLOSED);
    int v = 5;
    CHECK_ERR(mqs_chan_trysend(ch, &v), MQS_ECLOSED);
    CHECK_EQ(mqs_chan_len(ch), 2);
    for (int i = 0; i < 2; i++) {
        CHECK_OK(mqs_chan_tryrecv(ch, &v));
        CHECK_EQ(v, i);
    }
    CHECK_ERR(mqs_chan_tryrecv(ch, &v), MQS_ECLOSED);
    CHECK_OK(mqs_chan_destroy(ch));
}

#define CLOSE_WAITERS 4

static void *close_task(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    mqs_runtime_t *rt = mqs_runtime_self();
    mqs_chan_t *rch, *sch;
    CHECK_OK(mqs_chan_create(&rch, sizeof(uint64_t), cap));
    CHECK_OK(mqs_chan_create(&sch, sizeof(uint64_t), cap));
    uint64_t fill = 1;
    for (size_t i = 0; i < cap; i++)
        CHECK_OK(mqs_chan_send(sch, &fill));
    struct one r[CLOSE_WAITERS], s[CLOSE_WAITERS];
    mqs_task_t *rt_[CLOSE_WAITERS], *st[CLOSE_WAITERS];
    for (int i = 0; i < CLOSE_WAITERS; i++) {
        r[i] = (struct one){.ch = rch};
        s[i] = (struct one){.ch = sch, .got = 2};
        rt_[i] = spawn(rt, recv_one, &r[i]);
        st[i] = spawn(rt, send_one, &s[i]);
        wait_blocked(rt_[i], &r[i].announced);
        wait_blocked(st[i], &s[i].announced);
    }
    CHECK_ERR(mqs_chan_destroy(rch), MQS_EBUSY);
    CHECK_ERR(mqs_chan_destroy(sch), MQS_EBUSY);
    CHECK_OK(mqs_chan_close(rch));
    CHECK_OK(mqs_chan_close(sch));
    for (int i = 0; i < CLOSE_WAITERS; i++) {
        join(rt_[i]);
        join(st[i]);
        CHECK_ERR(r[i].rc, MQS_ECLOSED);
        CHECK_ERR(s[i].rc, MQS_ECLOSED);
    }
    for (size_t i = 0; i < cap; i++) { /* the buffered ones drain */
        uint64_t v = 0;
        CHECK_OK(mqs_chan_recv(sch, &v));
        CHECK_EQ(v, 1);
    }
    uint64_t v;
    CHECK_ERR(mqs_chan_recv(sch, &v), MQS_ECLOSED);
    CHECK_ERR(mqs_chan_send(rch, &v), MQS_ECLOSED);
    CHECK_ERR(mqs_chan_timedrecv(rch, &v, 1000000), MQS_ECLOSED);
    CHECK_OK(mqs_chan_destroy(rch));
    CHECK_OK(mqs_chan_destroy(sch));
    return NULL;
}

TEST(chan_close_wakes_all_waiters)
{
    run_in_task(2, close_task, (void *)(uintptr_t)0);
    run_in_task(2, close_task, (void *)(uintptr_t)2);
}

/* ------------------------------------------------------------------ */
/* Priority                                                            */
/* ------------------------------------------------------------------ */

#define PW 7
static const mqs_class_t prio_cls[PW] = {
    MQS_CLASS_NORMAL, MQS_CLASS_NORMAL, MQS_CLASS_NORMAL, MQS_CLASS_FIFO,
    MQS_CLASS_NORMAL, MQS_CLASS_FIFO, MQS_CLASS_NORMAL};
static const int prio_val[PW] = {10, 18, 0, 10, -10, 50, 0};
/* Waiter ids in the order they must be served. */
static const int prio_expect[PW] = {5, 3, 4, 2, 6, 0, 1};

/* Spawn waiter i at prio_cls[i]/prio_val[i] running fn(&o[i]), each
 * blocked in its channel call before the next starts: they arrive in
 * index order, whatever their priorities. */
static void block_by_prio(mqs_task_t *t[PW], struct one o[PW], mqs_task_fn fn)
{
    mqs_runtime_t *rt = mqs_runtime_self();
    for (int i = 0; i < PW; i++) {
        t[i] = spawn_prio(rt, prio_cls[i], prio_val[i], fn, &o[i]);
        wait_blocked(t[i], &o[i].announced);
    }
}

/* Receivers of different priorities block one after another on an empty
 * channel; values 0..PW-1 sent in order must reach them by priority. */
static void *prio_recv_task(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    struct one o[PW];
    mqs_task_t *t[PW];
    mqs_chan_t *ch;
    CHECK_OK(mqs_chan_create(&ch, sizeof(uint64_t), cap));
    for (int i = 0; i < PW; i++)
        o[i] = (struct one){.ch = ch, .got = 999};
    block_by_prio(t, o, recv_one);
    for (uint64_t v = 0; v < PW; v++)
        CHECK_OK(mqs_chan_send(ch, &v));
    for (int i = 0; i < PW; i++) {
        join(t[prio_expect[i]]);
        CHECK_OK(o[prio_expect[i]].rc);
        CHECK_EQ(o[prio_expect[i]].got, i);
    }
    CHECK_OK(mqs_chan_destroy(ch));
    return NULL;
}

/* Senders of different priorities block on a full (or rendezvous)
 * channel; receives must take their elements in priority order. */
static void *prio_send_task(void *arg)
{
    size_t cap = (size_t)(uintptr_t)arg;
    struct one o[PW];
    mqs_task_t *t[PW];
    mqs_chan_t *ch;
    CHECK_OK(mqs_chan_create(&ch, sizeof(uint64_t), cap));
    uint64_t fill = 1000;
    for (size_t i = 0; i < cap; i++)
        CHECK_OK(mqs_chan_send(ch, &fill));
    for (int i = 0; i < PW; i++)
        o[i] = (struct one){.ch = ch, .got = (uint64_t)i};
    block_by_prio(t, o, send_one);
    uint64_t v;
    for (size_t i = 0; i < cap; i++) {
        CHECK_OK(mqs_chan_recv(ch, &v));
        CHECK_EQ(v, 1000);
    }
    for (int i = 0; i < PW; i++) {
        CHECK_OK(mqs_chan_recv(ch, &v));
        CHECK_EQ(v, prio_expect[i]);
    }
    for (int i = 0; i < PW; i++) {
        join(t[i]);
        CHECK_OK(o[i].rc);
    }
    CHECK_OK(mqs_chan_destroy(ch));
    return NULL;
}

TEST(chan_priority_order)
{
    for (uintptr_t cap = 0; cap <= 2; cap += 2) {
        /* The controller is nice 19, less urgent than every waiter. */
        run_in_task_nice(1, 19, prio_recv_task, (void *)cap);
        run_in_task_nice(1, 19, prio_send_task, (void *)cap);
    }
}

/* ------------------------------------------------------------------ */
/* Bad input                                                           */
/* ------------------------------------------------------------------ */

TEST(chan_bad_arguments)
{
    mqs_chan_t *ch = (mqs_chan_t *)1;
    CHECK_ERR(mqs_chan_create(NULL, 4, 1), MQS_EINVAL);
    CHECK_ERR(mqs_chan_create(&ch, 0, 1), MQS_EINVAL);
    CHECK_ERR(mqs_chan_create(&ch, 64 * 1024 + 1, 1), MQS_EINVAL);
    CHECK_ERR(mqs_chan_create(&ch, 8, SIZE_MAX / 4), MQS_EINVAL);
    CHECK(ch == (mqs_chan_t *)1); /* untouched on error */
    CHECK_OK(mqs_chan_create(&ch, 64 * 1024, 2));
    CHECK_OK(mqs_chan_destroy(ch));
    CHECK_OK(mqs_chan_create(&ch, 8, 1));
    uint64_t v = 3;
    CHECK_ERR(mqs_chan_send(NULL, &v), MQS_EINVAL);
    CHECK_ERR(mqs_chan_send(ch, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_chan_recv(NULL, &v), MQS_EINVAL);
    CHECK_ERR(mqs_chan_recv(ch, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_chan_trysend(NULL, &v), MQS_EINVAL);
    CHECK_ERR(mqs_chan_trysend(ch, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_chan_tryrecv(NULL, &v), MQS_EINVAL);
    CHECK_ERR(mqs_chan_tryrecv(ch, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_chan_timedsend(NULL, &v, 1), MQS_EINVAL);
    CHECK_ERR(mqs_chan_timedsend(ch, NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_chan_timedrecv(NULL, &v, 1), MQS_EINVAL);
    CHECK_ERR(mqs_chan_timedrecv(ch, NULL, 1), MQS_EINVAL);
    CHECK_ERR(mqs_chan_close(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_chan_destroy(NULL), MQS_EINVAL);
    CHECK_EQ(mqs_chan_len(NULL), 0);
    /* Blocking calls outside a task; nothing changes. */
    CHECK_ERR(mqs_chan_send(ch, &v), MQS_EPERM);
    CHECK_ERR(mqs_chan_timedsend(ch, &v, 1), MQS_EPERM);
    CHECK_ERR(mqs_chan_recv(ch, &v), MQS_EPERM);
    CHECK_ERR(mqs_chan_timedrecv(ch, &v, 1), MQS_EPERM);
    CHECK_EQ(mqs_chan_len(ch), 0);
    CHECK_OK(mqs_chan_trysend(ch, &v));
    CHECK_EQ(mqs_chan_len(ch), 1);
    CHECK_OK(mqs_chan_destroy(ch));
}
