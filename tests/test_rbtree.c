/*
 * test_rbtree.c - src/rbtree.h on known inputs: seeded random insert and
 * erase sequences checked after every step against a sorted array (the
 * in-order walk, the cached leftmost and rightmost, the count) and
 * against the
 * red-black invariants (black root, no red node with a red child, equal
 * black height on every path, consistent parent links), with and without
 * an augmented value (subtree minimum of a second key, as EEVDF keeps its
 * minimum deadline).
 */
#include <stdlib.h>

#include "check.h"
#include "helpers.h"
#include "rbtree.h"

#define NODES 512

struct item {
    struct mqs_rb_node rb;
    int key;    /* tree order                                  */
    int other;  /* second key, for the augmented subtree minimum
                 * (kept in rb.aux, as the tree requires)         */
    int serial; /* insertion order, for FIFO among equal keys    */
    bool in;
};

static struct item *item_of(const struct mqs_rb_node *n)
{
    return mqs_se_entry(n, struct item, rb);
}

static bool item_less(const struct mqs_rb_node *a, const struct mqs_rb_node *b)
{
    return item_of(a)->key < item_of(b)->key;
}

static bool item_aug(struct mqs_rb_node *n)
{
    uint64_t m = (uint64_t)item_of(n)->other;
    if (n->left && n->left->aux < m)
        m = n->left->aux;
    if (n->right && n->right->aux < m)
        m = n->right->aux;
    bool changed = n->aux != m;
    n->aux = m;
    return changed;
}

/* Insert with the plain search from the root, or from the rightmost up
 * (mqs__rb_insert_last): the same place either way. */
static void item_insert(struct mqs__rb_root *t, struct item *it, bool aug,
                        bool from_last)
{
    if (from_last)
        mqs__rb_insert_last(t, &it->rb, item_less, aug ? item_aug : NULL);
    else
        mqs__rb_insert(t, &it->rb, item_less, aug ? item_aug : NULL);
}

/* Black height of n's subtree, checking colours, links and (with aug)
 * the subtree minima on the way; -1 on a violation. */
static int check_node(const struct mqs_rb_node *n, bool aug)
{
    if (!n)
        return 1;
    if (n->red && (mqs__rb_is_red(n->left) || mqs__rb_is_red(n->right)))
        return -1;
    if ((n->left && n->left->parent != n) ||
        (n->right && n->right->parent != n))
        return -1;
    int l = check_node(n->left, aug), r = check_node(n->right, aug);
    if (l < 0 || r < 0 || l != r)
        return -1;
    if (aug) {
        struct item probe = *item_of(n);
        item_aug(&probe.rb);
        if (probe.rb.aux != n->aux)
            return -1;
    }
    return l + (n->red ? 0 : 1);
}

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = *(struct item *const *)a;
    const struct item *y = *(struct item *const *)b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* The tree holds exactly the items marked in, in (key, serial) order. */
static void check_tree(struct mqs__rb_root *t, struct item *items, bool aug)
{
    static struct item *want[NODES];
    unsigned n = 0;
    for (int i = 0; i < NODES; i++)
        if (items[i].in)
            want[n++] = &items[i];
    qsort(want, n, sizeof want[0], cmp_item);
    CHECK_EQ(t->n, n);
    CHECK(!mqs__rb_is_red(t->root));
    CHECK(!t->root || t->root->parent == NULL);
    CHECK_GE(check_node(t->root, aug), 1);
    CHECK(mqs__rb_first(t) == (n ? &want[0]->rb : NULL));
    CHECK(mqs__rb_last(t) == (n ? &want[n - 1]->rb : NULL));
    unsigned i = 0;
    for (struct mqs_rb_node *p = mqs__rb_first(t); p; p = mqs__rb_next(p))
        CHECK(i < n && p == &want[i++]->rb);
    CHECK_EQ(i, n);
}

static void random_ops(uint64_t seed, int steps, int key_range, bool aug)
{
    static struct item items[NODES];
    struct mqs__rb_root t;
    mqs__rb_init(&t);
    for (int i = 0; i < NODES; i++)
        items[i] = (struct item){.key = 0};
    uint64_t s = seed;
    int serial = 0;
    for (int step = 0; step < steps; step++) {
        struct item *it = &items[rng_next(&s) % NODES];
        if (it->in) {
            mqs__rb_erase(&t, &it->rb, aug ? item_aug : NULL);
            it->in = false;
        } else {
            it->key = (int)(rng_next(&s) % (uint64_t)key_range);
            it->other = (int)(rng_next(&s) % 100000);
            it->rb.aux = (uint64_t)it->other;
            it->serial = serial++;
            item_insert(&t, it, aug, rng_next(&s) % 2);
            it->in = true;
        }
        check_tree(&t, items, aug);
    }
}

