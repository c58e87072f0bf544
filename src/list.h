/*
 * list.h - intrusive circular doubly linked lists (the Linux list_head
 * shape).  A list head is a struct mqs_list whose next/prev point to
 * itself when empty.  Header-only; no allocation.
 */
#ifndef MQS_LIST_H
#define MQS_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "mqs/policy.h"

static inline void mqs__list_init(struct mqs_list *h)
{
    h->next = h;
    h->prev = h;
}

static inline bool mqs__list_empty(const struct mqs_list *h)
{
    return h->next == h;
}

static inline void mqs__list_insert(struct mqs_list *n, struct mqs_list *prev,
                                    struct mqs_list *next)
{
    n->prev = prev;
    n->next = next;
    prev->next = n;
    next->prev = n;
}

/* Add n at the tail (before h). */
static inline void mqs__list_add_tail(struct mqs_list *h, struct mqs_list *n)
{
    mqs__list_insert(n, h->prev, h);
}

/* Add n at the head (after h). */
static inline void mqs__list_add_head(struct mqs_list *h, struct mqs_list *n)
{
    mqs__list_insert(n, h, h->next);
}

/* Add n just before pos. */
static inline void mqs__list_add_before(struct mqs_list *pos, struct mqs_list *n)
{
    mqs__list_insert(n, pos->prev, pos);
}

static inline void mqs__list_del(struct mqs_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n;
    n->prev = n;
}

static inline struct mqs_list *mqs__list_pop(struct mqs_list *h)
{
    struct mqs_list *n = h->next;
    if (n == h)
        return NULL;
    mqs__list_del(n);
    return n;
}

#define mqs__list_for_each(pos, head) \
    for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#define mqs__list_for_each_safe(pos, tmp, head) \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif
