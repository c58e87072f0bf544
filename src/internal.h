/*
 * internal.h - the core's data structures, and (through the headers it
 * includes at the end: sched_clock.h, gate.h, layers.h) the time of a
 * scheduling point, the inside-the-runtime gate, and the internal calls
 * between the core's files, one section per layer.  Nothing here is
 * public; policies see none of it (they include mqs/policy.h and their
 * kit).
 *
 * Ownership in one paragraph: a runtime owns its workers; a worker owns
 * its run queue (struct mqs_rq, lock-protected, since other workers
 * enqueue wake-ups and steal), its timer heap (lock-protected, since a
 * task may cancel a timer from another worker), its stack cache and its
 * counters (owner-written only).  A task's fields are written by the
 * worker running it, except the few marked otherwise.
 */
#ifndef MQS_INTERNAL_H
#define MQS_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mqs.h"
#include "mqs/policy.h"
#include "alloc.h"
#include "bitmap.h"
#include "clock.h"
#include "fiber.h"
#include "list.h"
#include "spinlock.h"

#define MQS__CACHELINE 64
#define MQS__ALIGNED __attribute__((aligned(MQS__CACHELINE)))
#define MQS__MUST_USE __attribute__((warn_unused_result))
/* Functions on the yield path: inlined even when called from two places. */
#define MQS__HOT inline __attribute__((always_inline))
#define MQS__LIKELY(x) __builtin_expect(!!(x), 1)
#define MQS__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MQS__MASK_WORDS (MQS_MAX_WORKERS / 64)
#define MQS__MIN_STACK (16u * 1024u)
/* The guard below each task stack (config.guard_size's default). */
#define MQS__DEFAULT_GUARD (64u * 1024u)
#define MQS__NAME_MAX 32

/* An offset under 2 * cap back into a ring of cap slots (the byte pipe's
 * and the channels'): no division, which is tens of cycles on a
 * message's critical path. */
static inline size_t mqs__ring_wrap(size_t off, size_t cap)
{
    return off >= cap ? off - cap : off;
}

/* Counters written by one thread and read by others: the owner updates
 * them without a locked instruction, readers see a value at most one
 * update old.  On x86-64 that is one plain `add` to memory (an aligned
 * 8-byte store is single-copy atomic there, as Linux's this_cpu_add
 * relies on), where C11's relaxed load and store compile to three
 * instructions: seven counters on the yield path made that ~14 of its
 * ~320.  TSan builds keep the C11 form, which it can see. */
#if defined(__x86_64__) && !defined(MQS_TSAN)
static inline void mqs__stat_add(_Atomic uint64_t *field, uint64_t n)
{
    __asm__("addq %1, %0" : "+m"(*(uint64_t *)field) : "er"(n));
}
#define MQS__STAT_ADD(field, n) mqs__stat_add(&(field), (uint64_t)(n))
#else
#define MQS__STAT_ADD(field, n)                                              \
    atomic_store_explicit(&(field),                                          \
                          atomic_load_explicit(&(field), memory_order_relaxed) \
                              + (n),                                         \
                          memory_order_relaxed)
#endif
#define MQS__STAT_GET(field) atomic_load_explicit(&(field), memory_order_relaxed)

/* ------------------------------------------------------------------ */
/* Wait queues (the blocking half of every sync object)               */
/* ------------------------------------------------------------------ */

/* Waiters ordered by priority level, FIFO within a level (waitq.c): every
 * waiter in `head`, the first waiter of each distinct level also in
 * `levels`.  All under lock.  Fits in mqs__waitq_storage_t (checked in
 * sync.c). */
struct mqs__waitq {
    mqs__spinlock_t lock;
    uint32_t nwait;
    struct mqs_list head;          /* every waiter, through wait_node      */
    struct mqs_list levels;        /* first of each level, wait_level_node */
};

/* A descriptor the poller knows (poll.c), by fd number, in chunks of
 * MQS__FD_CHUNK: readers wait on q[0], writers on q[1].  edges[dir]: the
 * edges seen for the direction, counted under its lock; a call reads it
 * before its system call (its ticket) and waits only if no edge came
 * since.  seq: bumped by mqs_close,
 * carried in each epoll registration, so that a stale event or a waiter
 * of the closed file is told apart.  registered, file: under the
 * poller's lock (file: epoll refused it, a regular file). */
