/*
 * test_stacks.c - task stacks at scale and their guards against frames
 * larger than a page.  Built with -fstack-clash-protection
 * (tests/CMakeLists.txt), as README asks of code that runs in tasks: a
 * 64 KiB frame and an alloca(1 MiB) must both be reported as "task <name>
 * overflowed its N KiB stack", with guard markers and with the mprotect
 * fallback, and must not have written into the task in the slot below
 * (a canary in its stack, checked from the fault handler before mqs's
 * own reports and aborts).  Then 100000 tasks blocked at once, three
 * times the 32749 that one mapping per task allowed under the default
 * vm.max_map_count.
 */
#include <alloca.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "helpers.h"

#define SLOT_STACK (64u * 1024u)
#define CANARY_WORDS 256
#define CANARY 0x5a17ca9a4d1e0b5eull

/* ------------------------------------------------------------------ */
/* The neighbour and its canary                                        */
/* ------------------------------------------------------------------ */

static volatile uint64_t *canary_at;
static atomic_int neighbour_ready;
static mqs_sem_t neighbour_sem;

/* Fill a canary in the top frames of the slot below the overflowing
 * task's, then block for good (the process aborts first). */
static void *neighbour(void *arg)
{
    volatile uint64_t words[CANARY_WORDS];
    for (int i = 0; i < CANARY_WORDS; i++)
        words[i] = CANARY ^ (uint64_t)i;
    canary_at = words;
    atomic_store(&neighbour_ready, 1);
    mqs_sem_wait(&neighbour_sem);
    return arg;
}

static void write_err(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static struct sigaction mqs_segv;

/* Runs first on a fault (installed after mqs's handler, which it calls
 * next): says whether the neighbour's canary survived. */
static void canary_check(int sig, siginfo_t *si, void *uctx)
{
    bool intact = canary_at != NULL;
    for (int i = 0; intact && i < CANARY_WORDS; i++)
        intact = canary_at[i] == (CANARY ^ (uint64_t)i);
    write_err(intact ? "neighbour canary intact\n"
                     : "neighbour canary overwritten\n");
    mqs_segv.sa_sigaction(sig, si, uctx);
}

/* ------------------------------------------------------------------ */
/* The overflowing tasks                                               */
/* ------------------------------------------------------------------ */

static volatile int depth_limit = 1 << 30;

/* The frames must be plain stack frames: ASan would move big locals and
 * allocas to its own fake stack (use-after-return detection) or pad them
 * with redzones. */
#define PLAIN_FRAMES __attribute__((no_sanitize("address")))

/* Keep the compiler from dropping writes it cannot see used. */
static void use(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* 64 KiB frames, written from their low end up (memset), recursing until
 * the stack is full: the frame that crosses the bottom touches its lowest
 * byte first, up to 64 KiB below the stack, unless its pages were probed
 * from the top as it was made. */
__attribute__((noinline)) PLAIN_FRAMES static int big_frame(int depth)
{
    char buf[64 * 1024];
    memset(buf, depth, sizeof buf);
    use(buf);
    if (depth >= depth_limit)
        return buf[0];
    return big_frame(depth + 1) + buf[depth % (int)sizeof buf];
}

static void *big_frame_fn(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)big_frame(0);
}

/* alloca(1 MiB) in a 64 KiB stack, touched from its low end. */
__attribute__((noinline)) PLAIN_FRAMES static void *
big_alloca_fn(void *arg)
{
    size_t n = (size_t)1 << 20;
    char *p = alloca(n);
    memset(p, 1, n);
    use(p);
    return arg;
}

static mqs_task_fn overflow_fn;
static bool overflow_mprotect;

/* In a forked child: a runtime of 64 KiB stacks (slots of one slab), the
 * neighbour in the first slot, overflow_fn in the one above it.  Exits
 * 3-5 when the setup went wrong; otherwise the task must overflow (exit
 * 9 if not). */
static void overflow_child(void)
{
    mqs__stack_guard_mprotect(overflow_mprotect);
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 2;
    cfg.stack_size = SLOT_STACK;
    mqs_runtime_t *rt = rt_create(&cfg);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = canary_check;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &mqs_segv) != 0 ||
        !(mqs_segv.sa_flags & SA_SIGINFO))
        _exit(3);
    mqs_sem_init(&neighbour_sem, 0);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.name = "neighbour";
    mqs_task_t *n = NULL, *t = NULL;
    if (mqs_spawn(rt, &n, &a, neighbour, NULL) != 0)
        _exit(4);
    wait_count(&neighbour_ready, 1);
    a.name = "big-frames";
    if (mqs_spawn(rt, &t, &a, overflow_fn, NULL) != 0)
        _exit(4);
    /* slots are carved upwards: t's guard sits on n's top */
    struct mqs_task *tt = mqs__task_of(t), *nt = mqs__task_of(n);
    if ((char *)tt->map_base != (char *)nt->map_base + nt->map_size)
        _exit(5);
    mqs_join(t, NULL);
    _exit(9); /* must not get here */
}

