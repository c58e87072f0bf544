/*
 * rbtree.h - an intrusive red-black tree with cached leftmost and
 * rightmost nodes, the kind Linux's CFS keeps its runnable entities in:
 * insert in O(log n) with the caller's less-than, erase in O(log n), the
 * first and last nodes in O(1), in-order successor.
 *
 * Design.  Nodes (struct mqs_rb_node, declared in mqs/policy.h so an
 * entity can embed one) carry parent, children and a colour; NULL is the
 * black leaf.  The algorithms are the textbook ones (Cormen et al., ch.
 * 13, with the nil sentinel replaced by NULL and the parent of a NULL
 * child tracked explicitly in erase).  Equal keys go to the right, so
 * entities with equal keys leave in insertion order (FIFO among equals).
 *
 * The cached extremes serve the yield pattern of the fair policies: the
 * task that leaves is the leftmost, and the yielder, charged for its run,
 * usually has the largest key.  An insert whose key is not less than the
 * rightmost's goes straight under it (where the descent would end: equal
 * keys go right), skipping the descent; an erase of either extreme finds
 * the new one among the node's child and parent (an extreme has at most
 * one child, a red leaf), without a walk.
 *
 * Augmentation (EEVDF keeps the minimum deadline of each subtree): insert
 * and erase take an optional callback that recomputes one node's value
 * from its own and its children's and says whether it changed.  The tree
 * calls it up the ancestors of the changed position before rebalancing,
 * stopping where a value did not change (the ones above cannot change
 * then; after an erase that moved the successor up, the path up to its
 * new place is recomputed in full), then for the two nodes of every
 * rotation, which keeps every node's value right: a rotation only
 * changes the subtrees of the two nodes it turns.  The value lives in
 * the node's aux (a rotation hands the node that goes down's value to
 * the one that comes up, whose subtree holds the same nodes, and
 * recomputes only the other, as Linux's augmented rotate does).  NULL
 * means none.
 *
 * Rejected: Linux's packed parent-and-colour word (saves 8 bytes, costs
 * masking on every step and alignment assumptions); a heap (no ordered
 * walk, which the balancers and BFS's affinity scan need); a skip list
 * (allocation per node, or a fixed height).
 *
 * Header-only and static inline: the yield path runs through it.  No
 * locking: the caller holds the lock that guards the tree.
 */
#ifndef MQS_RBTREE_H
#define MQS_RBTREE_H

#include <stdbool.h>
#include <stddef.h>

#include "mqs/policy.h"

struct mqs__rb_root {
    struct mqs_rb_node *root;
    struct mqs_rb_node *leftmost;  /* cached first node, NULL when empty */
    struct mqs_rb_node *rightmost; /* cached last node, NULL when empty */
    unsigned n;                    /* nodes in the tree                  */
};

/* The tree's ops are always inlined, so that the caller's less-than and
 * augment callbacks (constants at every call site) inline too: as calls
 * through pointers they cost EEVDF's yield a third of its time. */
#define MQS__RB_INLINE static inline __attribute__((always_inline))

typedef bool (*mqs__rb_less_fn)(const struct mqs_rb_node *a,
                                const struct mqs_rb_node *b);
/* Recompute n's augmented value; return whether it changed. */
typedef bool (*mqs__rb_aug_fn)(struct mqs_rb_node *n);

static inline void mqs__rb_init(struct mqs__rb_root *t)
{
    t->root = NULL;
    t->leftmost = NULL;
    t->rightmost = NULL;
    t->n = 0;
}

static inline bool mqs__rb_empty(const struct mqs__rb_root *t)
{
    return t->root == NULL;
}

static inline struct mqs_rb_node *mqs__rb_first(const struct mqs__rb_root *t)
{
    return t->leftmost;
}

static inline struct mqs_rb_node *mqs__rb_last(const struct mqs__rb_root *t)
{
    return t->rightmost;
}

