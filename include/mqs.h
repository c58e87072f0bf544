/*
 * mqs.h - the public interface of mqs, a user-level task scheduler with a
 * multi-queue SMP design (one run queue per worker, priority-correct choice
 * across queues, realtime and fair classes, pluggable policies).
 *
 * Conventions
 *   - Every call that can fail returns int: 0 on success or a negative
 *     MQS_E* code; mqs_strerror() names it.  Results come back through
 *     out-parameters.  errno is never used: it belongs to the OS thread and
 *     a task may move between OS threads.
 *   - Calls marked "task only" must be made from code running inside an
 *     mqs task; from any other thread they return MQS_EPERM.
 *   - Bad input changes nothing: the call fails before touching state.
 *
 * Thread-safety: every call may be made concurrently from any task of the
 * same runtime.  Runtime creation and destruction are made from a thread
 * that is not one of that runtime's workers.
 */
#ifndef MQS_H
#define MQS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; mqs_version() gives the library's, which
 * differs when a program runs against another libmqs.so than it was
 * built with.  (The build checks these against CMake's project().) */
#define MQS_VERSION_MAJOR 0
#define MQS_VERSION_MINOR 1
#define MQS_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH" (a static string). */
const char *mqs_version(void);

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

enum {
    MQS_OK = 0,
    MQS_EINVAL = -1,     /* an argument is out of range or malformed     */
    MQS_ENOMEM = -2,     /* memory or a stack mapping could not be had   */
    MQS_EPERM = -3,      /* task-only call made outside a task           */
    MQS_EBUSY = -4,      /* object in use (trylock failed, live tasks)   */
    MQS_ETIMEDOUT = -5,  /* a timed wait reached its deadline            */
    MQS_ECLOSED = -6,    /* channel closed                               */
    MQS_EAGAIN = -7,     /* a try-variant would have blocked             */
    MQS_ENOPOLICY = -8,  /* no policy or tunable by that name            */
    MQS_ESTATE = -9,     /* object in the wrong state (joined twice, ...)*/
    MQS_EDEADLK = -10,   /* would wait forever (self-join, deadlock)     */
    MQS_ESYS = -11,      /* the OS refused (thread creation, mmap, ...)  */
    MQS_EOWNERDEAD = -12,/* mutex taken, its last owner exited holding it */
    MQS_ESIGNAL = -13,   /* from a signal handler that interrupted the
                            runtime: see "Signal handlers"               */
};

/* An error of the operating system, as the I/O calls return it (their
 * system call's errno, in the same negative space as the codes above):
 * MQS_EOS(EPIPE) and so on.  mqs_os_errno gives the errno back (0 for
 * any other code). */
#define MQS_EOS_BASE (-1000)
#define MQS_EOS(e) (MQS_EOS_BASE - (e))
int mqs_os_errno(int err);

/* A static string naming an error code ("invalid argument", ...); for an
 * MQS_EOS code, the OS's description of its errno. */
const char *mqs_strerror(int err);

/* ------------------------------------------------------------------ */
/* Worker masks                                                        */
/* ------------------------------------------------------------------ */

/* The most workers one runtime can have.  Masks are fixed-size bitsets
 * over worker indices 0..MQS_MAX_WORKERS-1. */
#define MQS_MAX_WORKERS 256

typedef struct mqs_mask {
    uint64_t bits[MQS_MAX_WORKERS / 64];
} mqs_mask_t;

static inline void mqs_mask_zero(mqs_mask_t *m)
{
    for (int i = 0; i < MQS_MAX_WORKERS / 64; i++)
        m->bits[i] = 0;
}
static inline void mqs_mask_set(mqs_mask_t *m, int w)
{
    m->bits[w >> 6] |= UINT64_C(1) << (w & 63);
}
static inline void mqs_mask_clear(mqs_mask_t *m, int w)
{
    m->bits[w >> 6] &= ~(UINT64_C(1) << (w & 63));
}
static inline bool mqs_mask_isset(const mqs_mask_t *m, int w)
{
    return (m->bits[w >> 6] >> (w & 63)) & 1;
}

/* ------------------------------------------------------------------ */
/* Runtime                                                             */
/* ------------------------------------------------------------------ */

typedef struct mqs_runtime mqs_runtime_t;
/* A task handle: opaque, never the task's address (src/handle.c).  A
 * handle stays valid until the task is joined, or for a detached task
 * until it ends; after that every call with it returns MQS_EINVAL (or
 * NULL / 0 where a call returns no code), never acts on another task.
 * Handles compare equal exactly when they name the same task.  A handle
 * of a destroyed runtime must not be used. */
typedef struct mqs_task_handle mqs_task_t;
struct mqs_policy; /* mqs/policy.h */

/*
 * Runtime configuration.  Initialise with mqs_config_init(): every field
 * then holds "use the default", and MQS_* environment variables (listed
 * below) override whatever the struct says, so a deployed program can be
 * retuned without rebuilding.
 *
 *   field          env var             accepted         default
 *   workers        MQS_WORKERS         1..256           CPUs this process may use
 *                                                       (affinity mask, cgroup quota)
 *   pin            MQS_PIN             0 or 1           0
 *   policy         MQS_POLICY          "name[:k=v,...]" "mq"
 *   stack_size     MQS_STACK_SIZE      16 KiB..1 GiB    256 KiB (suffix K, M, G ok)
 *   guard_size     MQS_GUARD_SIZE      1 page..1 GiB    64 KiB (suffix ok; whole pages)
 *   idle_spin_ns   MQS_IDLE_SPIN_NS    0..1e9           50000
 *   stall_ns       MQS_STALL_NS        0 or 1e6..3.6e12 0 (off) with NDEBUG, else 10 s
 *   shuffle_seed   MQS_SHUFFLE         0..2^64-1        0 (off)
 *   preempt        MQS_PREEMPT         0 or 1           1
 *   preempt_tick_ns MQS_PREEMPT_TICK_NS 2e4..1e9        1000000
 *   accounting     MQS_ACCOUNTING      policy, exact    policy
 *   offload_threads MQS_OFFLOAD_THREADS 1..4096         4 per worker, at least 16
 *   schedtrace_ms  MQS_SCHEDTRACE      0..3600000       0 (off)
 *   trace_file     MQS_TRACE           a file name      NULL (off)
 *   trace_max_mb   MQS_TRACE_MAX_MB    1..1048576       256
 *
 * policy_ops runs a policy table that is not in the registry (a policy
 * under development, a test's deliberately broken one): the name part of
 * `policy` (or MQS_POLICY) is then looked up first against
 * policy_ops->name, then in the registry, so "mine:k=v" sets its
 * tunables and "mq" still picks a registered policy.  With `policy` NULL
 * the runtime uses policy_ops with its default tunables.  The table must
 * outlive the runtime and have .name, .enqueue and .pick (MQS_EINVAL
 * otherwise).
 *
 * stall_ns is the stall watchdog (src/watchdog.c): a task that has been
 * runnable on a worker's queue for longer than stall_ns while that worker
 * kept reaching scheduling points and ran nothing more urgent than it (or
 * idled) is reported with the policy's and the task's name, and the
 * process aborts: a policy that loses a task or never picks it is caught
 * instead of hanging.  It never names a long runner, a task that keeps
 * its worker: with preemption off such a task stops its worker's checks
 * and nothing queued there is reported; with preemption on it is
 * stopped (at ticks, in its own code), so its worker keeps scheduling
 * and only a task the policy then never picks is reported.  0 turns it
 * off.  It costs nothing on the yield
 * path (checked at most every millisecond per worker; an idle worker
 * wakes every stall_ns / 8 to check while it is on).
 *
 * shuffle_seed turns on the random-schedule mode (Go's race builds
 * shuffle run order): the core perturbs, from a seeded generator per
 * worker (seed and worker index; spawns from outside the runtime draw
 * from the runtime's own), only what callers must not rely on.  A spawn
 * from outside goes to a random allowed worker; one of four placements
 * from a task does too; child-first is skipped and MQS_ENQ_SYNC's "stay
 * on the waker's worker" dropped for every other spawn or wake-up; one
 * wake-up in four from a task's code, and one mqs_checkpoint in four,
 * also yields.  Documented orders stay: class and priority, FIFO among
 * equals in wait queues, each policy's own order.  Tests run under it
 * to shake out assumptions about run order (ctest's shuffle.* entries);
 * a failure names its seed, which replays the same decisions (not the
 * same interleaving: the host still schedules the workers).  Off, it
 * costs a predictable branch on the spawn and wake-up paths only.
 *
 * guard_size is the inaccessible region below every task stack: a task
 * whose stack runs into it is reported ("task <name> overflowed its N KiB
 * stack") and the process aborts; so is a preemption stop with less room
 * left than its signal frame (see "Stack room for a stop" at
 * mqs_preempt_disable).  A frame or alloca larger than the
 * guard can jump over it into memory of another task unless the code
 * that makes it was compiled with -fstack-clash-protection (README); on
 * Linux 6.13 and later a guard costs address space and page-table
 * markers only, no memory.
 *
 * Errors from mqs_runtime_create() come with a message naming the field or
 * variable and its accepted range: written to errbuf when it is set, else
 * to stderr.
 */
typedef struct mqs_config {
    int workers;          /* 0 = default */
    int pin;              /* -1 = default; 1 pins worker i to the i-th allowed CPU */
    const char *policy;   /* NULL = default; "mq", "mq:rr_slice_ns=1000000" */
    size_t stack_size;    /* 0 = default */
    size_t guard_size;    /* 0 = default; rounded up to whole pages */
    int64_t idle_spin_ns; /* -1 = default */
    int64_t stall_ns;     /* -1 = default; 0 = no stall watchdog */
    uint64_t shuffle_seed; /* 0 = off; else the random-schedule mode's seed */
    const struct mqs_policy *policy_ops; /* NULL = by name from the registry */
    bool ignore_env;      /* true: MQS_* variables are not read */
    char *errbuf;         /* optional: receives the error message */
    size_t errbuf_size;
    /* Preemption (see mqs_preempt_disable): -1 = default (on), 0 = off
     * (tasks run until they call the runtime), 1 = on.  MQS_PREEMPT. */
    int preempt;
    /* How often the monitor looks at busy workers (up to eight ticks
     * apart while every task runs in short pieces), and the resolution
     * of slices on tasks that never yield: -1 = default (1 ms), else
     * 20 us to 1 s in ns.  MQS_PREEMPT_TICK_NS. */
    int64_t preempt_tick_ns;
    /* Accounting (see "Accounting" below): -1 = default (per policy),
     * MQS_ACCOUNTING_POLICY, MQS_ACCOUNTING_EXACT.  MQS_ACCOUNTING=policy
     * or exact. */
    int accounting;
    /* The offload pool's bound (see mqs_offload): 0 = default (4 threads
     * per worker, at least 16), else 1 to 4096.  MQS_OFFLOAD_THREADS. */
    int offload_threads;
    /* The schedtrace line: every schedtrace_ms milliseconds one line on
     * schedtrace_file (NULL = stderr) with each worker's queue length,
     * running task, switches and pulls since the line before (format in
     * docs/tracing.md): 0 = off (the default), else 1 to 3600000.
     * MQS_SCHEDTRACE=MS. */
    int64_t schedtrace_ms;
    FILE *schedtrace_file;
    /* The trace: every switch, wake-up, block, migration, pull, park and
     * spawn, written to this file at mqs_runtime_destroy as Chrome
     * trace-event JSON, which ui.perfetto.dev and chrome://tracing open
     * (docs/tracing.md).  NULL = off (the default).  The file is created
     * (truncated) by mqs_runtime_create, which fails with MQS_ESYS and a
     * message when it cannot be; a runtime never destroyed writes
     * nothing.  Each runtime writes its own file: give each its own
     * name.  MQS_TRACE=FILE. */
    const char *trace_file;
    /* The most the trace keeps, in MiB of its 32-byte records (0 = the
     * default, 256 MiB: 8 M records, some 0.8 GB of JSON): the first
     * records of the run are kept and the rest dropped, counted in the
     * file's otherData.records_past_limit and said on stderr at
     * destroy.  MQS_TRACE_MAX_MB. */
    int64_t trace_max_mb;
} mqs_config_t;

/*
 * Accounting.  How a scheduling point learns the time, and so the
 * resolution of every run and wait time the runtime measures.
 *
 *   MQS_ACCOUNTING_POLICY  (the default) as the policy declares
 *       (MQS_POLICY_TICK_ACCOUNTING, mqs/policy.h): the tick-era designs
 *       (mq, o1, ws) charge slices at the preemption tick and
 *       read no clock when they switch; the virtual-time designs (cfs,
 *       eevdf, bfs, ule, and global, whose 2.4 goodness scan costs far
 *       more than a clock read) read it at every switch.  Without preemption
 *       there is no tick, and every policy reads the clock.
 *   MQS_ACCOUNTING_EXACT   every policy reads the clock at every switch.
 *
 * Under tick accounting the times of a run (mqs_task_stats' run_ns and
 * wait_ns, mqs_worker_stats' run_ns) are sampled at the tick
 * (config.preempt_tick_ns, 1 ms by default): a run is charged the ticks
 * it straddles, 0 for most short ones, right on average over many; a
 * single short run or wait is not measured.  Idle time, timers and
 * sleeps stay exact in both modes.  mqs_accounting_exact() says which
 * mode a runtime is in.
 */
enum { MQS_ACCOUNTING_POLICY = 0, MQS_ACCOUNTING_EXACT = 1 };

void mqs_config_init(mqs_config_t *cfg);

/*
 * Resolve a configuration (NULL = all defaults): apply the environment,
 * fill defaults and check every value, without creating anything.  On success *out holds the
 * values a runtime would use (out->policy points into cfg or the
 * environment).  Errors: MQS_EINVAL or MQS_ENOPOLICY with a message.
 */
int mqs_config_resolve(const mqs_config_t *cfg, mqs_config_t *out);

/*
 * Create a runtime from cfg (NULL = all defaults): start its workers,
 * ready to run tasks.
 * Errors: MQS_EINVAL, MQS_ENOPOLICY (bad configuration, message given),
 * MQS_ENOMEM, MQS_ESYS (threads could not be started).
 */
int mqs_runtime_create(mqs_runtime_t **out, const mqs_config_t *cfg);

/* Flags for mqs_runtime_destroy_ex(). */
enum {
    /* Do not wait for tasks: let each worker finish the task it runs up
     * to its next scheduling point, then report every task still alive
     * (name, state, what it waits on) and free them. */
    MQS_DESTROY_REPORT = 1 << 0,
};

/*
 * Destroy a runtime.  mqs_runtime_destroy() waits until every task has
 * ended.  If the runtime reaches a state where no task can ever run again
 * (nothing queued, no timer pending, every live task blocked, and no
 * thread holding the runtime: see mqs_runtime_hold), waiting would never
 * end: the live tasks are reported on stderr, each is taken off the
 * object it waits on (which stays usable: a later post, send, close or
 * destroy of it behaves as with no waiter), a task freed while owning a
 * mutex releases it as an exit does (MQS_EOWNERDEAD to its next locker),
 * and the call returns MQS_EDEADLK after freeing everything.  The
 * verdict takes about 30 ms of quiet.
 *
 * mqs_runtime_destroy_ex(rt, MQS_DESTROY_REPORT, out) does not wait: it
 * stops the workers at their next scheduling point and writes a line per
 * live task to `out` (stderr when NULL); it returns the number of tasks
 * that were still alive (0 or more).  Blocked tasks are taken off their
 * objects as above.  Both wait for every hold (mqs_runtime_hold) to be
 * released first.
 *
 * Must not be called from a task of the runtime (MQS_EPERM).
 */
int mqs_runtime_destroy(mqs_runtime_t *rt);
int mqs_runtime_destroy_ex(mqs_runtime_t *rt, int flags, FILE *out);

/*
 * Tell destroy that a thread outside the runtime may still wake one of
 * its tasks (post a semaphore, send on a channel, unlock, signal).  The
 * runtime cannot see such a thread coming, so while the runtime is held
 * mqs_runtime_destroy() gives no deadlock verdict and waits, also after
 * the last task ended (a waker may still be inside its wake-up call
 * when the task it woke ends: a hold keeps the runtime alive under it).  A
 * program whose outside threads wake tasks either joins those threads
 * before destroy or holds the runtime from before they may wake anything
 * until they are done: hold before starting the thread, release as its
 * last call.  Holds count (hold twice, release twice).  Outside threads
 * that break this and wake a task while destroy frees it have undefined
 * behaviour; a call on an object after destroy took its waiters off it
 * is fine.  Any thread may hold and release.  Errors: MQS_EINVAL (NULL),
 * MQS_ESTATE (release without a hold).
 */
int mqs_runtime_hold(mqs_runtime_t *rt);
int mqs_runtime_release(mqs_runtime_t *rt);

/* Number of workers and the policy in force (its name, e.g. "mq"). */
int mqs_runtime_workers(const mqs_runtime_t *rt);
const char *mqs_runtime_policy(const mqs_runtime_t *rt);

/* The runtime of the calling task, or NULL outside a task. */
mqs_runtime_t *mqs_runtime_self(void);

/* ------------------------------------------------------------------ */
/* Tasks                                                               */
/* ------------------------------------------------------------------ */

typedef enum mqs_class {
    MQS_CLASS_NORMAL = 0, /* fair class, nice -20..19                  */
    MQS_CLASS_FIFO = 1,   /* realtime, priority 1..99, runs until it yields or blocks */
    MQS_CLASS_RR = 2,     /* realtime, priority 1..99, round robin by time slice */
    MQS_CLASS_IDLE = 3,   /* runs only when nothing else is runnable   */
} mqs_class_t;

typedef void *(*mqs_task_fn)(void *arg);

/*
 * Task attributes; mqs_task_attr_init() gives a normal, nice 0, joinable
 * task on any worker with the runtime's default stack.
 */
typedef struct mqs_task_attr {
    mqs_class_t sched_class;
    int nice;                   /* MQS_CLASS_NORMAL: -20..19            */
    int rt_priority;            /* MQS_CLASS_FIFO/RR: 1..99 (99 highest) */
    const mqs_mask_t *affinity; /* NULL = every worker; else non-empty  */
    size_t stack_size;          /* 0 = runtime default; else >= 16 KiB  */
    const char *name;           /* copied (first 31 bytes); NULL = "task-<id>" */
    bool detached;              /* true: freed at exit, cannot be joined */
} mqs_task_attr_t;

void mqs_task_attr_init(mqs_task_attr_t *attr);

/*
 * Start fn(arg) as a new task.  May be called from a task or from any
 * thread.  *out (may be NULL for detached tasks) receives the handle.
 * Errors: MQS_EINVAL (bad attribute: class, priority range, empty mask or
 * no worker of the mask exists, stack below 16 KiB), MQS_ENOMEM.
 */
int mqs_spawn(mqs_runtime_t *rt, mqs_task_t **out,
              const mqs_task_attr_t *attr, mqs_task_fn fn, void *arg);

/*
 * Wait for a joinable task to end, store its return value in *result
 * (may be NULL) and free it.  From a task the caller blocks (only the
 * task); from another thread the OS thread blocks.
 * Errors: MQS_EINVAL (NULL, detached task, or a stale handle: the task
 * was joined already, or was detached and ended), MQS_EDEADLK (joining
 * self), MQS_ESTATE (another join of it is in progress).
 */
int mqs_join(mqs_task_t *task, void **result);

/* Give the worker to another runnable task if the policy so chooses.
 * Task only. */
int mqs_yield(void);

/* A scheduling point for long-running code: gives up the worker only when
 * the policy says this task's time slice is spent (its tick op), a more
 * urgent task is runnable anywhere, or a timer is due.  Cheap otherwise
 * (one clock read).  Task only. */
int mqs_checkpoint(void);

/*
 * Preemption.  With it on (the default; MQS_PREEMPT=0 or config.preempt
 * = 0 turns it off), a task that computes without calling the runtime is
 * stopped as the kernel stops a thread: when its slice is spent (the
 * policy's tick, looked at every MQS_PREEMPT_TICK_NS, 1 ms by default,
 * while other tasks wait), when a more urgent task is runnable (a woken
 * FIFO/RR task stops a normal one on a busy worker within microseconds;
 * IDLE tasks give way to anything), when one of its worker's timers is
 * due, and when the runtime stops.  A worker whose task is alone with
 * nothing due is not interrupted, and no worker is while all idle.  So
 * a policy's shares and starvation bound hold for tasks that spin as for
 * tasks that yield (the conformance suite checks both on every policy).
 *
 * The stop is a SIGURG to the worker's thread, whose handler switches
 * only at a safe point: the interrupted instruction in the program's own
 * code (not in libc, the dynamic loader, any other shared library, nor
 * the runtime), preemption not disabled, not inside the runtime.  Else
 * the stop is retried shortly.  Every register (FP/SIMD included), the
 * signal mask and errno are kept; a task stopped this way resumes on the
 * worker it stopped on.  A SIGURG handler the program installed before
 * the runtime still gets the SIGURGs that are not the runtime's.
 *
 * What a task must not do across code that may be stopped: hold an OS
 * lock (a pthread mutex or spin lock: another task of the same worker
 * waiting for it would block the worker; use mqs_mutex_t, or disable
 * preemption around it).  A function of the program that a library
 * calls back while holding a lock of its own (pthread_once's init
 * routine, a dl_iterate_phdr callback) must disable preemption.  A
 * blocking system call made from a task may return EINTR when a stop is
 * asked while it waits, as in any program that uses signals (the mqs_*
 * I/O calls retry it).
 *
 * Stack room for a stop.  The kernel writes its signal frame on the
 * task's own stack, below the stack pointer, and the handler's frames
 * down to the switch follow: at its deepest point a task must leave that
 * much above its guard.  The frame is at most getauxval(AT_MINSIGSTKSZ),
 * which counts every state the CPU can save (11952 bytes with AMX, whose
 * 8 KiB of tiles a frame carries only in a program that asked for AMX);
 * AT_MINSIGSTKSZ + 2 KiB always suffices (4 KiB in an ASan build).
 * Measured for a whole stop: 3.7 KiB on x86-64 with AVX-512, 5 KiB on
 * aarch64 without SVE (SVE and SME registers add to it), 6.3 KiB under
 * ASan (tests/test_preempt.c prints it).  With less left the kernel
 * cannot write the frame; that is reported as the task's overflow ("task
 * <name> overflowed its N KiB stack (a signal's frame did not fit in what
 * was left)") and the process aborts.  The default 256 KiB stack leaves
 * plenty; a 16 KiB one leaves 10-12 KiB for the task's own frames.
 *
 * mqs_preempt_disable() / mqs_preempt_enable(): no stop of the calling
 * task between them (nestable, a per-task count; a stop asked meanwhile
 * happens at the outermost enable).  Cheap: no system call.  Outside a
 * task, and an enable with no disable, they do nothing.
 */
void mqs_preempt_disable(void);
void mqs_preempt_enable(void);
/* Whether rt preempts (false for NULL). */
bool mqs_preempt_on(const mqs_runtime_t *rt);
/* Whether rt reads the clock at every switch (see "Accounting"; false for
 * NULL). */
bool mqs_accounting_exact(const mqs_runtime_t *rt);

/* Block the calling task for at least ns nanoseconds.  Task only. */
int mqs_sleep(uint64_t ns);

/* The calling task, or NULL outside a task. */
mqs_task_t *mqs_self(void);

/* Name and id (unique within the runtime, from 1) of a task; NULL and 0
 * for a stale handle.  The name stays valid while the handle does. */
const char *mqs_task_name(const mqs_task_t *task);
uint64_t mqs_task_id(const mqs_task_t *task);

/*
 * Change the class and priority of a task that is running, runnable or
 * blocked.  prio is the nice value for MQS_CLASS_NORMAL, the realtime
 * priority for FIFO/RR, ignored for IDLE.  A runnable task is requeued at
 * once; a running one is affected from its next scheduling point.
 * Errors: MQS_EINVAL.
 */
int mqs_task_set_sched(mqs_task_t *task, mqs_class_t cls, int prio);
int mqs_task_get_sched(const mqs_task_t *task, mqs_class_t *cls, int *prio);

/*
 * Restrict a task to the workers in mask (non-empty, within the runtime's
 * worker count).  A runnable task on a worker outside the mask is moved;
 * a running one moves at its next scheduling point.  Errors: MQS_EINVAL.
 */
int mqs_task_set_affinity(mqs_task_t *task, const mqs_mask_t *mask);

/* The worker index the calling task runs on, or -1 outside a task. */
int mqs_worker_self(void);

/* ------------------------------------------------------------------ */
/* Task-local storage                                                  */
/* ------------------------------------------------------------------ */

typedef unsigned mqs_key_t;
#define MQS_KEYS_MAX 64

/* Create a key; dtor (may be NULL) runs at task exit on a non-NULL value.
 * Errors: MQS_EINVAL, MQS_EBUSY (all MQS_KEYS_MAX keys in use). */
int mqs_key_create(mqs_runtime_t *rt, mqs_key_t *key, void (*dtor)(void *));
int mqs_key_delete(mqs_runtime_t *rt, mqs_key_t key);
/* Task only.  Errors: MQS_EPERM, MQS_EINVAL (key not created). */
int mqs_key_set(mqs_key_t key, void *value);
void *mqs_key_get(mqs_key_t key); /* NULL when unset or outside a task */

/* ------------------------------------------------------------------ */
/* Running main inside the runtime                                     */
/* ------------------------------------------------------------------ */

/*
 * Create a runtime from cfg (NULL = defaults), run fn(arg) as a task named
 * "main", wait for it and then for every other task, destroy the runtime.
 * *result (may be NULL) receives fn's return value.
 */
int mqs_main(const mqs_config_t *cfg, mqs_task_fn fn, void *arg, void **result);

/* ------------------------------------------------------------------ */
/* Synchronisation: blocks only the calling task                       */
/* ------------------------------------------------------------------ */
/*
 * All objects are plain structs the caller allocates; init before use and
 * destroy after the last user.  Blocking calls are task only.  Waiters are
 * woken highest priority first (realtime before normal before idle, then
 * by priority), first come first served within a priority.
 */

/* Opaque storage sizes; the layouts are private to src/sync.c. */
#define MQS__WAITQ_WORDS 6
typedef struct mqs__waitq_storage {
    uint64_t w[MQS__WAITQ_WORDS];
} mqs__waitq_storage_t;

/* Mutex.  Waiters may be overtaken by a newly arriving locker (which keeps
 * throughput high) until one has waited MQS_MUTEX_STARVE_NS; from then on
 * unlock hands the mutex straight to the first waiter.
 *
 * The owner is the task that locked it; only it may unlock it (MQS_EPERM
 * for any other task, including one that reuses an exited owner's
 * memory), and its own second lock is MQS_EDEADLK.  Mutexes are robust,
 * as pthread robust mutexes are: a task that exits holding mutexes
 * releases each one marked "owner died".  The first waiter, or else the
 * next task to lock or trylock it, gets the mutex with MQS_EOWNERDEAD
 * instead of 0: it owns the mutex then (it must unlock it as usual), and
 * that return clears the mark, so later lockers get 0 again.  Whatever
 * the mutex protects may have been left half updated: the task that got
 * MQS_EOWNERDEAD repairs it or gives up on it.  (Unlike pthreads there is
 * no "consistent" call and no unrecoverable state.)  A condition wait
 * whose relock finds the mark returns MQS_EOWNERDEAD, owning the mutex.
 * The mutex must not be freed while a task holds it; held_* are the
 * owner's list of the mutexes it holds, private to src/sync.c. */
#define MQS_MUTEX_STARVE_NS 1000000
typedef struct mqs_mutex {
    uint64_t state;
    mqs__waitq_storage_t q;
    struct mqs_mutex *held_next, *held_prev;
} mqs_mutex_t;
int mqs_mutex_init(mqs_mutex_t *m);
int mqs_mutex_destroy(mqs_mutex_t *m);      /* MQS_EBUSY if locked or waited on */
int mqs_mutex_lock(mqs_mutex_t *m);         /* task only; MQS_EOWNERDEAD */
int mqs_mutex_trylock(mqs_mutex_t *m);      /* MQS_EBUSY if held; MQS_EOWNERDEAD */
int mqs_mutex_timedlock(mqs_mutex_t *m, uint64_t timeout_ns);
int mqs_mutex_unlock(mqs_mutex_t *m);       /* MQS_EPERM if not the owner */

/* Condition variable. */
typedef struct mqs_cond {
    mqs__waitq_storage_t q;
} mqs_cond_t;
int mqs_cond_init(mqs_cond_t *c);
int mqs_cond_destroy(mqs_cond_t *c);
int mqs_cond_wait(mqs_cond_t *c, mqs_mutex_t *m);
int mqs_cond_timedwait(mqs_cond_t *c, mqs_mutex_t *m, uint64_t timeout_ns);
int mqs_cond_signal(mqs_cond_t *c);
int mqs_cond_broadcast(mqs_cond_t *c);

/* Counting semaphore. */
typedef struct mqs_sem {
    uint64_t count;
    mqs__waitq_storage_t q;
} mqs_sem_t;
int mqs_sem_init(mqs_sem_t *s, unsigned initial);
int mqs_sem_destroy(mqs_sem_t *s);
int mqs_sem_wait(mqs_sem_t *s);
int mqs_sem_trywait(mqs_sem_t *s);          /* MQS_EAGAIN at zero */
int mqs_sem_timedwait(mqs_sem_t *s, uint64_t timeout_ns);
int mqs_sem_post(mqs_sem_t *s);

/* Wait group: add(n) before starting work, done() as each piece ends,
 * wait() until the count is zero.  A negative count is MQS_EINVAL. */
typedef struct mqs_waitgroup {
    int64_t count;
    mqs__waitq_storage_t q;
} mqs_waitgroup_t;
int mqs_waitgroup_init(mqs_waitgroup_t *wg);
int mqs_waitgroup_destroy(mqs_waitgroup_t *wg);
int mqs_waitgroup_add(mqs_waitgroup_t *wg, int64_t n);
int mqs_waitgroup_done(mqs_waitgroup_t *wg);
int mqs_waitgroup_wait(mqs_waitgroup_t *wg);

/* Barrier for `count` tasks; wait returns 1 in exactly one task of each
 * generation (the "serial" one) and 0 in the others. */
typedef struct mqs_barrier {
    uint32_t count, arrived;
    uint64_t generation;
    mqs__waitq_storage_t q;
} mqs_barrier_t;
int mqs_barrier_init(mqs_barrier_t *b, unsigned count);
int mqs_barrier_destroy(mqs_barrier_t *b);
int mqs_barrier_wait(mqs_barrier_t *b);

/* Bounded channel of fixed-size elements (capacity 0 = rendezvous).
 * After close, sends fail with MQS_ECLOSED and receives drain what is
 * buffered, then fail with MQS_ECLOSED. */
typedef struct mqs_chan mqs_chan_t;
int mqs_chan_create(mqs_chan_t **out, size_t elem_size, size_t capacity);
int mqs_chan_destroy(mqs_chan_t *ch);       /* MQS_EBUSY while tasks wait */
int mqs_chan_send(mqs_chan_t *ch, const void *elem);
int mqs_chan_recv(mqs_chan_t *ch, void *elem);
int mqs_chan_trysend(mqs_chan_t *ch, const void *elem);  /* MQS_EAGAIN */
int mqs_chan_tryrecv(mqs_chan_t *ch, void *elem);        /* MQS_EAGAIN */
int mqs_chan_timedsend(mqs_chan_t *ch, const void *elem, uint64_t timeout_ns);
int mqs_chan_timedrecv(mqs_chan_t *ch, void *elem, uint64_t timeout_ns);
int mqs_chan_close(mqs_chan_t *ch);         /* MQS_ECLOSED if already */
size_t mqs_chan_len(const mqs_chan_t *ch);

/*
 * Byte pipe: a bounded in-process byte stream between tasks, the
 * user-level pipe(2).  Bytes come out in the order they went in; a write
 * of n bytes is not atomic with respect to other writers (as pipe(2)
 * above PIPE_BUF).  Blocked readers and writers are served most urgent
 * first.  mqs_pipe_close() ends the stream for both sides at once.
 */
typedef struct mqs_pipe mqs_pipe_t;

/* Create a pipe that buffers up to capacity bytes (1 byte..1 GiB).
 * Errors: MQS_EINVAL (out NULL, capacity out of range), MQS_ENOMEM. */
int mqs_pipe_create(mqs_pipe_t **out, size_t capacity);

/* Free a pipe; buffered bytes are dropped.  Errors: MQS_EINVAL (NULL),
 * MQS_EBUSY (a task is blocked on it: nothing is freed). */
int mqs_pipe_destroy(mqs_pipe_t *p);

/*
 * Read between 1 and n bytes into buf: whatever is available up to n,
 * blocking the calling task (only the task) while the pipe is empty.
 * *got receives the count.  Once the pipe is closed and drained, returns
 * MQS_ECLOSED with *got = 0 (end of stream).  Task only.
 * Errors: MQS_EINVAL (p, buf or got NULL, n == 0), MQS_EPERM, MQS_ECLOSED.
 */
int mqs_pipe_read(mqs_pipe_t *p, void *buf, size_t n, size_t *got);

/* As mqs_pipe_read, but MQS_EAGAIN instead of blocking; may be called
 * from any thread. */
int mqs_pipe_tryread(mqs_pipe_t *p, void *buf, size_t n, size_t *got);

/* As mqs_pipe_read, but MQS_ETIMEDOUT once timeout_ns have passed with
 * nothing to read (0: do not wait).  Task only. */
int mqs_pipe_timedread(mqs_pipe_t *p, void *buf, size_t n, size_t *got,
                       uint64_t timeout_ns);

/*
 * Write all n bytes of buf, blocking the calling task while the pipe is
 * full; returns 0 once every byte is in the pipe or in a reader's hands.
 * *written (may be NULL) receives the count moved, which is n on
 * success and tells how far a failed write got.  n == 0 returns 0.
 * Task only.  Errors: MQS_EINVAL (p or buf NULL), MQS_EPERM, MQS_ECLOSED
 * (closed before or while writing: the bytes counted in *written went
 * in, the rest did not).
 */
int mqs_pipe_write(mqs_pipe_t *p, const void *buf, size_t n, size_t *written);

/* Write as many bytes as fit now (at least 1) without blocking; may be
 * called from any thread.  MQS_EAGAIN when not one byte fits. */
int mqs_pipe_trywrite(mqs_pipe_t *p, const void *buf, size_t n,
                      size_t *written);

/* As mqs_pipe_write, but MQS_ETIMEDOUT once timeout_ns have passed
 * before all was written (*written says how much was).  Task only. */
int mqs_pipe_timedwrite(mqs_pipe_t *p, const void *buf, size_t n,
                        size_t *written, uint64_t timeout_ns);

/* End the stream: blocked writers and every later write fail with
 * MQS_ECLOSED; readers drain what is buffered, then get MQS_ECLOSED.
 * Any thread.  Errors: MQS_EINVAL (NULL), MQS_ECLOSED (already closed). */
int mqs_pipe_close(mqs_pipe_t *p);

/* Bytes buffered now (a snapshot; 0 for NULL). */
size_t mqs_pipe_len(const mqs_pipe_t *p);

/* ------------------------------------------------------------------ */
/* I/O that blocks only the task                                       */
/* ------------------------------------------------------------------ */
/*
 * Sockets, pipes, FIFOs, eventfds, ttys: anything epoll watches.  The
 * first call on a descriptor from a task registers it with the runtime's
 * poller and makes it non-blocking (O_NONBLOCK is a property of the open
 * file: other holders of it see the change, as with Go); a call then
 * tries the system call and, when it would block, the task waits until
 * the descriptor is ready or the deadline passes, while its worker runs
 * other tasks.  Readiness is seen by an idle worker waiting in epoll or
 * spinning before it parks, by busy workers every millisecond (at a yield
 * or a preemption), and by the preemption monitor when nobody has looked
 * for ten ticks (10 ms by default), for eight descriptors at a time (a
 * last resort: the rest wait for a worker's look); a ready task is woken
 * through the normal wake-up path, and stops a busy worker's task only
 * when it is more urgent (a task of the same level waits for the next
 * scheduling point or tick).
 *
 * A regular file (which epoll refuses, and whose read may still wait for
 * a disk) is read and written on the offload pool (mqs_offload).  From a
 * thread that is not a task every call blocks that thread, as the system
 * call would.
 *
 * Close a descriptor a task may wait on with mqs_close: its waiters are
 * woken with MQS_ECLOSED before the number can be handed out again, and
 * no event of the old file reaches a new one.  A plain close(2) leaves
 * them waiting for an event that never comes (Go has the same limit), and
 * leaves the number registered: a socket or pipe opened later under it
 * is then not made non-blocking, and a task's call on it blocks its
 * worker.  So close with mqs_close every descriptor a task has used.
 *
 * Errors: the system call's as MQS_EOS(errno); MQS_EINVAL (fd negative,
 * bad events); MQS_ETIMEDOUT (the timed forms, and timeout 0 when not
 * ready); MQS_ECLOSED (mqs_close'd while waiting); MQS_ESIGNAL (from a
 * handler that interrupted the runtime); MQS_ENOMEM (the descriptor table
 * could not grow).  Descriptors up to 2^20 - 1.  Timeouts in ns;
 * MQS_FOREVER waits without one.
 */
#define MQS_FOREVER UINT64_MAX

/* read(2): the bytes read (0 at end of file) or an error. */
ssize_t mqs_read(int fd, void *buf, size_t n);
ssize_t mqs_read_timed(int fd, void *buf, size_t n, uint64_t timeout_ns);

/* write(2) of all n bytes, as a blocking write would: n, or the bytes
 * written before an error or the deadline came (an error or
 * MQS_ETIMEDOUT when none were). */
ssize_t mqs_write(int fd, const void *buf, size_t n);
ssize_t mqs_write_timed(int fd, const void *buf, size_t n,
                        uint64_t timeout_ns);

/* The vector and socket calls: one system call once the descriptor is
 * ready (readv, writev, recv, recvfrom, recvmsg, sendmsg may transfer
 * fewer bytes than asked, as on a non-blocking descriptor); mqs_send and
 * mqs_sendto send everything, as mqs_write.  Each waits at most
 * timeout_ns (MQS_FOREVER: no bound; 0: not at all, MQS_ETIMEDOUT when
 * it would block).  mqs_accept returns the new descriptor (flags as
 * accept4's: SOCK_NONBLOCK, SOCK_CLOEXEC); mqs_connect waits for the
 * connection and returns 0 or its error (MQS_EOS(ECONNREFUSED), ...).
 * On a stream whose peer is gone a send raises SIGPIPE unless flags has
 * MSG_NOSIGNAL, as send(2) does. */
ssize_t mqs_readv(int fd, const struct iovec *iov, int iovcnt,
                  uint64_t timeout_ns);
ssize_t mqs_writev(int fd, const struct iovec *iov, int iovcnt,
                   uint64_t timeout_ns);
ssize_t mqs_recv(int fd, void *buf, size_t n, int flags,
                 uint64_t timeout_ns);
ssize_t mqs_recvfrom(int fd, void *buf, size_t n, int flags,
                     struct sockaddr *from, socklen_t *fromlen,
                     uint64_t timeout_ns);
ssize_t mqs_recvmsg(int fd, struct msghdr *msg, int flags,
                    uint64_t timeout_ns);
ssize_t mqs_send(int fd, const void *buf, size_t n, int flags,
                 uint64_t timeout_ns);
ssize_t mqs_sendto(int fd, const void *buf, size_t n, int flags,
                   const struct sockaddr *to, socklen_t tolen,
                   uint64_t timeout_ns);
ssize_t mqs_sendmsg(int fd, const struct msghdr *msg, int flags,
                    uint64_t timeout_ns);
int mqs_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags,
               uint64_t timeout_ns);