static void check_overflow_reported(mqs_task_fn fn, bool mprotect_guards)
{
    char buf[8192];
    overflow_fn = fn;
    overflow_mprotect = mprotect_guards;
    check_aborted(child_stderr(overflow_child, buf, sizeof buf));
    CHECK_STR_CONTAINS(buf, "mqs: task big-frames overflowed its 64 KiB "
                            "stack");
    CHECK_STR_CONTAINS(buf, "neighbour canary intact");
}

TEST(frame_of_64k_is_caught_by_the_guard)
{
    check_overflow_reported(big_frame_fn, false);
}

TEST(alloca_of_1m_is_caught_by_the_guard)
{
    check_overflow_reported(big_alloca_fn, false);
}

TEST(frame_of_64k_is_caught_by_mprotect_guards)
{
    check_overflow_reported(big_frame_fn, true);
}

TEST(alloca_of_1m_is_caught_by_mprotect_guards)
{
    check_overflow_reported(big_alloca_fn, true);
}

/* ------------------------------------------------------------------ */
/* Many live tasks                                                     */
/* ------------------------------------------------------------------ */

/* Sanitizer builds keep a shadow (ASan) or a fiber (TSan) per task: fewer
 * there, above the old limit under ASan; TSan counts each fiber as a
 * thread and dies past 8128 of them, so its build holds 4000 (the
 * mapping count is the other builds' check). */
#if defined(LIVE_TASKS)
#elif defined(MQS_TSAN)
#define LIVE_TASKS 4000
#elif defined(MQS_ASAN)
#define LIVE_TASKS 40000
#else
#define LIVE_TASKS 100000
#endif

/* One gate for all of them: a wait queue takes any number of waiters at
 * the cost of its distinct levels (waitq.c). */
#define LIVE_PER_GATE LIVE_TASKS
#define LIVE_GATES ((LIVE_TASKS + LIVE_PER_GATE - 1) / LIVE_PER_GATE)

static atomic_int live_arrived, live_finished;
/* LIVE_TASKS, or under the default map count where guards are mprotect
 * (two mappings a task: before Linux 6.13, qemu-user), which then
 * exercises the slabs without passing the old limit (said so). */
static int live_tasks;
static mqs_waitgroup_t live_gate[LIVE_GATES], live_done;

static void *live_task(void *arg)
{
    atomic_fetch_add(&live_arrived, 1);
    CHECK_OK(mqs_waitgroup_wait(arg));
    atomic_fetch_add(&live_finished, 1);
    CHECK_OK(mqs_waitgroup_done(&live_done));
    return NULL;
}

/* Spawns every task, waits until all are in (none can end before the gate
 * opens), then opens it and waits for them all. */
static void *live_controller(void *arg)
{
    mqs_runtime_t *rt = mqs_runtime_self();
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.detached = true;
    for (int i = 0; i < live_tasks; i++)
        CHECK_OK(mqs_spawn(rt, NULL, &a, live_task,
                           &live_gate[i / LIVE_PER_GATE]));
    while (atomic_load(&live_arrived) < live_tasks)
        CHECK_OK(mqs_yield());
    CHECK_EQ(atomic_load(&live_finished), 0);
    for (int g = 0; g < LIVE_GATES; g++)
        CHECK_OK(mqs_waitgroup_done(&live_gate[g]));
    CHECK_OK(mqs_waitgroup_wait(&live_done));
    return arg;
}

