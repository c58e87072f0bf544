/*
 * layers.h - the core's internal calls, one section per layer, bottom up.
 * A layer calls only the sections before its own (and header-only
 * helpers: list.h, bitmap.h, plist.h, ...); the policy is reached only
 * through its ops table.  docs/design.md has the table of layers and the
 * life of a task through them.  Included by internal.h after the types.
 */
#ifndef MQS_LAYERS_H
#define MQS_LAYERS_H

/* ---- base.c: TLS, futexes, kicks, idle marks, batched counters ---- */
void mqs__worker_set_self(struct mqs_worker *w);
void mqs__futex_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns);
void mqs__futex_wake(atomic_uint *word, int n);
/* Wake worker w if it sleeps (the analogue of an IPI). */
void mqs__kick(struct mqs_worker *w);
void mqs__preempt_request(struct mqs_worker *w, int why);
/* On the context that runs after a stop from the handler: SIGURG, blocked
 * while the handler ran, is deliverable again (mqs__finish_switch). */
void mqs__preempt_unblock(struct mqs_worker *w);
void mqs__publish_idle(mqs_runtime_t *rt, int w, bool idle);
/* A new task's id; one live unit for it (spawn, w may be NULL). */
uint64_t mqs__task_id_next(mqs_runtime_t *rt, struct mqs_worker *w);
void mqs__live_get(mqs_runtime_t *rt, struct mqs_worker *w);
/* Give n live units back to the runtime; the last one wakes destroy.
 * A worker hands them back MQS__LIVE_BATCH at a time. */
#define MQS__LIVE_BATCH 256
void mqs__live_put(mqs_runtime_t *rt, int64_t n);
/* A hold on the runtime (mqs_runtime_hold): destroy gives no deadlock
 * verdict and frees nothing while one is held.  put: false when none
 * was held; the last one wakes a waiting destroy. */
void mqs__hold_get(mqs_runtime_t *rt);
bool mqs__hold_put(mqs_runtime_t *rt);
/* An error for the user: into cfg's errbuf if it has one, else stderr. */
void mqs__report_error(const mqs_config_t *cfg, const char *msg);

/* ---- the trace: trace.c ------------------------------------------- */
/* Recording, from any layer above, each behind a test that the trace is
 * on (w->trace or rt->trace.on): put: into a worker's own ring (only
 * that worker's thread); start,
 * stop: a run on w (stop's why MQS__TR_WHY_*); wake: t woken and queued
 * on worker `target` (src MQS__TR_SRC_*, flags the MQS_ENQ_* it had,
 * handoff: into the waker's hand-off slot), before t is queued; spawn:
 * t made, before it is queued (named: its name was chosen).
 * open: runtime create, before the workers start (path NULL: off);
 * close: runtime free, after they stopped, writing the JSON if asked. */
void mqs__trace_put(struct mqs__trace_ring *r, unsigned kind, uint64_t task,
                    uint64_t a, uint64_t b);
void mqs__trace_start(struct mqs_worker *w, struct mqs_task *t);
void mqs__trace_stop(struct mqs_worker *w, struct mqs_task *t, int why);
void mqs__trace_wake(mqs_runtime_t *rt, struct mqs_task *t, int target,
                     unsigned src, int flags, bool handoff);
void mqs__trace_spawn(mqs_runtime_t *rt, struct mqs_task *t, bool named);
MQS__MUST_USE int mqs__trace_open(mqs_runtime_t *rt, const char *path,
                                  int64_t max_mb, char *err, size_t n);
void mqs__trace_close(mqs_runtime_t *rt, bool write);

/* ---- memory: stack.c, overflow.c, handle.c --------------------------- */
/* stack.c */
/* The stagger serial for a new task's stack, spawned by worker self (or
 * NULL: from outside) with task id `id`. */
unsigned mqs__stack_serial(const mqs_runtime_t *rt,
                           const struct mqs_worker *self, uint64_t id);
struct mqs_task *mqs__stack_alloc(mqs_runtime_t *rt, struct mqs_worker *w,
                                  size_t size,
                                  unsigned serial);
void mqs__stack_free(mqs_runtime_t *rt, struct mqs_worker *w,
                     struct mqs_task *t);