int mqs_connect(int fd, const struct sockaddr *addr, socklen_t len,
                uint64_t timeout_ns);

/* Wait until fd is ready for events (POLLIN or POLLOUT from <poll.h>,
 * one of them): 0, or an error.  Like poll(2) it may return 0 when a
 * call would still block (an edge another waiter took): the caller tries
 * its call and waits again. */
int mqs_fd_wait(int fd, int events, uint64_t timeout_ns);

/* close(2), waking the tasks that wait on fd with MQS_ECLOSED first (from
 * a task: the waiters of its runtime). */
int mqs_close(int fd);

/* ------------------------------------------------------------------ */
/* Offloading a blocking call                                          */
/* ------------------------------------------------------------------ */
/*
 * A task that calls something that blocks its OS thread (a read of a
 * regular file, getaddrinfo, a library's blocking call) stops its whole
 * worker and every task queued on it.  mqs_offload runs such a call on
 * a pool of OS threads and blocks only the calling task, which is woken
 * through the normal wake-up path (placement, wake-up preemption, stats)
 * when the call returns: Tokio's spawn_blocking, libuv's work queue.
 *
 * The pool belongs to the runtime.  Its threads start on demand, up to
 * config.offload_threads (MQS_OFFLOAD_THREADS; 4 per worker, at least 16,
 * by default), and wait for the next call when idle; calls beyond the
 * bound wait in a first-come queue.  fn runs on a pool thread, with every
 * signal blocked, as a thread outside the runtime: it may use the calls
 * such threads may (mqs_sem_post, mqs_chan_try_send, ...), not the
 * task-only ones.  The call cannot be abandoned once made (fn's argument
 * and result belong to the caller), so there is no timed variant; a task
 * that needs a bound waits for fn through an object of its own.
 *
 * mqs_runtime_destroy waits for the offloaded calls in flight (each holds
 * the runtime, as mqs_runtime_hold does), so a task waiting for one is
 * never declared deadlocked; a call that never returns keeps destroy
 * waiting.
 */
