/*
 * mqs/policy.h - the contract between the mqs core and a scheduling
 * policy.  UNSTABLE until mqs 1.0: fields and ops may change.
 *
 * A policy is one `const struct mqs_policy` with designated initialisers,
 * registered by name.  The core owns tasks, workers, run-queue locks,
 * timers, stacks and statistics; the policy owns the order of runnable
 * tasks inside each worker's run queue and the moves between queues.
 *
 * Every run queue (`struct mqs_rq`, one per worker) has a spinlock owned by
 * the core.  The op comments below say, for each op, who calls it, on
 * which worker, with which lock held, whether it may block (no op may
 * block or allocate), and what the core does when the op is absent.  A
 * table with only .name, .enqueue and .pick schedules correctly.
 *
 * Task states as a policy sees them: a task is QUEUED (between enqueue and
 * the dequeue or pick that removed it), RUNNING (returned by pick, until
 * put_prev), or neither (blocked, new, dead).  A task is queued on at most
 * one rq; the core checks that pick returns a task queued on the rq
 * passed (or one taken from another rq with mqs_rq_steal()).
 *
 * Child runs first (the core's, for a policy with MQS_POLICY_CHILD_FIRST;
 * src/runnext.c): when a running task spawns a joinable child (a parent
 * that joins its children: detached ones are spread by placement as
 * before) that may run on its worker and is not less
 * urgent than the spawner (more urgent when the spawner is realtime: a
 * FIFO or RR task runs until it yields or blocks) nor than the best
 * level queued anywhere
 * (mqs_best_prio_anywhere), the core runs the child at once WITHOUT
 * enqueue(MQS_ENQ_NEW) or pick, after put_prev for the spawner, and
 * parks the spawner on a core stack of its own.  Parked spawners are
 * neither queued nor running for the policy: the core resumes them
 * without pick when the running task blocks or exits (again only if
 * nothing more urgent is queued), lets idle workers take them after
 * balance found nothing, and hands them to enqueue(MQS_ENQ_PREEMPTED)
 * on a yield or at the periodic balance when tasks are queued.  So a
 * policy may see put_prev (and later enqueue) for a task it never saw
 * enqueue(MQS_ENQ_NEW) for, with its policy fields still zero: initialise
 * per-task state lazily (e.g. a vruntime of 0 means "place me").
 */
#ifndef MQS_POLICY_H
#define MQS_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../mqs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Priority levels shared by every policy (Linux numbering: lower is more
 * urgent).  Realtime priority p (1..99) is level 99 - p; nice n is level
 * 120 + n; the idle class is level 140. */
#define MQS_PRIO_RT_MIN 0
#define MQS_PRIO_NORMAL_MIN 100
#define MQS_PRIO_NICE0 120
#define MQS_PRIO_IDLE 140
#define MQS_PRIO_LEVELS 141
#define MQS_PRIO_NONE 255 /* published by an empty queue */

/* The tick op's answer for a run that no slice ends (FIFO). */
#define MQS_SLICE_NONE INT64_MAX

/* Nice to weight, as Linux sched_prio_to_weight: each step ~1.25x. */
extern const uint32_t mqs_nice_weight[40];

/* Intrusive doubly linked list node (see src/list.h for helpers). */
struct mqs_list {
    struct mqs_list *next, *prev;
};

/* Intrusive red-black tree node (see src/rbtree.h for helpers).  key and
 * aux belong to the tree's owner: a copy of its sort key and an augmented
 * value, kept here so that a walk reads one cache line per node. */
struct mqs_rb_node {
    struct mqs_rb_node *parent, *left, *right;
    uint64_t key, aux;
    unsigned red; /* 1 red, 0 black */
};

/* Per-entity load tracking state (see src/load_avg.h): a geometric series
 * of runnable time, half-life 32 ms. */
struct mqs_load_avg {
    uint64_t last_ns; /* time of the last update, 0 = never             */
    uint64_t sum;     /* decayed runnable time (x weight for a queue)   */
    uint64_t avg;     /* sum scaled to a load (weight when always runnable) */
    uint32_t contrib; /* 1024 ns units into the current 1024-unit period */
};

