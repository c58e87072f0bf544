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
#include <linux/futex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

_Thread_local struct mqs_worker *mqs__tls_worker;

__attribute__((noinline)) struct mqs_worker *mqs__worker_self(void)
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