void mqs__stack_cache_drain(struct mqs__stack_cache *c);
/* Destroy: the stack of a task still tracked (a lone mapping is unmapped,
 * a slot is left to its slab), then every slab, after the caches. */
void mqs__stack_reap(mqs_runtime_t *rt, struct mqs_task *t);
void mqs__stack_slabs_free(mqs_runtime_t *rt);
/* Lines of /proc/self/maps (the mappings vm.max_map_count bounds), -1
 * if it cannot be read; for the refusal message, tests and mqs-bench. */
long mqs__count_mappings(void);
/* Tests: 0 try MADV_GUARD_INSTALL first (the default), 1 use mprotect
 * guards as on a kernel without it.  Process-wide. */
void mqs__stack_guard_mprotect(bool on);
/* Whether guards are markers (one mapping a slab) rather than mprotect
 * (two a slot): learned at the first guard, probed here if none was
 * installed yet.  For tests whose bounds count mappings. */
bool mqs__stack_guard_markers(void);
/* overflow.c: the process-wide SIGSEGV/SIGBUS handler that names a task
 * whose stack overflowed (installed once), and each worker's alternate
 * signal stack it runs on. */
int mqs__overflow_handler_install(void);
/* alloc/free: by the runtime's creator and destroyer; setup/teardown:
 * by the worker thread, installing and removing it. */
MQS__MUST_USE int mqs__altstack_alloc(struct mqs_worker *w);
void mqs__altstack_setup(struct mqs_worker *w);
void mqs__altstack_teardown(struct mqs_worker *w);
void mqs__altstack_free(struct mqs_worker *w);

/* handle.c.  attach: give t (just spawned by worker w, or NULL from
 * outside) a slot and its handle; false when out of memory.  retire: the
 * handle stops naming t (waits for calls that pinned it), before t is
 * freed.  pin: the task a handle names, pinned against release until
 * unpin, or NULL when the handle is stale. */
MQS__MUST_USE bool mqs__handle_attach(mqs_runtime_t *rt, struct mqs_worker *w,
                                      struct mqs_task *t);
void mqs__handle_retire(mqs_runtime_t *rt, struct mqs_worker *w,
                        struct mqs_task *t);
struct mqs_task *mqs__handle_pin(const mqs_task_t *h);
/* Claim the right to join the task a handle names (no pin needed: only
 * its joiner frees a joinable task); NULL with *err MQS_EINVAL (stale,
 * detached) or MQS_ESTATE (another join holds it). */
struct mqs_task *mqs__handle_claim_join(const mqs_task_t *h, int *err);
void mqs__handle_unpin(struct mqs_task *t);
void mqs__handle_table_free(mqs_runtime_t *rt);
/* Free a dead task: its handle retired, then its stack and struct (from
 * the worker where it ends, or from the joiner). */
void mqs__task_release(struct mqs_task *t);
/* Call fn on every task of rt from spawn to release (in no particular
 * order), each pinned for the call: fn must not free it or block. */
void mqs__tasks_each(mqs_runtime_t *rt,
                     void (*fn)(struct mqs_task *t, void *ctx), void *ctx);
static inline mqs_task_t *mqs__handle_of(const struct mqs_task *t)
{
    return (mqs_task_t *)(uintptr_t)t->handle;
}
/* The task behind a handle the caller knows to be live (not yet joined,
 * or detached and not ended), or NULL when stale: for tests and reports
 * that look inside a task they keep alive. */
static inline struct mqs_task *mqs__task_of(const mqs_task_t *h)
{
    struct mqs_task *t = mqs__handle_pin(h);
    if (t)
        mqs__handle_unpin(t);
    return t;
}

/* ---- the scheduling entity: entity.c ------------------------------ */
/* The level (se.prio) of a class and priority; fill se's class fields. */
int mqs__prio_level(mqs_class_t cls, int prio);
void mqs__se_set_class(struct mqs_sched_entity *se, mqs_class_t cls, int prio);
/* Apply a pending change (caller about to queue t; task_ctl.c records
 * it). */
enum { MQS__PEND_SCHED = 1, MQS__PEND_MASK = 2 };
void mqs__apply_pending_slow(struct mqs_task *t);
static inline void mqs__apply_pending(struct mqs_task *t)
{
    if (atomic_load_explicit(&t->pend_flags, memory_order_acquire))
        mqs__apply_pending_slow(t);
}

