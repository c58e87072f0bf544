/*
 * handle.c - task handles that cannot be confused by reuse.
 *
 * A task's struct lives at the top of its stack, and stacks are reused:
 * the next task spawned on a worker often lands at the very address of
 * the one that just ended.  A raw pointer as the handle therefore let a
 * stale handle reach the new task (a second join joined a stranger, a
 * join of a detached task that had exited waited on a futex nobody would
 * ever post).  So the handle a user holds (mqs_task_t *) is not the
 * task's address.  It names a slot of the runtime's handle table and the
 * slot's generation:
 *
 *     handle = (slot address >> 4) | (generation << 44)
 *
 * A slot is 16 bytes (generation, pin count, the task or the next free
 * slot), so its address has four low zero bits, and user addresses on
 * x86-64 and aarch64 fit in 48 bits; 20 bits of generation remain: a
 * stale handle is mistaken for a live one only after exactly 2^20 reuses
 * of its slot.  The generation moves on when the task is released (join,
 * or a detached task's end), before its stack is freed, so from then on
 * every call with the old handle returns MQS_EINVAL.
 *
 * Pins close the race between a call that decoded a handle and the
 * release that would free the task under it: a caller pins the slot,
 * then checks the generation; the release bumps the generation, then
 * waits for the pins to drain (both sides sequentially consistent, a
 * Dekker pair), so either the caller sees the new generation or the
 * release sees the pin and waits for the caller to finish.  Pins are
 * held for the length of one call.
 *
 * Join needs no pin.  The slot's word holds, beside the generation, a
 * DETACHED bit (set at spawn) and a JOINING bit, and a join claims the
 * task with one CAS that sets JOINING on a word of the right generation
 * without DETACHED: only the joiner releases a joinable task, so once the
 * claim wins the task stays until that joiner frees it, and a second
 * join sees JOINING (MQS_ESTATE) or, after the release, a new generation
 * (MQS_EINVAL).  Claims live in the slot, not the task, because the task
 * may be freed and its memory reused while a late joiner looks.
 *
 * The table is also the runtime's register of its tasks: a slot is LIVE
 * from spawn to release, and destroy's checks and reports, the stall
 * watchdog and the statistics dump walk the LIVE slots (each pinned for
 * its visit, so the task stays while it is looked at).  That replaced a
 * list of live tasks per worker, whose lock (taken at every spawn and
 * again at every join or detached exit) was the dearest part of a spawn
 * after the context switches: about 17 ns of a skynet task's ~230 here.
 *
 * Slots come from chunks of HANDLE_CHUNK the runtime allocates on demand
 * and frees only with itself; free slots wait on the worker's own list
 * (owner only, no lock) or in the runtime's pool (a spinlock), which
 * outside spawns use and workers refill from in batches.  A spawn takes
 * a slot from its worker's list: no lock and no shared line once warm.
 *
 * Rejected: a generation in the task struct itself (the struct moves
 * within its mapping with the stack stagger, so the old address may fall
 * in the middle of the next task); a handle that is the task id looked
 * up in a hash table (a lookup per call and a shared table to keep
 * consistent under spawns on every worker); changing mqs_task_t to a
 * struct passed by value (every user of the API would change, and
 * handles compared with == would no longer compile in C).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HANDLE_CHUNK 1024   /* slots per chunk (16 KiB)                   */
#define HANDLE_LOCAL_MAX 256 /* a worker's own free list, then the pool   */
#define HANDLE_BATCH 64     /* slots moved between a worker and the pool */
#define HANDLE_ADDR_BITS 44
#define HANDLE_GEN_MASK ((UINT64_C(1) << (64 - HANDLE_ADDR_BITS)) - 1)

/* The slot's word: generation, and the bits above it. */
#define SLOT_DETACHED (UINT32_C(1) << 20)
#define SLOT_JOINING (UINT32_C(1) << 21)
#define SLOT_LIVE (UINT32_C(1) << 22) /* names a task (from spawn to release) */

