/*
 * poll.c - the poller: which descriptors the runtime watches, how a task
 * waits for one to be ready, and who asks epoll.
 *
 * Vocabulary.  A *descriptor* (struct mqs__fd, internal.h) is the
 * runtime's record of an fd number: a wait queue per direction (readers,
 * writers), a count of the edges seen per direction, and a sequence
 * number that mqs_close bumps.  *Registered*: in the epoll set, once,
 * edge-triggered for both directions, its event data the fd and the
 * sequence (Go's netpoll design); registration also makes the file
 * non-blocking.  An *edge* (an epoll event) bumps its direction's count
 * and wakes every waiter of it.  A call takes a *ticket* (the count)
 * before its system call; on EAGAIN its *wait* (mqs__fd_wait) returns at
 * once if an edge came since (the data the call missed may be what it
 * announced), else blocks the task on the direction's queue.  A woken
 * waiter retries its system call; one that gets EAGAIN again waits for
 * the next edge, which the kernel reports on every new arrival of data
 * or room.  Rejected: a ready bit kept for the next waiter when an edge
 * finds none (the first design): an edge that wakes a waiter also left
 * the bit, and the next wait on that direction took it and made one
 * useless system call (a pipe round trip made 6 reads instead of 4).
 *
 * Who asks epoll.  At most one idle worker waits in epoll_wait (the
 * *waiter*), with its next timer as the timeout, instead of on its futex;
 * a kick meant for it writes the eventfd in the set (base.c).  Idle
 * workers ask without waiting while they spin before parking, busy
 * workers in their periodic housekeeping (every millisecond, at a
 * scheduling point that does not block its task), and the preemption
 * monitor when nobody has asked for ten ticks (Go's sysmon rule), for
 * eight descriptors at most: a last resort for workers that neither idle
 * nor reach such a point.  A task woken before its data has gathered
 * costs (asking at each of the monitor's looks, or a batch of 64 at
 * each ask, delivered less in the TCP chatroom), so the monitor wakes a
 * few and leaves the rest in epoll's ready list for the workers' asks.
 * Ready tasks are held back neither by a spin nor, beyond those bounds,
 * while every worker runs.  All go through one try-flag so that 64
 * workers do not all call epoll at once.  Ready tasks are queued as a
 * timer's are (the normal placement and wake-up preemption, from inside
 * a scheduling point or the loop: never a nested scheduling point).
 *
 * Lock rules.  poll.lock (a mutex: registration makes system calls)
 * covers starting the poller, growing the table and registration; a
 * direction's wait-queue lock covers its edge count's increments, its
 * waiters and the sequence and ticket checks.  Neither is held across a
 * block or a wake-up.
 *
 * Rejected: io_uring (liburing) as the readiness source, measured with
 * `mqs-bench echo`'s uring row: a ring that several threads share (the
 * one set every worker and the monitor ask) was level with epoll or
 * 0.54-0.65 of it, and the mode that gained (7-22% at 50 connections a
 * loop) lets one thread alone use its ring, which would make readiness
 * per worker (docs/design.md, "Why epoll and not io_uring"); a poller
 * thread of its own (a context switch per batch of events where an idle
 * worker can wait in epoll itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define WAKE_MARK UINT64_MAX /* the eventfd's event data */
#define EV_IN (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)
#define EV_OUT (EPOLLOUT | EPOLLHUP | EPOLLERR)

void mqs__poll_init(mqs_runtime_t *rt)
{
    struct mqs__poll *p = &rt->poll;
    atomic_init(&p->epfd, -1);
    p->efd = -1;
    pthread_mutex_init(&p->lock, NULL);
    p->inited = true;
}

void mqs__poll_fini(mqs_runtime_t *rt)
{
    struct mqs__poll *p = &rt->poll;
    if (!p->inited)
        return;
    int ep = atomic_load(&p->epfd);
    if (ep >= 0) {
        close(ep);
        close(p->efd);
    }
    for (int i = 0; i < MQS__FD_CHUNKS; i++)
        free(atomic_load(&p->chunk[i]));
    pthread_mutex_destroy(&p->lock);
    p->inited = false;
}

/* epoll and its eventfd, once.  Under p->lock. */
static int start_locked(struct mqs__poll *p)
{
    if (atomic_load(&p->epfd) >= 0)
        return 0;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return MQS_EOS(errno);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAKE_MARK};
    if (efd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) != 0) {
        int e = errno;
        close(ep);
        if (efd >= 0)
            close(efd);
        return MQS_EOS(e);
    }
    p->efd = efd;
    p->nowait = mqs__poll_nowait; /* before epfd: its readers call it */
    atomic_store(&p->epfd, ep);
    return 0;
}

/* fd's descriptor, its chunk made when `make`; NULL when out of range or
 * not made. */
static struct mqs__fd *fd_get(struct mqs__poll *p, int fd, bool make)
{
    if (fd < 0 || fd >= MQS__FD_CHUNK * MQS__FD_CHUNKS)
        return NULL;
    struct mqs__fd *c = atomic_load_explicit(&p->chunk[fd / MQS__FD_CHUNK],
                                             memory_order_acquire);
    if (!c && make) {
        pthread_mutex_lock(&p->lock);
        c = atomic_load(&p->chunk[fd / MQS__FD_CHUNK]);
        if (!c && (c = mqs__calloc(MQS__FD_CHUNK, sizeof *c))) {
            for (int i = 0; i < MQS__FD_CHUNK; i++) {
                mqs__waitq_init(&c[i].q[0]);
                mqs__waitq_init(&c[i].q[1]);
            }
            atomic_store_explicit(&p->chunk[fd / MQS__FD_CHUNK], c,
                                  memory_order_release);
        }
        pthread_mutex_unlock(&p->lock);
    }
    return c ? &c[fd % MQS__FD_CHUNK] : NULL;
}