/* ---- the run queue: rq.c (the owner's lock side is in rq.h) -------- */
bool mqs__bias_register(mqs_runtime_t *rt);
/* The policy contract's checks (MQS_CONTRACT_CHECKS builds: Debug, the
 * sanitizer builds, the mqs_checked library; nothing in the others).
 * took/release: every rq lock the core or a policy takes and drops (the
 * release checks the queue's published count against the core's);
 * op: the core is about to call policy op `op` on rq with its lock held
 * (asserted); unlocked_op: ... with no rq lock held by this thread
 * (asserted); count: d tasks queued on (d > 0) or taken off (d < 0)
 * worker w's queue, as queued_on records them. */
#ifdef MQS_CONTRACT_CHECKS
void mqs__chk_took(struct mqs_rq *rq);
void mqs__chk_release(struct mqs_rq *rq);
void mqs__chk_op(struct mqs_rq *rq, const char *op);
void mqs__chk_unlocked_op(mqs_runtime_t *rt, const char *op);
void mqs__chk_count(mqs_runtime_t *rt, int w, int d);
#define MQS__CHK_TOOK(rq) mqs__chk_took(rq)
#define MQS__CHK_RELEASE(rq) mqs__chk_release(rq)
#define MQS__CHK_OP(rq, op) mqs__chk_op(rq, op)
#define MQS__CHK_UNLOCKED_OP(rt, op) mqs__chk_unlocked_op(rt, op)
#define MQS__CHK_COUNT(rt, w, d) mqs__chk_count(rt, w, d)
#else
#define MQS__CHK_TOOK(rq) ((void)0)
#define MQS__CHK_RELEASE(rq) ((void)0)
#define MQS__CHK_OP(rq, op) ((void)0)
#define MQS__CHK_UNLOCKED_OP(rt, op) ((void)0)
#define MQS__CHK_COUNT(rt, w, d) ((void)0)
#endif

/* ---- placement: place.c ------------------------------------------- */
/* Random-schedule mode: splitmix64 of x (seeds the generators); the
 * next draw of w's generator (w->shuffle != 0); a coin that comes up
 * once in 2^bits on a worker in the mode, never when it is off (one
 * predictable branch on an owner-only field). */
uint64_t mqs__shuffle_mix(uint64_t x);
uint64_t mqs__shuffle_next(struct mqs_worker *w);
static inline bool mqs__shuffle_coin(struct mqs_worker *w, unsigned bits)
{
    return MQS__UNLIKELY(w->shuffle) &&
           (mqs__shuffle_next(w) >> (64 - bits)) == 0;
}
/* Queue a runnable task where the policy places it; returns true when it
 * went to the caller's own worker and should preempt the caller.  Any
 * thread, no lock held.  flags: the policy's MQS_ENQ_*, and
 * MQS__ENQ_NO_WAKE_STOP, which only this call reads (place.c). */
#define MQS__ENQ_NO_WAKE_STOP (1 << 30)
/* Who woke the task, for the trace: a timer, the poller, a switch that
 * a waker left the wake-up to, or a hand-off slot whose task goes to the
 * policy after all (else a task or an outside thread); also read by
 * this call only. */
#define MQS__ENQ_SRC_TIMER (1 << 29)
#define MQS__ENQ_SRC_POLL (1 << 28)
#define MQS__ENQ_SRC_LEFT (1 << 27)
#define MQS__ENQ_SRC_SLOT (1 << 26)
#define MQS__ENQ_CORE                                                        \
    (MQS__ENQ_NO_WAKE_STOP | MQS__ENQ_SRC_TIMER | MQS__ENQ_SRC_POLL |        \
     MQS__ENQ_SRC_LEFT | MQS__ENQ_SRC_SLOT)
bool mqs__enqueue_task(mqs_runtime_t *rt, struct mqs_task *t, int flags);
/* A wake-up that asks no worker to stop for t (MQS__ENQ_NO_WAKE_STOP),
 * for t popped by the caller (WAKING) with on_cpu 0: counts it, makes it
 * RUNNABLE and queues it.  The poller's (src MQS__ENQ_SRC_POLL), and a
 * switch's that a wake-up was left to (MQS__ENQ_SRC_LEFT). */