/*
 * The scheduling view of a task, embedded in it.  Fields marked "core" are
 * written only by the core; a policy reads them.  "policy" fields belong
 * to the policy that is in force; they are zero when a task is created.
 */
struct mqs_sched_entity {
    /* The fields are in cache-line order (the task struct puts the
     * entity on a line boundary, src/internal.h): with thousands of tasks
     * taking turns every line a switch touches is a miss, so what a yield
     * reads or writes is packed into the first lines.  Line 0: the core's
     * accounting and the scalars every policy reads. */
    /* core: run time at the start of this run, when it last became
     * runnable (for wait accounting) (ns).  (The task's total run time
     * is its counters' run_ns, mqs_task_stats.) */
    uint64_t exec_start_ns;
    uint64_t queued_at_ns;
    /* policy: when its next update is due, in scheduler-clock ns (cfs,
     * eevdf: the load signal's next period boundary, so that a yield
     * need not read the signal's line) */
    uint64_t due_ns;
    /* core: of the run that just ended (put_prev's ran_ns), the part the
     * worker's OS thread spent off its CPU (preempted by the OS or the
     * host); set before put_prev.  Measured (a system call) for runs of
     * at least MQS_STALL_CHECK_NS, at most once per MQS_STALL_SPACING_NS
     * of the worker's time, so always for runs that long; 0 when not
     * measured.  ran_ns includes it (it is the run's exact wall
     * time); a policy that charges for CPU actually received
     * subtracts it. */
    uint64_t stall_ns;
    /* core: class, priority level (0..140), nice, rt priority */
    mqs_class_t cls;
    uint8_t prio;
    int8_t nice;
    uint8_t rt_priority;
    bool any_worker; /* core: affinity is every worker */
    uint32_t weight; /* core: nice weight */
    /* core: worker it last ran on (-1 = never ran) */
    int16_t last_worker;
    /* core and policy: the level it is queued and runs at, as the policy
     * publishes it.  The core sets it to prio whenever it sets prio; a
     * policy whose levels move with a task's history (o1's sleep bonus,
     * ule's interactivity score) sets it where it moves them.  The core
     * compares published levels with the running task's level (a lower
     * one waits somewhere: the task is stopped). */
    uint8_t level;
    /* policy */
    uint64_t key;      /* e.g. vruntime or virtual deadline */
    int64_t slice_ns;  /* remaining time slice */

    /* Line 1: the policy's list node, a second link, p[0..3]. */
    struct mqs_list node;
    struct mqs_list node2;
    uint64_t p[6];     /* policy private; p[4..5] are on line 2 */

    /* Line 2 (after p[4..5]): the entity's load signal (cfs, eevdf
     * balancing; a yield checks due_ns instead), then the core's sleep
     * history. */
    struct mqs_load_avg load;
    /* core: time it last blocked and last woke (ns), for sleep history */
    uint64_t slept_at_ns;
    uint64_t woke_at_ns;

    /* Line 3 on: workers it may run on (core, read when any_worker is
     * false), a tree node (cfs, eevdf, bfs: touched only in the tree). */
    mqs_mask_t affinity;
    struct mqs_rb_node rb;
};

/* Runs at least this long are checked for time off the CPU (stall_ns),
 * no more often than once per spacing (bounds the cost to ~1%). */
#define MQS_STALL_CHECK_NS 5000u
#define MQS_STALL_SPACING_NS 50000u

/* Opaque to policies except through the accessors below. */
struct mqs_rq;
struct mqs_worker;

/* Reasons passed to enqueue/dequeue/select_worker/balance. */
enum mqs_enqueue_flags {
    MQS_ENQ_NEW = 1 << 0,       /* spawned                                 */
    MQS_ENQ_WAKEUP = 1 << 1,    /* woken from a block or sleep             */
    MQS_ENQ_YIELD = 1 << 2,     /* the running task yielded                */
    MQS_ENQ_PREEMPTED = 1 << 3, /* tick or a wake-up said reschedule       */
    MQS_ENQ_MIGRATED = 1 << 4,  /* moved here from another queue           */
    MQS_ENQ_SYNC = 1 << 5,      /* wake-up by a task about to block (pipe) */
    MQS_ENQ_RESTORE = 1 << 6,   /* re-queued after a priority/affinity change */
    MQS_ENQ_TASK = 1 << 7,      /* wake-up by the task running on the waker's
                                   worker (a post, a send, an unlock), not by
                                   a timer, a balancer or a thread outside */
};
enum mqs_dequeue_flags {
    MQS_DEQ_SAVE = 1 << 0,      /* removed to change priority or move it   */
    MQS_DEQ_MIGRATE = 1 << 1,   /* removed to be placed on another queue   */
};
enum mqs_balance_why {
    MQS_BALANCE_IDLE = 0,       /* worker found nothing to run after spinning */
    MQS_BALANCE_NEWIDLE = 1,    /* worker's queue just ran empty           */
    MQS_BALANCE_PERIODIC = 2,   /* periodic balancer (balance_interval)    */
};