static inline struct mqs_rb_node *mqs__rb_min(struct mqs_rb_node *n)
{
    while (n->left)
        n = n->left;
    return n;
}

static inline struct mqs_rb_node *mqs__rb_max(struct mqs_rb_node *n)
{
    while (n->right)
        n = n->right;
    return n;
}

/* In-order successor, NULL after the last node. */
static inline struct mqs_rb_node *mqs__rb_next(const struct mqs_rb_node *n)
{
    if (n->right)
        return mqs__rb_min(n->right);
    const struct mqs_rb_node *p = n->parent;
    while (p && n == p->right) {
        n = p;
        p = p->parent;
    }
    return (struct mqs_rb_node *)p;
}

/* Put v where u hangs (u's parent link or the root). */
MQS__RB_INLINE void mqs__rb_replace(struct mqs__rb_root *t,
                                    struct mqs_rb_node *u,
                                    struct mqs_rb_node *v)
{
    struct mqs_rb_node *p = u->parent;
    if (!p)
        t->root = v;
    else if (u == p->left)
        p->left = v;
    else
        p->right = v;
    if (v)
        v->parent = p;
}

/* Turn x down to the left: its right child takes its place. */
MQS__RB_INLINE void mqs__rb_rotate_left(struct mqs__rb_root *t,
                                        struct mqs_rb_node *x,
                                        mqs__rb_aug_fn aug)
{
    struct mqs_rb_node *y = x->right;
    x->right = y->left;
    if (y->left)
        y->left->parent = x;
    mqs__rb_replace(t, x, y);
    y->left = x;
    x->parent = y;
    if (aug) { /* y roots the nodes x rooted: it takes x's value */
        y->aux = x->aux;
        aug(x);
    }
}

MQS__RB_INLINE void mqs__rb_rotate_right(struct mqs__rb_root *t,
                                         struct mqs_rb_node *x,
                                         mqs__rb_aug_fn aug)
{
    struct mqs_rb_node *y = x->left;
    x->left = y->right;
    if (y->right)
        y->right->parent = x;
    mqs__rb_replace(t, x, y);
    y->right = x;
    x->parent = y;
    if (aug) { /* y roots the nodes x rooted: it takes x's value */
        y->aux = x->aux;
        aug(x);
    }
}

/* Recompute the augmented values from n up: every node up to and
 * including `must`, then while they change. */
MQS__RB_INLINE void mqs__rb_propagate(struct mqs_rb_node *n,
                                      const struct mqs_rb_node *must,
                                      mqs__rb_aug_fn aug)
{
    if (!aug)
        return;
    for (bool done = must == NULL; !done; n = n->parent) {
        aug(n);
        done = n == must;
    }
    while (n && aug(n))
        n = n->parent;
}

static inline bool mqs__rb_is_red(const struct mqs_rb_node *n)
{
    return n && n->red;
}

MQS__RB_INLINE void mqs__rb_insert_fixup(struct mqs__rb_root *t,
                                         struct mqs_rb_node *z,
                                         mqs__rb_aug_fn aug)
{
    struct mqs_rb_node *p;
    while ((p = z->parent) && p->red) {
        struct mqs_rb_node *g = p->parent; /* exists: p is red, not root */
        bool left = p == g->left;
        struct mqs_rb_node *u = left ? g->right : g->left;
        if (mqs__rb_is_red(u)) {
            p->red = u->red = 0;
            g->red = 1;
            z = g;
            continue;
        }
        if (z == (left ? p->right : p->left)) {
            if (left)
                mqs__rb_rotate_left(t, p, aug);
            else
                mqs__rb_rotate_right(t, p, aug);
            z = p;
            p = z->parent;
        }
        p->red = 0;
        g->red = 1;
        if (left)
            mqs__rb_rotate_right(t, g, aug);
        else
            mqs__rb_rotate_left(t, g, aug);
    }
    t->root->red = 0;
}