void mqs__wake_nostop(mqs_runtime_t *rt, struct mqs_task *t, int src);
/* Instead of waiting for t's on_cpu: true when t, popped by the caller
 * and blocked with late_wake set, is still on its CPU and its switch
 * will queue it (mqs__finish_switch, with mqs__wake_nostop); false when
 * its context is saved already and the caller queues it. */
bool mqs__wake_leave(struct mqs_task *t);
/* If some worker idles, kick it so that it comes and steals. */
void mqs__kick_idle(mqs_runtime_t *rt);
/* Is some worker se may use idle?  A peek: nothing is claimed. */
bool mqs__idle_allowed(mqs_runtime_t *rt, const struct mqs_sched_entity *se);

/* ---- timers: timer.c ---------------------------------------------- */
/* timer.c.  reserve: room for one more timer on w's heap (w's own
 * task, before it blocks, so add cannot fail: only w adds to its heap);
 * MQS_ENOMEM when the heap cannot grow. */
MQS__MUST_USE int mqs__timer_reserve(struct mqs_worker *w);
void mqs__timer_add(struct mqs_worker *w, struct mqs_task *t);
void mqs__timer_cancel(mqs_runtime_t *rt, struct mqs_task *t);
/* The next task of w's heap whose timer is due by `now` and won its
 * claim: off its wait queue, RUNNABLE, for the caller (w's scheduling
 * point) to queue; NULL when none.  *more: whether another is due. */
struct mqs_task *mqs__timer_expire(struct mqs_worker *w, uint64_t now,
                                   bool *more);
void mqs__timer_heap_free(struct mqs__timer_heap *h);

/* ---- the switch: switch.h, switch.c ------------------------------- */
/* The first call on a context switched to finishes the switch away from
 * the previous one (on_cpu 0, a move or an exit's release, a wake-up
 * left to it): mqs__finish_switch (switch.h), whose inline head takes
 * the common case and calls this for the rest. */
void mqs__finish_switch_slow(struct mqs_worker *w);

/* ---- child runs first: runnext.c ---------------------------------- */
/* runnext.c.  pop: the hand-off slot's task if it may run on w now
 * (*woken set: the policy's run_woken then places it), else the top
 * entry of the stack if it may (else the stack went to the policy);
 * push: false when full; flush: every entry to the
 * policy; steal: the oldest entry of another worker's stack that may run
 * on w.  Owner-only except steal; no lock held. */
struct mqs_task *mqs__runnext_pop(struct mqs_worker *w, bool *woken);
bool mqs__runnext_push(struct mqs_worker *w, struct mqs_task *t);
void mqs__runnext_flush(struct mqs_worker *w);
struct mqs_task *mqs__runnext_steal(struct mqs_worker *w);
/* A synchronous wake-up's hand-off: true when t (RUNNABLE, on_cpu 0),
 * woken by w's running task, went into w's hand-off slot to run when
 * that task blocks, instead of to the policy. */
bool mqs__wake_next(struct mqs_worker *w, struct mqs_task *t);
/* Child runs first: may the running task prev give worker w to child, a
 * RUNNABLE task it just spawned?  If so, run_child parks prev on w's
 * run-next stack and switches to child (returns when prev runs again). */
bool mqs__child_first(struct mqs_worker *w, struct mqs_task *prev,
                      struct mqs_task *child);
void mqs__run_child(struct mqs_worker *w, struct mqs_task *prev,
                    struct mqs_task *child);

/* ---- the scheduling point: sched.c, watchdog.c -------------------- */
void mqs__schedule(struct mqs_worker *w, struct mqs_task *prev, int why);
/* For the worker loop: pick with w's lock taken; the policy's balancing
 * then a parked spawner elsewhere; timers and the periodic work; a fresh
 * stall-detection sample. */
struct mqs_task *mqs__pick_locked(struct mqs_worker *w);
struct mqs_task *mqs__balance_and_pick(struct mqs_worker *w, int why);
void mqs__housekeeping(struct mqs_worker *w);
void mqs__stall_sample(struct mqs_worker *w, uint64_t wall);
/* Make a task that mqs__waitq_pop returned runnable; no lock held.
 * From a task, may switch to the woken task when the policy says it should
 * preempt (the caller must hold no spinlock).  flags: MQS_ENQ_SYNC when
 * the waker is likely to block soon (a pipe or channel partner: Linux's
 * WF_SYNC), so placement may keep the woken task on the waker's worker. */
