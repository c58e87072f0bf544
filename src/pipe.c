/*
 * pipe.c - in-process byte pipes between tasks: a bounded byte stream
 * with blocking read and write that block only the calling task, the
 * user-level analogue of pipe(2) that lmbench's lat_pipe and bw_pipe
 * measure.
 *
 * A pipe is one allocation: a header and a ring of `cap` bytes.  As in
 * chan.c, one wait queue holds every blocked task and its spinlock guards
 * everything; `side` says whether the queued tasks are readers or
 * writers.  One queue suffices because the two sides never wait at the
 * same time, which every operation keeps true:
 *
 *   readers wait only while the ring is empty, and a writer that finds
 *   readers waiting copies straight into their buffers (most urgent
 *   first) before it puts anything in the ring, so readers never wait
 *   beside buffered bytes;
 *   writers wait only while the ring is full, and a reader that frees
 *   room refills it from the waiting writers (most urgent first) before
 *   it returns, so writers never wait beside free room.
 *
 * A blocked task parks a `struct pipe_waiter` (its buffer, how many bytes
 * it wants, how many it got) in t->wait_data.  A reader is popped when it
 * is served: it takes what one writer hands it, then returns.  A writer
 * is served in place, possibly by several readers, and popped only once
 * all its bytes are out; its `done` count is updated under the lock, and
 * a writer whose timer fires cannot run before the timer code has taken
 * the same lock to unlink it (waitq.c), so `done` is exact when it wakes.
 * A task popped with work left (a writer popped by close, or by a pop
 * that skipped a waiter whose timer won) simply loops and tries again.
 * Copies happen under the lock: the ring and the waiters' buffers are
 * then never touched by two parties, and at bandwidth sizes (64 KiB) the
 * memcpy dominates either way.  Tasks popped are chained through their
 * waiter record and woken after the lock is dropped, since a wake-up may
 * switch to the woken task (the chain's next link is read before).
 *
 * Close wakes everyone with MQS_ECLOSED: waiting readers imply an empty
 * ring, so end-of-stream is right for them; later readers drain the ring
 * first.  Writers, waiting or not, get MQS_ECLOSED and the count of
 * bytes that went in.
 *
 * Rejected: waking every waiting reader on a write (a herd for one byte);
 * popping writers as soon as any of their bytes move (a big write would
 * wake its writer once per ring-full, where lmbench's bw_pipe writes
 * 64 KiB at a time); two wait queues (mqs__block releases exactly one
 * queue lock, see chan.c).
 *
 * Callers: read, write and their timed forms are task only (MQS_EPERM
 * elsewhere); the try forms, close, len, create and destroy may also be
 * called from threads that are not tasks.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "plist.h"

#define PIPE_CAP_MAX ((size_t)1 << 30)

enum { PIPE_SIDE_WRITE = 0, PIPE_SIDE_READ = 1 };
enum { PIPE_TRY, PIPE_TIMED, PIPE_FOREVER };

struct mqs_pipe {
    struct mqs__waitq q; /* its lock guards every field below            */
    size_t cap;          /* ring bytes, constant after create             */
    size_t head;         /* offset of the oldest byte                     */
    size_t len;          /* bytes in the ring (read racily by len())      */
    int side;            /* PIPE_SIDE_* of the queued tasks, nwait > 0    */
    bool closed;
    unsigned char ring[];
};

/* What a blocked task parks in wait_data; lives on its stack. */
struct pipe_waiter {
    unsigned char *buf;      /* reader: destination; writer: source      */
    size_t n, done;          /* wanted, and moved so far (under the lock) */
    struct mqs_task *task;
    struct pipe_waiter *next; /* wake chain, after being popped           */
};

/* One call in progress. */
struct pipe_op {
    bool may_block;
    int fail;          /* answer when it would block and may not          */
    uint64_t deadline; /* 0 = none                                        */
    struct pipe_waiter *woken; /* popped tasks, woken after unlocking      */
};

