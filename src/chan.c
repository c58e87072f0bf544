/*
 * chan.c - bounded channels of fixed-size elements between tasks.
 *
 * A channel is one allocation: a header and a ring buffer of `cap`
 * elements (none for a rendezvous channel, cap 0).  One wait queue holds
 * the blocked tasks and its spinlock guards everything: ring, count,
 * closed flag.  One queue suffices because the two sides never wait at
 * the same time: receivers wait only while the ring is empty and no
 * sender waits, senders only while the ring is full (or, at cap 0, no
 * receiver waits), and every operation that finds the other side waiting
 * completes with it instead of queueing.  `side` says which side the
 * queued tasks are on; it is meaningful while nwait > 0.  Waiters come
 * out most urgent first (waitq.c), so both sides honour priority.
 *
 * Hand-off, as in Go's runtime/chan.go: a sender that finds a receiver
 * waiting copies its element straight into the receiver's buffer (the
 * receiver parked its address in t->wait_data); a receiver that finds a
 * sender waiting takes the sender's element (address in wait_data), into
 * its own buffer at cap 0, or into the ring's tail after taking the head
 * when the ring is full, so FIFO order holds.  The copy into or out of a
 * popped waiter happens after the lock is dropped when no ring slot is
 * involved: the waiter was popped, so it does not run until mqs__wake()
 * and its timer can no longer win.  Nothing allocates after create.
 *
 * Close wakes every waiter with MQS_ECLOSED; since waiting receivers
 * imply an empty ring, that is right for them too, and later receivers
 * drain the ring before getting MQS_ECLOSED.
 *
 * Rejected: a lock-free ring for the buffered fast path (Vyukov's bounded
 * MPMC queue): it cannot decide "empty, so block" atomically with the
 * wait queue without a second protocol, and the spinlock's critical
 * section here is a memcpy and a few stores.  Separate send and receive
 * queues (Go's layout): with mqs__block() releasing exactly one queue
 * lock, two queues would need either nested locks or a channel lock with
 * a window between the decision and the queueing.
 *
 * Callers: send, recv and their timed forms are task only (MQS_EPERM
 * elsewhere); trysend, tryrecv, close, len, create and destroy may also be
 * called from threads that are not tasks.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHAN_ELEM_MAX (64u * 1024u)

enum { SIDE_SEND = 0, SIDE_RECV = 1 };

/* How an operation may wait: try (MQS_EAGAIN), timed, forever. */
enum { MODE_TRY, MODE_TIMED, MODE_FOREVER };

struct mqs_chan {
    struct mqs__waitq q; /* its lock guards every field below            */
    size_t elem_size;    /* constant after create                         */
    size_t cap;          /* ring slots; 0 = rendezvous; constant          */
    size_t head;         /* slot of the oldest element                    */
    size_t len;          /* elements in the ring (read racily by len())   */
    int side;            /* SIDE_* of the queued tasks, while nwait > 0   */
    bool closed;
    unsigned char ring[];
};

/* An operation in progress: how it may wait and until when. */
struct chan_op {
    bool may_block;
    int fail;            /* answer when it would block and may not        */
    uint64_t deadline;   /* 0 = none                                      */
};

/* Slot i (< cap) from the head. */
static inline unsigned char *chan_slot(struct mqs_chan *ch, size_t i)
{
    return ch->ring + mqs__ring_wrap(ch->head + i, ch->cap) * ch->elem_size;
}

static inline void chan_set_len(struct mqs_chan *ch, size_t len)
{
    __atomic_store_n(&ch->len, len, __ATOMIC_RELAXED);
}

/* Pop a waiter of `side` that can complete with us, or NULL (lock held). */
static struct mqs_task *pop_side(struct mqs_chan *ch, int side, int result)
{
    if (ch->q.nwait == 0 || ch->side != side)
        return NULL;
    return mqs__waitq_pop(&ch->q, result);
}

