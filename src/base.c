/*
 * base.c - what every layer of the core needs and that belongs to no
 * layer: the calling thread's worker (TLS), the fatal-error exit, futex
 * parking and the kick that wakes a parked worker (the analogue of an
 * IPI), the idle marks, and the batched runtime-wide counters (task ids,
 * live tasks).  It calls nothing else in the core.
 *
 * The counters are batched per worker: a worker takes 256 ids or live
 * units from the runtime-wide atomic at a time, so a spawn or an exit
 * touches no shared line in the common case.  Rejected: one atomic per
 * spawn (a line every worker writes on every spawn and exit).
 */
#include <limits.h>
#include <signal.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* The fork generation (runtime.c bumps it in a child of fork()). */
atomic_uint mqs__fork_gen;

MQS__TLS_MODEL _Thread_local struct mqs_worker *mqs__tls_worker;

__attribute__((noinline)) struct mqs_worker *mqs__worker_self_call(void)
{
    struct mqs_worker *w = mqs__tls_worker;
    __asm__ volatile("" ::: "memory");
    return w;
}

void mqs__worker_set_self(struct mqs_worker *w)
{
    mqs__tls_worker = w;
}

struct mqs_task *mqs__current(void)
{
    struct mqs_worker *w = mqs__worker_self();
    return w ? w->curr : NULL;
}

_Noreturn void mqs__panic(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mqs: fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

/* ------------------------------------------------------------------ */
/* Futex parking                                                       */
/* ------------------------------------------------------------------ */

static void futex_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns != UINT64_MAX) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
        ts.tv_nsec = (long)(timeout_ns % 1000000000u);
        tp = &ts;
    }
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

static void futex_wake(atomic_uint *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void mqs__futex_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns)
{
    futex_wait(word, val, timeout_ns);
}
void mqs__futex_wake(atomic_uint *word, int n)
{
    futex_wake(word, n);
}

/* Wake worker w if it sleeps (the analogue of an IPI). */
void mqs__kick(struct mqs_worker *w)
{
    atomic_fetch_add(&w->park_futex, 1);
    if (atomic_load(&w->parked))
        futex_wake(&w->park_futex, 1);
    /* Waiting in epoll instead (poll.c): its eventfd. */
    if (atomic_load(&w->in_poll)) {
        uint64_t one = 1;
        ssize_t r = write(w->rt->poll.efd, &one, sizeof one);
        (void)r;
    }
}

/* Ask worker w to stop its running task for the reasons in why: the
 * preemption signal's handler takes them (preempt.c).  One signal per
 * batch of requests: while an earlier one is unseen it carries these. */
void mqs__preempt_request(struct mqs_worker *w, int why)
{
    if (atomic_fetch_or(&w->pre.req, why) == 0)
        syscall(SYS_tgkill, (int)getpid(), w->pre.tid, MQS__PREEMPT_SIGNAL);
}

/* The handler stopped a task with the signal blocked (preempt.c); the
 * context that runs next makes it deliverable again. */
void mqs__preempt_unblock(struct mqs_worker *w)
{
    w->urg_blocked = false;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, MQS__PREEMPT_SIGNAL);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

void mqs__publish_idle(mqs_runtime_t *rt, int w, bool idle)
{
    uint64_t bit = UINT64_C(1) << (w & 63);
    _Atomic uint64_t *word = &rt->idle_bits[w >> 6];
    if (idle)
        atomic_fetch_or(word, bit);
    else if (atomic_load_explicit(word, memory_order_relaxed) & bit)
        atomic_fetch_and(word, ~bit);
}

/* ------------------------------------------------------------------ */
/* Batched shared counters (ids, live tasks)                           */
/* ------------------------------------------------------------------ */

#define SCHED_ID_BATCH 256