static inline void pipe_set_len(struct mqs_pipe *p, size_t len)
{
    __atomic_store_n(&p->len, len, __ATOMIC_RELAXED);
}

int mqs_pipe_create(mqs_pipe_t **out, size_t capacity)
{
    if (!out || capacity == 0 || capacity > PIPE_CAP_MAX)
        return MQS_EINVAL;
    struct mqs_pipe *p = mqs__malloc(sizeof *p + capacity);
    if (!p)
        return MQS_ENOMEM;
    mqs__waitq_init(&p->q);
    p->cap = capacity;
    p->head = 0;
    p->len = 0;
    p->side = PIPE_SIDE_WRITE;
    p->closed = false;
    *out = p;
    return 0;
}

int mqs_pipe_destroy(mqs_pipe_t *p)
{
    if (!p)
        return MQS_EINVAL;
    MQS__WAITQ_LOCK(&p->q);
    bool busy = p->q.nwait > 0;
    mqs__waitq_unlock(&p->q);
    if (busy)
        return MQS_EBUSY;
    free(p);
    return 0;
}

size_t mqs_pipe_len(const mqs_pipe_t *p)
{
    return p ? __atomic_load_n(&p->len, __ATOMIC_RELAXED) : 0;
}

static int pipe_op_init(struct pipe_op *op, const struct mqs_pipe *p,
                        const void *buf, int mode, uint64_t timeout_ns)
{
    if (!p || !buf)
        return MQS_EINVAL;
    if (mode != PIPE_TRY && !mqs__current())
        return MQS_EPERM;
    op->may_block = mode == PIPE_FOREVER || (mode == PIPE_TIMED && timeout_ns);
    op->fail = mode == PIPE_TRY ? MQS_EAGAIN : MQS_ETIMEDOUT;
    op->deadline =
        mode == PIPE_TIMED && timeout_ns ? mqs__deadline(timeout_ns) : 0;
    op->woken = NULL;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The ring (lock held)                                                */
/* ------------------------------------------------------------------ */

/* memcpy, but no call for nothing or for one byte: a one-byte message
 * (lat_pipe's, a self-pipe's wake-up) would otherwise make four calls
 * per round trip, two of them empty (the ring's wrapped second part, an
 * empty ring's get), and the others cost more than the byte. */
static inline void pipe_copy(unsigned char *dst, const unsigned char *src,
                             size_t n)
{
    if (n == 1)
        *dst = *src;
    else if (n)
        memcpy(dst, src, n);
}

/* Append up to n bytes from src; returns how many fitted. */
static size_t pipe_ring_put(struct mqs_pipe *p, const unsigned char *src,
                            size_t n)
{
    size_t room = p->cap - p->len;
    n = n < room ? n : room;
    size_t tail = mqs__ring_wrap(p->head + p->len, p->cap);
    size_t first = n < p->cap - tail ? n : p->cap - tail;
    pipe_copy(p->ring + tail, src, first);
    pipe_copy(p->ring, src + first, n - first);
    pipe_set_len(p, p->len + n);
    return n;
}

/* Take up to n bytes into dst; returns how many. */
static size_t pipe_ring_get(struct mqs_pipe *p, unsigned char *dst, size_t n)
{
    n = n < p->len ? n : p->len;
    if (!n)
        return 0; /* a reader about to wait: the ring is left alone */
    size_t first = n < p->cap - p->head ? n : p->cap - p->head;
    pipe_copy(dst, p->ring + p->head, first);
    pipe_copy(dst + first, p->ring, n - first);
    p->head = mqs__ring_wrap(p->head + n, p->cap);
    pipe_set_len(p, p->len - n);
    return n;
}

/* ------------------------------------------------------------------ */
/* Waiting and waking                                                  */
/* ------------------------------------------------------------------ */

static struct pipe_waiter *pipe_waiter_of(struct mqs_task *t)
{
    return t->wait_data;
}

/* Pop the most urgent waiter (of the queued side) onto op's wake chain;
 * NULL when nobody waits.  Lock held. */
static struct pipe_waiter *pipe_pop(struct mqs_pipe *p, struct pipe_op *op,
                                    int result)
{
    struct mqs_task *t = mqs__waitq_pop(&p->q, result);
    if (!t)
        return NULL;
    struct pipe_waiter *w = pipe_waiter_of(t);
    w->next = op->woken;
    op->woken = w;
    return w;
}

/* Unlock, then wake the chain (each link read before its wake). */
static void pipe_unlock_wake(struct mqs_pipe *p, struct pipe_op *op)
{
    mqs__waitq_unlock(&p->q);
    struct pipe_waiter *w = op->woken;
    while (w) {
        struct pipe_waiter *next = w->next;
        mqs__wake_flags(w->task, MQS_ENQ_SYNC);
        w = next;
    }
    op->woken = NULL;
}

/* Nothing more can move now (lock held): fail with op->fail, or block as
 * a `side` waiter.  Returns with the lock released either way (woken
 * tasks woken).  0 when woken to try again or served. */
static int pipe_wait(struct mqs_pipe *p, struct pipe_op *op, int side,
                     struct pipe_waiter *me)
{
    if (!op->may_block) {
        pipe_unlock_wake(p, op);
        return op->fail;
    }
    /* Wake the chain first: mqs__block must be entered with the lock held
     * and nothing else pending, so release, wake, and re-check. */
    if (op->woken) {
        pipe_unlock_wake(p, op);
        return 0;
    }
    struct mqs_task *t = mqs__current();
    me->task = t;
    t->wait_data = me;
    p->side = side;
    return mqs__block(&p->q, op->deadline,
                      side == PIPE_SIDE_READ ? "pipe read" : "pipe write", p);
}

/* ------------------------------------------------------------------ */
/* Read                                                                */
/* ------------------------------------------------------------------ */

/* Refill the ring from the waiting writers, most urgent first, popping
 * each one whose bytes are all in (lock held). */
static void pipe_refill(struct mqs_pipe *p, struct pipe_op *op)
{
    while (p->len < p->cap && p->q.nwait > 0 && p->side == PIPE_SIDE_WRITE) {
        struct mqs_task *t = mqs__waitq_first(&p->q);
        struct pipe_waiter *w = pipe_waiter_of(t);
        w->done += pipe_ring_put(p, w->buf + w->done, w->n - w->done);
        if (w->done < w->n)
            return; /* the ring is full again */
        /* May pop another writer if t's timer won; that one loops. */
        pipe_pop(p, op, 0);
    }
}

/* One attempt under the lock: take what the ring holds.  Returns bytes
 * taken (0: nothing there). */
static size_t pipe_take(struct mqs_pipe *p, struct pipe_op *op,
                        unsigned char *dst, size_t n)
{
    size_t got = pipe_ring_get(p, dst, n);
    if (got)
        pipe_refill(p, op);
    return got;
}

static int pipe_read(struct mqs_pipe *p, void *buf, size_t n, size_t *got,
                     int mode, uint64_t timeout_ns)
{
    struct pipe_op op;
    int rc = pipe_op_init(&op, p, buf, mode, timeout_ns);
    if (rc || !got || n == 0)
        return rc ? rc : MQS_EINVAL;
    *got = 0;
    struct pipe_waiter me = {.buf = buf, .n = n};
    for (;;) {
        MQS__WAITQ_LOCK(&p->q);
        *got = pipe_take(p, &op, buf, n);
        if (*got || p->closed) {
            rc = *got ? 0 : MQS_ECLOSED;
            pipe_unlock_wake(p, &op);
            return rc;
        }
        me.done = 0;
        rc = pipe_wait(p, &op, PIPE_SIDE_READ, &me);
        if (me.done) { /* a writer filled our buffer */
            *got = me.done;
            return 0;
        }
        if (rc)
            return rc; /* MQS_ECLOSED, MQS_ETIMEDOUT, MQS_EAGAIN */
    }
}

/* ------------------------------------------------------------------ */
/* Write                                                               */
/* ------------------------------------------------------------------ */

/* Serve waiting readers straight from src, then fill the ring; returns
 * the bytes moved (lock held). */
static size_t pipe_give(struct mqs_pipe *p, struct pipe_op *op,
                        const unsigned char *src, size_t n)
{
    size_t moved = 0;
    while (moved < n && p->q.nwait > 0 && p->side == PIPE_SIDE_READ) {
        struct pipe_waiter *r = pipe_pop(p, op, 0);
        if (!r)
            break;
        size_t k = n - moved < r->n ? n - moved : r->n;
        pipe_copy(r->buf, src + moved, k);
        r->done = k;
        moved += k;
    }
    return moved == n ? n : moved + pipe_ring_put(p, src + moved, n - moved);
}

static int pipe_write(struct mqs_pipe *p, const void *buf, size_t n,
                      size_t *written, int mode, uint64_t timeout_ns)
{
    struct pipe_op op;
    size_t sink;
    written = written ? written : &sink;
    *written = 0;
    int rc = pipe_op_init(&op, p, buf, mode, timeout_ns);
    if (rc)
        return rc;
    struct pipe_waiter me = {.buf = (unsigned char *)buf, .n = n};
    for (;;) {
        MQS__WAITQ_LOCK(&p->q);
        if (p->closed) {
            pipe_unlock_wake(p, &op);
            return MQS_ECLOSED;
        }
        me.done += pipe_give(p, &op, me.buf + me.done, n - me.done);
        *written = me.done;
        bool partial = mode == PIPE_TRY && me.done > 0;
        if (me.done == n || partial) {
            pipe_unlock_wake(p, &op);
            return 0;
        }
        rc = pipe_wait(p, &op, PIPE_SIDE_WRITE, &me);
        *written = me.done;
        if (me.done == n)
            return 0; /* served in place by readers */
        if (rc)
            return rc;
    }
}

/* ------------------------------------------------------------------ */
/* Public calls                                                        */
/* ------------------------------------------------------------------ */

int mqs_pipe_read(mqs_pipe_t *p, void *buf, size_t n, size_t *got)
{
    return pipe_read(p, buf, n, got, PIPE_FOREVER, 0);
}

int mqs_pipe_tryread(mqs_pipe_t *p, void *buf, size_t n, size_t *got)
{
    return pipe_read(p, buf, n, got, PIPE_TRY, 0);
}

int mqs_pipe_timedread(mqs_pipe_t *p, void *buf, size_t n, size_t *got,
                       uint64_t timeout_ns)
{
    return pipe_read(p, buf, n, got, PIPE_TIMED, timeout_ns);
}

int mqs_pipe_write(mqs_pipe_t *p, const void *buf, size_t n, size_t *written)
{
    return pipe_write(p, buf, n, written, PIPE_FOREVER, 0);
}

int mqs_pipe_trywrite(mqs_pipe_t *p, const void *buf, size_t n,
                      size_t *written)
{
    return pipe_write(p, buf, n, written, PIPE_TRY, 0);
}

int mqs_pipe_timedwrite(mqs_pipe_t *p, const void *buf, size_t n,
                        size_t *written, uint64_t timeout_ns)
{
    return pipe_write(p, buf, n, written, PIPE_TIMED, timeout_ns);
}

/* Close: pop everyone with MQS_ECLOSED and wake them after unlocking;
 * close does not touch the pipe after that, so a woken task may destroy
 * it at once. */
int mqs_pipe_close(mqs_pipe_t *p)
{
    if (!p)
        return MQS_EINVAL;
    struct pipe_op op = {.woken = NULL};
    MQS__WAITQ_LOCK(&p->q);
    if (p->closed) {
        mqs__waitq_unlock(&p->q);
        return MQS_ECLOSED;
    }
    p->closed = true;
    while (pipe_pop(p, &op, MQS_ECLOSED))
        ;
    pipe_unlock_wake(p, &op);
    return 0;
}

#undef PIPE_CAP_MAX