/* The descent of an insert below *parent, from its child link `link`:
 * the link to fill; first and last are cleared on a step right and left
 * (equal keys go right). */
MQS__RB_INLINE struct mqs_rb_node **mqs__rb_descend(struct mqs_rb_node **link,
                                                    struct mqs_rb_node *n,
                                                    mqs__rb_less_fn less,
                                                    struct mqs_rb_node **parent,
                                                    bool *first, bool *last)
{
    struct mqs_rb_node *p = *parent;
    while (*link) {
        p = *link;
        if (less(n, p)) {
            link = &p->left;
            *last = false;
        } else {
            link = &p->right;
            *first = false;
        }
    }
    *parent = p;
    return link;
}

/* Where n goes: the link to fill and its parent; says whether that is
 * the first or the last position.  A key not less than the rightmost's
 * goes under it at once (the descent would end there). */
MQS__RB_INLINE struct mqs_rb_node **
mqs__rb_find_link(struct mqs__rb_root *t, struct mqs_rb_node *n,
                  mqs__rb_less_fn less, struct mqs_rb_node **parent,
                  bool *first, bool *last)
{
    *first = *last = true;
    *parent = NULL;
    if (t->rightmost && !less(n, t->rightmost)) {
        *parent = t->rightmost;
        *first = false;
        return &t->rightmost->right;
    }
    return mqs__rb_descend(&t->root, n, less, parent, first, last);
}

/* As mqs__rb_find_link, searching from the rightmost up: the ancestors
 * of the rightmost are the right spine, keys rising to it; the descent
 * from the root goes right down the spine past every node not above n
 * and turns left at the first one above it, s.  So walk up from the
 * rightmost while the parent is above n and descend from s: the same
 * place, found among the last nodes when n belongs near the end.  (A
 * walk cut short after a few steps, falling back to the root, measured
 * worse with 4096 yielders: their keys land in the back half, and the
 * spine walk is on nodes that were just touched.) */
MQS__RB_INLINE struct mqs_rb_node **
mqs__rb_find_link_last(struct mqs__rb_root *t, struct mqs_rb_node *n,
                       mqs__rb_less_fn less, struct mqs_rb_node **parent,
                       bool *first, bool *last)
{
    struct mqs_rb_node *s = t->rightmost;
    if (!s || !less(n, s))
        return mqs__rb_find_link(t, n, less, parent, first, last);
    while (s->parent && less(n, s->parent))
        s = s->parent;
    *parent = s->parent;
    *first = s->parent == NULL;
    *last = true;
    return mqs__rb_descend(s->parent ? &s->parent->right : &t->root, n, less,
                           parent, first, last);
}

/* Link n, not in any tree, at link under parent (as found above). */
MQS__RB_INLINE void mqs__rb_link(struct mqs__rb_root *t, struct mqs_rb_node *n,
                                 struct mqs_rb_node *parent,
                                 struct mqs_rb_node **link, bool first,
                                 bool last, mqs__rb_aug_fn aug)
{
    n->parent = parent;
    n->left = n->right = NULL;
    n->red = 1;
    *link = n;
    if (first)
        t->leftmost = n;
    if (last)
        t->rightmost = n;
    t->n++;
    mqs__rb_propagate(n, n, aug);
    mqs__rb_insert_fixup(t, n, aug);
}

/* Insert n (not in any tree) ordered by less; equal keys go after. */
MQS__RB_INLINE void mqs__rb_insert(struct mqs__rb_root *t,
                                   struct mqs_rb_node *n, mqs__rb_less_fn less,
                                   mqs__rb_aug_fn aug)
{
    struct mqs_rb_node *parent;
    bool first, last;
    struct mqs_rb_node **link =
        mqs__rb_find_link(t, n, less, &parent, &first, &last);
    mqs__rb_link(t, n, parent, link, first, last, aug);
}

