/*
 * prio_array.h - the O(1) scheduler's priority array: one FIFO list per
 * priority level (0..140, realtime, normal by nice, idle) and a bitmap of
 * the non-empty ones, so the most urgent queued task is a find-first-set
 * and a list head away.  Shared by every policy that keeps tasks by level
 * (mq, o1, ule's queues, and the realtime part of cfs/eevdf/ws/bfs).
 *
 * Header-only and static inline: the yield path runs through it and must
 * inline.  Entities are linked through se->node, keyed by se->prio unless
 * the caller passes another level (o1's dynamic priority, ule's queue
 * index): the level an entity was added at must be passed back to del.
 * Plain words, no atomics: the caller holds the lock that guards the rq.
 */
#ifndef MQS_PRIO_ARRAY_H
#define MQS_PRIO_ARRAY_H

#include <stdbool.h>

#include "bitmap.h"
#include "list.h"
#include "mqs/policy.h"

#define MQS__PARR_WORDS MQS__BITMAP_WORDS(MQS_PRIO_LEVELS)

struct mqs__prio_array {
    uint64_t bits[MQS__PARR_WORDS]; /* level has a queued entity */
    unsigned nr;                    /* entities queued, all levels */
    struct mqs_list q[MQS_PRIO_LEVELS];
};

static inline void mqs__parr_init(struct mqs__prio_array *a)
{
    for (unsigned i = 0; i < MQS__PARR_WORDS; i++)
        a->bits[i] = 0;
    a->nr = 0;
    for (int i = 0; i < MQS_PRIO_LEVELS; i++)
        mqs__list_init(&a->q[i]);
}

/* Queue se at level lvl, at the tail (or the head: a preempted FIFO task
 * keeps its place). */
static inline void mqs__parr_add(struct mqs__prio_array *a,
                                 struct mqs_sched_entity *se, unsigned lvl,
                                 bool head)
{
    if (head)
        mqs__list_add_head(&a->q[lvl], &se->node);
    else
        mqs__list_add_tail(&a->q[lvl], &se->node);
    mqs__bit_set(a->bits, lvl);
    a->nr++;
}

/* Remove se, queued at level lvl. */
static inline void mqs__parr_del(struct mqs__prio_array *a,
                                 struct mqs_sched_entity *se, unsigned lvl)
{
    mqs__list_del(&se->node);
    if (mqs__list_empty(&a->q[lvl]))
        mqs__bit_clear(a->bits, lvl);
    a->nr--;
}

/* Most urgent non-empty level, MQS_PRIO_NONE when empty. */
static inline unsigned mqs__parr_best(const struct mqs__prio_array *a)
{
    return mqs__bit_first(a->bits, MQS__PARR_WORDS, MQS_PRIO_NONE);
}

/* O(1)'s active/expired pair: swap them now?  When the active array is
 * empty, or holds only IDLE tasks while a normal one has expired: an
 * IDLE task never runs before a runnable normal one (with preemption, a
 * spinning normal task expires every slice). */
static inline bool mqs__parr_swap_due(const struct mqs__prio_array *active,
                                      const struct mqs__prio_array *expired)
{
    return expired->nr &&
           (active->nr == 0 || (mqs__parr_best(active) >= MQS_PRIO_IDLE &&
                                mqs__parr_best(expired) < MQS_PRIO_IDLE));
}

/* Next non-empty level at or after lvl, MQS_PRIO_NONE when none. */
static inline unsigned mqs__parr_next(const struct mqs__prio_array *a,
                                      unsigned lvl)
{
    return mqs__bit_next(a->bits, MQS__PARR_WORDS, lvl, MQS_PRIO_NONE);
}

/* First entity at level lvl (which must be non-empty). */
static inline struct mqs_sched_entity *
mqs__parr_first(const struct mqs__prio_array *a, unsigned lvl)
{
    return mqs_se_entry(a->q[lvl].next, struct mqs_sched_entity, node);
}

/* Remove and return the first entity of the most urgent level, or NULL. */
static inline struct mqs_sched_entity *
mqs__parr_pop(struct mqs__prio_array *a)
{
    unsigned lvl = mqs__parr_best(a);
    if (lvl == MQS_PRIO_NONE)
        return NULL;
    struct mqs_sched_entity *se = mqs__parr_first(a, lvl);
    mqs__parr_del(a, se, lvl);
    return se;
}

#endif