#define MQS__FD_CHUNK 1024
#define MQS__FD_CHUNKS 1024 /* descriptors below 2^20 */
#define MQS__POLL_EVENTS 64 /* the most events one ask of epoll takes */
struct mqs__fd {
    struct mqs__waitq q[2];
    atomic_uint edges[2];
    atomic_uint seq;
    atomic_bool registered, file;
};

/* ------------------------------------------------------------------ */
/* The trace's records (trace.c has the vocabulary)                    */
/* ------------------------------------------------------------------ */

/* Kinds (the low byte of tk; the time in ns since the runtime started
 * is the rest). */
enum {
    MQS__TR_START = 1, MQS__TR_STOP, MQS__TR_BLOCK, MQS__TR_MIGRATE,
    MQS__TR_WAKE, MQS__TR_PULL, MQS__TR_PARK, MQS__TR_UNPARK,
    MQS__TR_SPAWN, MQS__TR_NAME,
};
/* Why a run ended (STOP's a). */
enum {
    MQS__TR_WHY_YIELD, MQS__TR_WHY_BLOCK, MQS__TR_WHY_EXIT,
    MQS__TR_WHY_MOVE, MQS__TR_WHY_CHILD, MQS__TR_WHY_PREEMPT,
};
/* Who woke a task (WAKE's source). */
enum {
    MQS__TR_SRC_TASK, MQS__TR_SRC_TIMER, MQS__TR_SRC_POLL,
    MQS__TR_SRC_LEFT, MQS__TR_SRC_OUTSIDE, MQS__TR_SRC_SLOT,
};

struct mqs__trace_rec {
    uint64_t tk;   /* ns since start << 8 | kind */
    uint64_t task; /* the task's id              */
    uint64_t a, b;
};

/* Records per ring; a full ring is written to its spill file. */
#define MQS__TRACE_RING 8192

/* One writer's ring: a worker's (owner-only) or the outside threads'
 * (under rt->trace.ext_lock). */
struct mqs__trace_ring {
    struct mqs__trace_rec *rec;
    unsigned n;
    const mqs__clock_t *clock;
    uint64_t t0;
    FILE *spill;
    int err;       /* the spill's first failed write: errno */
    uint64_t lost; /* records dropped by failed spills */
    /* The runtime's limit (trace_max_mb): records spilled by every ring
     * together, counted before each spill's write (a ring's whole batch
     * at once, so one relaxed add per 8192 records), and those this
     * ring dropped past it. */
    _Atomic uint64_t *kept;
    uint64_t max, capped;
};

/* ------------------------------------------------------------------ */
/* Tasks                                                               */
/* ------------------------------------------------------------------ */

enum mqs__task_state {
    MQS__NEW = 0,      /* created, not yet queued                        */
    MQS__RUNNABLE,     /* queued (or being queued) on a run queue        */
    MQS__RUNNING,      /* on a worker                                    */
    MQS__BLOCKED,      /* on a wait queue and/or a timer                 */
    MQS__WAKING,       /* a waker won the right to queue it              */
    MQS__DEAD,         /* returned; waiting to be joined or freed        */
};

struct mqs_task {
    /* Line 0: the task's own fields that a switch reads or writes (the
     * struct starts on a line, stack.c; the entity's hot lines follow):
     * with thousands of tasks taking turns each line is a miss. */

    /* Saved stack pointer while not running.  Owner: the worker that
     * switches it out/in. */
    void *sp;