/* The same insert, for a key that likely belongs near the end (a yielder
 * charged for its run): cheaper there, up to twice the steps at the
 * front. */
MQS__RB_INLINE void mqs__rb_insert_last(struct mqs__rb_root *t,
                                        struct mqs_rb_node *n,
                                        mqs__rb_less_fn less,
                                        mqs__rb_aug_fn aug)
{
    struct mqs_rb_node *parent;
    bool first, last;
    struct mqs_rb_node **link =
        mqs__rb_find_link_last(t, n, less, &parent, &first, &last);
    mqs__rb_link(t, n, parent, link, first, last, aug);
}

/* Restore the black heights after a black node left from below xp (x is
 * the node, possibly NULL, that took its place). */
MQS__RB_INLINE void mqs__rb_erase_fixup(struct mqs__rb_root *t,
                                        struct mqs_rb_node *x,
                                        struct mqs_rb_node *xp,
                                        mqs__rb_aug_fn aug)
{
    while (x != t->root && !mqs__rb_is_red(x)) {
        bool left = x == xp->left;
        struct mqs_rb_node *w = left ? xp->right : xp->left;
        if (w->red) {
            w->red = 0;
            xp->red = 1;
            if (left)
                mqs__rb_rotate_left(t, xp, aug);
            else
                mqs__rb_rotate_right(t, xp, aug);
            w = left ? xp->right : xp->left;
        }
        struct mqs_rb_node *near = left ? w->left : w->right;
        struct mqs_rb_node *far = left ? w->right : w->left;
        if (!mqs__rb_is_red(near) && !mqs__rb_is_red(far)) {
            w->red = 1;
            x = xp;
            xp = x->parent;
            continue;
        }
        if (!mqs__rb_is_red(far)) {
            near->red = 0;
            w->red = 1;
            if (left)
                mqs__rb_rotate_right(t, w, aug);
            else
                mqs__rb_rotate_left(t, w, aug);
            w = left ? xp->right : xp->left;
            far = left ? w->right : w->left;
        }
        w->red = xp->red;
        xp->red = 0;
        far->red = 0;
        if (left)
            mqs__rb_rotate_left(t, xp, aug);
        else
            mqs__rb_rotate_right(t, xp, aug);
        x = t->root;
        break;
    }
    if (x)
        x->red = 0;
}

/* Remove n, which is in t. */
MQS__RB_INLINE void mqs__rb_erase(struct mqs__rb_root *t, struct mqs_rb_node *n,
                                  mqs__rb_aug_fn aug)
{
    /* an extreme has no child on its outer side and at most a red leaf
     * on the inner one: the new extreme is that leaf or the parent */
    if (t->leftmost == n)
        t->leftmost = n->right ? mqs__rb_min(n->right) : n->parent;
    if (t->rightmost == n)
        t->rightmost = n->left ? mqs__rb_max(n->left) : n->parent;
    t->n--;
    struct mqs_rb_node *x, *xp, *must = NULL;
    unsigned removed_red = n->red;
    if (!n->left || !n->right) {
        x = n->left ? n->left : n->right;
        xp = n->parent;
        mqs__rb_replace(t, n, x);
    } else {
        struct mqs_rb_node *y = mqs__rb_min(n->right);
        removed_red = y->red;
        x = y->right;
        if (y->parent == n) {
            xp = y;
        } else {
            xp = y->parent;
            mqs__rb_replace(t, y, y->right);
            y->right = n->right;
            y->right->parent = y;
        }
        mqs__rb_replace(t, n, y);
        y->left = n->left;
        y->left->parent = y;
        y->red = n->red;
        must = y;
    }
    mqs__rb_propagate(xp, must, aug);
    if (!removed_red)
        mqs__rb_erase_fixup(t, x, xp, aug);
    n->parent = n->left = n->right = NULL;
}

#undef MQS__RB_INLINE

#endif
