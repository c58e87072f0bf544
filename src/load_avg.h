/*
 * load_avg.h - per-entity load tracking (Turner, 2012; Linux's PELT): an
 * entity's load is a geometric series of its runnable time, so recent
 * behaviour counts most and what it did 32 ms ago counts half.
 *
 * Time is cut into periods of 1024 units of 1024 ns (about 1 ms).  Each
 * period's runnable time u (0..1024 units) enters the sum as
 *
 *     sum = u_0 + u_1 y + u_2 y^2 + ...,   y^32 = 1/2,
 *
 * u_0 being the current (partial) period.  An entity runnable all the
 * time converges to MQS__LOAD_MAX (= 1024 / (1 - y), in this integer
 * arithmetic); avg = mult x sum / divider scales that to the caller's
 * unit, where divider is the sum's maximum for the current position in
 * the period.  An entity passes its weight as mult (avg -> weight when
 * always runnable); a run queue accumulates with its runnable weight and
 * mult 1, so its avg is the sum of the loads on it.  Entities join and
 * leave a queue's signal with mqs__load_attach/detach (Linux's
 * enqueue/dequeue_load_avg).
 *
 * Decay by y^n is a shift for the whole half-lives in n and a 32-bit
 * fixed-point multiply for the rest (a 32-entry table), as in Linux; the
 * average is divided out only when a period boundary passes, so an
 * update inside a period is a subtraction, a multiply and an add.
 *
 * Rejected: a floating-point exponential (slower, and rounding differs
 * between machines); one running average per tick (needs a tick; mqs
 * updates at scheduling points only); per-period history (memory).
 *
 * Header-only, static inline, no locking: whoever owns the signal (the
 * rq lock, or the worker running the entity) serialises updates.
 */
#ifndef MQS_LOAD_AVG_H
#define MQS_LOAD_AVG_H

#include <stdbool.h>
#include <stdint.h>

#include "div128.h"
#include "mqs/policy.h"

#define MQS__LOAD_UNIT_SHIFT 10 /* 1 unit = 1024 ns                      */
#define MQS__LOAD_PERIOD 1024u  /* units per period                      */
#define MQS__LOAD_HALFLIFE 32u  /* periods                               */
#define MQS__LOAD_MAX 47742u    /* fixed point of the series (tested)    */

/* y^n x 2^32 for n = 0..31 (y = 2^(-1/32)). */
static const uint32_t mqs__load_yn[MQS__LOAD_HALFLIFE] = {
    0xffffffff, 0xfa83b2db, 0xf5257d15, 0xefe4b99b, 0xeac0c6e7, 0xe5b906e7,
    0xe0ccdeec, 0xdbfbb797, 0xd744fcca, 0xd2a81d91, 0xce248c15, 0xc9b9bd86,
    0xc5672a11, 0xc12c4cca, 0xbd08a39f, 0xb8fbaf47, 0xb504f333, 0xb123f581,
    0xad583eea, 0xa9a15ab4, 0xa5fed6a9, 0xa2704303, 0x9ef53260, 0x9b8d39b9,
    0x9837f051, 0x94f4efa8, 0x91c3d373, 0x8ea4398b, 0x8b95c1e3, 0x88980e80,
    0x85aac367, 0x82cd8698,
};

/* val x y^n. */
static inline uint64_t mqs__load_decay(uint64_t val, uint64_t n)
{
    if (n >= 64 * MQS__LOAD_HALFLIFE)
        return 0;
    val >>= n / MQS__LOAD_HALFLIFE;
    return (uint64_t)(((unsigned __int128)val *
                       mqs__load_yn[n % MQS__LOAD_HALFLIFE]) >> 32);
}

/* The sum's maximum at the current position in the period. */
static inline uint64_t mqs__load_divider(const struct mqs_load_avg *la)
{
    return MQS__LOAD_MAX - MQS__LOAD_PERIOD + la->contrib;
}

/* Start a signal at now, as if it had always been runnable with weight
 * mult (Linux starts new tasks at full load, so that placement and
 * balancing see them before they have a history). */
static inline void mqs__load_init_full(struct mqs_load_avg *la, uint64_t now,
                                       uint64_t mult)
{
    la->last_ns = now ? now : 1;
    la->contrib = 0;
    la->sum = MQS__LOAD_MAX - MQS__LOAD_PERIOD;
    la->avg = mult;
}

/* Units of time from the end of the last full period to now, counted as
 * runnable with weight w: decays the sum across the periods crossed.
 * Returns true when a period boundary passed. */
static inline bool mqs__load_accumulate(struct mqs_load_avg *la,
                                        uint64_t delta, uint64_t w)
{
    uint64_t d = delta + la->contrib;
    uint64_t periods = d / MQS__LOAD_PERIOD;
    uint64_t add = delta;
    if (periods) {
        la->sum = mqs__load_decay(la->sum, periods);
        /* the rest of the old period, decayed; the full periods in
         * between; the start of the current one */
        add = mqs__load_decay(MQS__LOAD_PERIOD - la->contrib, periods) +
              MQS__LOAD_MAX - mqs__load_decay(MQS__LOAD_MAX, periods) -
              MQS__LOAD_PERIOD + d % MQS__LOAD_PERIOD;
    }
    la->contrib = (uint32_t)(d % MQS__LOAD_PERIOD);
    la->sum += add * w;
    return periods != 0;
}

/*
 * Bring the signal up to now: the time since the last update counts as
 * runnable with weight w (0: not runnable; an entity passes 1 or 0, a
 * queue its runnable weight), and avg = mult x sum / divider.  Time
 * going backwards (clocks of two workers) counts as nothing.  Returns
 * true when avg was recomputed (a period boundary passed).
 */
static inline bool mqs__load_update(struct mqs_load_avg *la, uint64_t now,
                                    uint64_t w, uint64_t mult)
{
    if (la->last_ns == 0) {
        la->last_ns = now ? now : 1;
        return false;
    }
    if (now <= la->last_ns)
        return false;
    uint64_t delta = (now - la->last_ns) >> MQS__LOAD_UNIT_SHIFT;
    if (!delta)
        return false;
    la->last_ns += delta << MQS__LOAD_UNIT_SHIFT;
    if (!mqs__load_accumulate(la, delta, w))
        return false;
    la->avg = mqs__div128((unsigned __int128)la->sum * mult,
                          mqs__load_divider(la));
    return true;
}

/* Add an entity's signal (weight w) to a queue's, both updated to the
 * same time. */
static inline void mqs__load_attach(struct mqs_load_avg *rq,
                                    const struct mqs_load_avg *se, uint64_t w)
{
    rq->sum += se->sum * w;
    rq->avg += se->avg;
}

/* Take an entity's signal out of a queue's (clamped at zero: the two
 * were rounded apart). */
static inline void mqs__load_detach(struct mqs_load_avg *rq,
                                    const struct mqs_load_avg *se, uint64_t w)
{
    uint64_t s = se->sum * w;
    rq->sum = rq->sum > s ? rq->sum - s : 0;
    rq->avg = rq->avg > se->avg ? rq->avg - se->avg : 0;
}

#endif