/* Policy flags (struct mqs_policy.flags). */
enum mqs_policy_flags {
    /*
     * One run queue for the whole runtime (the 2.4 stock scheduler, BFS).
     * Every rq is then protected by the same lock (worker 0's), so holding
     * any rq's lock excludes every other queue operation, and pick on one
     * worker may return a task queued through another worker's rq: the
     * core accepts it, but only a task that is mqs_se_movable() (not
     * still on another worker's stack, mid-switch after a yield there):
     * the pick must skip the others, and the core aborts with the
     * policy's name if it returns one.  The policy keeps its queue in its per-runtime
     * state and must publish (mqs_rq_publish) on every rq whenever the
     * queue changes, since a worker parks when its own rq publishes
     * nothing.  mqs_rq_steal between two rqs always fails (same lock):
     * such a policy has no balance op.
     */
    MQS_POLICY_SHARED_RQ = 1u << 0,
    /*
     * The core may run a joinable child first (see "Child runs first"
     * above): the policy needs no enqueue(MQS_ENQ_NEW) to run a task, its
     * per-task fields may start at zero.  Without the flag every spawn
     * goes through select_worker and enqueue(MQS_ENQ_NEW) (a policy that
     * sets up a task there, or has its own child-first rule, as o1).
     */
    MQS_POLICY_CHILD_FIRST = 1u << 1,
    /*
     * Tick accounting (the tick-era designs: 2.4, the multi-queue patch,
     * O(1), Go's): the policy's slices may be charged at the resolution
     * of the preemption tick.  The core then reads no clock at a
     * scheduling point: `now`, `ran_ns`, se->exec_start_ns and
     * mqs_now_ns() come from a coarse clock that the preemption monitor
     * advances at each tick, so a run is charged the ticks it straddles
     * (0 for most short runs, right on average, as a kernel's tick
     * charged whoever it found running).  The core keeps exact reads
     * when preemption is off (no tick), when the runtime is configured
     * for exact accounting (MQS_ACCOUNTING=exact), and for a worker with
     * a timer due within a tick.  A policy whose decisions need exact
     * times (virtual runtimes, deadlines) leaves the flag clear.
     */
    MQS_POLICY_TICK_ACCOUNTING = 1u << 2,
    /*
     * Hand-off at a synchronous wake-up (the core's, src/runnext.c): a
     * task woken with MQS_ENQ_SYNC by the running task of a worker it may
     * use (a channel or pipe partner, a mutex hand-off, a condition
     * signal), not more urgent than the waker, while nothing more urgent
     * is queued anywhere, nothing is queued on that worker and no worker
     * the task may use idles, from a waker whose hand-offs mostly met
     * its block, is NOT enqueued: it waits in the core's hand-off
     * slot of the waker's worker and runs when the waker blocks, without
     * pick (Go's runnext).  The policy sees put_prev for it when it stops,
     * with no enqueue(MQS_ENQ_WAKEUP) since it blocked; if the waker yields
     * or is preempted instead (the monitor stops a waker that computes on
     * within about two ticks), or the periodic balance finds tasks queued,
     * or something more urgent is queued, the wakee goes to
     * enqueue(MQS_ENQ_WAKEUP) as usual.  A policy that keeps state of
     * the running task gives run_woken, called as the wakee starts.  So
     * a pair that keeps waking each other runs by hand-offs for at most
     * one balancing period (1 ms) while other tasks wait.
     */
    MQS_POLICY_WAKE_NEXT = 1u << 3,
};

