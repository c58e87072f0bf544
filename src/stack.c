/*
 * stack.c - task stacks: mmap'd with a guard page, cached per worker,
 * their tops staggered, and overflow reported by name.
 *
 * One mapping holds a whole task: the guard page at the bottom, the stack
 * above it, and the task struct at the top, so a spawn is one mapping (or
 * none, from the worker's cache) and the struct shares the stack's
 * lifetime.  Stacks of the runtime's default size go back to the cache of
 * the worker where the task ended (up to STACK_CACHE_MAX), keeping spawn
 * off the mmap path and its pages warm.
 *
 * Staggering: every mapping starts on a page boundary, so without care
 * the top of every stack (where a task's hottest frames and its struct
 * are) falls on the same cache set, and a few thousand tasks thrash a
 * handful of sets.  Each new mapping shifts its top down by a multiple of
 * a cache line, cycling through (almost) a page: aligned stacks cost
 * 1.3-2.1x more per switch at a thousand tasks.
 *
 * Overflow: a task that runs into its guard page faults; the SIGSEGV
 * handler runs on the worker's alternate signal stack (the task's own
 * stack is the one that is full), recognises the guard page of the
 * current task and reports "task <name> overflowed its N KiB stack"
 * before aborting.  Faults elsewhere go to the previous handler.  The
 * handler's disposition is process-wide by nature: the only state mqs
 * keeps outside a runtime is the previous handler, to chain to.
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define STACK_CACHE_MAX 64
#define STACK_EXT_MAX 256 /* the runtime's pool for outside spawns */
/* A prime number of cache-line steps, under a page: with 64 steps (and
 * tasks spread over two workers by alternating serials) each worker's
 * tasks used half the offsets and one worker ran yields 30-40% slower at
 * 64 tasks per worker (measured: 7.0M vs 9.8M switches in 270 ms); with
 * 61 the two run at the same speed. */
#define STAGGER_STEPS 61

struct mqs__cached_stack {
    struct mqs__cached_stack *next;
    void *map_base;
    size_t map_size;
    size_t stack_size;
    uintptr_t top;  /* where the task struct goes */
};

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

/* Carve a mapping into guard | stack | struct, struct placed at `top`. */
static struct mqs_task *layout(void *base, size_t map_size, size_t stack_size,
                               uintptr_t top)
{
#if defined(MQS_ASAN)
    /* A mapping may reuse addresses of an earlier one whose stack frames
     * left poisoned shadow behind. */
    ASAN_UNPOISON_MEMORY_REGION((char *)base + page_size(),
                                map_size - page_size());
#endif
    struct mqs_task *t = (struct mqs_task *)top;
    /* Keys are zero already: fresh pages, or cleared by the exit. */
    memset(t, 0, offsetof(struct mqs_task, keys_set));
    t->map_base = base;
    t->map_size = map_size;
    t->stack_size = stack_size;
    t->stack_lo = (char *)base + page_size();
    t->stack_hi = (void *)(top & ~(uintptr_t)63);
    return t;
}

