/*
 * kit.h - the policy kit: everything an in-tree policy includes besides
 * mqs/policy.h.  Header-only helpers over the public policy ABI (lists,
 * bitmaps, priority arrays, red-black trees, load signals, the fair
 * policies' shared half, the realtime pull) plus the core's spinlock.
 * Nothing here reaches into the core's structures: a policy sees run
 * queues, workers and the runtime only through the accessors and ops of
 * mqs/policy.h, exactly as one built outside the tree would, and may copy
 * these headers to do so.
 *
 * The spinlock (spinlock.h) is here for a policy's own shared state (ws's
 * overflow queue): the same test-and-test-and-set lock as the core's, at
 * the same cost (its bias bytes stay zero on a lock that is not a run
 * queue's, one byte load).  Kept out of the public ABI on purpose: a
 * public lock type would freeze its layout for out-of-tree policies,
 * which can use pthread or C11 atomics; a kit header can change with the
 * tree.  A policy's lock must never be held while it takes an rq lock
 * that the core may hold while calling the policy (ws: taken after any rq
 * lock, never before one).
 */
#ifndef MQS_POLICY_KIT_H
#define MQS_POLICY_KIT_H

#include "mqs/policy.h"

#include "../bitmap.h"
#include "../fair.h"
#include "../list.h"
#include "../load_avg.h"
#include "../prio_array.h"
#include "../rbtree.h"
#include "../rt_pull.h"
#include "../spinlock.h"

#ifndef MQS__UNLIKELY
#define MQS__UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif

#endif