typedef void *(*mqs_offload_fn)(void *arg);

/* Run fn(arg) on the runtime's offload pool and wait for it, blocking
 * only the calling task; *result (when result is not NULL) receives fn's
 * return value.  From a thread that is not a task, fn simply runs on the
 * calling thread.  Errors: MQS_EINVAL (fn NULL), MQS_ESYS (no pool
 * thread could be started and none runs; fn was not called). */
int mqs_offload(mqs_offload_fn fn, void *arg, void **result);

/* ------------------------------------------------------------------ */
/* Signal handlers                                                     */
/* ------------------------------------------------------------------ */
/*
 * A handler that runs on a worker's thread may have interrupted a task's
 * own code or the runtime itself (a scheduling point holding a run-queue
 * lock, a wait queue's critical section, a spawn or a wake-up).
 *
 * Async-signal-safe anywhere: mqs_now_ns, mqs_strerror, mqs_self,
 * mqs_worker_self, mqs_runtime_self, mqs_task_name, mqs_task_id.
 *
 * Refused inside the runtime: mqs_yield, mqs_checkpoint, mqs_sleep,
 * mqs_spawn, mqs_join, and every call of the Synchronisation section
 * that takes its object's lock or blocks (mutex lock and the unlock of a
 * waited-on mutex, cond wait/signal/broadcast, sem wait/post, wait-group
 * add/done/wait, barrier wait, channel and pipe send/recv/read/write/
 * close, the destroys, mqs_offload, and the I/O calls).  Made from a handler that interrupted the
 * runtime on its thread, they return MQS_ESIGNAL at once and change
 * nothing; before, a yield there switched away from a run-queue lock
 * holder (every worker then spun on it) and a post spun on the lock of
 * the very code it interrupted.  A dedicated code rather than MQS_ESTATE:
 * nothing is wrong with the object and the same call succeeds from the
 * task's code once the handler has returned (MQS_ESTATE says the object
 * or the runtime is unusable, as after fork).  Calls from task code never
 * get MQS_ESIGNAL.
 *
 * The same calls from a handler that interrupted the task's own code
 * act as if the task made them at that point: a yield or a block
 * suspends the task inside the handler, and the handler may resume on
 * another worker's thread (the signal mask restored by its return is the
 * one saved at delivery).  Meanwhile the worker's other tasks run under
 * the handler's mask (the handled signal blocked), and one of them that
 * takes a signal then may keep it blocked after its own handler returns:
 * a handler that yields or blocks should leave the signal unblocked
 * (SA_NODEFER) or expect it.  That is only sound if the handler runs on the
 * task's stack (not SA_ONSTACK: the alternate stack belongs to the
 * thread) and the interrupted code keeps nothing tied to the OS thread
 * (libc's own state, thread-locals cached in registers: the first
 * instructions of an mqs call, before it enters the runtime, count as
 * such code).  A handler that must be safe anywhere uses only the calls
 * above, or records the signal and lets the task act on it.
 *
 * Every other call is not async-signal-safe: the behaviour of calling it
 * from a handler is undefined.
 */