    /* State machine above; changed with CAS where wakers race. */
    _Atomic int state;
    /* 1 from the moment a worker chooses it to run until its context is
     * fully saved after it stops: whoever would run or free it waits for 0
     * (Linux's p->on_cpu).  2: still saving, and a waker left it the
     * wake-up (mqs__wake_leave; only while late_wake is set). */
    atomic_int on_cpu;
    /* Worker whose run queue holds it, -1 when not queued.  Written under
     * that run queue's lock. */
    atomic_int queued_on;
    /* A requested change of class/priority/affinity (MQS__PEND_* bits),
     * applied by whoever next queues the task, under that run queue's
     * lock (task_ctl.c): policies never see a queued task's fields
     * change.  The request itself is in pend_lock and below. */
    atomic_int pend_flags;
    /* Set by mqs_rq_steal on the entities it hands to a policy. */
    bool stolen;
    bool detached;
    /* Set when it yielded on a worker its new affinity excludes. */
    atomic_bool resched_move;
    /* Stopped by the preemption signal: it must resume on the worker it
     * stopped on, se.last_worker (its signal frame and any thread-local
     * address its code holds belong to that thread; preempt.c).  Written
     * by the task itself, read by placement under the rq lock. */
    bool pinned;
    /* Hand-offs of its synchronous wake-ups (runnext.c): a score 0..3 of
     * whether it blocked while its wakee still waited in the slot, and
     * the wake-ups tried while the score is low.  Its own worker's. */
    uint8_t handoff_score, handoff_tries;
    /* Blocked where a waker that finds it still on its CPU may leave
     * the wake-up to its switch instead of waiting (on_cpu 2): set by
     * the task itself around such a block (the poller's, poll.c), read
     * by its worker's mqs__finish_switch.  Owner-only. */
    bool late_wake;

    /* Counters of every switch (see MQS__STAT_ADD). */
    struct {
        _Atomic uint64_t run_ns, wait_ns, switches, yields;
    } stats;

    /* Lines 1-: the scheduling view shared with the policy (see
     * mqs/policy.h), its hot fields first. */
    struct mqs_sched_entity se;

    /* Counters of wake-ups and migrations, off the switch's line. */
    struct {
        _Atomic uint64_t wakeups, migrations;
    } events;

    mqs_runtime_t *rt;
    uint64_t id;
    /* Its handle-table slot and the handle users hold (handle.c). */
    struct mqs__hslot *hslot;
    uint64_t handle;
    char name[MQS__NAME_MAX];
    mqs_task_fn fn;
    void *arg;
    void *result;

    /* Stack mapping (the task struct itself lives at its top). */
    void *map_base;          /* the slot (in a slab) or the lone mapping */
    size_t map_size;
    void *stack_lo;          /* lowest usable byte; the guard is below,
                                from map_base                          */
    void *stack_hi;          /* initial stack pointer area                */
    size_t stack_size;       /* usable size requested                     */

    /* Blocking: what it waits on, for wake-ups and for reports. */
    struct mqs__waitq *wait_q;     /* under wait_q->lock                   */
    struct mqs_list wait_node;     /* link in wait_q's node list           */
    struct mqs_list wait_level_node; /* in wait_q's level list if first of
                                      * its level, else self-linked      */
    bool wait_linked;              /* under wait_q->lock                   */
    /* The wait has a timer: its claim races the poppers' (waitq.c).
     * Written by the task in mqs__block with wait_q->lock held, read by
     * poppers under it. */
    bool wait_timed;
    int wait_result;               /* set by the waker that won            */
    void *wait_data;               /* hand-off buffer (channels)           */
    uint64_t wait_value;           /* hand-off word (mutex, wait groups)   */
    const char *wait_what;         /* "mutex", "channel recv", ...         */
    const void *wait_obj;
    /* MQS_TRACE (trace.c): the flow of the wake-up that made it
     * runnable and when (trace clock), for its next run's START; set by
     * its waker or spawner before it is queued, cleared by that START. */
    uint64_t trace_flow, trace_ready;
    /* The mutexes it owns, newest first, linked through their held_*
     * fields (sync.c); released "owner died" at exit.  Owner-only. */
    struct mqs_mutex *held_mutexes;
    /* mqs_preempt_disable() depth, and a stop asked while it was off
     * (preempt.c).  Owner-only: the task, and the preemption handler on
     * its own thread. */
    unsigned preempt_off;
    bool preempt_pending;

    /* Timer: deadline, heap slot and the worker whose heap holds it. */
    uint64_t timer_deadline;
    int timer_index;               /* -1 when not in a heap                */
    int timer_worker;

    /* Join. */
    struct mqs__waitq joinq;
    /* 0 running, MQS__DONE once DEAD (stored after joinq's lock is
     * dropped); a joiner outside the runtime sleeps on it. */
    atomic_uint done_futex;
    /* Such a joiner waits (under joinq.lock): only then does the exit
     * make a system call. */
    bool outside_joiner;

    /* The requested change that pend_flags announces. */
    mqs__spinlock_t pend_lock;      /* guards the three fields below       */
    mqs_class_t pend_cls;
    int pend_prio;
    mqs_mask_t pend_mask;

