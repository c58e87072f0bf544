/*
 * stack.c - task stacks: slots carved from shared slabs, each with a guard
 * region below it, cached per worker, their tops staggered, and overflow
 * reported by name.
 *
 * A slot holds a whole task: the guard at the bottom, the stack above it,
 * and the task struct at the top, so the struct shares the stack's
 * lifetime.  Slots of the runtime's default stack size come from slabs:
 * one anonymous MAP_NORESERVE mapping carved into slots, the guards
 * installed with madvise(MADV_GUARD_INSTALL) (Linux 6.13): page-table
 * markers that fault on access without splitting the mapping, so a slab
 * of K tasks is one kernel mapping (VMA) and costs no memory for its
 * guards.  A slot is carved (and its guard installed) the first time it
 * is needed, so a new slab costs one mmap and each new slot one madvise;
 * a freed slot goes to the worker's cache (up to STACK_CACHE_MAX, no
 * lock), then the runtime's pool (STACK_EXT_MAX, a spinlock), then the
 * runtime's free list (under slab_lock), never back to the kernel: once
 * warm, a spawn makes no system call.  Slabs are unmapped when the runtime
 * is destroyed; the memory of a peak of live tasks stays with the runtime
 * until then, as with any slab allocator.
 *
 * Slab size: the first slab has SLAB_MIN_SLOTS slots and each new one
 * twice the last, up to SLAB_MAX_SLOTS (1024).  Virtual size is nearly
 * free with MAP_NORESERVE (1024 slots of 256 KiB + 64 KiB guard are
 * 328 MiB of address space out of 128 TiB), and neither the page tables
 * nor the first spawn depend on K: page tables are filled only where slots
 * are carved (a guard marker or a touched page), and carving is lazy.
 * What K buys is the map count: 10^6 tasks of the default size take about
 * 1,000 slabs, 1.5% of the default vm.max_map_count (65530), where one
 * mapping per task stopped at 32,749 (two VMAs each: the mprotect'ed guard
 * split it); in practice fewer, as the kernel merges adjacent slabs (40
 * mappings with 10^6 tasks alive, mqs-bench spawn --live).  Small
 * programs start small: a runtime with a few tasks reserves
 * SLAB_MIN_SLOTS slots (5 MiB at the default size), which matters under
 * vm.overcommit_memory=2, where MAP_NORESERVE is ignored and the whole
 * slab is charged.  A slab is large enough for transparent huge pages, so
 * it is marked MADV_NOHUGEPAGE (a task touches a page or two of it).
 *
 * Other stack sizes (a task's attribute) get a mapping of their own, one
 * VMA with the guard installed by madvise, unmapped when the task ends:
 * slabs per size class would keep address space and memory for every
 * size a program ever asked for, and put a class lookup on the hot path,
 * for tasks that are the exception (a few big-stack tasks).
 *
 * On a kernel without MADV_GUARD_INSTALL (EINVAL) the guards are
 * mprotect(PROT_NONE) instead, two VMAs per slot as before slabs; when the
 * kernel refuses a mapping or a guard the reason is printed once per
 * runtime, with vm.max_map_count and the process's mappings read at that
 * moment (spawn returns MQS_ENOMEM; the config's errbuf belongs to
 * mqs_runtime_create, so this goes to stderr).
 *
 * Guard size: config.guard_size, 64 KiB by default.  A guard catches a
 * frame only if the frame's first access lands in it: a frame or alloca
 * larger than the guard that touches its low end first skips over it into
 * the slot below (another task's struct).  Code built with
 * -fstack-clash-protection probes every page of a large frame in order, so
 * any guard of a page or more catches it; for code built without it (the
 * default of Debian's gcc 12), 64 KiB covers the frames that real code has
 * (buffers of a few KiB to 64 KiB).  With MADV_GUARD_INSTALL a guard costs
 * only address space and page-table markers, so it can be generous.
 *
 * Staggering: every slot starts on a page boundary, so without care the
 * top of every stack (where a task's hottest frames and its struct are)
 * falls on the same cache set, and a few thousand tasks thrash a handful
 * of sets.  Each new slot shifts its top down by a multiple of a cache
 * line, cycling through (almost) a page: aligned stacks cost 1.3-2.1x more
 * per switch at a thousand tasks.  The price is memory: a blocked task
 * has touched its struct's first 664 bytes and its frames, one page where
 * they fit under the slot's top page boundary and two for the offsets
 * that put them across it, 5.2 KiB per task on average against 4 KiB
 * unstaggered (10^6 tasks: 5.2 GiB).
 *
 * Rejected: one mapping per task (the map count above: two VMAs a task,
 * MQS_ENOMEM at 32,749 live tasks with the default limit); a canary word
 * at the stack's bottom instead of a guard (checked at a switch, it finds
 * an overflow after the frames below it were overwritten, and the
 * overflowing task may have corrupted its neighbour's struct or crashed
 * elsewhere first); MAP_GROWSDOWN stacks (still a VMA each, the kernel's
 * stack guard gap of 256 pages between them, and growth only on faults
 * near the stack pointer, which user-level stack switching defeats).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif

#define STACK_CACHE_MAX 64
#define STACK_EXT_MAX 256 /* the runtime's pool for outside spawns */
#define SLAB_MIN_SLOTS 16
#define SLAB_MAX_SLOTS 1024
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
    size_t guard;
    uintptr_t top;  /* where the task struct goes */
};