struct mqs_policy {
    const char *name;
    const char *description;
    unsigned flags; /* enum mqs_policy_flags */

    /* Bytes of policy state per run queue and per runtime; the core
     * allocates them zeroed, cache-line aligned, before init_rq. */
    size_t rq_size;
    size_t rt_size;

    /* Tunables, name=value on the CLI / MQS_POLICY.  The core parses and
     * range-checks them and stores each into the int64_t at `offset` in
     * the per-runtime state (mqs_policy_state()).  Terminated by a NULL
     * name. */
    const struct mqs_tunable {
        const char *name;
        int64_t min, max, def;
        size_t offset;
        const char *help;
    } *tunables;

    /*
     * The ops.  For each: who calls it (which thread, which worker), the
     * lock held, what it must do, what it must not, and what the core
     * does when it is absent (as Linux's struct sched_class and
     * sched_ext's sched_ext_ops document theirs).  Rules for every op:
     * never block, sleep or take a lock that a thread may hold while
     * waiting for an rq lock; no allocation on the hot path (enqueue,
     * dequeue, yield, pick, put_prev, tick, wake_preempt); hold no rq
     * lock on return that was not held on entry.  "rq's lock" means the
     * lock the core holds, taken by the thread calling the op.
     *
     * Publishing: an op that changes what is queued on an rq (enqueue,
     * dequeue, yield, pick, a steal's take, and balance through
     * mqs_rq_add_stolen) must call mqs_rq_publish for that rq before the
     * lock is released, with the number of tasks queued there and the
     * best level: workers park, thieves choose victims and placement
     * counts load by what was published, never by the queue itself.  A
     * task returned by pick or yield is no longer queued.  The core
     * compares the best level with the running task's own (se.level,
     * which a policy whose levels move keeps equal to the level it
     * queues the task at: o1, ule): a lower one means a more urgent task
     * waits, and preemption stops the running task at once.  So a
     * policy that does not order normal tasks by nice publishes
     * MQS_PRIO_IDLE - 1 ("a normal task waits") for them, as the fair
     * policies and ws do: nice 0 would stop every running task of higher
     * nice at once.
     *
     * Builds with MQS_CONTRACT_CHECKS (Debug, the sanitizer builds, the
     * mqs_checked library) assert these rules: the core checks that the
     * calling thread holds (or holds no) rq lock around each op, the
     * helpers that need the lock check that their caller holds it, and
     * every release of an rq lock compares the published count with the
     * tasks the core queued there; a breach aborts naming the policy,
     * the op and the rule.
     */

    /* Once per runtime after tunables are parsed, before workers start,
     * by the thread creating the runtime, no lock held.  May allocate
     * (its own state: state is rt_size zeroed bytes).  Returns 0 or
     * MQS_E* (creation then fails with it).  Absent: nothing. */
    int (*init)(mqs_runtime_t *rt, void *state);
    /* Once per rq, after init, before workers start, by the creating
     * thread, no lock held (no other thread runs yet).  Must not
     * publish.  Absent: nothing. */
    void (*init_rq)(struct mqs_rq *rq);

    /* A task was spawned (Linux's task_fork): set up se's policy fields,
     * e.g. inherit from the spawner.  parent is the spawning task's
     * entity, NULL when spawned from outside the runtime's tasks (another
     * thread, another runtime's task); rq is the spawner's worker's queue
     * (worker 0's without a parent).  Called by the spawning thread,
     * once, before select_worker and the first enqueue(MQS_ENQ_NEW) (or
     * before the child runs first), with no lock held: se is the
     * spawner's alone until queued, and parent is running on this thread
     * (read its fields, never write them).  Must not publish (nothing
     * is queued) nor block.  Absent: nothing (se's policy fields start
     * at zero). */
    void (*task_new)(struct mqs_rq *rq, struct mqs_sched_entity *se,
                     const struct mqs_sched_entity *parent);

    /* Choose the worker for a task that becomes runnable (spawn, wake-up),
     * on the thread making it runnable (any thread: a worker's task, a
     * timer on a worker, a thread outside), no lock held.  waker is the
     * worker of the caller (-1 from a non-worker thread).  The result
     * must be in the task's affinity mask: the core checks it.  May read
     * published summaries, must not change any queue.  Absent:
     * mqs_select_default(). */
    int (*select_worker)(mqs_runtime_t *rt, struct mqs_sched_entity *se,
                         int waker, int flags);