struct mqs__hslot {
    _Alignas(16) _Atomic uint32_t word; /* generation | SLOT_* bits */
    _Atomic uint32_t pins;
    union {
        struct mqs_task *task;       /* while in use                 */
        struct mqs__hslot *next;     /* while free                   */
    };
};
_Static_assert(sizeof(struct mqs__hslot) == 16, "a handle slot is 16 bytes");

struct mqs__hchunk {
    struct mqs__hchunk *next;
    struct mqs__hslot slot[HANDLE_CHUNK];
};

static void list_push(struct mqs__hfree *l, struct mqs__hslot *s)
{
    s->next = l->head;
    l->head = s;
    l->n++;
}

static struct mqs__hslot *list_pop(struct mqs__hfree *l)
{
    struct mqs__hslot *s = l->head;
    if (s) {
        l->head = s->next;
        l->n--;
    }
    return s;
}

/* A new chunk's slots into the pool (pool lock held). */
static bool pool_grow(mqs_runtime_t *rt)
{
    void *mem = NULL;
    if (mqs__memalign(&mem, 64, sizeof(struct mqs__hchunk)))
        return false;
    struct mqs__hchunk *c = memset(mem, 0, sizeof(struct mqs__hchunk));
    if ((uintptr_t)c >> (HANDLE_ADDR_BITS + 4))
        mqs__panic("handle table chunk at %p is past the %d-bit address "
                   "range handles encode", (void *)c, HANDLE_ADDR_BITS + 4);
    c->next = rt->hchunks;
    rt->hchunks = c;
    for (int i = HANDLE_CHUNK - 1; i >= 0; i--) {
        atomic_init(&c->slot[i].word, 1);
        list_push(&rt->hpool, &c->slot[i]);
    }
    return true;
}

/* Move up to n slots from the pool to `to` (takes the pool lock). */
static void pool_take(mqs_runtime_t *rt, struct mqs__hfree *to, unsigned n)
{
    mqs__spin_lock(&rt->hpool_lock);
    if (!rt->hpool.head)
        (void)pool_grow(rt);
    struct mqs__hslot *s;
    while (n-- && (s = list_pop(&rt->hpool)) != NULL)
        list_push(to, s);
    mqs__spin_unlock(&rt->hpool_lock);
}

bool mqs__handle_attach(mqs_runtime_t *rt, struct mqs_worker *w,
                        struct mqs_task *t)
{
    struct mqs__hfree *own = w ? &w->hfree : NULL;
    struct mqs__hslot *s;
    if (own) {
        if (!own->head)
            pool_take(rt, own, HANDLE_BATCH);
        s = list_pop(own);
    } else {
        struct mqs__hfree one = {0};
        pool_take(rt, &one, 1);
        s = list_pop(&one);
    }
    if (!s)
        return false;
    s->task = t;
    t->hslot = s;
    uint32_t gen = atomic_load_explicit(&s->word, memory_order_relaxed);
    /* Release: a walker (mqs__tasks_each) that sees LIVE sees the task. */
    atomic_store_explicit(&s->word,
                          gen | SLOT_LIVE | (t->detached ? SLOT_DETACHED : 0),
                          memory_order_release);
    t->handle = ((uintptr_t)s >> 4) | ((uint64_t)gen << HANDLE_ADDR_BITS);
    return true;
}

void mqs__handle_retire(mqs_runtime_t *rt, struct mqs_worker *w,
                        struct mqs_task *t)
{
    struct mqs__hslot *s = t->hslot;
    if (!s)
        return;
    uint32_t gen = atomic_load_explicit(&s->word, memory_order_relaxed);
    atomic_store(&s->word, (uint32_t)((gen + 1) & HANDLE_GEN_MASK));
    while (atomic_load(&s->pins))
        mqs__cpu_relax();
    t->hslot = NULL;
    if (w) {
        list_push(&w->hfree, s);
        if (w->hfree.n <= HANDLE_LOCAL_MAX)
            return;
        mqs__spin_lock(&rt->hpool_lock);
        for (int i = 0; i < HANDLE_BATCH; i++)
            list_push(&rt->hpool, list_pop(&w->hfree));
        mqs__spin_unlock(&rt->hpool_lock);
    } else {
        mqs__spin_lock(&rt->hpool_lock);
        list_push(&rt->hpool, s);
        mqs__spin_unlock(&rt->hpool_lock);
    }
}