    /* Sanitizer fiber state. */
    void *asan_fake_stack;
    void *tsan_fiber;

    /* Task-local storage, last: a reused stack's struct is cleared only
     * up to here (the exit left every key NULL), so a spawn does not
     * clear 512 bytes that are almost never used. */
    bool keys_set;                  /* some key was set: run destructors  */
    void *keys[MQS_KEYS_MAX];
};
/* The switch's lines (above): the task's line 0 is its own fields; the
 * entity starts on line 1, its yield fields fill its own lines 0-1
 * (the task's 1-2) and its load signal sits on its line 2. */
_Static_assert(offsetof(struct mqs_task, se) == 64,
               "the task's switch fields fill its first cache line");
_Static_assert(offsetof(struct mqs_sched_entity, node) == 64 &&
                   offsetof(struct mqs_sched_entity, p[4]) == 128 &&
                   offsetof(struct mqs_sched_entity, due_ns) < 64 &&
                   offsetof(struct mqs_sched_entity, slept_at_ns) <= 192 - 16,
               "the entity's yield fields fill its lines 0-1, the load "
               "signal is on line 2");
enum { MQS__DONE = 1 };

/* ------------------------------------------------------------------ */
/* Run queues and workers                                             */
/* ------------------------------------------------------------------ */

struct mqs_rq {
    /* The lock that protects this queue: &own_lock, or worker 0's for a
     * policy with MQS_POLICY_SHARED_RQ (one lock over every queue). */
    mqs__spinlock_t *lock;
    mqs__spinlock_t own_lock;
    int worker;
    mqs_runtime_t *rt;
    void *pstate;                  /* policy's per-rq state               */
    /* Published summary, written under lock, read without it. */
    atomic_uint nr_queued;
    atomic_uint best_prio;
    /* The level this rq counts in the runtime-wide hint (under lock):
     * best_prio while anything is queued; kept when the queue empties
     * until the owner's next housekeeping or idle (mqs_rq_publish). */
    unsigned hint_prio;
    /* Times the queue went empty (under lock): housekeeping kicks an
     * idle worker only for a queue that stayed non-empty a whole period. */
    atomic_uint empties;
    /* The running task's level, MQS_PRIO_NONE in the worker loop: set by
     * the owner at each switch (on this line, which it writes anyway),
     * read by a waker that queued here and by the preemption monitor. */
    atomic_uint curr_level;
    /* When the running task started running (the owner's clock), for a
     * remote waker's "has it run a while" (place.c). */
    _Atomic uint64_t curr_since;
    /* Its id, for the schedtrace line (schedtrace.c); meaningful only
     * while curr_level is not MQS_PRIO_NONE. */
    _Atomic uint64_t curr_id;
#ifdef MQS_CONTRACT_CHECKS
    /* The contract's checks (rq.c): the thread holding own_lock (an
     * address unique to it, 0: none), the last op called under it, and
     * the tasks the core counts as queued here (queued_on). */
    _Atomic uintptr_t chk_holder;
    const char *chk_op;
    atomic_int chk_nr;
#endif
} MQS__ALIGNED;

struct mqs__timer_heap {
    mqs__spinlock_t lock;
    unsigned n, cap;
    struct mqs_task **v;
    _Atomic uint64_t next;         /* earliest deadline, UINT64_MAX if none */
};

/* Free handle-table slots (handle.c). */
struct mqs__hfree {
    unsigned n;
    struct mqs__hslot *head;
};

struct mqs__stack_cache {
    unsigned n;
    struct mqs__cached_stack *head;
};
struct mqs__slab;

/* Child runs first (runnext.c): spawners parked while their child runs,
 * the newest on top.  Owner pushes and pops; idle workers take the oldest
 * (under lock; n is read without it as a hint).  And the hand-off slot:
 * the task a synchronous wake-up left for its waker's block, written by
 * the owner only (others read it as a hint). */
#define MQS__RUNNEXT_MAX 64
struct mqs__runnext {
    mqs__spinlock_t lock;
    atomic_uint n;
    _Atomic(struct mqs_task *) woken;
    struct mqs_task *woken_by; /* the waker that filled the slot */
    struct mqs_task *v[MQS__RUNNEXT_MAX];
};

