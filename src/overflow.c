/*
 * overflow.c - a task that overflows its stack is reported by name.
 *
 * Overflow: a task that runs into its guard faults; the SIGSEGV handler
 * runs on the worker's alternate signal stack (the task's own stack is the
 * one that is full), recognises an address anywhere in the current task's
 * guard (madvise marker or mprotect'ed, the same range) and reports "task
 * <name> overflowed its N KiB stack" before aborting.  Faults elsewhere go
 * to the previous handler.
 *
 * A signal handled on the task's stack (the preemption's SIGURG: no
 * SA_ONSTACK, preempt.c) needs room for the kernel's frame below the
 * stack pointer.  With less left the kernel cannot write the frame and
 * sends SIGSEGV instead: no fault address (si_code SI_KERNEL), the
 * registers of the interrupted code.  That is an overflow too, and is
 * reported the same way when the stack pointer lies within a frame's
 * room of the guard (AT_MINSIGSTKSZ: the largest frame this CPU's
 * features make, plus x86-64's red zone); a SI_KERNEL SIGSEGV elsewhere
 * (x86-64's general protection faults) is not ours.  The handler's disposition is process-wide by
 * nature: the only state mqs keeps outside a runtime is the previous
 * handler, to chain to, and whether the kernel has guard markers.
 * The alternate signal stack is per worker, mapped when the runtime is
 * created (stack.c has the guards themselves).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "ctx.h"
#include "internal.h"

static struct sigaction old_segv, old_bus;
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static int handler_rc;
static size_t frame_room; /* what a signal frame may need below sp */

static void write_str(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void write_num(size_t v)
{
    char buf[24];
    int i = (int)sizeof buf;
    buf[--i] = 0;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v && i > 0);
    write_str(buf + i);
}

static _Noreturn void report(const struct mqs_task *t, const char *why)
{
    write_str("mqs: task ");
    write_str(t->name);
    write_str(" overflowed its ");
    write_num(t->stack_size / 1024);
    write_str(" KiB stack");
    write_str(why);
    write_str("\n");
    signal(SIGABRT, SIG_DFL);
    abort();
}

static uintptr_t fault_sp(const void *uctx)
{
    uintptr_t pc, sp;
    mqs__uc_regs(uctx, &pc, &sp);
    return sp;
}

static void on_fault(int sig, siginfo_t *si, void *uctx)
{
    struct mqs_worker *w = mqs__worker_self();
    struct mqs_task *t = w ? w->curr : NULL;
    char *a = si->si_addr;
    /* The whole guard, however large (madvise marker or mprotect). */
    if (t && a >= (char *)t->map_base && a < (char *)t->stack_lo)
        report(t, "");
    /* A signal's frame that did not fit (above). */
    if (t && sig == SIGSEGV && si->si_code == SI_KERNEL) {
        uintptr_t sp = fault_sp(uctx);
        if (sp >= (uintptr_t)t->map_base &&
            sp < (uintptr_t)t->stack_lo + frame_room)
            report(t, " (a signal's frame did not fit in what was left)");
    }
    /* Not ours: hand over to whoever was there before. */
    struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, si, uctx);
        return;
    }
    if (old->sa_handler == SIG_IGN)
        return;
    if (old->sa_handler != SIG_DFL) {
        old->sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL); /* re-fault with the default action */
}

static void install(void)
{
    /* The kernel's figure (Linux 4.18 on aarch64, 5.14 on x86-64), else
     * glibc's constant; plus x86-64's red zone, skipped first, and the
     * frame's alignment. */
    size_t need = (size_t)getauxval(AT_MINSIGSTKSZ);
    frame_room = (need ? need : MINSIGSTKSZ) + 128 + 64;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old_segv) != 0 ||
        sigaction(SIGBUS, &sa, &old_bus) != 0)
        handler_rc = MQS_ESYS;
}

int mqs__overflow_handler_install(void)
{
    pthread_once(&handler_once, install);
    return handler_rc;
}

/* 64 KiB, or what the kernel says a signal frame may need if that is
 * more: aarch64's frame grows with the vector length (SVE registers, and
 * SME's ZA array alone is 64 KiB at the largest length), and glibc's
 * _SC_SIGSTKSZ reads it from the kernel's AT_MINSIGSTKSZ. */
static size_t stack_altstack_size(void)
{
    size_t size = 64 * 1024;
#if defined(_SC_SIGSTKSZ)
    long need = sysconf(_SC_SIGSTKSZ);
    if (need > 0 && (size_t)need > size) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size = ((size_t)need + page - 1) / page * page;
    }
#endif
    return size;
}

/* The alternate signal stack is mapped by the thread that creates the
 * runtime, so that a refusal fails mqs_runtime_create instead of leaving
 * a worker without overflow reports; the worker thread installs it. */
int mqs__altstack_alloc(struct mqs_worker *w)
{
    size_t size = stack_altstack_size();
    void *mem = mqs__mmap(size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS);
    if (mem == MAP_FAILED)
        return MQS_ENOMEM;
    w->altstack = mem;
    w->altstack_size = size;
    return 0;
}

void mqs__altstack_setup(struct mqs_worker *w)
{
    stack_t ss = {.ss_sp = w->altstack, .ss_size = w->altstack_size,
                  .ss_flags = 0};
    /* Only an invalid size fails, and the size is SIGSTKSZ's or more. */
    (void)sigaltstack(&ss, NULL);
}

void mqs__altstack_teardown(struct mqs_worker *w)
{
    (void)w;
    stack_t ss = {.ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
}

void mqs__altstack_free(struct mqs_worker *w)
{
    if (w->altstack)
        munmap(w->altstack, w->altstack_size);
    w->altstack = NULL;
}