void mqs__wake(struct mqs_task *t);
void mqs__wake_flags(struct mqs_task *t, int flags);
/* watchdog.c: the stall watchdog.  mqs__watchdog_check is called by
 * worker w from its periodic housekeeping (at most every millisecond,
 * never on the plain yield path) and from its idle loop; it returns at
 * once when the watchdog is off.  mqs__watchdog_park_ns caps how long an
 * idle worker may park so that its checks keep coming. */
void mqs__watchdog_check(struct mqs_worker *w);
uint64_t mqs__watchdog_park_ns(const mqs_runtime_t *rt, uint64_t timeout_ns);

/* ---- preemption: preempt.c ---------------------------------------- */
/* Start the monitor and install the handler (runtime create, after the
 * workers), stop it (destroy, after the workers); per worker thread,
 * before its loop: its thread id, errno address, signal unblocked. */
int mqs__preempt_start(mqs_runtime_t *rt);
void mqs__preempt_stop(mqs_runtime_t *rt);
void mqs__preempt_worker_init(struct mqs_worker *w);
/* Tick or exact accounting for every worker (runtime create, after the
 * workers and the policy; config.accounting). */
void mqs__accounting_setup(mqs_runtime_t *rt, int accounting);
/* A worker left its park: wake the monitor if it parked (tickless). */
void mqs__preempt_monitor_wake(mqs_runtime_t *rt);
/* May a task be stopped at pc: the main program's text, not the
 * runtime's?  And is pc in the runtime's own text? */
bool mqs__preempt_pc_safe(const mqs_runtime_t *rt, uintptr_t pc);
bool mqs__in_runtime_text(uintptr_t pc);
/* A task's entry into an I/O call (io.c, outside the runtime): take a
 * stop that a signal found inside foreign code and deferred. */
void mqs__preempt_take_missed(struct mqs_worker *w);
/* Around an I/O call's system call (io.c), by a task or any thread:
 * begin marks the calling task's worker (NULL when not a task), end
 * clears the mark and takes a stop deferred meanwhile (a scheduling
 * point: read the call's errno before it). */
struct mqs_worker *mqs__preempt_syscall_begin(void);
void mqs__preempt_syscall_end(struct mqs_worker *w);

/* ---- the worker loop: worker.c ------------------------------------ */
void mqs__worker_loop(struct mqs_worker *w);

/* ---- tasks: task.c ------------------------------------------------- */
/* task.c */
void mqs__task_exit(struct mqs_task *t);
void mqs__task_describe(const struct mqs_task *t, char *buf, size_t n);

/* ---- blocking objects: waitq.c, mutex.c (sync.c, chan.c, pipe.c:
 * public calls only) ----------------------------------------------- */
/* waitq.c (the lists themselves are in plist.h).  mqs__block: the caller holds q->lock (q may be NULL for a
 * plain sleep) and has decided to wait; the task is queued on q and, with
 * deadline_ns != 0, on its worker's timer heap; q->lock is released; the
 * task blocks.  Returns the value its waker passed to mqs__waitq_pop, or
 * MQS_ETIMEDOUT when the deadline came first, or MQS_ENOMEM (q->lock
 * released, nothing queued) when the timer heap could not grow: callers
 * hand that to their caller and leave their object as it was. */
void mqs__waitq_init(struct mqs__waitq *q);
int mqs__block(struct mqs__waitq *q, uint64_t deadline_ns, const char *what,
               const void *obj);
/* Remove the most urgent waiter that can still be woken (its timer may
 * have won), set its block result to `result`; caller holds q->lock.
 * Returns NULL when nobody waits.  Follow with mqs__wake() after
 * unlocking. */
struct mqs_task *mqs__waitq_pop(struct mqs__waitq *q, int result);
/* Claim t, if it is BLOCKED, with the same BLOCKED -> WAKING CAS as its
 * timer, under t->wait_q's lock (the caller must not hold it; a popper
 * claims an untimed waiter there with a plain store), and on winning
 * take it off that queue and set its block result to `result`.  The
 * queue must outlive the call.  Returns whether the claim won.  The task is not
 * woken: the caller (runtime destroy) frees it, or must queue it itself.
 * A timer it may have stays in its heap and loses its CAS when due. */
