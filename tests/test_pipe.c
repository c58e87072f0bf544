/*
 * test_pipe.c - in-process byte pipes (mqs_pipe_t).  The stream cases
 * write a seeded byte sequence in random-sized pieces and read it back
 * in other random-sized pieces on another worker, checking every byte
 * and the total, so a lost, duplicated or reordered byte fails.  Where a
 * case needs a task blocked in a pipe call it polls the task's state
 * after the task announced the call; nothing rests on time.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

/* Byte i of the stream of seed s: cheap, and no two nearby bytes or
 * streams agree by accident for long. */
static unsigned char stream_byte(uint64_t s, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ s;
    return (unsigned char)(x >> 29 ^ x >> 7);
}

/* ------------------------------------------------------------------ */
/* Basics from a thread that is not a task                             */
/* ------------------------------------------------------------------ */

TEST(pipe_try_fifo_wraps)
{
    mqs_pipe_t *p;
    CHECK_OK(mqs_pipe_create(&p, 5));
    unsigned char buf[8];
    size_t n = 99;
    CHECK_ERR(mqs_pipe_tryread(p, buf, sizeof buf, &n), MQS_EAGAIN);
    CHECK_EQ(n, 0);
    CHECK_OK(mqs_pipe_trywrite(p, "abc", 3, &n));
    CHECK_EQ(n, 3);
    CHECK_OK(mqs_pipe_trywrite(p, "defg", 4, &n)); /* only 2 fit */
    CHECK_EQ(n, 2);
    CHECK_EQ(mqs_pipe_len(p), 5);
    CHECK_ERR(mqs_pipe_trywrite(p, "x", 1, &n), MQS_EAGAIN);
    CHECK_EQ(n, 0);
    CHECK_OK(mqs_pipe_tryread(p, buf, 2, &n));
    CHECK_EQ(n, 2);
    CHECK(memcmp(buf, "ab", 2) == 0);
    CHECK_OK(mqs_pipe_trywrite(p, "fgh", 3, &n)); /* wraps the ring */
    CHECK_EQ(n, 2);
    CHECK_OK(mqs_pipe_tryread(p, buf, sizeof buf, &n));
    CHECK_EQ(n, 5);
    CHECK(memcmp(buf, "cdefg", 5) == 0);
    CHECK_EQ(mqs_pipe_len(p), 0);
    CHECK_OK(mqs_pipe_destroy(p));
}

TEST(pipe_close_drains_then_ends)
{
    mqs_pipe_t *p;
    CHECK_OK(mqs_pipe_create(&p, 16));
    size_t n;
    CHECK_OK(mqs_pipe_trywrite(p, "hello", 5, &n));
    CHECK_OK(mqs_pipe_close(p));
    CHECK_ERR(mqs_pipe_close(p), MQS_ECLOSED);
    CHECK_ERR(mqs_pipe_trywrite(p, "x", 1, &n), MQS_ECLOSED);
    CHECK_EQ(n, 0);
    unsigned char buf[4];
    CHECK_OK(mqs_pipe_tryread(p, buf, 4, &n));
    CHECK_EQ(n, 4);
    CHECK_OK(mqs_pipe_tryread(p, buf, 4, &n));
    CHECK_EQ(n, 1);
    CHECK_EQ(buf[0], 'o');
    CHECK_ERR(mqs_pipe_tryread(p, buf, 4, &n), MQS_ECLOSED);
    CHECK_EQ(n, 0);
    CHECK_OK(mqs_pipe_destroy(p));
}