    /* Make se queued on rq.  Any thread (a waker, a spawner, rq's worker
     * re-queueing its task, a thief through mqs_rq_add_stolen), rq's
     * lock held.  Must publish.  REQUIRED. */
    void (*enqueue)(struct mqs_rq *rq, struct mqs_sched_entity *se, int flags);

    /* Remove a queued se from rq (priority or affinity change), by the
     * thread making the change (any thread), rq's lock held; the core
     * then calls enqueue(MQS_ENQ_RESTORE) on the same rq, or queues the
     * task elsewhere.  Must publish.  Absent: the core never dequeues;
     * such changes take effect when the task next runs. */
    void (*dequeue)(struct mqs_rq *rq, struct mqs_sched_entity *se, int flags);

    /* Fast path for a yield (Linux's yield_task): the running task se,
     * already accounted by put_prev, gives up the worker.  Either queue se
     * exactly as enqueue(MQS_ENQ_YIELD) would and return, removed from
     * the queue, what pick would then return (se itself when it should
     * go on running), or return NULL having changed nothing, and the core
     * calls enqueue and pick.  rq's owning worker, rq's lock held.  Must
     * publish when the summary changes (a swap at one level leaves it as
     * it was).  Absent: enqueue + pick. */
    struct mqs_sched_entity *(*yield)(struct mqs_rq *rq,
                                      struct mqs_sched_entity *se);

    /* Return the next task to run on rq's worker and remove it from its
     * queue, or NULL.  rq's owning worker, rq's lock held (only that
     * one).  May take a task from another rq only with mqs_rq_steal()
     * (which only trylocks); the core aborts if pick returns a task
     * queued elsewhere.  Must publish.  REQUIRED. */
    struct mqs_sched_entity *(*pick)(struct mqs_rq *rq);

    /* The running task se stops running (yield, block, preemption, exit);
     * ran_ns is how long this run lasted.  rq's owning worker, rq's lock
     * held.  Called before enqueue (when it is re-queued) and before
     * pick.  se is not queued: nothing to publish.  Absent: nothing. */
    void (*put_prev)(struct mqs_rq *rq, struct mqs_sched_entity *se,
                     uint64_t ran_ns);

    /* A scheduling point of the running task se at time now (ns), read
     * from the clock se->exec_start_ns was (under tick accounting the
     * coarse one: a run that straddled no tick has used nothing).  rq's
     * owning worker, no lock held (take none: it runs on every
     * checkpoint).  Return how long se's slice has left, in ns: 0 or
     * less has the task give up the worker (as a yield) at this point;
     * MQS_SLICE_NONE when nothing but a more urgent task ends this run
     * (FIFO).  The answer is read with the queue as it is now: the
     * preemption monitor asks this worker no tick before it has passed
     * (a wake-up, a more urgent task or a due timer still ask at once),
     * so a slice that a later queued task would shorten without a
     * wake-up (a spawn, a migration) ends at most that answer late.
     * Absent: at a preemption tick with others waiting the slice is
     * spent (round robin at the tick); at a checkpoint never. */
    int64_t (*tick)(struct mqs_rq *rq, struct mqs_sched_entity *se,
                    uint64_t now);

    /* A task woken onto rq while curr runs there: return true if woken
     * should run before curr continues.  The waking thread, on rq's
     * worker (only wake-ups onto the waker's own worker ask), rq's lock
     * held, after enqueue(woken).  Must not change the queue.  Absent:
     * true when woken's priority level is more urgent than curr's. */
    bool (*wake_preempt)(struct mqs_rq *rq, struct mqs_sched_entity *curr,
                         struct mqs_sched_entity *woken);

    /* Move tasks between queues for `why`.  rq's owning worker, no lock
     * held; take locks with mqs_rq_lock/mqs_rq_steal and queue what was
     * taken with mqs_rq_add_stolen(_all).  Returns the number of tasks
     * moved to rq.  Absent: the core never balances. */
    int (*balance)(struct mqs_rq *rq, int why);