static struct mqs_task *map_new(size_t stack_size, unsigned serial)
{
    size_t ps = page_size();
    size_t stagger = (size_t)((serial * 7u) % STAGGER_STEPS) * 64u;
    size_t map_size = round_up(ps + stack_size + sizeof(struct mqs_task) +
                                   STAGGER_STEPS * 64u + 64u,
                               ps);
    void *base = mmap(NULL, map_size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (mprotect(base, ps, PROT_NONE) != 0) {
        munmap(base, map_size);
        return NULL;
    }
    uintptr_t top = ((uintptr_t)base + map_size - sizeof(struct mqs_task) -
                     stagger) & ~(uintptr_t)63;
    return layout(base, map_size, stack_size, top);
}

/* Each worker's tasks should step through the stagger offsets evenly.
 * Spawns from outside the runtime are placed in turns (sched.c,
 * two_choices), the k-th of n workers getting the ids k mod n: counted as
 * id / n + id % n, each worker's share steps through every offset, also
 * when n is a multiple of STAGGER_STEPS, where id x 7 put all of them on
 * one offset.  A worker's own spawns mostly stay there and take
 * consecutive ids.  (Counting pinned tasks on their worker instead was
 * tried and did not help random pins measurably: notes.) */
unsigned mqs__stack_serial(const mqs_runtime_t *rt,
                           const struct mqs_worker *self, uint64_t id)
{
    if (self || rt->nworkers < 2)
        return (unsigned)id;
    uint64_t n = (uint64_t)rt->nworkers;
    return (unsigned)(id / n + id % n);
}

/* Take a cached stack of `size` from c, or NULL. */
static struct mqs_task *cache_pop(struct mqs__stack_cache *c, size_t size)
{
    if (!c->head || c->head->stack_size != size)
        return NULL;
    struct mqs__cached_stack *e = c->head;
    c->head = e->next;
    c->n--;
    struct mqs__cached_stack saved = *e;
    return layout(saved.map_base, saved.map_size, saved.stack_size,
                  saved.top);
}

/* Keep t's mapping in c if it has room (t's struct becomes the entry). */
static bool cache_push(struct mqs__stack_cache *c, struct mqs_task *t,
                       unsigned max)
{
    if (c->n >= max)
        return false;
    struct mqs__cached_stack e = {
        .next = c->head,
        .map_base = t->map_base,
        .map_size = t->map_size,
        .stack_size = t->stack_size,
        .top = (uintptr_t)t,
    };
    struct mqs__cached_stack *slot = (struct mqs__cached_stack *)t;
    *slot = e;
    c->head = slot;
    c->n++;
    return true;
}

/*
 * A worker spawns from its own cache (no lock), then, like a thread
 * outside the runtime, from the runtime's pool under its lock, and maps a
 * new stack only when both are empty (rt NULL: always, for tests).  An
 * outside spawn used to map a new stack every time: p50 7 us and p99
 * 150-220 us, a worker unmapping the stacks of ended tasks at the same
 * time (the mmap lock).
 */
struct mqs_task *mqs__stack_alloc(mqs_runtime_t *rt, struct mqs_worker *w,
                                  size_t size, unsigned serial)
{
    struct mqs_task *t = w ? cache_pop(&w->stacks, size) : NULL;
    if (!t && rt) {
        mqs__spin_lock(&rt->ext_stacks_lock);
        t = cache_pop(&rt->ext_stacks, size);
        mqs__spin_unlock(&rt->ext_stacks_lock);
    }
    return t ? t : map_new(size, serial);
}

/* Stacks of the default size go to the worker's cache, or when it is full
 * (or the caller is outside the runtime: a joiner) to the runtime's pool;
 * the rest are unmapped. */
void mqs__stack_free(mqs_runtime_t *rt, struct mqs_worker *w,
                     struct mqs_task *t)
{
    if (t->stack_size == rt->stack_size) {
        if (w && cache_push(&w->stacks, t, STACK_CACHE_MAX))
            return;
        mqs__spin_lock(&rt->ext_stacks_lock);
        bool kept = cache_push(&rt->ext_stacks, t, STACK_EXT_MAX);
        mqs__spin_unlock(&rt->ext_stacks_lock);
        if (kept)
            return;
    }
    munmap(t->map_base, t->map_size);
}

void mqs__stack_cache_drain(struct mqs__stack_cache *c)
{
    while (c->head) {
        struct mqs__cached_stack *e = c->head;
        c->head = e->next;
        munmap(e->map_base, e->map_size);
    }
    c->n = 0;
}

/* ------------------------------------------------------------------ */
/* Overflow detection                                                  */
/* ------------------------------------------------------------------ */

static struct sigaction old_segv, old_bus;
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static int handler_rc;

static void write_str(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void write_num(size_t v)
{
    char buf[24];
    int i = (int)sizeof buf;
    buf[--i] = 0;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v && i > 0);
    write_str(buf + i);
}

static void on_fault(int sig, siginfo_t *si, void *uctx)
{
    struct mqs_worker *w = mqs__worker_self();
    struct mqs_task *t = w ? w->curr : NULL;
    char *a = si->si_addr;
    if (t && a >= (char *)t->map_base &&
        a < (char *)t->map_base + page_size()) {
        write_str("mqs: task ");
        write_str(t->name);
        write_str(" overflowed its ");
        write_num(t->stack_size / 1024);
        write_str(" KiB stack\n");
        signal(SIGABRT, SIG_DFL);
        abort();
    }
    /* Not ours: hand over to whoever was there before. */
    struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, si, uctx);
        return;
    }
    if (old->sa_handler == SIG_IGN)
        return;
    if (old->sa_handler != SIG_DFL) {
        old->sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL); /* re-fault with the default action */
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv) != 0 ||
        sigaction(SIGBUS, &sa, &old_bus) != 0)
        handler_rc = MQS_ESYS;
}

int mqs__overflow_handler_install(void)
{
    pthread_once(&handler_once, install);
    return handler_rc;
}

/* 64 KiB, or what the kernel says a signal frame may need if that is
 * more: aarch64's frame grows with the vector length (SVE registers, and
 * SME's ZA array alone is 64 KiB at the largest length), and glibc's
 * _SC_SIGSTKSZ reads it from the kernel's AT_MINSIGSTKSZ. */
static size_t stack_altstack_size(void)
{
    size_t size = 64 * 1024;
#if defined(_SC_SIGSTKSZ)
    long need = sysconf(_SC_SIGSTKSZ);
    if (need > 0 && (size_t)need > size)
        size = round_up((size_t)need, page_size());
#endif
    return size;
}

int mqs__altstack_setup(struct mqs_worker *w)
{
    size_t size = stack_altstack_size();
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return MQS_ENOMEM;
    stack_t ss = {.ss_sp = mem, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(mem, size);
        return MQS_ESYS;
    }
    w->altstack = mem;
    w->altstack_size = size;
    return 0;
}

void mqs__altstack_teardown(struct mqs_worker *w)
{
    if (!w->altstack)
        return;
    stack_t ss = {.ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
    munmap(w->altstack, w->altstack_size);
    w->altstack = NULL;
}