int mqs_chan_create(mqs_chan_t **out, size_t elem_size, size_t capacity)
{
    if (!out || elem_size == 0 || elem_size > CHAN_ELEM_MAX)
        return MQS_EINVAL;
    size_t ring;
    if (__builtin_mul_overflow(elem_size, capacity, &ring) ||
        ring > SIZE_MAX - sizeof(struct mqs_chan))
        return MQS_EINVAL;
    struct mqs_chan *ch = mqs__malloc(sizeof *ch + ring);
    if (!ch)
        return MQS_ENOMEM;
    mqs__waitq_init(&ch->q);
    ch->elem_size = elem_size;
    ch->cap = capacity;
    ch->head = 0;
    ch->len = 0;
    ch->side = SIDE_SEND;
    ch->closed = false;
    *out = ch;
    return 0;
}

int mqs_chan_destroy(mqs_chan_t *ch)
{
    if (!ch)
        return MQS_EINVAL;
    MQS__WAITQ_LOCK(&ch->q);
    bool busy = ch->q.nwait > 0;
    mqs__waitq_unlock(&ch->q);
    if (busy)
        return MQS_EBUSY;
    free(ch);
    return 0;
}

/* A snapshot: it may be stale by the time the caller looks at it. */
size_t mqs_chan_len(const mqs_chan_t *ch)
{
    return ch ? __atomic_load_n(&ch->len, __ATOMIC_RELAXED) : 0;
}

/* Check the arguments and the caller, and fill in how op may wait. */
static int chan_op_init(struct chan_op *op, const struct mqs_chan *ch, const void *elem,
                   int mode, uint64_t timeout_ns)
{
    if (!ch || !elem)
        return MQS_EINVAL;
    if (mode != MODE_TRY && !mqs__current())
        return MQS_EPERM;
    op->may_block = mode == MODE_FOREVER || (mode == MODE_TIMED && timeout_ns);
    op->fail = mode == MODE_TRY ? MQS_EAGAIN : MQS_ETIMEDOUT;
    op->deadline = mode == MODE_TIMED && timeout_ns
                       ? mqs__deadline(timeout_ns) : 0;
    return 0;
}

/* Nothing to complete with (lock held): block as a `side` waiter with
 * buf parked in wait_data, or fail; either way the lock is released. */
static int wait_or_fail(struct mqs_chan *ch, const struct chan_op *op, int side,
                        void *buf)
{
    if (!op->may_block) {
        mqs__waitq_unlock(&ch->q);
        return op->fail;
    }
    mqs__current()->wait_data = buf;
    ch->side = side;
    return mqs__block(&ch->q, op->deadline,
                      side == SIDE_SEND ? "channel send" : "channel recv", ch);
}

static int chan_send(struct mqs_chan *ch, const void *elem, int mode,
                     uint64_t timeout_ns)
{
    struct chan_op op;
    int rc = chan_op_init(&op, ch, elem, mode, timeout_ns);
    if (rc)
        return rc;
    size_t size = ch->elem_size;
    MQS__WAITQ_LOCK(&ch->q);
    if (ch->closed) {
        mqs__waitq_unlock(&ch->q);
        return MQS_ECLOSED;
    }
    struct mqs_task *r = pop_side(ch, SIDE_RECV, 0);
    if (r) { /* the ring is empty: straight into the receiver's buffer */
        mqs__waitq_unlock(&ch->q);
        memcpy(r->wait_data, elem, size);
        mqs__wake_flags(r, MQS_ENQ_SYNC);
        return 0;
    }
    if (ch->len < ch->cap) {
        memcpy(chan_slot(ch, ch->len), elem, size);
        chan_set_len(ch, ch->len + 1);
        mqs__waitq_unlock(&ch->q);
        return 0;
    }
    /* 0: a receiver took the element; MQS_ECLOSED; MQS_ETIMEDOUT. */
    return wait_or_fail(ch, &op, SIDE_SEND, (void *)elem);
}

