/*
 * fault.c - the countdown behind alloc.h's failing-allocator mode.  An
 * empty file in the library as shipped (MQS_FAULT_INJECT unset).
 */
#ifdef MQS_FAULT_INJECT
#include <errno.h>
#include <stdatomic.h>

#include "alloc.h"

static _Atomic long fault_left; /* calls until the one that fails; 0 off */
static _Atomic long fault_seen; /* calls counted since the last arm      */

bool mqs__fault_fail(void)
{
    atomic_fetch_add(&fault_seen, 1);
    long left = atomic_load(&fault_left);
    while (left > 0)
        if (atomic_compare_exchange_weak(&fault_left, &left, left - 1)) {
            if (left != 1)
                return false;
            errno = ENOMEM;
            return true;
        }
    return false;
}

long mqs__fault_arm(long n)
{
    atomic_store(&fault_left, n > 0 ? n : 0);
    return atomic_exchange(&fault_seen, 0);
}
#else
typedef int mqs__fault_unused; /* ISO C: no empty translation unit */
#endif
