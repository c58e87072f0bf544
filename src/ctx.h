/*
 * ctx.h - the machine context switch (src/arch/<arch>.S).
 *
 * A context is just a saved stack pointer: mqs__ctx_switch pushes the
 * callee-saved registers and the FP control words (x86-64: MXCSR and the
 * x87 control word; aarch64: x19-x30, d8-d15 and FPCR) on the current
 * stack, stores the stack pointer in *save, loads `to` and pops the same
 * frame from there.  Caller-saved state is already dead at a call, so
 * nothing else needs saving: this is the whole cost of a switch.
 *
 * The switcher's third argument comes out as the return value in the
 * context that resumes (the scheduler passes its worker, so a task that
 * resumes on another OS thread learns where it is without a TLS lookup).
 *
 * mqs__ctx_make prepares a fresh stack so that the first switch to it
 * calls entry(arg, pass) on it; entry must never return.
 */
#ifndef MQS_CTX_H
#define MQS_CTX_H

void *mqs__ctx_switch(void **save, void *to, void *pass);
void *mqs__ctx_make(void *stack_top, void (*entry)(void *, void *),
                    void *arg);

/* The program counter and stack pointer a signal interrupted, from the
 * handler's ucontext (preempt.c: where a stop may happen; overflow.c:
 * whether a fault is a signal frame that did not fit). */
#include <stdint.h>
#include <ucontext.h>
static inline void mqs__uc_regs(const void *uc, uintptr_t *pc, uintptr_t *sp)
{
    const ucontext_t *u = uc;
#if defined(__x86_64__)
    *pc = (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
    *sp = (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    *pc = (uintptr_t)u->uc_mcontext.pc;
    *sp = (uintptr_t)u->uc_mcontext.sp;
#else
#error "ctx.h: a signal's registers are read for x86-64 and aarch64 only"
#endif
}

#endif