    /* The hand-off of MQS_POLICY_WAKE_NEXT: se, woken by the task that
     * just stopped on rq's worker (put_prev was called for that one) and
     * never enqueued, is about to run there without pick.  Either do for
     * se what its wake-up's enqueue (MQS_ENQ_WAKEUP | MQS_ENQ_SYNC |
     * MQS_ENQ_TASK) followed by a pick returning se would do (placement,
     * load, slice, the policy's running entity) and return true, or
     * return false having changed nothing: the core then calls that
     * enqueue and pick.  The scheduling point on
     * rq's owning worker, rq's lock held; se is not queued: nothing to
     * publish.  Absent: se just runs (a policy that keeps no state of
     * the running task nor of a wake-up, as mq). */
    bool (*run_woken)(struct mqs_rq *rq, struct mqs_sched_entity *se);
};

/* ----- helpers the core exports to policies ----- */
/* Each says which lock its caller must hold; "no lock" means any thread,
 * with or without locks.  Those that need rq's lock assert it (held by
 * the calling thread) in MQS_CONTRACT_CHECKS builds. */


/* The rq of worker w, the worker index of an rq, the number of workers.
 * No lock (fixed for the runtime's life). */
struct mqs_rq *mqs_rq_of(mqs_runtime_t *rt, int w);
int mqs_rq_worker(const struct mqs_rq *rq);
mqs_runtime_t *mqs_rq_runtime(const struct mqs_rq *rq);
int mqs_nr_workers(const mqs_runtime_t *rt);

/* Per-rq and per-runtime policy state (rq_size / rt_size bytes).  No
 * lock to get the pointer; what is in it is the policy's to guard (per-rq
 * state: by rq's lock, as the ops are called). */
void *mqs_rq_state(struct mqs_rq *rq);
void *mqs_policy_state(mqs_runtime_t *rt);

/* Lock / unlock an rq; trylock returns true when taken.  Never hold two rq
 * locks except through mqs_rq_steal or a trylock; lock only from an op
 * called with no lock held (balance).  Unlock: the caller must hold it. */
void mqs_rq_lock(struct mqs_rq *rq);
void mqs_rq_unlock(struct mqs_rq *rq);
bool mqs_rq_trylock(struct mqs_rq *rq);

/* Published summary of an rq, readable without its lock (stale reads are
 * fine when re-checked under the lock): the number of queued tasks and
 * the most urgent queued priority level (MQS_PRIO_NONE when empty).  The
 * policy sets them with mqs_rq_publish(), which needs rq's lock held by
 * the caller, whenever the queue changes (see "Publishing" above); it
 * also keeps the runtime-wide hint of which levels are queued anywhere
 * up to date.  The two readers need no lock. */
void mqs_rq_publish(struct mqs_rq *rq, unsigned nr_queued, unsigned best_prio);
unsigned mqs_rq_nr_queued(const struct mqs_rq *rq);
unsigned mqs_rq_best_prio(const struct mqs_rq *rq);
/* Most urgent level queued on any rq (a hint), MQS_PRIO_NONE if none.
 * No lock. */
unsigned mqs_best_prio_anywhere(const mqs_runtime_t *rt);
/* The same hint as a bitmap: MQS_LEVEL_HINT_WORDS words, bit l (word
 * l / 64, bit l % 64) set while some rq publishes level l as its best (or
 * did until its owner's next housekeeping).  Read each word with a
 * relaxed atomic load, no lock: a policy masks it with the levels it
 * cares about (a pull of more urgent tasks).  The pointer stays valid for
 * the runtime's life, so a policy may keep it in its per-rq state. */
#define MQS_LEVEL_HINT_WORDS 3
const _Atomic uint64_t *mqs_level_hint(const mqs_runtime_t *rt);

/* The time (ns) of the current scheduling point on rq's worker: what
 * mqs_sched_clock() returns there, without the thread-local lookup.
 * Only on rq's own worker (it reads that worker's private clock). */
uint64_t mqs_rq_clock(const struct mqs_rq *rq);
/* The task running on rq's worker (the one stopping, in put_prev and the
 * pick after it), NULL when the worker runs none.  Only on rq's own
 * worker: the field is that worker's private state. */