bool mqs__waitq_cancel(struct mqs_task *t, int result);
/* Deadline helper: now + timeout, saturating. */
uint64_t mqs__deadline(uint64_t timeout_ns);

/* mutex.c.  owned_by: whether t owns m; unlock_flags: unlock with the
 * wake-up flags for the woken waiter (a cond wait passes MQS_ENQ_SYNC).
 * Both for sync.c's condition variable. */
bool mqs__mutex_owned_by(const mqs_mutex_t *m, const struct mqs_task *t);
int mqs__mutex_unlock_flags(mqs_mutex_t *m, int wake_flags);
/* Called by the exiting task t, before it is DEAD: releases every
 * mutex t still holds, marked "owner died" (mqs.h), handing each to its
 * first waiter if any.  May switch (it wakes tasks). */
void mqs__mutex_release_dead(struct mqs_task *t);

/* ---- the poller: poll.c ------------------------------------------- */
/* init/fini: runtime create and free (fini after the workers and the
 * monitor stopped).  register: fd's descriptor, in the epoll set and
 * non-blocking (once; a regular file, which epoll refuses, is marked
 * file); MQS_EINVAL for a negative fd, MQS_EOS(errno) when the OS
 * refuses.  ticket: the edges of dir (0 read, 1 write) seen so far, read
 * before the system call whose EAGAIN leads to the wait.  wait: block
 * the task until an edge for dir or the deadline (0: none), unless an
 * edge came after the ticket (then 0 at once: try again); 0,
 * MQS_ETIMEDOUT, MQS_ECLOSED (the descriptor was closed: seq moved).
 * forget: mqs_close's part.
 * nowait: ask epoll without waiting and queue the ready tasks of at most
 * max (1..MQS__POLL_EVENTS) descriptors (through rt->poll.nowait from
 * the housekeeping and the monitor).  park: an idle worker waits in
 * epoll instead of its futex; false when it did not. */
void mqs__poll_init(mqs_runtime_t *rt);
void mqs__poll_fini(mqs_runtime_t *rt);
int mqs__fd_register(mqs_runtime_t *rt, int fd, struct mqs__fd **out);
unsigned mqs__fd_ticket(const struct mqs__fd *d, int dir);
int mqs__fd_wait(mqs_runtime_t *rt, struct mqs__fd *d, unsigned seq,
                 int dir, unsigned ticket, uint64_t deadline);
void mqs__fd_forget(mqs_runtime_t *rt, int fd);
void mqs__poll_nowait(mqs_runtime_t *rt, int max);
bool mqs__poll_park(struct mqs_worker *w, unsigned seen, uint64_t timeout_ns);

/* ---- the offload pool: offload.c ---------------------------------- */
/* init: by runtime create, before anything that may fail (fini is safe
 * on a pool never started); fini: by runtime free, when no call is in
 * flight (destroy has waited for the holds), joins the pool's threads.
 * dump: the stats dump's line. */
MQS__MUST_USE int mqs__offload_init(mqs_runtime_t *rt, int limit);
void mqs__offload_fini(mqs_runtime_t *rt);
void mqs__offload_dump(mqs_runtime_t *rt, FILE *out);

/* ---- the runtime: config.c, schedtrace.c (runtime.c, stats.c: public
 * only) ---- */
/* config.c */
int mqs__config_apply(const mqs_config_t *cfg, mqs_config_t *out,
                      char *err, size_t errn);
int mqs__policy_parse(const char *spec, const struct mqs_policy **pol,
                      int64_t *values, char *err, size_t errn);
/* The same with config.policy_ops: custom (NULL: registry only) is
 * matched by name before the registry. */
int mqs__policy_parse_ops(const char *spec, const struct mqs_policy *custom,
                          const struct mqs_policy **pol, int64_t *values,
                          char *err, size_t errn);
/* schedtrace.c: start (runtime create, once the workers run; period_ms
 * 0: off, out NULL: stderr) and stop (destroy, before the workers stop;
 * safe when never started). */
MQS__MUST_USE int mqs__schedtrace_start(mqs_runtime_t *rt, int64_t period_ms,
                                        FILE *out);
void mqs__schedtrace_stop(mqs_runtime_t *rt);

#endif