static struct mqs__hslot *slot_of(const mqs_task_t *h, uint32_t *gen)
{
    uint64_t v = (uintptr_t)h;
    uint64_t addr = (v & ((UINT64_C(1) << HANDLE_ADDR_BITS) - 1)) << 4;
    *gen = (uint32_t)(v >> HANDLE_ADDR_BITS);
    return (struct mqs__hslot *)(uintptr_t)addr;
}

struct mqs_task *mqs__handle_pin(const mqs_task_t *h)
{
    uint32_t gen;
    struct mqs__hslot *s = slot_of(h, &gen);
    if (!s)
        return NULL;
    atomic_fetch_add(&s->pins, 1);
    if ((atomic_load(&s->word) & HANDLE_GEN_MASK) != gen) {
        atomic_fetch_sub(&s->pins, 1);
        return NULL;
    }
    return s->task;
}

struct mqs_task *mqs__handle_claim_join(const mqs_task_t *h, int *err)
{
    uint32_t gen;
    struct mqs__hslot *s = slot_of(h, &gen);
    if (!s) {
        *err = MQS_EINVAL;
        return NULL;
    }
    uint32_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if ((w & HANDLE_GEN_MASK) != gen || (w & SLOT_DETACHED)) {
            *err = MQS_EINVAL;
            return NULL;
        }
        if (w & SLOT_JOINING) {
            *err = MQS_ESTATE;
            return NULL;
        }
    } while (!atomic_compare_exchange_weak(&s->word, &w, w | SLOT_JOINING));
    return s->task;
}

void mqs__handle_unpin(struct mqs_task *t)
{
    atomic_fetch_sub_explicit(&t->hslot->pins, 1, memory_order_release);
}

void mqs__tasks_each(mqs_runtime_t *rt,
                     void (*fn)(struct mqs_task *t, void *ctx), void *ctx)
{
    mqs__spin_lock(&rt->hpool_lock);
    struct mqs__hchunk *c = rt->hchunks; /* chunks are only ever prepended */
    mqs__spin_unlock(&rt->hpool_lock);
    for (; c; c = c->next)
        for (int i = 0; i < HANDLE_CHUNK; i++) {
            struct mqs__hslot *s = &c->slot[i];
            uint32_t w = atomic_load_explicit(&s->word, memory_order_acquire);
            if (!(w & SLOT_LIVE))
                continue;
            atomic_fetch_add(&s->pins, 1);
            uint32_t now = atomic_load(&s->word);
            if ((now & (SLOT_LIVE | HANDLE_GEN_MASK)) ==
                (w & (SLOT_LIVE | HANDLE_GEN_MASK)))
                fn(s->task, ctx);
            atomic_fetch_sub(&s->pins, 1);
        }
}

void mqs__handle_table_free(mqs_runtime_t *rt)
{
    struct mqs__hchunk *c = rt->hchunks;
    while (c) {
        struct mqs__hchunk *next = c->next;
        free(c);
        c = next;
    }
    rt->hchunks = NULL;
}

/* Free a dead task's stack and struct (from the worker where it ends, or
 * from the joiner). */
void mqs__task_release(struct mqs_task *t)
{
    mqs__fiber_destroy(t->tsan_fiber);
    mqs_runtime_t *rt = t->rt;
    struct mqs_worker *w = mqs__worker_self();
    if (w && w->rt != rt)
        w = NULL;
    mqs__handle_retire(rt, w, t);
    mqs__stack_free(rt, w, t);
}