int mqs__fd_register(mqs_runtime_t *rt, int fd, struct mqs__fd **out)
{
    struct mqs__poll *p = &rt->poll;
    struct mqs__fd *d = fd_get(p, fd, true);
    if (!d)
        return fd < 0 || fd >= MQS__FD_CHUNK * MQS__FD_CHUNKS ? MQS_EINVAL
                                                               : MQS_ENOMEM;
    *out = d;
    if (atomic_load_explicit(&d->registered, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&p->lock);
    int rc = start_locked(p);
    if (rc == 0 && !atomic_load(&d->registered)) {
        int fl = fcntl(fd, F_GETFL);
        struct epoll_event ev = {
            .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
            .data.u64 = (uint64_t)(unsigned)fd |
                        (uint64_t)atomic_load(&d->seq) << 32,
        };
        if (fl < 0) {
            rc = MQS_EOS(errno);
        } else if (epoll_ctl(atomic_load(&p->epfd), EPOLL_CTL_ADD, fd,
                             &ev) == 0 ||
                   (errno == EEXIST &&
                    epoll_ctl(atomic_load(&p->epfd), EPOLL_CTL_MOD, fd,
                              &ev) == 0)) {
            if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK))
                rc = MQS_EOS(errno);
        } else if (errno == EPERM) {
            atomic_store(&d->file, true); /* always ready: offloaded */
        } else {
            rc = MQS_EOS(errno);
        }
        if (rc == 0)
            atomic_store_explicit(&d->registered, true,
                                  memory_order_release);
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Waiting                                                              */
/* ------------------------------------------------------------------ */

unsigned mqs__fd_ticket(const struct mqs__fd *d, int dir)
{
    return atomic_load_explicit(&d->edges[dir], memory_order_acquire);
}

int mqs__fd_wait(mqs_runtime_t *rt, struct mqs__fd *d, unsigned seq,
                 int dir, unsigned ticket, uint64_t deadline)
{
    struct mqs__waitq *q = &d->q[dir];
    MQS__WAITQ_LOCK(q);
    if (atomic_load_explicit(&d->seq, memory_order_relaxed) != seq) {
        mqs__waitq_unlock(q);
        return MQS_ECLOSED;
    }
    /* An edge after the ticket may be the one the caller's EAGAIN
     * missed: try again rather than wait for the next. */
    if (atomic_load_explicit(&d->edges[dir], memory_order_relaxed) !=
        ticket) {
        mqs__waitq_unlock(q);
        return 0;
    }
    atomic_fetch_add(&rt->poll.waiting, 1);
    /* A waker that finds it still switching out leaves the wake-up to
     * its switch (wake_dir): waiting for on_cpu there, the poller's
     * thread spun out its host time slice whenever the parking worker's
     * thread lost its CPU inside that window (docs/design.md). */
    struct mqs_task *self = mqs__worker_self()->curr;
    self->late_wake = true;
    int rc = mqs__block(q, deadline, "fd", d);
    self->late_wake = false;
    atomic_fetch_sub(&rt->poll.waiting, 1);
    return rc;
}

/* Wake every waiter of one direction (result `result`), with the
 * direction's lock taken here.  Queued as a timer's task is: from the
 * loop, a scheduling point or the monitor, never a nested one.  A busy
 * worker is not asked to stop for a task of its own level woken here
 * (a more urgent one still stops it), as Go's netpoll only queues what
 * it finds: stopped by those signals, the TCP chatroom's writers and
 * receivers ran in smaller batches, made 1.5 to 2 times the reads and
 * delivered two thirds of the messages (docs/notes.md). */
static void wake_dir(mqs_runtime_t *rt, struct mqs__fd *d, int dir,
                     unsigned seq, bool edge, int result)
{
    struct mqs__waitq *q = &d->q[dir];
    for (;;) {
        struct mqs_task *t[16];
        int n = 0;
        mqs__waitq_lock_in(q);
        if (atomic_load_explicit(&d->seq, memory_order_relaxed) != seq) {
            mqs__waitq_unlock(q);
            return; /* an event of the file before a close */
        }
        if (edge) {
            atomic_fetch_add_explicit(&d->edges[dir], 1,
                                      memory_order_release);
            edge = false;
        }
        while (n < 16 && (t[n] = mqs__waitq_pop(q, result)))
            n++;
        mqs__waitq_unlock(q);
        for (int i = 0; i < n; i++)
            if (!mqs__wake_leave(t[i])) /* else its switch queues it */
                mqs__wake_nostop(rt, t[i], MQS__ENQ_SRC_POLL);
        if (n < 16)
            return;
    }
}

/* mqs_close: every waiter gets MQS_ECLOSED, later events of the file are
 * dropped (the sequence moved), and the descriptor leaves the set. */
void mqs__fd_forget(mqs_runtime_t *rt, int fd)
{
    struct mqs__poll *p = &rt->poll;
    struct mqs__fd *d = fd_get(p, fd, false);
    if (!d || !atomic_load(&d->registered))
        return;
    pthread_mutex_lock(&p->lock);
    /* Before the pops below: a waiter that locks its queue after a pop
     * sees the new sequence; one before it is popped. */
    atomic_fetch_add(&d->seq, 1);
    if (!atomic_load(&d->file))
        epoll_ctl(atomic_load(&p->epfd), EPOLL_CTL_DEL, fd, NULL);
    atomic_store(&d->file, false);
    atomic_store(&d->registered, false);
    pthread_mutex_unlock(&p->lock);
    for (int dir = 0; dir < 2; dir++) {
        struct mqs__waitq *q = &d->q[dir];
        for (;;) {
            mqs__waitq_lock_in(q);
            struct mqs_task *t = mqs__waitq_pop(q, MQS_ECLOSED);
            mqs__waitq_unlock(q);
            if (!t)
                break;
            mqs__wake(t);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Asking epoll                                                         */
/* ------------------------------------------------------------------ */

static void dispatch(mqs_runtime_t *rt, const struct epoll_event *ev, int n)
{
    struct mqs__poll *p = &rt->poll;
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == WAKE_MARK) {
            uint64_t v;
            ssize_t r = read(p->efd, &v, sizeof v);
            (void)r;
            continue;
        }
        int fd = (int)(uint32_t)ev[i].data.u64;
        unsigned seq = (unsigned)(ev[i].data.u64 >> 32);
        struct mqs__fd *d = fd_get(p, fd, false);
        if (!d)
            continue;
        if (ev[i].events & EV_IN)
            wake_dir(rt, d, 0, seq, true, 0);
        if (ev[i].events & EV_OUT)
            wake_dir(rt, d, 1, seq, true, 0);
    }
}

/* Ask without waiting, for at most max (1..MQS__POLL_EVENTS) ready
 * descriptors, unless the poller is not started, no task waits
 * on a descriptor (an edge nobody collects stays in epoll's ready list
 * for the next ask; a waiter counts itself before it blocks), a worker
 * waits in epoll already (it gets the events), or another asks now. */
void mqs__poll_nowait(mqs_runtime_t *rt, int max)
{
    if (MQS__UNLIKELY(max < 1 || max > MQS__POLL_EVENTS))
        mqs__panic("mqs__poll_nowait: %d events asked, 1..%d allowed", max,
                   MQS__POLL_EVENTS);
    struct mqs__poll *p = &rt->poll;
    int ep = atomic_load_explicit(&p->epfd, memory_order_acquire);
    if (ep < 0 ||
        atomic_load_explicit(&p->waiting, memory_order_relaxed) == 0 ||
        atomic_load_explicit(&p->waiter, memory_order_relaxed) ||
        atomic_load_explicit(&p->busy, memory_order_relaxed) ||
        atomic_exchange(&p->busy, 1))
        return;
    struct epoll_event ev[MQS__POLL_EVENTS];
    int n = epoll_wait(ep, ev, max, 0);
    atomic_store_explicit(&p->asked_ns, mqs__clock_ns(&rt->clock),
                          memory_order_relaxed);
    atomic_store(&p->busy, 0);
    if (n > 0)
        dispatch(rt, ev, n);
}

/* An idle worker about to park: wait in epoll instead, if the poller is
 * started and no other worker waits there.  timeout_ns as the futex
 * wait's (UINT64_MAX: none).  False when it did not wait. */
bool mqs__poll_park(struct mqs_worker *w, unsigned seen, uint64_t timeout_ns)
{
    struct mqs__poll *p = &w->rt->poll;
    int ep = atomic_load_explicit(&p->epfd, memory_order_acquire);
    int zero = 0;
    if (ep < 0 || !atomic_compare_exchange_strong(&p->waiter, &zero, 1))
        return false;
    /* Dekker with mqs__kick: it bumps park_futex, then reads in_poll. */
    atomic_store(&w->in_poll, 1);
    struct epoll_event ev[MQS__POLL_EVENTS];
    int n = 0;
    if (atomic_load(&w->park_futex) == seen) {
        if (!p->no_pwait2) {
            struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
                                  (long)(timeout_ns % 1000000000u)};
            n = epoll_pwait2(ep, ev, MQS__POLL_EVENTS,
                             timeout_ns == UINT64_MAX ? NULL : &ts, NULL);
            if (n < 0 && errno == ENOSYS)
                p->no_pwait2 = true;
        }
        if (p->no_pwait2) {
            uint64_t ms = (timeout_ns + 999999) / 1000000;
            n = epoll_wait(ep, ev, MQS__POLL_EVENTS,
                           timeout_ns == UINT64_MAX ? -1
                           : ms > INT32_MAX         ? INT32_MAX
                                                    : (int)ms);
        }
    }
    atomic_store(&w->in_poll, 0);
    atomic_store_explicit(&p->asked_ns, mqs__clock_ns(&w->rt->clock),
                          memory_order_relaxed);
    atomic_store(&p->waiter, 0);
    if (n > 0)
        dispatch(w->rt, ev, n);
    return true;
}
