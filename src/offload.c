/*
 * offload.c - the offload pool: OS threads that run a task's blocking
 * call (mqs_offload) while only that task waits.
 *
 * Vocabulary.  A *call* is one mqs_offload: a request on the calling
 * task's stack (fn, arg, its result, a one-waiter wait queue and a done
 * flag), queued first-come on the runtime's pool.  A *pool thread* takes
 * the oldest call, runs fn, and completes it: under the request's wait
 * queue lock it stores the result and sets done, pops the task if it
 * blocked, and wakes it after unlocking (the wake path of a thread
 * outside the runtime: placement, wake-up preemption, stats).  The task
 * either finds done under that lock or blocks under it: no wake-up is
 * lost.  After the unlock the pool thread touches the request no more
 * (the task may return and its stack frame go).
 *
 * Lock rules.  offload.lock (a pthread mutex: the pool's threads sleep on
 * its condition) covers the queue, the thread counts and the counters.
 * A task holds it only inside the runtime (in_runtime raised, so neither
 * preemption nor a handler's runtime call lands on it), and never across
 * a block or a wake.  The request's wait-queue lock nests in nothing.
 *
 * Threads start on demand: a call that finds no idle thread starts one
 * while the pool is under its bound, else waits in the queue.  They are
 * joined when the runtime is freed; an idle one costs no CPU (it waits
 * on the condition), only its stack.
 *
 * Destroy.  Each call holds the runtime (mqs__hold_get, as
 * mqs_runtime_hold does) from before it is queued until after its task
 * is woken, so destroy gives no deadlock verdict while a task waits for
 * a call, and frees nothing a pool thread still uses; by the time
 * runtime_free runs, no call is queued or running and the threads are
 * only told to leave.
 *
 * Rejected: a thread per call (a thread start per call, and thousands
 * of threads for a burst of calls); running fn on the worker and handing
 * its other tasks to a fresh thread (Go's handoffp at a system call):
 * the worker's run queue, thread-locals and pinned stops would move
 * between OS threads.
 */
#include <signal.h>
#include <stdlib.h>

#include "internal.h"

struct mqs__offload_req {
    struct mqs__offload_req *next;
    mqs_offload_fn fn;
    void *arg;
    void *result;
    uint64_t queued_at;
    struct mqs__waitq q; /* the one task that waits, and done's lock */
    bool done;
};

int mqs__offload_init(mqs_runtime_t *rt, int limit)
{
    struct mqs__offload *o = &rt->offload;
    o->limit = limit;
    o->threads = mqs__calloc((size_t)limit, sizeof *o->threads);
    if (!o->threads)
        return MQS_ENOMEM;
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->more, NULL);
    o->inited = true;
    return 0;
}

void mqs__offload_fini(mqs_runtime_t *rt)
{
    struct mqs__offload *o = &rt->offload;
    if (!o->inited)
        return;
    pthread_mutex_lock(&o->lock);
    o->stop = true;
    pthread_cond_broadcast(&o->more);
    pthread_mutex_unlock(&o->lock);
    for (int i = 0; i < o->nthreads; i++)
        pthread_join(o->threads[i], NULL);
    pthread_cond_destroy(&o->more);
    pthread_mutex_destroy(&o->lock);
    free(o->threads);
    o->inited = false;
}

/* Store fn's result, wake the task if it blocked.  The last touch of the
 * request is the unlock. */
static void complete(struct mqs__offload_req *r, void *result)
{
    mqs__waitq_lock_in(&r->q);
    r->result = result;
    r->done = true;
    struct mqs_task *t = mqs__waitq_pop(&r->q, 0);
    mqs__waitq_unlock(&r->q);
    if (t)
        mqs__wake(t);
}