/* Anything on the stack or in the slot (a hint, no lock)? */
static inline bool mqs__runnext_any(struct mqs__runnext *r)
{
    return atomic_load_explicit(&r->n, memory_order_relaxed) ||
           atomic_load_explicit(&r->woken, memory_order_relaxed);
}

struct mqs__worker_counters {
    _Atomic uint64_t run_ns, idle_ns, switches, yields, wakeups_local,
        wakeups_remote, migrations, pulls_idle, pulls_newidle,
        pulls_periodic, pulls_priority, parks, spawns, exits, preemptions,
        preempt_deferred, preempt_signals;
    /* Wake-ups left to this worker's switch (on_cpu 2): internal, for
     * tests. */
    _Atomic uint64_t wakes_left;
};

/* The preemption signal: SIGURG, as Go's runtime uses, because nothing
 * else does (its default action is to ignore it).  A handler the program
 * installed before the runtime's is called for the SIGURGs that are not
 * the runtime's (preempt.c). */
#define MQS__PREEMPT_SIGNAL SIGURG

/* Why a worker is asked to stop its task (mqs__preempt_request). */
enum {
    MQS__PRE_TICK = 1,   /* ran a tick with others waiting: ask tick()   */
    MQS__PRE_URGENT = 2, /* a more urgent level waits                     */
    MQS__PRE_TIMER = 4,  /* a timer of this worker is due                 */
    MQS__PRE_STOP = 8,   /* the runtime stops                             */
    MQS__PRE_WAKE = 16,  /* a task of its level woke there: let the policy
                            choose between it and the running one         */
    MQS__PRE_WOKEN = 32, /* with URGENT: asked by a wake-up, which the
                            monitor planned no retry for (preempt.c)      */
};

/* A worker's preemption state (preempt.c), on a line of its own: the
 * monitor and remote wakers post requests, the handler takes them (the
 * running level they compare with is rq.curr_level). */
struct mqs__preempt_worker {
    atomic_int req;      /* MQS__PRE_* asked and not yet seen by handler */
    atomic_int missed;   /* asked, seen at an unsafe point: ask again    */
    int tid;             /* the worker thread's id, for tgkill           */
    /* The thread's signal mask outside any handler, SIGURG deliverable;
     * taken once on the worker's thread.  TSan builds set it at every
     * switch (switch.h), which blocks SIGURG across the switch itself
     * (mask_switch: mask and SIGURG). */
    sigset_t mask, mask_switch;
    /* The policy's answer at the last tick that found the slice not
     * spent: no tick is worth asking before quiet_until (the worker's
     * clock), while the switch count is still quiet_sw.  Written by the
     * handler on the worker, read by the monitor: a hint, so a pair torn
     * by a switch costs at most one early or late look. */
    _Atomic uint64_t quiet_until, quiet_sw;
    /* Monitor-only: switches seen at its last scan, since when, and
     * requests sent since (a deferred stop is retried soon, a few times);
     * the hand-off slot's task at that scan (runnext.c). */
    uint64_t seen, since;
    unsigned streak;
    const void *handoff_seen;
};

struct mqs_worker {
    struct mqs_rq rq;