uint64_t mqs__task_id_next(mqs_runtime_t *rt, struct mqs_worker *w)
{
    if (!w)
        return atomic_fetch_add(&rt->next_id, 1);
    if (w->id_next == w->id_end) {
        w->id_next = atomic_fetch_add(&rt->next_id, SCHED_ID_BATCH);
        w->id_end = w->id_next + SCHED_ID_BATCH;
    }
    return w->id_next++;
}

void mqs__live_get(mqs_runtime_t *rt, struct mqs_worker *w)
{
    if (!w) {
        atomic_fetch_add(&rt->live, 1);
        return;
    }
    if (w->live_units == 0) {
        atomic_fetch_add(&rt->live, MQS__LIVE_BATCH);
        w->live_units = MQS__LIVE_BATCH;
    }
    w->live_units--;
}

/* Give n units back to rt->live; the last one wakes runtime destroy. */
void mqs__live_put(mqs_runtime_t *rt, int64_t n)
{
    if (n && atomic_fetch_sub(&rt->live, n) == n) {
        atomic_fetch_add(&rt->live_futex, 1);
        futex_wake(&rt->live_futex, INT_MAX);
    }
}

#undef SCHED_ID_BATCH

void mqs__hold_get(mqs_runtime_t *rt)
{
    atomic_fetch_add(&rt->holds, 1);
}

bool mqs__hold_put(mqs_runtime_t *rt)
{
    /* Under hold_lock: once the count is 0 a destroy may free rt, and
     * it takes this lock first, so the wake-up below stays on live
     * memory (a pthread mutex may be destroyed right after unlock). */
    pthread_mutex_lock(&rt->hold_lock);
    int n = atomic_load(&rt->holds);
    do {
        if (n <= 0) {
            pthread_mutex_unlock(&rt->hold_lock);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&rt->holds, &n, n - 1));
    if (n == 1) { /* a destroy may be waiting for the last hold */
        atomic_fetch_add(&rt->live_futex, 1);
        futex_wake(&rt->live_futex, INT_MAX);
    }
    pthread_mutex_unlock(&rt->hold_lock);
    return true;
}

/* A runtime error for the user: into the config's buffer if it has one,
 * else on stderr (create and the stack mapper report this way). */
void mqs__report_error(const mqs_config_t *cfg, const char *msg)
{
    if (cfg && cfg->errbuf && cfg->errbuf_size) {
        snprintf(cfg->errbuf, cfg->errbuf_size, "%s", msg);
        return;
    }
    fprintf(stderr, "mqs: %s\n", msg);
}

/* Revoke the bias of a run-queue lock (spinlock.h has the protocol; the
 * owner side is in rq.c): every spinlock user may need it, so it is here. */
bool mqs__spin_revoke(mqs__spinlock_t *l, bool wait)
{
    struct mqs_worker *self = mqs__worker_self();
    if (self && &self->rq.own_lock == l)
        return true; /* the owner itself: its own stores are in order */
    atomic_store_explicit(&l->notes, MQS__LOCK_REMOTE | MQS__LOCK_UNBIAS,
                          memory_order_relaxed);
    /* Every thread of the process passes a full fence: the owner's
     * owner_in store is visible now, or it will see v held. */
#ifdef SYS_membarrier
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        mqs__panic("membarrier failed on a biased run-queue lock");
#endif
    for (unsigned i = 0;
         atomic_load_explicit(&l->owner_in, memory_order_acquire); i++) {
        if (!wait && i >= 4096)
            return false;
        mqs__cpu_relax();
    }
    /* The owner is out and v is held: clear the bias here rather than
     * at the owner's next scheduling point, or every remote locker until
     * then pays a membarrier of its own (the monitor's poll waking a
     * batch of tasks onto a busy worker made about twenty a batch, 2 200
     * a second in the TCP chatroom at ten rooms).  The owner cannot slip
     * in on a stale `biased`: `notes` stays set until it takes v. */
    atomic_store_explicit(&l->biased, 0, memory_order_relaxed);
    return true;
}