static void *pool_main(void *arg)
{
    mqs_runtime_t *rt = arg;
    struct mqs__offload *o = &rt->offload;
    pthread_mutex_lock(&o->lock);
    for (;;) {
        while (!o->head && !o->stop) {
            o->nidle++;
            pthread_cond_wait(&o->more, &o->lock);
            o->nidle--;
        }
        if (!o->head)
            break; /* stop, and nothing left (destroy waited for calls) */
        struct mqs__offload_req *r = o->head;
        o->head = r->next;
        if (!o->head)
            o->tail = NULL;
        o->queued--;
        o->running++;
        uint64_t waited = mqs_now_ns() - r->queued_at;
        if (waited > o->max_wait_ns)
            o->max_wait_ns = waited;
        pthread_mutex_unlock(&o->lock);
        void *res = r->fn(r->arg);
        pthread_mutex_lock(&o->lock);
        o->running--;
        o->completed++;
        pthread_mutex_unlock(&o->lock);
        complete(r, res);
        /* The call's hold, given back once nothing of it is touched; the
         * pool itself lives until runtime_free joins this thread. */
        mqs__hold_put(rt);
        pthread_mutex_lock(&o->lock);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

/* A pool thread, with every signal blocked from its first instruction
 * (the creator's mask is inherited: block all around the create). */
static bool start_thread(mqs_runtime_t *rt)
{
    struct mqs__offload *o = &rt->offload;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool ok = pthread_create(&o->threads[o->nthreads], NULL, pool_main,
                             rt) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ok)
        o->nthreads++;
    return ok;
}

/* Queue r, starting a thread if none is idle and the bound allows.  On a
 * worker's thread the caller is inside the runtime.  MQS_ESYS when no
 * thread runs and none could be started (r not queued). */
static int submit(mqs_runtime_t *rt, struct mqs__offload_req *r)
{
    struct mqs__offload *o = &rt->offload;
    pthread_mutex_lock(&o->lock);
    /* Idle threads not yet claimed by queued calls. */
    bool free_thread = o->nidle > o->queued;
    if (!free_thread && o->nthreads < o->limit)
        free_thread = start_thread(rt);
    if (!free_thread && o->nthreads == 0) {
        pthread_mutex_unlock(&o->lock);
        return MQS_ESYS;
    }
    o->calls++;
    o->waited += !free_thread;
    o->queued++;
    r->queued_at = mqs_now_ns();
    if (o->tail)
        o->tail->next = r;
    else
        o->head = r;
    o->tail = r;
    pthread_cond_signal(&o->more);
    pthread_mutex_unlock(&o->lock);
    return 0;
}

int mqs_offload(mqs_offload_fn fn, void *arg, void **result)
{
    if (!fn)
        return MQS_EINVAL;
    struct mqs_worker *w = mqs__worker_self();
    int rc = mqs__rt_gate(w);
    if (rc)
        return rc;
    if (!w || !w->curr) {
        void *res = fn(arg); /* not a task: this thread may block */
        if (result)
            *result = res;
        return 0;
    }
    mqs_runtime_t *rt = w->rt;
    struct mqs__offload_req r = {.fn = fn, .arg = arg};
    mqs__waitq_init(&r.q);
    mqs__hold_get(rt);
    mqs__rt_enter(w);
    rc = submit(rt, &r);
    mqs__rt_leave(w);
    if (rc) {
        mqs__hold_put(rt);
        return rc;
    }
    /* The task may resume on another worker: nothing of w below. */
    mqs__waitq_lock_in(&r.q);
    if (!r.done)
        (void)mqs__block(&r.q, 0, "offload", &r); /* no deadline: 0 */
    else
        mqs__waitq_unlock(&r.q);
    if (result)
        *result = r.result;
    return 0;
}

int mqs_offload_stats(const mqs_runtime_t *crt, mqs_offload_stats_t *out)
{
    if (!crt || !out)
        return MQS_EINVAL;
    struct mqs__offload *o = &((mqs_runtime_t *)crt)->offload;
    pthread_mutex_lock(&o->lock);
    *out = (mqs_offload_stats_t){
        .limit = (uint64_t)o->limit,
        .threads = (uint64_t)o->nthreads,
        .idle = (uint64_t)o->nidle,
        .running = (uint64_t)o->running,
        .queued = (uint64_t)o->queued,
        .calls = o->calls,
        .completed = o->completed,
        .waited = o->waited,
        .max_wait_ns = o->max_wait_ns,
    };
    pthread_mutex_unlock(&o->lock);
    return 0;
}

void mqs__offload_dump(mqs_runtime_t *rt, FILE *out)
{
    mqs_offload_stats_t s = {0};
    mqs_offload_stats(rt, &s);
    fprintf(out,
            "offload threads %llu/%llu idle %llu running %llu queued %llu "
            "calls %llu completed %llu waited %llu max_wait_ns %llu\n",
            (unsigned long long)s.threads, (unsigned long long)s.limit,
            (unsigned long long)s.idle, (unsigned long long)s.running,
            (unsigned long long)s.queued, (unsigned long long)s.calls,
            (unsigned long long)s.completed, (unsigned long long)s.waited,
            (unsigned long long)s.max_wait_ns);
}
