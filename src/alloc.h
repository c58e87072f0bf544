/*
 * alloc.h - every allocation and mapping the library makes goes through
 * these, so that a test build can make each one fail in turn.
 *
 * In the library as shipped they are the libc calls and nothing more.
 * Built with MQS_FAULT_INJECT (the `mqs_fault` archive that only
 * tests/failalloc.c links), each first asks mqs__fault_fail() whether
 * this is the call to fail; the test arms it with the number of the call
 * that must fail (1 = the first after arming), runs a program of API
 * calls, and checks that the failure came back as a clean error with
 * nothing leaked (ASan's leak check) and nothing left in a bad state
 * (the same program then runs to the end).  The countdown is the one
 * piece of process-wide state of that build: allocations in
 * mqs_chan_create and mqs_pipe_create belong to no runtime, so a
 * counter in the runtime could not reach them.  Argobots' leakcheck
 * build does the same.
 */
#ifndef MQS_ALLOC_H
#define MQS_ALLOC_H

#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>

#ifdef MQS_FAULT_INJECT
/* True when this call is the one armed to fail (then disarmed); sets
 * errno to ENOMEM then, as the failing call would. */
bool mqs__fault_fail(void);
/* Fail the n-th allocation or mapping from now (0: none); returns how
 * many calls were counted since the last arm. */
long mqs__fault_arm(long n);
#else
static inline bool mqs__fault_fail(void)
{
    return false;
}
#endif

static inline void *mqs__malloc(size_t n)
{
    return mqs__fault_fail() ? NULL : malloc(n);
}

static inline void *mqs__calloc(size_t n, size_t size)
{
    return mqs__fault_fail() ? NULL : calloc(n, size);
}

static inline void *mqs__realloc(void *p, size_t n)
{
    return mqs__fault_fail() ? NULL : realloc(p, n);
}

static inline int mqs__memalign(void **p, size_t align, size_t n)
{
    return mqs__fault_fail() ? 12 /* ENOMEM */ : posix_memalign(p, align, n);
}

static inline void *mqs__mmap(size_t n, int prot, int flags)
{
    return mqs__fault_fail() ? MAP_FAILED
                             : mmap(NULL, n, prot, flags, -1, 0);
}

#endif