/* Take the ring's head into elem and refill the freed slot from the most
 * urgent waiting sender, if any (lock held).  Returns that sender. */
static struct mqs_task *take_head(struct mqs_chan *ch, void *elem)
{
    memcpy(elem, chan_slot(ch, 0), ch->elem_size);
    ch->head = mqs__ring_wrap(ch->head + 1, ch->cap);
    struct mqs_task *s = pop_side(ch, SIDE_SEND, 0);
    if (s)
        memcpy(chan_slot(ch, ch->len - 1), s->wait_data, ch->elem_size);
    else
        chan_set_len(ch, ch->len - 1);
    return s;
}

static int chan_recv(struct mqs_chan *ch, void *elem, int mode,
                     uint64_t timeout_ns)
{
    struct chan_op op;
    int rc = chan_op_init(&op, ch, elem, mode, timeout_ns);
    if (rc)
        return rc;
    size_t size = ch->elem_size;
    MQS__WAITQ_LOCK(&ch->q);
    struct mqs_task *s;
    if (ch->len > 0) {
        s = take_head(ch, elem);
        mqs__waitq_unlock(&ch->q);
    } else if ((s = pop_side(ch, SIDE_SEND, 0)) != NULL) {
        /* Rendezvous: straight from the sender's element. */
        mqs__waitq_unlock(&ch->q);
        memcpy(elem, s->wait_data, size);
    } else if (ch->closed) {
        mqs__waitq_unlock(&ch->q);
        return MQS_ECLOSED;
    } else {
        /* 0: a sender filled elem; MQS_ECLOSED; MQS_ETIMEDOUT. */
        return wait_or_fail(ch, &op, SIDE_RECV, elem);
    }
    if (s)
        mqs__wake_flags(s, MQS_ENQ_SYNC);
    return 0;
}

int mqs_chan_send(mqs_chan_t *ch, const void *elem)
{
    return chan_send(ch, elem, MODE_FOREVER, 0);
}

int mqs_chan_trysend(mqs_chan_t *ch, const void *elem)
{
    return chan_send(ch, elem, MODE_TRY, 0);
}

int mqs_chan_timedsend(mqs_chan_t *ch, const void *elem, uint64_t timeout_ns)
{
    return chan_send(ch, elem, MODE_TIMED, timeout_ns);
}

int mqs_chan_recv(mqs_chan_t *ch, void *elem)
{
    return chan_recv(ch, elem, MODE_FOREVER, 0);
}

int mqs_chan_tryrecv(mqs_chan_t *ch, void *elem)
{
    return chan_recv(ch, elem, MODE_TRY, 0);
}

int mqs_chan_timedrecv(mqs_chan_t *ch, void *elem, uint64_t timeout_ns)
{
    return chan_recv(ch, elem, MODE_TIMED, timeout_ns);
}

/*
 * Close: no waiter can join afterwards (send fails at once, receive fails
 * once the ring is empty), so popping everyone now wakes them all.  They
 * are chained through wait_data (which they no longer read) and woken
 * after the lock is dropped; close never touches the channel after that,
 * so a woken task may destroy it at once.
 */
int mqs_chan_close(mqs_chan_t *ch)
{
    if (!ch)
        return MQS_EINVAL;
    MQS__WAITQ_LOCK(&ch->q);
    if (ch->closed) {
        mqs__waitq_unlock(&ch->q);
        return MQS_ECLOSED;
    }
    ch->closed = true;
    struct mqs_task *head = NULL, **tail = &head, *t;
    while ((t = mqs__waitq_pop(&ch->q, MQS_ECLOSED)) != NULL) {
        *tail = t;
        tail = (struct mqs_task **)&t->wait_data;
    }
    *tail = NULL;
    mqs__waitq_unlock(&ch->q);
    while (head) {
        t = head;
        head = t->wait_data;
        mqs__wake(t);
    }
    return 0;
}