TEST(pipe_bad_input_changes_nothing)
{
    mqs_pipe_t *p = NULL;
    CHECK_ERR(mqs_pipe_create(NULL, 4), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_create(&p, 0), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_create(&p, ((size_t)1 << 30) + 1), MQS_EINVAL);
    CHECK(p == NULL);
    CHECK_ERR(mqs_pipe_destroy(NULL), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_close(NULL), MQS_EINVAL);
    CHECK_EQ(mqs_pipe_len(NULL), 0);
    CHECK_OK(mqs_pipe_create(&p, 4));
    size_t n;
    unsigned char buf[4];
    CHECK_OK(mqs_pipe_trywrite(p, "ab", 2, &n));
    CHECK_ERR(mqs_pipe_tryread(p, buf, 0, &n), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_tryread(p, NULL, 4, &n), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_tryread(p, buf, 4, NULL), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_tryread(NULL, buf, 4, &n), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_trywrite(p, NULL, 1, &n), MQS_EINVAL);
    CHECK_ERR(mqs_pipe_trywrite(NULL, "a", 1, &n), MQS_EINVAL);
    /* Blocking forms from a thread that is not a task. */
    CHECK_ERR(mqs_pipe_read(p, buf, 4, &n), MQS_EPERM);
    CHECK_ERR(mqs_pipe_write(p, "a", 1, &n), MQS_EPERM);
    CHECK_ERR(mqs_pipe_timedread(p, buf, 4, &n, 1000), MQS_EPERM);
    CHECK_ERR(mqs_pipe_timedwrite(p, "a", 1, &n, 1000), MQS_EPERM);
    /* Nothing moved: the two bytes are still there, in order. */
    CHECK_EQ(mqs_pipe_len(p), 2);
    CHECK_OK(mqs_pipe_tryread(p, buf, 4, &n));
    CHECK_EQ(n, 2);
    CHECK(memcmp(buf, "ab", 2) == 0);
    CHECK_OK(mqs_pipe_trywrite(p, "", 0, &n)); /* empty write: a no-op */
    CHECK_EQ(n, 0);
    CHECK_EQ(mqs_pipe_len(p), 0);
    CHECK_OK(mqs_pipe_destroy(p));
}

/* ------------------------------------------------------------------ */
/* Streams between tasks on different workers                         */
/* ------------------------------------------------------------------ */

struct stream {
    mqs_pipe_t *p;
    uint64_t seed, total; /* bytes to send */
    size_t max_piece;     /* pieces are 1..max_piece bytes              */
    uint64_t got;         /* bytes the reader checked                   */
    uint64_t bad_at;      /* first mismatching offset + 1, 0 = none     */
    int wrc, rrc, end_rc; /* last write rc, read rc, the read after end */
};

static void *stream_writer(void *arg)
{
    struct stream *s = arg;
    uint64_t rng = s->seed ^ 1, off = 0;
    unsigned char *buf = malloc(s->max_piece);
    CHECK(buf != NULL);
    while (off < s->total && s->wrc == 0) {
        size_t n = 1 + rng_next(&rng) % s->max_piece;
        n = n < s->total - off ? n : (size_t)(s->total - off);
        for (size_t i = 0; i < n; i++)
            buf[i] = stream_byte(s->seed, off + i);
        size_t w = 0;
        s->wrc = mqs_pipe_write(s->p, buf, n, &w);
        if (s->wrc == 0 && w != n)
            s->wrc = -1000; /* success must mean all of it */
        off += w;
    }
    free(buf);
    CHECK_OK(mqs_pipe_close(s->p));
    return NULL;
}

static void *stream_reader(void *arg)
{
    struct stream *s = arg;
    uint64_t rng = s->seed ^ 2;
    unsigned char *buf = malloc(s->max_piece);
    CHECK(buf != NULL);
    for (;;) {
        size_t want = 1 + rng_next(&rng) % s->max_piece, n = 0;
        int rc = mqs_pipe_read(s->p, buf, want, &n);
        if (rc != 0) {
            s->end_rc = rc;
            break;
        }
        if (n == 0 || n > want)
            s->rrc = -1000;
        for (size_t i = 0; i < n && !s->bad_at; i++)
            if (buf[i] != stream_byte(s->seed, s->got + i))
                s->bad_at = s->got + i + 1;
        s->got += n;
    }
    free(buf);
    return NULL;
}