    /* Owner-only hot state. */
    struct mqs_task *curr;         /* running task, NULL in the loop      */
    void *loop_sp;                 /* the worker loop's saved context     */
    struct mqs_task *prev;         /* task switched away from, for finish */
    int prev_why;                  /* MQS__SW_*                            */
    /* How deep the context running on this worker is inside the
     * runtime's critical sections (0: the task's own code).  Owner-only,
     * plain stores behind compiler barriers: the only other reader is a
     * signal handler on the same thread (mqs__rt_enter below). */
    unsigned in_runtime;
    /* The scheduling point in progress is a preemption (preempt.c): the
     * task goes back as MQS_ENQ_PREEMPTED, not as a yield.  Set just
     * before it, cleared where it is read (requeue_prev, sched.c). */
    bool preempting;
    /* A stop from the preemption handler is switching away with SIGURG
     * blocked (the handler runs without SA_NODEFER): the next context
     * unblocks it in mqs__finish_switch, on its own stack (preempt.c). */
    bool urg_blocked;
    /* The task is inside an I/O call's system call, which takes a stop
     * deferred there as the system call returns: the handler asks the
     * monitor for no early retry (mqs__preempt_syscall_begin, preempt.c).
     * Owner-only, as in_runtime. */
    bool in_syscall;
    /* The worker thread's errno: every switch keeps each context's own
     * value across it (switch.h).  Set once on the thread. */
    int *errno_p;
    /* MQS_TRACE (trace.c): this worker's event ring, NULL when the
     * trace is off (the one test each traced place pays then). */
    struct mqs__trace_ring *trace;
    uint64_t now;                  /* timestamp of this scheduling point  */
    /* Tick accounting (mqs__sched_clock, below): 0 when scheduling
     * points read the clock, else the tick whose coarse time they take. */
    uint64_t acct_tick;
    unsigned acct_points; /* scheduling points since an exact read */
    uint64_t next_balance;
    unsigned empties_seen;         /* rq.empties at the last period       */
    mqs__clock_t clock;
    /* Owner bias of rq.lock (rq.c): allowed at all (own lock, and
     * membarrier registered), and when a non-owner last took the lock. */
    bool bias_ok;
    uint64_t bias_quiet_since;
    _Atomic uint64_t bias_revoked;  /* times a non-owner revoked it    */
    /* Wall and thread CPU time at the last stall sample (sched.c);
     * stall_wall0 == 0: no sample yet (renewed after every park). */
    uint64_t stall_wall0, stall_cpu0;
    /* Random-schedule mode (place.c): xorshift state, 0 when off.
     * Owner-only. */
    uint64_t shuffle;

    struct mqs__timer_heap timers;
    struct mqs__stack_cache stacks;
    struct mqs__hfree hfree;       /* owner only                          */
    struct mqs__worker_counters stats;
    struct mqs__runnext runnext;
    /* Owner-only batches of shared counters, so a spawn and an exit touch
     * no line another worker writes: task ids [id_next, id_end) taken
     * from rt->next_id, and live-task units taken from rt->live (a spawn
     * uses one, an exit returns one; the worker hands its units back
     * before it idles, so rt->live reaches 0 once every task ended). */
    uint64_t id_next, id_end;
    int64_t live_units;

    /* Parking: the futex word and whether the worker sleeps on it. */
    atomic_uint park_futex MQS__ALIGNED;
    atomic_int parked;
    /* 1 while it waits in epoll instead (poll.c): a kick writes the
     * poller's eventfd. */
    atomic_int in_poll;

    int index;
    mqs_runtime_t *rt;
    pthread_t thread;
    int cpu;                       /* pinned CPU or -1                    */
    void *altstack;
    size_t altstack_size;
    void *loop_stack_lo;
    size_t loop_stack_size;
    void *tsan_fiber;

    struct mqs__preempt_worker pre MQS__ALIGNED;

    /* Stall watchdog record (watchdog.c): written by the owner at its
     * checks, read by whichever worker scans. */
    struct mqs__wd_worker {
        _Atomic uint64_t since; /* checking without a gap since then  */
        _Atomic uint64_t last;  /* time of the last check             */
        atomic_uint prio;       /* level it ran at that check (255: idle) */
    } wd MQS__ALIGNED;
} MQS__ALIGNED;

/* Why a task stops running (worker->prev_why). */
enum {
    MQS__SW_YIELD = 0, /* re-queued (or picked again)                    */
    MQS__SW_BLOCK = 1, /* on a wait queue or timer                      */
    MQS__SW_EXIT = 2,  /* returned                                      */
    MQS__SW_MOVE = 3,  /* yielded where its affinity no longer allows   */
    MQS__SW_CHILD = 4, /* parked on the run-next stack for its child     */
};

struct mqs_runtime {
    int nworkers;
    struct mqs_worker **workers;
    const struct mqs_policy *policy;
    void *pstate;
    /* Random-schedule mode: the seed (0 = off), and the draws of
     * placements from outside the runtime (place.c). */
    uint64_t shuffle_seed;
    _Atomic uint64_t shuffle_ext;
    char policy_spec[128];

    size_t stack_size;
    size_t guard_size;             /* whole pages                         */
    int64_t idle_spin_ns;
    int64_t stall_ns;              /* stall watchdog bound, 0 = off       */
    _Atomic uint64_t wd_next_scan; /* when the next watchdog scan is due  */
    int pin;
    bool bias_ok;                  /* workers may bias their rq locks    */
    unsigned fork_gen;             /* mqs__fork_gen at creation (runtime.c) */
    mqs__clock_t clock;