/* ------------------------------------------------------------------ */
/* fork                                                                */
/* ------------------------------------------------------------------ */
/*
 * A child of fork() has only the thread that called fork.  The runtimes
 * it inherited are unusable there and say so: mqs_spawn on them,
 * mqs_join of their tasks and mqs_runtime_destroy return MQS_ESTATE at
 * once.  Destroy releases nothing: the worker threads and whatever they
 * were using exist only in the parent, so the child leaks the inherited
 * runtime's memory rather than free what it cannot know is unused.
 *
 * If fork was called from a task, that task goes on in the child on the
 * copy of its worker's thread, and its scheduling and blocking calls
 * (mqs_yield, mqs_checkpoint, mqs_sleep, mqs_spawn, mqs_join and the
 * calls that "Signal handlers" lists as refused) return MQS_ESTATE,
 * whatever runtime or object they are for: it should exec or _exit.
 * Synchronisation objects, channels and pipes that the parent's tasks
 * use are undefined in the child when used from another thread (a lock
 * held by a thread the child lacks is never released).
 *
 * The child may create runtimes of its own (from the thread that called
 * fork, when that was not a task), and they work as anywhere.  The
 * parent and its runtimes are unaffected.  Detection costs nothing on the
 * yield path: a process-wide generation that the first
 * mqs_runtime_create registers a pthread_atfork child handler to bump,
 * compared with the one each runtime recorded when it was created.
 */

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