static void run_stream(size_t cap, size_t max_piece, uint64_t total,
                       uint64_t seed, int workers)
{
    mqs_runtime_t *rt = rt_new(workers);
    struct stream s = {.seed = seed, .total = total, .max_piece = max_piece};
    CHECK_OK(mqs_pipe_create(&s.p, cap));
    mqs_task_t *r = spawn_on(rt, workers - 1, stream_reader, &s);
    mqs_task_t *w = spawn_on(rt, 0, stream_writer, &s);
    join(w);
    join(r);
    CHECK_OK(s.wrc);
    CHECK_OK(s.rrc);
    CHECK_EQ(s.bad_at, 0);
    CHECK_EQ(s.got, total);
    CHECK_ERR(s.end_rc, MQS_ECLOSED);
    CHECK_EQ(mqs_pipe_len(s.p), 0);
    CHECK_OK(mqs_pipe_destroy(s.p));
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* Pieces mostly larger than the ring: writers wait often, readers are
 * served both from the ring and straight from a waiting writer. */
TEST(pipe_stream_small_ring_two_workers)
{
    run_stream(61, 200, 300000, 11, 2);
}

/* Capacity 1: every byte goes through a block and a wake-up. */
TEST(pipe_stream_capacity_one)
{
    run_stream(1, 9, 20000, 12, 2);
}

/* Ring larger than the pieces: mostly buffered, few waits. */
TEST(pipe_stream_large_ring)
{
    run_stream(65536, 5000, 2000000, 13, 2);
}

TEST(pipe_stream_one_worker)
{
    run_stream(97, 300, 200000, 14, 1);
}

/* ------------------------------------------------------------------ */
/* Blocked tasks: close, timeouts, destroy while waited on, priority   */
/* ------------------------------------------------------------------ */

struct one {
    mqs_pipe_t *p;
    atomic_int announced;
    unsigned char buf[64];
    size_t n, moved;
    int rc;
};

static void *read_one(void *arg)
{
    struct one *o = arg;
    atomic_store(&o->announced, 1);
    o->rc = mqs_pipe_read(o->p, o->buf, o->n, &o->moved);
    return NULL;
}

static void *write_one(void *arg)
{
    struct one *o = arg;
    atomic_store(&o->announced, 1);
    o->rc = mqs_pipe_write(o->p, o->buf, o->n, &o->moved);
    return NULL;
}

static void *close_wakes_task(void *arg)
{
    (void)arg;
    mqs_runtime_t *rt = mqs_runtime_self();
    mqs_pipe_t *p;
    CHECK_OK(mqs_pipe_create(&p, 8));
    struct one r = {.p = p, .n = 4, .moved = 99};
    mqs_task_t *t = spawn(rt, read_one, &r);
    wait_blocked(t, &r.announced);
    CHECK_ERR(mqs_pipe_destroy(p), MQS_EBUSY); /* frees nothing */
    CHECK_OK(mqs_pipe_close(p));
    join(t);
    CHECK_ERR(r.rc, MQS_ECLOSED);
    CHECK_EQ(r.moved, 0);
    CHECK_OK(mqs_pipe_destroy(p));
    /* A writer with more than fits: 8 bytes go in, then close. */
    CHECK_OK(mqs_pipe_create(&p, 8));
    struct one w = {.p = p, .n = 20};
    memset(w.buf, 'w', sizeof w.buf);
    t = spawn(rt, write_one, &w);
    wait_blocked(t, &w.announced);
    CHECK_EQ(mqs_pipe_len(p), 8);
    CHECK_OK(mqs_pipe_close(p));
    join(t);
    CHECK_ERR(w.rc, MQS_ECLOSED);
    CHECK_EQ(w.moved, 8);
    unsigned char buf[32];
    size_t n;
    CHECK_OK(mqs_pipe_read(p, buf, sizeof buf, &n)); /* still drains */
    CHECK_EQ(n, 8);
    CHECK_ERR(mqs_pipe_read(p, buf, sizeof buf, &n), MQS_ECLOSED);
    CHECK_OK(mqs_pipe_destroy(p));
    return NULL;
}

TEST(pipe_close_wakes_blocked)
{
    run_in_task(2, close_wakes_task, NULL);
}

static void *timed_task(void *arg)
{
    (void)arg;
    mqs_pipe_t *p;
    CHECK_OK(mqs_pipe_create(&p, 4));
    unsigned char buf[8] = "abcdefg";
    size_t n = 99;
    CHECK_ERR(mqs_pipe_timedread(p, buf, 8, &n, 0), MQS_ETIMEDOUT);
    CHECK_ERR(mqs_pipe_timedread(p, buf, 8, &n, 2000000), MQS_ETIMEDOUT);
    CHECK_EQ(n, 0);
    CHECK_ERR(mqs_pipe_timedwrite(p, buf, 7, &n, 2000000), MQS_ETIMEDOUT);
    CHECK_EQ(n, 4); /* what fitted stays written */
    CHECK_ERR(mqs_pipe_timedwrite(p, buf, 1, &n, 0), MQS_ETIMEDOUT);
    CHECK_EQ(n, 0);
    CHECK_OK(mqs_pipe_timedread(p, buf, 8, &n, 1000000));
    CHECK_EQ(n, 4);
    CHECK(memcmp(buf, "abcd", 4) == 0);
    CHECK_OK(mqs_pipe_destroy(p));
    return NULL;
}

TEST(pipe_timed_forms)
{
    run_in_task(1, timed_task, NULL);
}

/* A reader blocked on an empty pipe is handed the bytes directly by a
 * writer; a writer blocked on a full pipe is drained in place by a
 * reader and returns only when all its bytes are out. */
static void *handoff_task(void *arg)
{
    (void)arg;
    mqs_runtime_t *rt = mqs_runtime_self();
    mqs_pipe_t *p;
    CHECK_OK(mqs_pipe_create(&p, 4));
    struct one r = {.p = p, .n = 3};
    mqs_task_t *t = spawn(rt, read_one, &r);
    wait_blocked(t, &r.announced);
    size_t n;
    CHECK_OK(mqs_pipe_write(p, "xyzuv", 5, &n)); /* 3 to r, 2 buffered */
    CHECK_EQ(n, 5);
    join(t);
    CHECK_OK(r.rc);
    CHECK_EQ(r.moved, 3);
    CHECK(memcmp(r.buf, "xyz", 3) == 0);
    CHECK_EQ(mqs_pipe_len(p), 2);
    struct one w = {.p = p, .n = 10};
    memcpy(w.buf, "0123456789", 10);
    t = spawn(rt, write_one, &w);
    wait_blocked(t, &w.announced); /* 2 of its bytes fitted */
    unsigned char buf[16];
    size_t total = 0;
    while (total < 12) {
        CHECK_OK(mqs_pipe_read(p, buf + total, 3, &n));
        total += n;
    }
    join(t);
    CHECK_OK(w.rc);
    CHECK_EQ(w.moved, 10);
    CHECK(memcmp(buf, "uv0123456789", 12) == 0);
    CHECK_OK(mqs_pipe_destroy(p));
    return NULL;
}

TEST(pipe_handoff_both_sides)
{
    run_in_task(1, handoff_task, NULL);
    run_in_task(2, handoff_task, NULL);
}

/* Readers of different priorities block in index order; one-byte
 * writes must reach them most urgent first. */
#define PW 5
static const mqs_class_t prio_cls[PW] = {MQS_CLASS_NORMAL, MQS_CLASS_FIFO,
                                         MQS_CLASS_NORMAL, MQS_CLASS_FIFO,
                                         MQS_CLASS_NORMAL};
static const int prio_val[PW] = {10, 10, -10, 50, 0};
static const int prio_expect[PW] = {3, 1, 2, 4, 0};

static void *prio_task(void *arg)
{
    (void)arg;
    mqs_runtime_t *rt = mqs_runtime_self();
    mqs_pipe_t *p;
    CHECK_OK(mqs_pipe_create(&p, 16));
    struct one o[PW];
    mqs_task_t *t[PW];
    for (int i = 0; i < PW; i++) {
        o[i] = (struct one){.p = p, .n = 8};
        t[i] = spawn_prio(rt, prio_cls[i], prio_val[i], read_one, &o[i]);
        wait_blocked(t[i], &o[i].announced);
    }
    for (int i = 0; i < PW; i++) {
        unsigned char b = (unsigned char)('A' + i);
        size_t n;
        CHECK_OK(mqs_pipe_write(p, &b, 1, &n));
    }
    for (int i = 0; i < PW; i++) {
        struct one *x = &o[prio_expect[i]];
        join(t[prio_expect[i]]);
        CHECK_OK(x->rc);
        CHECK_EQ(x->moved, 1);
        CHECK_EQ(x->buf[0], 'A' + i);
    }
    CHECK_OK(mqs_pipe_destroy(p));
    return NULL;
}

TEST(pipe_readers_served_by_priority)
{
    run_in_task(1, prio_task, NULL);
}