TEST(rbtree_empty)
{
    struct mqs__rb_root t;
    mqs__rb_init(&t);
    CHECK(mqs__rb_empty(&t));
    CHECK(mqs__rb_first(&t) == NULL);
    CHECK(mqs__rb_last(&t) == NULL);
    CHECK_EQ(t.n, 0);
}

TEST(rbtree_ascending_and_descending_keys)
{
    static struct item items[NODES];
    struct mqs__rb_root t;
    mqs__rb_init(&t);
    for (int i = 0; i < NODES; i++) {
        items[i] = (struct item){
            .key = i % 2 ? i : NODES * 2 - i, .serial = i, .in = true};
        mqs__rb_insert(&t, &items[i].rb, item_less, NULL);
    }
    check_tree(&t, items, false);
    /* a balanced tree of 512 nodes is at most 2 log2(513) deep */
    int depth = 0;
    for (struct mqs_rb_node *n = t.root; n; n = n->left)
        depth++;
    CHECK_LE(depth, 18);
    while (t.root) {
        struct item *first = item_of(mqs__rb_first(&t));
        mqs__rb_erase(&t, &first->rb, NULL);
        first->in = false;
        check_tree(&t, items, false);
    }
}

/* Equal keys leave in insertion order. */
TEST(rbtree_equal_keys_fifo)
{
    static struct item items[64];
    struct mqs__rb_root t;
    mqs__rb_init(&t);
    for (int i = 0; i < 64; i++) {
        items[i] = (struct item){.key = i % 4, .serial = i};
        mqs__rb_insert(&t, &items[i].rb, item_less, NULL);
    }
    int last_key = -1, last_serial = -1;
    while (t.root) {
        struct item *f = item_of(mqs__rb_first(&t));
        CHECK_GE(f->key, last_key);
        if (f->key == last_key)
            CHECK_GT(f->serial, last_serial);
        last_key = f->key;
        last_serial = f->serial;
        mqs__rb_erase(&t, &f->rb, NULL);
    }
}

TEST(rbtree_random_against_sorted_array)
{
    random_ops(1, 6000, 1000000, false);
    random_ops(2, 6000, 8, false); /* many equal keys */
}

TEST(rbtree_random_augmented_subtree_min)
{
    random_ops(3, 6000, 1000000, true);
    random_ops(4, 6000, 16, true);
}

/* The fair policies' yield pattern, which the cached rightmost serves:
 * the first node leaves and comes back with a key at or past the last
 * (round robin), now and then somewhere in between or at the front,
 * erasing the last now and then; checked against the sorted array after
 * every step. */
static void yield_pattern(uint64_t seed, int nodes, bool aug)
{
    static struct item items[NODES];
    struct mqs__rb_root t;
    mqs__rb_init(&t);
    uint64_t s = seed;
    int serial = 0;
    for (int i = 0; i < NODES; i++)
        items[i] = (struct item){.key = 0};
    for (int i = 0; i < nodes; i++) {
        items[i] = (struct item){.key = i / 3,
                                 .other = (int)(rng_next(&s) % 1000),
                                 .serial = serial++,
                                 .in = true};
        items[i].rb.aux = (uint64_t)items[i].other;
        mqs__rb_insert(&t, &items[i].rb, item_less, aug ? item_aug : NULL);
    }
    check_tree(&t, items, aug);
    for (int step = 0; step < 4000; step++) {
        uint64_t r = rng_next(&s) % 16;
        struct item *it =
            item_of(r == 0 ? mqs__rb_last(&t) : mqs__rb_first(&t));
        mqs__rb_erase(&t, &it->rb, aug ? item_aug : NULL);
        int last = t.rightmost ? item_of(mqs__rb_last(&t))->key : 0;
        int first = t.leftmost ? item_of(mqs__rb_first(&t))->key : 0;
        if (r < 10)
            it->key = last + (int)(r % 3); /* at the end, often equal */
        else if (r < 14)
            it->key =
                first + (int)(rng_next(&s) % (uint64_t)(last - first + 1));
        else
            it->key = first - 1; /* a new leftmost */
        it->other = (int)(rng_next(&s) % 1000);
        it->rb.aux = (uint64_t)it->other;
        it->serial = serial++;
        item_insert(&t, it, aug, r % 2);
        check_tree(&t, items, aug);
    }
    while (t.root) { /* drain from both ends */
        struct item *it =
            item_of(t.n % 2 ? mqs__rb_last(&t) : mqs__rb_first(&t));
        mqs__rb_erase(&t, &it->rb, aug ? item_aug : NULL);
        it->in = false;
        check_tree(&t, items, aug);
    }
}

TEST(rbtree_cached_extremes_yield_pattern)
{
    for (int nodes = 1; nodes <= 5; nodes++)
        yield_pattern((uint64_t)nodes, nodes, false);
    yield_pattern(11, 16, false);
    yield_pattern(12, 16, true);
    yield_pattern(13, NODES, false);
    yield_pattern(14, NODES, true);
}