/* Counters of one worker, summed over its life.  Times in nanoseconds. */
typedef struct mqs_worker_stats {
    uint64_t run_ns;          /* time spent running tasks               */
    uint64_t idle_ns;         /* time spent spinning or parked          */
    uint64_t switches;        /* task-to-task or task-to-idle switches  */
    uint64_t yields;
    uint64_t wakeups_local;   /* wake-ups placed on the waker's worker  */
    uint64_t wakeups_remote;  /* wake-ups placed on another worker      */
    uint64_t migrations;      /* tasks that arrived here from elsewhere */
    uint64_t pulls_idle;      /* tasks pulled while idle                */
    uint64_t pulls_newidle;   /* ... when the queue just ran empty      */
    uint64_t pulls_periodic;  /* ... by the periodic balancer           */
    uint64_t pulls_priority;  /* ... because a remote task was better   */
    uint64_t parks;           /* times the worker parked on its futex   */
    uint64_t spawns;
    uint64_t exits;
    uint64_t preemptions;     /* tasks stopped by the preemption signal */
    uint64_t preempt_deferred; /* stops asked at an unsafe point (retried) */
    uint64_t preempt_signals; /* preemption signals taken: every stop and
                                 deferral, and each tick that found the
                                 slice not spent (the mechanism's cost) */
} mqs_worker_stats_t;