/* One mapping of nslots slots of slot_bytes each, carved from the bottom
 * up; the first `carved` have their guard and are in use or on a free
 * list. */
struct mqs__slab {
    struct mqs__slab *next;
    char *base;
    size_t slot_bytes;
    unsigned nslots, carved;
};

/* How guards are made, process-wide: the kernel either has markers or
 * not.  0 not known yet, 1 madvise works, 2 mprotect. */
static atomic_int guard_mode;

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

/* ------------------------------------------------------------------ */
/* Slots                                                               */
/* ------------------------------------------------------------------ */

/* Bytes of one slot: guard, stack, and the struct with room to stagger. */
static size_t slot_bytes(size_t stack_size, size_t guard)
{
    return round_up(guard + stack_size + sizeof(struct mqs_task) +
                        STAGGER_STEPS * 64u + 64u,
                    page_size());
}

static uintptr_t slot_top(const char *base, size_t bytes, unsigned serial)
{
    size_t stagger = (size_t)((serial * 7u) % STAGGER_STEPS) * 64u;
    return ((uintptr_t)base + bytes - sizeof(struct mqs_task) - stagger) &
           ~(uintptr_t)63;
}

/* Does the kernel really refuse access to p?  Asked once, of the first
 * guard madvise installed: an emulator (qemu-user) answers 0 to advice
 * it ignores, and a guard that is not there would let an overflow run
 * into the next slot unreported.  A write(2) from p must fail with
 * EFAULT when p is guarded; it fails the same way under the kernel and
 * succeeds where the advice was ignored. */
static bool guard_is_real(const void *p)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0)
        return true; /* cannot tell: trust the kernel's answer */
    ssize_t n = write(fd[1], p, 1);
    int err = errno;
    close(fd[0]);
    close(fd[1]);
    return n < 0 && err == EFAULT;
}

/* Make [p, p + len) fault on any access: 0 or an errno. */
static int guard_install(void *p, size_t len)
{
    int mode = atomic_load_explicit(&guard_mode, memory_order_relaxed);
    if (mode != 2) {
        if (madvise(p, len, MADV_GUARD_INSTALL) == 0) {
            if (mode == 1 || guard_is_real(p)) {
                atomic_store_explicit(&guard_mode, 1, memory_order_relaxed);
                return 0;
            }
            /* Accepted, not enforced (an emulator): mprotect from now on. */
        } else if (errno != EINVAL) {
            return errno;
        }
        atomic_store_explicit(&guard_mode, 2, memory_order_relaxed);
    }
    return mprotect(p, len, PROT_NONE) == 0 ? 0 : errno;
}

static const char *guard_call(void)
{
    return atomic_load_explicit(&guard_mode, memory_order_relaxed) == 2
               ? "mprotect"
               : "madvise";
}

void mqs__stack_guard_mprotect(bool on)
{
    atomic_store(&guard_mode, on ? 2 : 0);
}

bool mqs__stack_guard_markers(void)
{
    if (atomic_load(&guard_mode) == 0) {
        size_t ps = page_size();
        void *p = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            (void)guard_install(p, ps);
            munmap(p, 2 * ps);
        }
    }
    return atomic_load(&guard_mode) == 1;
}

/* Unmap stack memory.  Under ASan its shadow is cleared first: the
 * frames of the tasks that ran there left poison behind, which would
 * otherwise greet whatever the process maps at these addresses next
 * (a false "stack-buffer-underflow" in the program's own mmap). */
static void stack_unmap(void *base, size_t size)
{
#if defined(MQS_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(base, size);
#endif
    munmap(base, size);
}

/* Zero n bytes at p (n a constant) in 64-byte pieces: gcc stores each
 * piece with vector registers, where one memset of the struct's ~700
 * bytes became `rep stos`, whose start-up was two thirds of a warm
 * stack's reuse (perf, AMD EPYC VM, the 10^4 spawn tree). */
