/*
 * fair_run.h - the run: normal tasks in key order to within run_slack,
 * kept beside the tree (cfs, eevdf).  A yielder is charged for its run
 * and so usually belongs near the back.  It is appended to the run when
 * its key is at most run_slack before the greatest key appended so far
 * (run_max) and at most run_slack after it; else it goes into the tree,
 * where the order is exact.  The queue's first task is the earlier of the tree's
 * leftmost and the run's head.  Any two tasks of the run leave at most
 * run_slack of virtual time out of order, and no task's virtual time
 * changes, so shares stay exact: only the order within a small fraction
 * of the granularity is loosened (Linux's wake-up granularity loosens it
 * by a millisecond).  The upper bound keeps one task charged for a long
 * run from raising run_max so far that every yielder after it misses the
 * run.  With run_slack 0 the run takes only keys at or after run_max:
 * exact order.
 *
 * Why the slack: charged exactly, the keys of a yield loop's tasks are
 * spread continuously (~30 us wide with 2048 tasks on one worker), and a
 * yielder's new key falls anywhere among them: with exact order 95% of
 * those tasks' yields went to the tree, 98% when a yielder could also
 * be placed up to eight steps back from the run's last; 64% with 20 us
 * of slack, 8% with 100 us, none with 500 us (the default).  Then every
 * yielder is appended, and a yield touches the run's last (a task
 * that just ran) and its head: the tree's erase and insert touched three
 * to five other tasks' nodes, cold ones when thousands of tasks take
 * turns (cfs cost 112 ns per yield at 2048 tasks on one worker against
 * mq's 29).  A task in the run has se->p[MQS__FAIR_P_RUN] set and uses
 * se->node, which a normal task in these policies does not otherwise
 * use.  Ties between the tree's first and the run's head go to the one
 * queued earlier, by the sequence number each insertion stamps in
 * se->p[MQS__FAIR_P_SEQ] (mqs__fair_stamp), as the tree alone does by
 * inserting equals to the right.  eevdf also appends only yielders
 * whose deadline is within the slack of the run's greatest (its own
 * test, may_run), so that the run's head is the run's pick there too.
 */
#ifndef MQS_FAIR_RUN_H
#define MQS_FAIR_RUN_H

/* A part of fair.h, which includes it once the frame and its tree
 * helpers are defined. */
#ifndef MQS_FAIR_H
#error "include fair.h, not fair_run.h"
#endif
#define MQS__FAIR_P_SEQ 2 /* on the entity's line 1, beside node */
#define MQS__FAIR_P_RUN 3

static inline void mqs__fair_stamp(struct mqs__fair_rq *f,
                                   struct mqs_sched_entity *se)
{
    se->p[MQS__FAIR_P_SEQ] = ++f->seq;
}

static inline unsigned mqs__fair_nr(const struct mqs__fair_rq *f)
{
    return f->tree.n + f->run_n;
}

static inline struct mqs_sched_entity *
mqs__fair_run_head(const struct mqs__fair_rq *f)
{
    return f->run_n ? mqs_se_entry(f->run.next, struct mqs_sched_entity, node)
                    : NULL;
}

/* The queue's first normal task (least key; on a tie, queued first). */
static inline struct mqs_sched_entity *
mqs__fair_first(const struct mqs__fair_rq *f)
{
    struct mqs_rb_node *t = mqs__rb_first(&f->tree);
    struct mqs_sched_entity *r = mqs__fair_run_head(f);
    if (!t)
        return r;
    struct mqs_sched_entity *se = mqs__fair_se(t);
    if (!r || mqs__fair_before(se->key, r->key))
        return se;
    if (mqs__fair_before(r->key, se->key))
        return r;
    return r->p[MQS__FAIR_P_SEQ] < se->p[MQS__FAIR_P_SEQ] ? r : se;
}

/* May v go after max, the greatest of its kind in the run: at most the
 * run's slack before it and (with a slack) at most that after it?  Keys
 * here, and eevdf's deadlines. */
static inline bool mqs__fair_run_fits_after(const struct mqs__fair_rq *f,
                                            uint64_t max, uint64_t v)
{
    if (!f->run_n)
        return true;
    if (mqs__fair_before(v + f->run_slack, max))
        return false;
    return f->run_slack == 0 || !mqs__fair_before(max + f->run_slack, v);
}

/* May a key go at the run's back? */
static inline bool mqs__fair_run_fits(const struct mqs__fair_rq *f,
                                      uint64_t key)
{
    return mqs__fair_run_fits_after(f, f->run_max, key);
}

/* Queue se at the back: onto the run when it fits (and the policy's own
 * test, may_run, agrees), else into the tree from its rightmost up. */
static inline __attribute__((always_inline)) void
mqs__fair_add_last(struct mqs__fair_rq *f, struct mqs_sched_entity *se,
                   mqs__rb_aug_fn aug, bool may_run)
{
    mqs__fair_stamp(f, se);
    if (!may_run || !mqs__fair_run_fits(f, se->key)) {
        se->p[MQS__FAIR_P_RUN] = 0;
        mqs__fair_insert_last(&f->tree, se, aug);
        return;
    }
    /* A select, not a branch: whether a yielder's key passes the run's
     * greatest depends on its run's length, which no predictor learns. */
    f->run_max = f->run_n && !mqs__fair_before(f->run_max, se->key)
                     ? f->run_max
                     : se->key;
    se->p[MQS__FAIR_P_RUN] = 1;
    mqs__list_add_tail(&f->run, &se->node);
    f->run_n++;
}

/* Take se out of the queue, tree or run. */
static inline __attribute__((always_inline)) void
mqs__fair_del(struct mqs__fair_rq *f, struct mqs_sched_entity *se,
              mqs__rb_aug_fn aug)
{
    if (se->p[MQS__FAIR_P_RUN]) {
        se->p[MQS__FAIR_P_RUN] = 0;
        mqs__list_del(&se->node);
        f->run_n--;
    } else {
        mqs__rb_erase(&f->tree, &se->rb, aug);
    }
}

/* The queued normal task after se in the order the balancer walks:
 * the tree's, then the run's. */
static inline struct mqs_sched_entity *
mqs__fair_walk(const struct mqs__fair_rq *f, struct mqs_sched_entity *se)
{
    if (!se) {
        struct mqs_rb_node *t = mqs__rb_first(&f->tree);
        return t ? mqs__fair_se(t) : mqs__fair_run_head(f);
    }
    if (!se->p[MQS__FAIR_P_RUN]) {
        struct mqs_rb_node *t = mqs__rb_next(&se->rb);
        return t ? mqs__fair_se(t) : mqs__fair_run_head(f);
    }
    return se->node.next == &f->run
               ? NULL
               : mqs_se_entry(se->node.next, struct mqs_sched_entity, node);
}

#endif