/* Counters of one task. */
typedef struct mqs_task_stats {
    uint64_t run_ns;       /* time on a worker                          */
    uint64_t wait_ns;      /* runnable but not running                  */
    uint64_t switches;     /* times switched in                         */
    uint64_t yields;
    uint64_t wakeups;
    uint64_t migrations;   /* times it ran on another worker than before */
} mqs_task_stats_t;

/* Errors: MQS_EINVAL (worker out of range). */
int mqs_worker_stats(const mqs_runtime_t *rt, int worker, mqs_worker_stats_t *out);
/* Sum over all workers, plus the spawns made from threads outside the
 * runtime (counted in `spawns` here and in no worker). */
int mqs_runtime_stats(const mqs_runtime_t *rt, mqs_worker_stats_t *out);
/* Counters of a live task (a consistent snapshot once it has ended). */
int mqs_task_stats(const mqs_task_t *task, mqs_task_stats_t *out);
/* Write a schedstat-like text dump of every worker and the offload
 * pool (and the live tasks when tasks is true) to out. */
int mqs_stats_dump(const mqs_runtime_t *rt, FILE *out, bool tasks);

/* The offload pool (mqs_offload): counters since the runtime started,
 * and its state now. */
typedef struct mqs_offload_stats {
    uint64_t limit;        /* the bound on pool threads                 */
    uint64_t threads;      /* pool threads started                      */
    uint64_t idle;         /* of them, waiting for a call now           */
    uint64_t running;      /* calls running now                         */
    uint64_t queued;       /* calls waiting for a thread now            */
    uint64_t calls;        /* calls made                                */
    uint64_t completed;    /* calls returned                            */
    uint64_t waited;       /* calls that found no thread free           */
    uint64_t max_wait_ns;  /* the longest a call waited for a thread    */
} mqs_offload_stats_t;
/* Errors: MQS_EINVAL (NULL). */
int mqs_offload_stats(const mqs_runtime_t *rt, mqs_offload_stats_t *out);

/* Nanoseconds on the runtime's monotonic clock. */
uint64_t mqs_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* MQS_H */