static inline void clear_struct(void *p, size_t n)
{
    char *c = p;
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        memset(c + i, 0, 64);
    memset(c + i, 0, n - i);
}

/* Carve a slot into guard | stack | struct, struct placed at `top`. */
static struct mqs_task *layout(void *base, size_t map_size, size_t guard,
                               size_t stack_size, uintptr_t top)
{
#if defined(MQS_ASAN)
    /* A slot may reuse addresses of an earlier one whose stack frames
     * left poisoned shadow behind. */
    ASAN_UNPOISON_MEMORY_REGION((char *)base + guard, map_size - guard);
#endif
    struct mqs_task *t = (struct mqs_task *)top;
    /* Keys are zero already: fresh pages, or cleared by the exit. */
    clear_struct(t, offsetof(struct mqs_task, keys_set));
    t->map_base = base;
    t->map_size = map_size;
    t->stack_size = stack_size;
    t->stack_lo = (char *)base + guard;
    t->stack_hi = (void *)(top & ~(uintptr_t)63);
    return t;
}

/* ------------------------------------------------------------------ */
/* Saying why the kernel refused                                       */
/* ------------------------------------------------------------------ */

static long read_long(const char *path)
{
    long v = -1;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* Once per runtime (none without one: the unit tests' stacks). */
static void report_refusal(mqs_runtime_t *rt, const char *call, int err,
                           size_t bytes)
{
    if (!rt || atomic_exchange(&rt->stack_err_reported, true))
        return;
    long max = read_long("/proc/sys/vm/max_map_count");
    long maps = mqs__count_mappings();
    char msg[256];
    if (err == ENOMEM && max > 0 && maps >= max - 8)
        snprintf(msg, sizeof msg,
                 "cannot map task stacks: vm.max_map_count=%ld reached "
                 "(%ld mappings; %s failed)", max, maps, call);
    else
        snprintf(msg, sizeof msg,
                 "%s of %zu KiB for task stacks failed: %s "
                 "(vm.overcommit_memory=%ld, vm.max_map_count=%ld, %ld "
                 "mappings)", call, bytes / 1024,
                 err == ENOMEM ? "ENOMEM" : strerror(err),
                 read_long("/proc/sys/vm/overcommit_memory"), max, maps);
    mqs__report_error(NULL, msg);
}

/* ------------------------------------------------------------------ */
/* Lone mappings and slabs                                             */
/* ------------------------------------------------------------------ */

/* A mapping of one slot: stacks of a size other than the runtime's, and
 * every stack without a runtime (the unit tests). */
static struct mqs_task *map_lone(mqs_runtime_t *rt, size_t stack_size,
                                 size_t guard, unsigned serial)
{
    size_t bytes = slot_bytes(stack_size, guard);
    void *base = mqs__mmap(bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    if (base == MAP_FAILED) {
        report_refusal(rt, "mmap", errno, bytes);
        return NULL;
    }
    int err = guard_install(base, guard);
    if (err) {
        stack_unmap(base, bytes);
        report_refusal(rt, guard_call(), err, guard);
        return NULL;
    }
    return layout(base, bytes, guard, stack_size, slot_top(base, bytes,
                                                           serial));
}

/* Map the runtime's next slab (under slab_lock). */
static struct mqs__slab *slab_new(mqs_runtime_t *rt)
{
    unsigned shift = rt->nslabs < 6 ? rt->nslabs : 6;
    struct mqs__slab *s = mqs__malloc(sizeof *s);
    if (!s)
        return NULL;
    s->slot_bytes = slot_bytes(rt->stack_size, rt->guard_size);
    s->nslots = SLAB_MIN_SLOTS << shift;
    s->carved = 0;
    size_t bytes = s->slot_bytes * s->nslots;
    s->base = mqs__mmap(bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    if (s->base == MAP_FAILED) {
        report_refusal(rt, "mmap", errno, bytes);
        free(s);
        return NULL;
    }
    /* With transparent huge pages "always", a task's first touch of a
     * 2 MiB stretch without page tables would fault in a huge page:
     * 2 MiB of RSS for a page of struct and frames.  Advice only. */
    madvise(s->base, bytes, MADV_NOHUGEPAGE);
    s->next = rt->slabs;
    rt->slabs = s;
    rt->nslabs++;
    return s;
}

/* The next uncarved slot, a new slab if the newest is full (under
 * slab_lock).  A slot whose guard the kernel refused stays uncarved. */
static struct mqs_task *slab_carve(mqs_runtime_t *rt, unsigned serial)
{
    struct mqs__slab *s = rt->slabs;
    if (!s || s->carved == s->nslots)
        s = slab_new(rt);
    if (!s)
        return NULL;
    char *base = s->base + (size_t)s->carved * s->slot_bytes;
    int err = guard_install(base, rt->guard_size);
    if (err) {
        report_refusal(rt, guard_call(), err, rt->guard_size);
        return NULL;
    }
    s->carved++;
    return layout(base, s->slot_bytes, rt->guard_size, rt->stack_size,
                  slot_top(base, s->slot_bytes, serial));
}

/* Each worker's tasks should step through the stagger offsets evenly.
 * Spawns from outside the runtime are placed in turns (place.c,
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
    return layout(saved.map_base, saved.map_size, saved.guard,
                  saved.stack_size, saved.top);
}

/* Keep t's slot in c if it has room (t's struct becomes the entry). */
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
        .guard = (size_t)((char *)t->stack_lo - (char *)t->map_base),
        .top = (uintptr_t)t,
    };
    struct mqs__cached_stack *slot = (struct mqs__cached_stack *)t;
    *slot = e;
    c->head = slot;
    c->n++;
    return true;
}

/* A slot from the runtime's free list, else a new one. */
static struct mqs_task *slot_take(mqs_runtime_t *rt, unsigned serial)
{
    pthread_mutex_lock(&rt->slab_lock);
    struct mqs_task *t = cache_pop(&rt->free_slots, rt->stack_size);
    if (!t)
        t = slab_carve(rt, serial);
    pthread_mutex_unlock(&rt->slab_lock);
    return t;
}

/*
 * A worker spawns from its own cache (no lock), then, like a thread
 * outside the runtime, from the runtime's pool under its spinlock, then
 * from the free list or a new slot under slab_lock; a stack of another
 * size (or without a runtime: tests) is a mapping of its own.  An
 * outside spawn used to map a new stack every time: p50 7 us and p99
 * 150-220 us, a worker unmapping the stacks of ended tasks at the same
 * time (the mmap lock).
 */
struct mqs_task *mqs__stack_alloc(mqs_runtime_t *rt, struct mqs_worker *w,
                                  size_t size, unsigned serial)
{
    if (!rt)
        return map_lone(NULL, size, MQS__DEFAULT_GUARD, serial);
    if (size != rt->stack_size)
        return map_lone(rt, size, rt->guard_size, serial);
    struct mqs_task *t = w ? cache_pop(&w->stacks, size) : NULL;
    if (!t) {
        mqs__spin_lock(&rt->ext_stacks_lock);
        t = cache_pop(&rt->ext_stacks, size);
        mqs__spin_unlock(&rt->ext_stacks_lock);
    }
    return t ? t : slot_take(rt, serial);
}

/* Slots (the default size) go to the worker's cache, or when it is full
 * (or the caller is outside the runtime: a joiner) to the runtime's pool,
 * else to its free list; lone mappings are unmapped. */
void mqs__stack_free(mqs_runtime_t *rt, struct mqs_worker *w,
                     struct mqs_task *t)
{
    if (t->stack_size != rt->stack_size) {
        stack_unmap(t->map_base, t->map_size);
        return;
    }
    if (w && cache_push(&w->stacks, t, STACK_CACHE_MAX))
        return;
    mqs__spin_lock(&rt->ext_stacks_lock);
    bool kept = cache_push(&rt->ext_stacks, t, STACK_EXT_MAX);
    mqs__spin_unlock(&rt->ext_stacks_lock);
    if (kept)
        return;
    pthread_mutex_lock(&rt->slab_lock);
    cache_push(&rt->free_slots, t, UINT_MAX);
    pthread_mutex_unlock(&rt->slab_lock);
}

/* Cached stacks are all slots: their slabs go in mqs__stack_slabs_free. */
void mqs__stack_cache_drain(struct mqs__stack_cache *c)
{
    c->head = NULL;
    c->n = 0;
}

void mqs__stack_reap(mqs_runtime_t *rt, struct mqs_task *t)
{
    if (t->stack_size != rt->stack_size)
        stack_unmap(t->map_base, t->map_size);
}

void mqs__stack_slabs_free(mqs_runtime_t *rt)
{
    mqs__stack_cache_drain(&rt->free_slots);
    while (rt->slabs) {
        struct mqs__slab *s = rt->slabs;
        rt->slabs = s->next;
        stack_unmap(s->base, s->slot_bytes * s->nslots);
        free(s);
    }
    rt->nslabs = 0;
}
