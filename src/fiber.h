/*
 * fiber.h - telling the sanitizers about stack switches.
 *
 * ASan keeps shadow state per stack and TSan keeps a shadow stack and a
 * happens-before clock per thread; a user-level switch changes both
 * behind their back and turns their reports into noise.  Their fiber
 * interfaces fix that: ASan's start/finish_switch_fiber bracket every
 * switch, TSan gets one fiber per task and is told which one runs next.
 * In normal builds all of this is empty inline code: the switch path pays
 * nothing for it.
 */
#ifndef MQS_FIBER_H
#define MQS_FIBER_H

#include <stddef.h>

#if defined(MQS_ASAN)
#include <sanitizer/asan_interface.h>
#endif
#if defined(MQS_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

static inline void *mqs__fiber_create(void)
{
#if defined(MQS_TSAN)
    return __tsan_create_fiber(0);
#else
    return NULL;
#endif
}

static inline void mqs__fiber_destroy(void *fiber)
{
#if defined(MQS_TSAN)
    if (fiber)
        __tsan_destroy_fiber(fiber);
#else
    (void)fiber;
#endif
}

static inline void *mqs__fiber_current(void)
{
#if defined(MQS_TSAN)
    return __tsan_get_current_fiber();
#else
    return NULL;
#endif
}

/* Before switching to the stack [to_lo, to_lo + to_size) of fiber to_tsan;
 * fake_save is NULL when the current stack dies with this switch. */
static inline void mqs__switch_enter(void **fake_save, void *to_lo,
                                     size_t to_size, void *to_tsan)
{
#if defined(MQS_ASAN)
    __sanitizer_start_switch_fiber(fake_save, to_lo, to_size);
#else
    (void)fake_save;
    (void)to_lo;
    (void)to_size;
#endif
#if defined(MQS_TSAN)
    if (to_tsan)
        __tsan_switch_to_fiber(to_tsan, 0);
#else
    (void)to_tsan;
#endif
}

/* First thing on the stack that was switched to. */
static inline void mqs__switch_leave(void *fake_save)
{
#if defined(MQS_ASAN)
    __sanitizer_finish_switch_fiber(fake_save, NULL, NULL);
#else
    (void)fake_save;
#endif
}

#endif