    atomic_int stopping;           /* 1: workers leave their loop         */

    /* Preemption (preempt.c): on, its tick, the monitor thread and its
     * parking word, and where task code may be stopped (the program's
     * own text, less the runtime's). */
    struct mqs__preempt_rt {
        bool on, started;
        uint64_t tick_ns;
        pthread_t monitor;
        atomic_uint futex;
        atomic_int parked, stop;
        unsigned nsafe;
        uintptr_t safe_lo[4], safe_hi[4];
        uintptr_t unsafe_lo, unsafe_hi; /* a sanitizer inside the program */
        /* The monitor's own: ticks from this look to the next while
         * every run is short (1..CALM_TICKS, preempt.c's scan), and the
         * looks made (tests read it). */
        unsigned calm;
        _Atomic uint64_t looks;
        /* When the monitor's next look is due, on the monitor's clock
         * (UINT64_MAX while it parks): a handler that deferred a
         * wake-up's stop brings it forward and wakes the monitor. */
        _Atomic uint64_t next_look;
        /* The coarse clock of tick accounting (internal.h,
         * mqs__sched_clock, below): the monitor's time at its last look, stored
         * at every look.  Written by the monitor only; its own line. */
        _Atomic uint64_t jiffy MQS__ALIGNED;
    } pre;
    _Atomic uint64_t next_id;
    _Atomic int64_t live MQS__ALIGNED;   /* tasks spawned and not ended */
    atomic_uint live_futex;
    /* Threads outside the runtime that may still wake a task
     * (mqs_runtime_hold): destroy gives no deadlock verdict while > 0.
     * hold_lock is held by a release across its decrement and wake-up,
     * and taken once by destroy after the count reaches 0, so destroy
     * never frees the runtime under a release still touching it. */
    atomic_int holds;
    pthread_mutex_t hold_lock;

    /* Hint: per priority level, how many run queues publish it as their
     * best; and the levels with a non-zero count. */
    atomic_uint level_count[MQS_PRIO_LEVELS] MQS__ALIGNED;
    _Atomic uint64_t level_bits[MQS_LEVEL_HINT_WORDS] MQS__ALIGNED;
    /* Workers with nothing to run. */
    _Atomic uint64_t idle_bits[MQS__MASK_WORDS] MQS__ALIGNED;

    /* The offload pool (offload.c).  Every field under lock, except the
     * counters read by mqs_offload_stats, which take it too; the pool's
     * threads wait on more.  threads[] has room for limit entries. */
    struct mqs__offload {
        bool inited, stop;
        pthread_mutex_t lock;
        pthread_cond_t more;
        struct mqs__offload_req *head, *tail;
        int limit, nthreads, nidle, running, queued;
        pthread_t *threads;
        uint64_t calls, completed, waited, max_wait_ns;
    } offload;

    /* MQS_SCHEDTRACE (schedtrace.c): the line's thread, which alone
     * uses the fields below `started` (stop under lock). */
    struct mqs__schedtrace {
        bool started, stop;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t thread;
        uint64_t period_ns, t0;
        FILE *out;
        char *buf;
        size_t cap;
        struct mqs__schedtrace_worker *workers;
    } strace;

    /* MQS_TRACE (trace.c): the output file, opened at create and
     * written at destroy; the rings' time origin; the wake-ups' flow
     * counter; the ring of threads outside the runtime, under ext_lock.
     * `on` is set once before the workers start. */
    struct mqs__trace {
        bool inited, on;
        FILE *out;
        char path[256];
        uint64_t t0;
        _Atomic uint64_t flows;
        _Atomic uint64_t kept; /* records spilled, every ring (above) */
        uint64_t max_mb;
        pthread_mutex_t ext_lock;
        struct mqs__trace_ring ext;
    } trace;