TEST(live_tasks_beyond_the_old_map_count_limit)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 2;
    cfg.stack_size = 16 * 1024;
    mqs_runtime_t *rt = rt_create(&cfg);
    for (int g = 0; g < LIVE_GATES; g++) {
        CHECK_OK(mqs_waitgroup_init(&live_gate[g]));
        CHECK_OK(mqs_waitgroup_add(&live_gate[g], 1));
    }
    CHECK_OK(mqs_waitgroup_init(&live_done));
    live_tasks = LIVE_TASKS;
    if (LIVE_TASKS > 30000 && !mqs__stack_guard_markers()) {
        live_tasks = 30000;
        printf("  mprotect guards here: %d live tasks, not %d\n", live_tasks,
               LIVE_TASKS);
    }
    CHECK_OK(mqs_waitgroup_add(&live_done, live_tasks));
    CHECK(join(spawn(rt, live_controller, NULL)) == NULL);
    CHECK_EQ(atomic_load(&live_finished), live_tasks);
    CHECK_OK(mqs_runtime_destroy(rt));
}

/* ------------------------------------------------------------------ */
/* Refusals name the limit                                             */
/* ------------------------------------------------------------------ */

/* Not under sanitizers: their runtimes map memory of their own, which a
 * full map count or an address-space limit starve first ("Failed to
 * mmap"). */
#if !defined(MQS_ASAN) && !defined(MQS_TSAN)

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static mqs_runtime_t *small_runtime(void)
{
    mqs_config_t cfg;
    mqs_config_init(&cfg);
    cfg.ignore_env = true;
    cfg.workers = 1;
    cfg.stack_size = SLOT_STACK;
    return rt_create(&cfg);
}

static void *wait_sem(void *arg)
{
    mqs_sem_wait(arg);
    return NULL;
}

/* Fill the process's map count with one-page mappings (alternate
 * protections, so none merge), then spawn twice with mprotect guards: the
 * slab has room, the guard's mprotect is refused, then again. */
static void fill_map_count(void)
{
    mqs__stack_guard_mprotect(true);
    mqs_runtime_t *rt = small_runtime();
    static mqs_sem_t sem;
    mqs_sem_init(&sem, 0);
    mqs_task_t *t;
    if (mqs_spawn(rt, &t, NULL, wait_sem, &sem) != 0)
        _exit(5);
    for (int i = 0;; i++) {
        int prot = i % 2 ? PROT_READ : PROT_NONE;
        if (mmap(NULL, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
            MAP_FAILED)
            break;
    }
    if (mqs_spawn(rt, &t, NULL, ret_arg, NULL) != MQS_ENOMEM ||
        mqs_spawn(rt, &t, NULL, ret_arg, NULL) != MQS_ENOMEM)
        _exit(7);
    _exit(0);
}

/* fn's child exits 0 (its spawns saw MQS_ENOMEM) and says one thing, the
 * start of which is `says`; false when not checked (under emulation). */
static bool check_refusal(void (*fn)(void), const char *says, char *buf,
                          size_t size)
{
    /* qemu-user reserves the guest's address space up front and counts
     * its own mappings in the host's map count: neither limit looks
     * there as it does to a program on the kernel. */
    if (getenv("MQS_TEST_EMULATOR")) {
        printf("  not checked under emulation (qemu-user's own mappings)\n");
        return false;
    }
    int st = child_stderr(fn, buf, size);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), 0);
    CHECK_STR_CONTAINS(buf, says);
    CHECK_EQ(count_of(buf, "mqs: "), 1);
    return true;
}

TEST(map_count_refusal_is_reported_once_with_the_limit)
{
    char buf[4096];
    if (!check_refusal(fill_map_count,
                       "mqs: cannot map task stacks: vm.max_map_count=", buf,
                       sizeof buf))
        return;
    CHECK_STR_CONTAINS(buf, "reached");
    CHECK_STR_CONTAINS(buf, "mprotect failed");
}

/* An address-space limit: mmap says ENOMEM, the message says how much. */
static void limit_address_space(void)
{
    mqs_runtime_t *rt = small_runtime();
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        _exit(6);
    rl.rlim_cur = (rlim_t)1 << 30; /* far below a 2 GiB stack */
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        _exit(6);
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.stack_size = (size_t)1 << 30;
    mqs_task_t *t;
    if (mqs_spawn(rt, &t, &a, ret_arg, NULL) != MQS_ENOMEM)
        _exit(7);
    _exit(0);
}

TEST(mmap_refusal_is_reported_with_its_size)
{
    char buf[4096];
    if (!check_refusal(limit_address_space, "mqs: mmap of 1048", buf,
                       sizeof buf))
        return;
    CHECK_STR_CONTAINS(buf, "KiB for task stacks failed: ENOMEM "
                            "(vm.overcommit_memory=");
}
#endif