struct mqs_sched_entity *mqs_rq_curr(struct mqs_rq *rq);
/* A cache hint: se, queued on rq, is likely the next to run on rq's
 * worker after the task its op returns now (the following entity of a
 * FIFO).  The core starts fetching the lines a switch to it touches (its
 * task's switch fields, the entity's first two lines, the top of its
 * saved stack), so that with thousands of tasks taking turns their
 * misses overlap this switch instead of stalling the next.  It changes
 * nothing else: no ordering, no state; a wrong guess costs a few loads.
 * Caller: pick or yield, rq's lock held, se queued on rq. */
void mqs_se_prefetch(struct mqs_rq *rq, const struct mqs_sched_entity *se);

/* The default placement: an idle worker the task may use (its last one
 * first; the idle mark is claimed), else the waker's worker for a SYNC
 * wake-up or a normal or idle-class task's wake-up by a task
 * (MQS_ENQ_TASK: the data it was woken for is there, and it runs when the
 * waker blocks or its slice ends, not behind whatever its last worker
 * runs), else the last worker (cache affinity), else the less loaded of
 * two candidates: the waker's worker (with no waker, the next in turn,
 * which the other must undercut by two tasks) and a hashed one.
 * Policies may call it and adjust; no lock held (it may claim an idle
 * mark). */
int mqs_select_default(mqs_runtime_t *rt, struct mqs_sched_entity *se,
                       int waker, int flags);

/* Is worker w idle (spinning or parked, nothing queued)?  No lock, nor
 * for the claim below. */
bool mqs_worker_idle(const mqs_runtime_t *rt, int w);
/* Take worker w's idle mark, so that placements racing with this one do
 * not all count on the same idle worker; true if w was idle.  The worker
 * marks itself idle again when it next runs out of work. */
bool mqs_worker_claim_idle(mqs_runtime_t *rt, int w);

/* May se run on worker w, and is it free to move (not mid-switch)?  No
 * lock beyond what guards se (it is queued under a lock the caller holds,
 * or the caller's own). */
bool mqs_se_allowed(const struct mqs_sched_entity *se, int w);
bool mqs_se_movable(const struct mqs_sched_entity *se);

/*
 * Take tasks from victim's queue for rq (whose lock the caller may hold).
 * Trylocks victim (returns 0 when it is busy), then calls
 * take(victim, arg, out, max) with victim's lock held, which dequeues up
 * to max entities that are allowed on rq's worker and movable and stores
 * them in out.  Returns the number taken, and counts them as pulls of
 * kind why (or MQS_PULL_PRIORITY).  The caller enqueues or runs them.
 * The take must publish victim's summary (it runs under victim's lock).
 */
#define MQS_PULL_PRIORITY 3
/* The kind of pull a pick on rq's own worker makes when rq is empty:
 * MQS_BALANCE_NEWIDLE inside a task's scheduling point (its task just
 * blocked or ended), MQS_BALANCE_IDLE from the worker's idle loop.  Only
 * meaningful for the owner, in pick. */
int mqs_rq_empty_pull_kind(const struct mqs_rq *rq);
int mqs_rq_steal(struct mqs_rq *rq, struct mqs_rq *victim, int why,
                 int (*take)(struct mqs_rq *victim, void *arg,
                             struct mqs_sched_entity **out, int max),
                 void *arg, struct mqs_sched_entity **out, int max);

/* Queue on rq an entity taken with mqs_rq_steal: the core records it as
 * queued there and calls the policy's enqueue with MQS_ENQ_MIGRATED.
 * rq's lock held by the caller. */
void mqs_rq_add_stolen(struct mqs_rq *rq, struct mqs_sched_entity *se);
/* The same for n entities, taking and dropping rq's lock around them (the
 * caller must not hold it); returns n, what a balance op reports. */
int mqs_rq_add_stolen_all(struct mqs_rq *rq, struct mqs_sched_entity **se,
                          int n);

/* Policy registry. */
const struct mqs_policy *mqs_policy_find(const char *name);
/* The registered policies, NULL-terminated. */
const struct mqs_policy *const *mqs_policy_list(void);

/* Timestamp (ns) of the current scheduling point on the calling worker
 * (the clock, from a thread that is not a worker).  No lock. */
uint64_t mqs_sched_clock(void);

#define mqs_se_entry(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

#ifdef __cplusplus
}
#endif
#endif /* MQS_POLICY_H */
