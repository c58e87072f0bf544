/*
 * plist.h - a wait queue's lists: waiters ordered by priority level,
 * FIFO within a level, in the shape of Linux's plist (lib/plist.c).  The
 * data structure only, with no blocking in it, so that both the blocking
 * layer (waitq.c) and the timers below it (timer.c, which take a timed
 * out waiter off its queue) use it without calling each other.
 *
 * The node list (`head`, through each task's wait_node) holds every
 * waiter ordered by level (se.prio, lower is more urgent), FIFO within a
 * level, so the most urgent waiter is the first node and popping it is
 * O(1).  The level list (`levels`, through wait_level_node) holds only
 * the first waiter of each distinct level, in the same order; every other
 * waiter's wait_level_node is self-linked.  Insertion walks the level
 * list, not the waiters: from its tail, since a new waiter is most often
 * at the least urgent level present, so it is O(1) there and at most the
 * number of distinct levels (<= MQS_PRIO_LEVELS) anywhere.  Removal from
 * anywhere is O(1): when the first of a level leaves, the node after it,
 * if of the same level, takes its place in the level list.  Every call
 * here needs the queue's lock held, except mqs__waitq_claimed_unlink,
 * which takes it.
 */
#ifndef MQS_PLIST_H
#define MQS_PLIST_H

#include "internal.h"

static inline struct mqs_task *mqs__waitq_node_task(struct mqs_list *n)
{
    return mqs_se_entry(n, struct mqs_task, wait_node);
}

static inline struct mqs_task *mqs__waitq_level_task(struct mqs_list *n)
{
    return mqs_se_entry(n, struct mqs_task, wait_level_node);
}

/* Insert t after every waiter at least as urgent.  From the tail of the
 * level list, find the last level at least as urgent as t's: t goes in
 * front of the first node of the level after it, or at the tail. */
static inline void mqs__waitq_insert(struct mqs__waitq *q, struct mqs_task *t)
{
    struct mqs_list *lv = q->levels.prev;
    while (lv != &q->levels && mqs__waitq_level_task(lv)->se.prio > t->se.prio)
        lv = lv->prev;
    struct mqs_list *next_level = lv->next;
    struct mqs_list *before = next_level == &q->levels
                                  ? &q->head
                                  : &mqs__waitq_level_task(next_level)->wait_node;
    mqs__list_add_before(before, &t->wait_node);
    if (lv == &q->levels || mqs__waitq_level_task(lv)->se.prio != t->se.prio)
        mqs__list_add_before(next_level, &t->wait_level_node);
    else
        mqs__list_init(&t->wait_level_node);
    t->wait_linked = true;
    q->nwait++;
}

/* Take t out of both lists; a first of its level hands its place in the
 * level list to the next waiter of that level. */
static inline void mqs__waitq_unlink(struct mqs__waitq *q, struct mqs_task *t)
{
    if (!mqs__list_empty(&t->wait_level_node)) {
        struct mqs_list *n = t->wait_node.next;
        if (n != &q->head && mqs__list_empty(&mqs__waitq_node_task(n)->wait_level_node))
            mqs__list_add_head(&t->wait_level_node,
                               &mqs__waitq_node_task(n)->wait_level_node);
        mqs__list_del(&t->wait_level_node);
    }
    mqs__list_del(&t->wait_node);
    t->wait_linked = false;
    q->nwait--;
}

static inline struct mqs_task *mqs__waitq_first(struct mqs__waitq *q)
{
    if (mqs__list_empty(&q->head))
        return NULL;
    return mqs__waitq_node_task(q->head.next);
}

/* t was claimed (BLOCKED -> WAKING) by its timer or a cancel: take it
 * off its wait queue (taking the queue's lock: the caller holds no wait
 * queue or heap lock). */
static inline void mqs__waitq_claimed_unlink(struct mqs_task *t)
{
    struct mqs__waitq *q = t->wait_q;
    if (!q)
        return;
    mqs__waitq_lock_in(q);
    if (t->wait_linked)
        mqs__waitq_unlink(q, t);
    mqs__waitq_unlock(q);
}

#endif