    /* The poller (poll.c): epoll and the eventfd that wakes its waiter
     * (-1 until the first I/O call starts them), the descriptor table,
     * whether a worker waits in epoll, the try-flag of the polls that do
     * not wait, and how many tasks wait on a descriptor (destroy gives no
     * deadlock verdict meanwhile: readiness comes from outside).  epfd and
     * the chunks are set once under lock and read without it. */
    struct mqs__poll {
        bool inited;
        atomic_int epfd;
        int efd;
        bool no_pwait2; /* the kernel lacks epoll_pwait2: ms timeouts */
        pthread_mutex_t lock;
        _Atomic(struct mqs__fd *) chunk[MQS__FD_CHUNKS];
        atomic_int waiter;
        atomic_int busy;
        atomic_long waiting;
        /* When epoll was last asked (rt->clock): the monitor asks only
         * when nobody has for ten ticks (preempt.c). */
        _Atomic uint64_t asked_ns;
        /* mqs__poll_nowait, for the housekeeping and the monitor, which
         * lie below the poller (the layers' one other way up, beside the
         * policy's ops); set before epfd. */
        void (*nowait)(mqs_runtime_t *rt, int max);
    } poll;

    /* Task-local storage keys. */
    mqs__spinlock_t keys_lock;
    bool key_used[MQS_KEYS_MAX];
    void (*key_dtor[MQS_KEYS_MAX])(void *);

    /* Spawns from threads outside the runtime. */
    _Atomic uint64_t ext_spawns;
    /* Placements with no waker so far: their first candidate rotates
     * (place.c, two_choices). */
    atomic_uint place_rr;

    /* Stacks a worker's full cache or an outside joiner gave back, for
     * spawns from outside threads and from workers whose own cache is
     * empty (stack.c). */
    mqs__spinlock_t ext_stacks_lock;
    struct mqs__stack_cache ext_stacks;

    /* The handle table (handle.c): its chunks, and the free slots that
     * outside spawns take and workers refill from. */
    mqs__spinlock_t hpool_lock;
    struct mqs__hfree hpool;
    struct mqs__hchunk *hchunks;

    /* Slabs of default-size stack slots, the newest first, and the slots
     * that neither a worker's cache nor ext_stacks had room for; both
     * under slab_lock, a mutex: a new slab is mapped while holding it
     * (stack.c). */
    pthread_mutex_t slab_lock;
    struct mqs__slab *slabs;
    unsigned nslabs;
    struct mqs__stack_cache free_slots;
    atomic_bool stack_err_reported; /* the map failure was reported once */
};

/* ------------------------------------------------------------------ */
/* Internal calls                                                      */
/* ------------------------------------------------------------------ */

/* mqs__worker_self's TLS read as a call that is never inlined (below:
 * where no inline form is written). */
struct mqs_worker *mqs__worker_self_call(void);
/* The running task, or NULL outside a task. */
struct mqs_task *mqs__current(void);
/* The same TLS read, inlined: only for the top of an entry point, before
 * anything in that function can switch (after a switch, the compiler may
 * reuse the address it computed for the previous OS thread). */
/* The initial-exec TLS model: the thread-local is read at a fixed offset
 * from the thread pointer.  Without it libmqs.so (built -fPIC) reached it
 * through a call to __tls_get_addr (general dynamic) at every lookup,
 * which the static library never paid.  The cost: the library's TLS must
 * be in the static TLS block, which a library loaded at start or
 * preloaded (mqs-run) always is; one dlopen()ed later draws on glibc's
 * static-TLS surplus, which a pointer fits. */
#define MQS__TLS_MODEL __attribute__((tls_model("initial-exec")))
extern MQS__TLS_MODEL _Thread_local struct mqs_worker *mqs__tls_worker;
static inline struct mqs_worker *mqs__worker_entry(void)
{
    return mqs__tls_worker;
}

/* The calling thread's worker, or NULL.  A task may resume on another OS
 * thread, so the TLS address must never be reused across a switch: on
 * x86-64 one volatile load through %fs with a memory clobber (ordered
 * with every call and memory access, never merged with another read),
 * elsewhere a call to a function that is never inlined. */
static inline struct mqs_worker *mqs__worker_self(void)
{
#if defined(__x86_64__)
    struct mqs_worker *w;
    __asm__ volatile("movq mqs__tls_worker@gottpoff(%%rip), %0\n\t"
                     "movq %%fs:(%0), %0"
                     : "=r"(w)
                     :
                     : "memory");
    return w;
#else
    return mqs__worker_self_call();
#endif
}

#include "sched_clock.h"
#include "gate.h"
#include "layers.h"

/* Abort with a message naming the task and the broken invariant. */
_Noreturn void mqs__panic(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));


#endif
