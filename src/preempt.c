/*
 * preempt.c - stopping a task that does not stop itself: the monitor
 * that decides which worker to interrupt, the signal that interrupts it,
 * the handler that checks the stop is safe and then takes the worker
 * back, and mqs_preempt_disable/enable.
 *
 * Vocabulary.  A *request* is a set of reasons (MQS__PRE_*) posted to a
 * worker's pre.req and announced with one SIGURG to its thread
 * (mqs__preempt_request, base.c).  The *handler* runs on the interrupted
 * task's stack, takes the reasons and decides: a *safe* stop becomes a
 * scheduling point (mqs__schedule; the task goes back as
 * MQS_ENQ_PREEMPTED, w->preempting), an unsafe one is
 * *deferred*: the reasons go to pre.missed and the monitor asks again.
 *
 * Who asks.  The monitor thread (Go's sysmon shape), every tick
 * (MQS_PREEMPT_TICK_NS, 1 ms by default) while some worker runs a task:
 * TICK for a task that ran a whole tick while others wait (the policy's
 * tick op then says how long its slice has left: the kernel's tick, only
 * where it can matter; with time left the handler stores the end in
 * pre.quiet_until and no TICK is asked before it), URGENT when a more
 * urgent level is queued than
 * the one running, TIMER when one of the worker's timers is due, STOP
 * when the runtime stops.  A wake-up onto another worker whose task is
 * less urgent asks at once (URGENT), and one onto a worker whose task of
 * the same level has run 20 us asks the policy to choose (WAKE; place.c),
 * without waiting for a tick.  No
 * worker running a task: the monitor parks (tickless), and the first
 * worker to leave its park wakes it.  A worker whose task is alone with
 * nothing due gets no signal at all.
 *
 * Safe points.  A stop is safe when all of these hold, checked in the
 * handler on the worker's own thread:
 *   - the worker is not inside the runtime (in_runtime == 0: no queue
 *     lock, no switch, no wait-queue section, not the worker loop);
 *   - the task has not disabled preemption (mqs_preempt_disable);
 *   - the interrupted instruction lies in the main program's own text,
 *     and not in the runtime's (mqs__text_begin..end below): never in
 *     libc (malloc's arenas and tcache, stdio locks), the dynamic loader,
 *     a sanitizer's runtime, the vDSO or any other shared object, all
 *     of which may keep per-thread state or hold locks that a second
 *     task on the same thread would corrupt or wait for (the vDSO keeps
 *     none, but it is entered only through libc or an interceptor,
 *     whose frames below it may hold one).  A sanitizer's runtime linked
 *     into the program is left out of its text too, and so is the PLT.
 *     These ranges are found once with dl_iterate_phdr; everything else
 *     is unsafe, so a library loaded later needs no registration.
 * A deferred stop is retried by the monitor 50 us later, four times in
 * a row, then at each tick.  One asked while preemption was off is
 * honoured by mqs_preempt_enable.  One that found the task in foreign
 * code is taken as the I/O call's system call it interrupted returns,
 * or at the task's next I/O call (mqs__preempt_take_missed, io.c): a
 * task whose time goes to system calls is there at almost every signal,
 * and the retries and the wake-ups' own signals (place.c sends no WAKE
 * while one is deferred) mostly landed in the next system call (the TCP
 * chatroom took 10 000 signals a second for no stop).  One a wake-up
 * asked for a more urgent task (URGENT), deferred in foreign code but
 * not in an I/O call's system call, has the handler bring the monitor's
 * next look forward to now (retry_soon): the monitor planned no look
 * for it, its next may be eight ticks away, and with a 1 s tick a woken
 * realtime task waited up to a second behind a task whose signal had
 * landed in a clock read (11 of 3 350 runs of test_io's case).
 *
 * State.  The handler runs on the task's stack and switches from inside
 * it: the kernel's signal frame holds every register, FP/SIMD included,
 * and the signal mask, and the return from the handler restores them.
 * errno is the thread's: the switch keeps each context's own value
 * (switch.h), and the handler restores the interrupted value.  A task
 * stopped this way resumes on the worker it stopped on (task->pinned,
 * honoured by mqs_se_allowed): its frame's return is valid on any
 * thread, but the code it interrupted may hold the address of a
 * thread-local (errno's, computed once per function by the compiler),
 * and that address is this thread's.  A cooperative switch has no such
 * frame and may migrate as before.
 *
 * Rejected: Go's injected call (rewrite the interrupted PC to an
 * assembly stub that saves every register and calls the scheduler): it
 * needs a full FP/SIMD save per architecture (XSAVE areas of the CPU's
 * size) that the kernel's frame already does.  Per-worker POSIX timers
 * (timer_create with SIGEV_THREAD_ID): a timer per worker ticks whether
 * or not anyone waits; the monitor sends nothing where nothing needs
 * preempting.  A pending flag checked only at runtime entries: a task
 * that never calls the runtime is exactly the one to stop (the I/O
 * calls' check above only completes the signal).
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "ctx.h"
#include "internal.h"
#include "rq.h"

/* The runtime's own text.  The library is one translation unit (a unity
 * build, CMakeLists.txt), compiled without hot/cold splitting, so its
 * code is one .text section: the compilers emit top-level asm before any
 * function (begin), and subsection 8191 lands after all of subsection 0
 * (end).  tests/test_preempt.c checks that functions of every file lie
 * between the two. */
__asm__(".pushsection .text\n"
        ".globl mqs__text_begin\n"
        ".hidden mqs__text_begin\n"
        "mqs__text_begin:\n"
        ".popsection\n"
        ".pushsection .text, 8191\n"
        ".globl mqs__text_end\n"
        ".hidden mqs__text_end\n"
        "mqs__text_end:\n"
        ".popsection\n");
extern const char mqs__text_begin[] __attribute__((visibility("hidden")));
extern const char mqs__text_end[] __attribute__((visibility("hidden")));

#define RETRY_NS 50000 /* a deferred stop is asked again this soon       */
#define RETRY_STREAK 4 /* ... this many times in a row, then at ticks    */
#define MONITOR_POLL_TICKS 10 /* epoll unasked this long: the monitor asks */
#define MONITOR_POLL_EVENTS 8 /* ... for this many ready descriptors at most */
#define QUIET_TICKS 4  /* the longest look apart while every slice lasts */
#define QUIET_SLACK_NS 20000 /* a look this late after a slice's end   */
#define CALM_TICKS 8   /* the longest look apart while every run is short */

/* ------------------------------------------------------------------ */
/* Where a task may be stopped                                          */
/* ------------------------------------------------------------------ */

/* A sanitizer's runtime linked into the program itself (clang links
 * ASan's and TSan's statically): its allocator is malloc's, with the same
 * per-thread caches.  Its functions are found by name in the program's
 * symbol tables; the runtime is one archive linked as a whole, so the
 * span from the lowest to the highest is its code. */
static bool sanitizer_name(const char *n)
{
    static const char *const prefix[] = {
        "__asan", "__lsan", "__ubsan", "__tsan", "__msan", "__sanitizer",
        "__interceptor", "___interceptor", "__interception", "_ZN6__asan",
        "_ZN6__lsan", "_ZN7__ubsan", "_ZN6__tsan", "_ZN11__sanitizer",
        "_ZN14__interception",
    };
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++)
        if (strncmp(n, prefix[i], strlen(prefix[i])) == 0)
            return true;
    return false;
}

static void sanitizer_span(struct mqs__preempt_rt *p, const char *f,
                           size_t size, const ElfW(Shdr) *sh, unsigned n,
                           uintptr_t bias)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (unsigned i = 0; i < n; i++) {
        if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) ||
            sh[i].sh_link >= n || sh[i].sh_offset + sh[i].sh_size > size ||
            sh[sh[i].sh_link].sh_offset + sh[sh[i].sh_link].sh_size > size)
            continue;
        const char *str = f + sh[sh[i].sh_link].sh_offset;
        size_t nstr = sh[sh[i].sh_link].sh_size;
        const ElfW(Sym) *sym = (const void *)(f + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC ||
                !sym[k].st_value || sym[k].st_name >= nstr ||
                !sanitizer_name(str + sym[k].st_name))
                continue;
            uintptr_t a = bias + sym[k].st_value;
            lo = a < lo ? a : lo;
            hi = a + sym[k].st_size > hi ? a + sym[k].st_size : hi;
        }
    }
    if (lo < hi) {
        p->unsafe_lo = lo;
        p->unsafe_hi = hi;
    }
}

/* The program's own code: its .text section, read from /proc/self/exe
 * (not its whole executable segment: that holds the PLT, whose stubs run
 * on behalf of whoever calls a library, the runtime or a sanitizer
 * included).  False when the file cannot be read. */
static bool program_text(struct mqs__preempt_rt *p, uintptr_t bias)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 ||
        (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    size_t size = (size_t)st.st_size;
    const char *f = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return false;
    const ElfW(Ehdr) *eh = (const void *)f;
    const ElfW(Shdr) *sh = (const void *)(f + eh->e_shoff);
    unsigned n = eh->e_shnum;
    bool found = false;
    if (eh->e_shoff && eh->e_shoff + n * sizeof *sh <= size &&
        eh->e_shstrndx < n &&
        sh[eh->e_shstrndx].sh_offset + sh[eh->e_shstrndx].sh_size <= size) {
        const char *names = f + sh[eh->e_shstrndx].sh_offset;
        for (unsigned i = 0; i < n && !found; i++) {
            if (sh[i].sh_name >= sh[eh->e_shstrndx].sh_size ||
                strcmp(names + sh[i].sh_name, ".text") != 0)
                continue;
            p->safe_lo[p->nsafe] = bias + sh[i].sh_addr;
            p->safe_hi[p->nsafe] = p->safe_lo[p->nsafe] + sh[i].sh_size;
            p->nsafe++;
            found = true;
        }
        sanitizer_span(p, f, size, sh, n, bias);
    }
    munmap((void *)f, size);
    return found;
}

/* The main program is the first object dl_iterate_phdr reports: its
 * .text (above), or, when its file cannot be read, its executable
 * segments.  Nothing else: not even the vDSO, which is stateless itself
 * but is only ever entered through libc or a sanitizer's interceptor,
 * whose frames may hold a lock below it. */
static int safe_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct mqs__preempt_rt *p = arg;
    (void)size;
    if (program_text(p, info->dlpi_addr))
        return 1;
    for (int i = 0; i < info->dlpi_phnum && p->nsafe < 4; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        p->safe_lo[p->nsafe] = info->dlpi_addr + ph->p_vaddr;
        p->safe_hi[p->nsafe] = p->safe_lo[p->nsafe] + ph->p_memsz;
        p->nsafe++;
    }
    return 1;
}

bool mqs__preempt_pc_safe(const mqs_runtime_t *rt, uintptr_t pc)
{
    if (pc >= (uintptr_t)mqs__text_begin && pc < (uintptr_t)mqs__text_end)
        return false;
    if (pc >= rt->pre.unsafe_lo && pc < rt->pre.unsafe_hi)
        return false;
    for (unsigned i = 0; i < rt->pre.nsafe; i++)
        if (pc >= rt->pre.safe_lo[i] && pc < rt->pre.safe_hi[i])
            return true;
    return false;
}

bool mqs__in_runtime_text(uintptr_t pc)
{
    return pc >= (uintptr_t)mqs__text_begin && pc < (uintptr_t)mqs__text_end;
}

static uintptr_t interrupted_pc(const void *uc)
{
    uintptr_t pc, sp;
    mqs__uc_regs(uc, &pc, &sp);
    return pc;
}

/* ------------------------------------------------------------------ */
/* The handler                                                          */
/* ------------------------------------------------------------------ */

static struct sigaction old_urg;
static pthread_once_t preempt_once = PTHREAD_ONCE_INIT;
static int handler_rc;

/* A stop: the checkpoint's decision (mqs_checkpoint) with the reasons
 * asked, then a yield.  pin: from the handler, the task resumes on this
 * worker (its signal frame is on its stack). */
static void preempt_point(struct mqs_worker *w, struct mqs_task *t, int why,
                          bool pin)
{
    const struct mqs_policy *p = w->rt->policy;
    uint64_t now = mqs__clock_ns(&w->clock);
    bool stop = (why & MQS__PRE_STOP) ||
                atomic_load_explicit(&w->rt->stopping, memory_order_relaxed);
    bool due = now >= atomic_load_explicit(&w->timers.next,
                                           memory_order_relaxed);
    bool urgent = mqs_best_prio_anywhere(w->rt) < t->se.level ||
                  (why & MQS__PRE_WAKE);
    bool spent = false;
    if ((why & MQS__PRE_TICK) && !(stop || due || urgent)) {
        /* A policy with no tick has no slice: a tick with others
         * waiting is the end of one (round robin at the tick).  One
         * with a slice left tells the monitor when to ask again. */
        MQS__CHK_UNLOCKED_OP(w->rt, "tick");
        uint64_t at = mqs__tick_time(w, now);
        int64_t left = p->tick ? p->tick(&w->rq, &t->se, at) : 0;
        spent = left <= 0;
        if (!spent) {
            uint64_t until = left == MQS_SLICE_NONE ? UINT64_MAX
                                                    : at + (uint64_t)left;
            atomic_store_explicit(&w->pre.quiet_until, until,
                                  memory_order_relaxed);
            atomic_store_explicit(&w->pre.quiet_sw,
                                  MQS__STAT_GET(w->stats.switches),
                                  memory_order_release);
        }
    }
    if (!(stop || due || urgent || spent))
        return;
    w->preempting = true;
    if (!pin) {
        mqs__schedule(w, t, MQS__SW_YIELD);
        return;
    }
    MQS__STAT_ADD(w->stats.preemptions, 1);
    t->pinned = true; /* se.last_worker is this worker */
    w->urg_blocked = true; /* the next context unblocks SIGURG */
    mqs__schedule(w, t, MQS__SW_YIELD);
    /* Picked again without a switch: still blocked here, and the
     * handler's return restores the mask it interrupted. */
    w->urg_blocked = false;
    t->pinned = false;
}

static void forward(int sig, siginfo_t *si, void *uc)
{
    if (old_urg.sa_flags & SA_SIGINFO) {
        if (old_urg.sa_sigaction)
            old_urg.sa_sigaction(sig, si, uc);
    } else if (old_urg.sa_handler != SIG_DFL &&
               old_urg.sa_handler != SIG_IGN) {
        old_urg.sa_handler(sig);
    }
}

/* A stop that a wake-up asked for a more urgent task (URGENT with WOKEN,
 * place.c) was deferred in foreign code that no runtime call will leave
 * through (a libc computation, a clock read, a system call the task made
 * itself; not an I/O call's system call, which takes the stop as it
 * returns: mqs__preempt_syscall_end).  The monitor planned no retry for
 * it, and its next look may be a calm span away (eight ticks): bring
 * that look forward to now, so that it asks again at once and then
 * retries as it does for its own deferred stops.  Once per look at most
 * (the exchange of next_look), and never for a request of the monitor's
 * own, which carries no WOKEN: a task in a long system call would
 * otherwise bounce signals between the two threads.  Async-signal-safe. */
static void retry_soon(struct mqs_worker *w)
{
    struct mqs__preempt_rt *p = &w->rt->pre;
    uint64_t soon = mqs__clock_ns(&w->clock) + RETRY_NS;
    uint64_t at = atomic_load_explicit(&p->next_look, memory_order_relaxed);
    if (at > soon && atomic_compare_exchange_strong(&p->next_look, &at, soon)) {
        atomic_fetch_add(&p->futex, 1);
        mqs__futex_wake(&p->futex, 1);
    }
}

static void on_preempt(int sig, siginfo_t *si, void *uc)
{
    struct mqs_worker *w = mqs__tls_worker;
    int why = w ? atomic_exchange(&w->pre.req, 0) : 0;
    if (!why) {
        forward(sig, si, uc); /* not the runtime's */
        return;
    }
    int err = errno;
    MQS__STAT_ADD(w->stats.preempt_signals, 1);
    struct mqs_task *t = w->curr;
    if (t && !w->in_runtime && t->preempt_off) {
        /* the outermost mqs_preempt_enable stops it */
        t->preempt_pending = true;
        MQS__STAT_ADD(w->stats.preempt_deferred, 1);
    } else if (t && !w->in_runtime &&
               mqs__preempt_pc_safe(w->rt, interrupted_pc(uc))) {
        preempt_point(w, t, why, true);
    } else {
        /* Inside the runtime (or its loop): it reaches a scheduling
         * point on its own, where the same reasons are looked at, or the
         * monitor sees them again.  In foreign code: the monitor asks
         * again, and the I/O call the task is in (as its system call
         * returns) or its next one takes them. */
        bool foreign = t && !w->in_runtime;
        if (foreign)
            atomic_fetch_or(&w->pre.missed, why & ~MQS__PRE_WOKEN);
        MQS__STAT_ADD(w->stats.preempt_deferred, 1);
        if ((why & MQS__PRE_WOKEN) && foreign && !w->in_syscall)
            retry_soon(w);
    }
    errno = err;
}

static void preempt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_preempt;
    /* No SA_ONSTACK: the handler runs on the task's stack, which it may
     * leave for a while (the alternate stack is the worker's, and the
     * next task's fault would need it).  No SA_NODEFER: SIGURG stays
     * blocked while the handler runs on this task's stack, so signals
     * cannot pile frames on it (under qemu, with the monitor's 50 us
     * retries, nested frames overran a 16 KiB stack); a stop unblocks
     * it on the next context's stack (mqs__finish_switch), and the
     * stopped task's return from the handler restores its own mask. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    handler_rc = sigaction(MQS__PREEMPT_SIGNAL, &sa, &old_urg) == 0
                     ? 0
                     : MQS_ESYS;
}

/* ------------------------------------------------------------------ */
/* The monitor                                                          */
/* ------------------------------------------------------------------ */

/* One look at every worker; returns how long to sleep until the next,
 * and whether any worker was awake.  The next look is a tick away,
 * unless every awake worker runs a task whose policy said, at its last
 * tick, that its slice has longer left (the quiet hint): then the
 * earliest of those ends, at most QUIET_TICKS ticks.  Only under exact
 * accounting (the coarse clock of tick accounting advances at each
 * look), and a task switched in meanwhile is first asked up to that
 * late.
 *
 * Calm: while every look finds each awake worker in its loop or running
 * a task that it switched to since the look before, and asks nothing,
 * the looks move apart, twice as far each time, up to CALM_TICKS ticks
 * (Go's sysmon backs off the same way); the first look that finds a
 * run going on since the last, or asks anything, brings them back to a
 * tick.  A task that
 * blocks or yields often needs no stop, and each look wakes a thread:
 * on the 2-vCPU VM a 1 kHz ticker beside the TCP chatroom alone cost it
 * 14% of its messages (docs/notes.md).  A task that starts spinning
 * just after a calm look runs through the next one (which saw its
 * switch) and is stopped at the one after: at most two spans, 2 x
 * CALM_TICKS ticks, where Go's sysmon allows 10-20 ms.  Due timers and
 * deferred stops keep their own shorter sleeps, and a wake-up's stop
 * never waits for a look (a more urgent one deferred brings the next
 * look forward: retry_soon). */
static uint64_t scan(mqs_runtime_t *rt, uint64_t now, bool *awake)
{
    struct mqs__preempt_rt *p = &rt->pre;
    bool exact = !rt->workers[0]->acct_tick, calm = true;
    uint64_t span = p->tick_ns * p->calm;
    uint64_t sleep = exact && QUIET_TICKS > p->calm
                         ? p->tick_ns * QUIET_TICKS
                         : span;
    bool stopping = atomic_load_explicit(&rt->stopping, memory_order_relaxed);
    /* What waits, from each queue's published best, not from the level
     * hint: the hint keeps an emptied queue's level until its owner
     * settles it at a scheduling point, so a lone task stopped at a tick
     * re-queued itself, left its level in the hint, and was stopped
     * again every tick (181 stops in 200 ms of a lone spinner).  The
     * best queued level, and the best of the queues but that one. */
    unsigned best = MQS_PRIO_NONE, best2 = MQS_PRIO_NONE;
    int best_at = -1;
    for (int i = 0; i < rt->nworkers; i++) {
        unsigned b = atomic_load_explicit(&rt->workers[i]->rq.best_prio,
                                          memory_order_relaxed);
        if (b < best) {
            best2 = best;
            best = b;
            best_at = i;
        } else if (b < best2) {
            best2 = b;
        }
    }
    *awake = false;
    /* The coarse clock of tick accounting advances here, to the last
     * tick boundary: a run is charged the boundaries it straddles, a
     * grid that does not move with the looks (retries come 50 us after
     * a look that found a slice spent, at times the schedule chose). */
    uint64_t jiffy = now - now % p->tick_ns;
    atomic_store_explicit(&p->jiffy, jiffy, memory_order_relaxed);
    for (int i = 0; i < rt->nworkers; i++) {
        struct mqs_worker *w = rt->workers[i];
        uint64_t sw = MQS__STAT_GET(w->stats.switches);
        bool switched = sw != w->pre.seen;
        if (switched) {
            /* Under exact accounting the switch's own time: the look
             * that saw it may come QUIET_TICKS after it.  (Not under
             * tick accounting: there the coarse start of a run begun
             * just before this look is the last look's, a tick back,
             * and every yielder's run looked old enough for a tick.) */
            uint64_t at = atomic_load_explicit(&w->rq.curr_since,
                                               memory_order_relaxed);
            w->pre.seen = sw;
            w->pre.since = exact && at < now ? at : now;
            w->pre.streak = 0;
        }
        if (atomic_load(&w->parked))
            continue;
        *awake = true;
        unsigned level = atomic_load_explicit(&w->rq.curr_level,
                                              memory_order_relaxed);
        if (level == MQS_PRIO_NONE) {
            /* in its loop: a scheduling point by itself, and then a
             * task that may need a tick */
            sleep = sleep < span ? sleep : span;
            continue;
        }
        /* The run now going began since the last look.  (Not its age
         * from curr_since: under tick accounting that is the coarse
         * time, the last look's, so every run looked a span old.) */
        calm = calm && switched;
        int why = atomic_exchange(&w->pre.missed, 0);
        if (stopping)
            why |= MQS__PRE_STOP;
        uint64_t next = atomic_load_explicit(&w->timers.next,
                                             memory_order_relaxed);
        if (next <= now)
            why |= MQS__PRE_TIMER;
        else if (next - now < sleep)
            sleep = next - now;
        if (best < level)
            why |= MQS__PRE_URGENT;
        /* Others wait: here, or elsewhere at this level or better (a
         * stop lets this worker's balancer take them). */
        bool others =
            atomic_load_explicit(&w->rq.nr_queued, memory_order_relaxed) ||
            mqs__runnext_any(&w->runnext) ||
            (best_at == i ? best2 : best) <= level;
        uint64_t quiet = atomic_load_explicit(&w->pre.quiet_sw,
                                              memory_order_acquire) == sw
                             ? atomic_load_explicit(&w->pre.quiet_until,
                                                    memory_order_relaxed)
                             : 0;
        /* Under tick accounting this look is the clock that charges
         * the runs while others wait (sched_clock.h): a tick apart,
         * never calm. */
        if (!exact && others) {
            calm = false;
            sleep = sleep < p->tick_ns ? sleep : p->tick_ns;
        }
        /* A tick once the slice the policy gave is over (once: a stop
         * deferred comes back through missed), or a tick after the
         * last while it gave none.  Over by the time the tick op will
         * be given: under tick accounting the grid's, so the slice ends
         * at the first boundary past it (a stop sent at the first look
         * past it found the coarse time short of it, and the policy gave
         * the rest: two signals a slice). */
        if (others && quiet <= (exact ? now : jiffy) &&
            (quiet > w->pre.since || now - w->pre.since >= p->tick_ns)) {
            why |= MQS__PRE_TICK;
            w->pre.since = now;
        }
        /* Never sooner than a tick: an extra look costs more than a
         * slice that ends at the next regular one, as without the hint. */
        uint64_t look = span;
        if (exact && others && quiet > now && quiet - now > look &&
            quiet - now < sleep)
            look = quiet - now + QUIET_SLACK_NS;
        sleep = look < sleep ? look : sleep;
        /* A hand-off whose waker did not block (the same task in the
         * slot, no switch since the last look): the policy chooses
         * between the two (runnext.c). */
        const void *handoff = atomic_load_explicit(&w->runnext.woken,
                                                   memory_order_relaxed);
        if (handoff && handoff == w->pre.handoff_seen && !switched)
            why |= MQS__PRE_WAKE;
        w->pre.handoff_seen = handoff;
        if (handoff && p->tick_ns < sleep)
            sleep = p->tick_ns;
        if (!why)
            continue;
        calm = false;
        mqs__preempt_request(w, why);
        /* Look again soon (was it taken?), a few times in a row; then
         * at each tick. */
        if (w->pre.streak++ < RETRY_STREAK && sleep > RETRY_NS)
            sleep = RETRY_NS;
    }
    p->calm = calm ? (p->calm * 2 > CALM_TICKS ? CALM_TICKS : p->calm * 2) : 1;
    atomic_store_explicit(&p->looks,
                          atomic_load_explicit(&p->looks,
                                               memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return sleep;
}

/* Park until some worker leaves its park (tickless while all idle). */
static void monitor_park(mqs_runtime_t *rt)
{
    struct mqs__preempt_rt *p = &rt->pre;
    unsigned seen = atomic_load(&p->futex);
    atomic_store(&p->parked, 1);
    bool all = true;
    for (int i = 0; all && i < rt->nworkers; i++)
        all = atomic_load(&rt->workers[i]->parked);
    if (all && !atomic_load(&p->stop))
        mqs__futex_wait(&p->futex, seen, UINT64_MAX);
    atomic_store(&p->parked, 0);
}

static void *monitor_main(void *arg)
{
    mqs_runtime_t *rt = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    /* Its own copy of the clock, re-anchored at each look: deadlines are
     * set on the workers' clocks, which their housekeeping re-anchors
     * every millisecond, and the runtime's copy is never re-anchored
     * (its drift grew to milliseconds against due timers). */
    mqs__clock_t clock = rt->clock;
    while (!atomic_load(&rt->pre.stop)) {
        bool awake;
        unsigned seen = atomic_load(&rt->pre.futex);
        uint64_t sleep = scan(rt, mqs__clock_resync(&clock), &awake);
        /* Descriptors ready while every worker runs (poll.c), when no
         * worker has asked epoll for MONITOR_POLL_TICKS (Go's sysmon:
         * 10 ms), and for MONITOR_POLL_EVENTS of them at most: a last
         * resort that keeps a few ready tasks from waiting on workers
         * that neither idle nor reach a scheduling point that asks; the
         * rest stay in epoll's ready list for the workers' own asks, or
         * the next of this one.  Every task it wakes early, before its
         * data has gathered, costs: asking at every look made twice the
         * reads in the TCP chatroom and delivered 0.47-0.7x the
         * messages; a batch of 64 each ten ticks 0.8-0.9x of none, of
         * 256 half (docs/notes.md). */
        if (awake &&
            atomic_load_explicit(&rt->poll.epfd, memory_order_acquire) >= 0) {
            uint64_t due = atomic_load_explicit(&rt->poll.asked_ns,
                                                memory_order_relaxed) +
                           MONITOR_POLL_TICKS * rt->pre.tick_ns;
            uint64_t t = mqs__clock_ns(&rt->clock);
            if (t >= due)
                rt->poll.nowait(rt, MONITOR_POLL_EVENTS);
            else if (due - t < sleep) /* calm looks: still ten ticks */
                sleep = due - t;
        }
        if (!awake) {
            atomic_store_explicit(&rt->pre.next_look, UINT64_MAX,
                                  memory_order_relaxed);
            monitor_park(rt);
            rt->pre.calm = 1;
        } else {
            /* A handler that brings this forward bumps the futex too:
             * after `seen` was read, so the wait returns at once. */
            atomic_store_explicit(&rt->pre.next_look,
                                  mqs__clock_ns(&clock) + sleep,
                                  memory_order_relaxed);
            mqs__futex_wait(&rt->pre.futex, seen, sleep);
        }
    }
    return NULL;
}

void mqs__preempt_monitor_wake(mqs_runtime_t *rt)
{
    if (atomic_load(&rt->pre.parked)) {
        atomic_fetch_add(&rt->pre.futex, 1);
        mqs__futex_wake(&rt->pre.futex, 1);
    }
}

int mqs__preempt_start(mqs_runtime_t *rt)
{
    if (!rt->pre.on)
        return 0;
    pthread_once(&preempt_once, preempt_install);
    if (handler_rc)
        return handler_rc;
    dl_iterate_phdr(safe_text, &rt->pre);
    if (pthread_create(&rt->pre.monitor, NULL, monitor_main, rt) != 0)
        return MQS_ESYS;
    rt->pre.started = true;
    return 0;
}

void mqs__preempt_stop(mqs_runtime_t *rt)
{
    if (!rt->pre.started)
        return;
    atomic_store(&rt->pre.stop, 1);
    atomic_fetch_add(&rt->pre.futex, 1);
    mqs__futex_wake(&rt->pre.futex, 1);
    pthread_join(rt->pre.monitor, NULL);
    rt->pre.started = false;
}

/* On the worker's thread, before its loop. */
void mqs__preempt_worker_init(struct mqs_worker *w)
{
    w->pre.tid = (int)syscall(SYS_gettid);
    w->errno_p = &errno;
    atomic_store(&w->rq.curr_level, MQS_PRIO_NONE);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, MQS__PREEMPT_SIGNAL);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    pthread_sigmask(SIG_SETMASK, NULL, &w->pre.mask);
    w->pre.mask_switch = w->pre.mask;
    sigaddset(&w->pre.mask_switch, MQS__PREEMPT_SIGNAL);
}

/* ------------------------------------------------------------------ */
/* Public calls                                                         */
/* ------------------------------------------------------------------ */

void mqs_preempt_disable(void)
{
    struct mqs_worker *w = mqs__worker_entry();
    if (w && w->curr)
        w->curr->preempt_off++;
}

void mqs__preempt_take_missed(struct mqs_worker *w)
{
    struct mqs_task *t = w->curr;
    if (w->in_runtime || !t || t->preempt_off)
        return;
    int why = atomic_exchange(&w->pre.missed, 0);
    if (why)
        preempt_point(w, t, why, false);
}

/* An I/O call's system call: a stop deferred inside it is taken as it
 * returns (a safe point of the runtime's own), and the handler asks the
 * monitor for no retry meanwhile (retry_soon): in the TCP chatroom
 * under ule, the retries of wake-ups' stops deferred in these calls
 * woke the monitor 4.5 times as often and cost 17% of the messages
 * (docs/notes.md). */
struct mqs_worker *mqs__preempt_syscall_begin(void)
{
    struct mqs_worker *w = mqs__worker_self();
    if (!w || !w->curr)
        return NULL;
    w->in_syscall = true;
    atomic_signal_fence(memory_order_seq_cst);
    return w;
}

void mqs__preempt_syscall_end(struct mqs_worker *w)
{
    if (!w)
        return;
    atomic_signal_fence(memory_order_seq_cst);
    w->in_syscall = false;
    if (atomic_load_explicit(&w->pre.missed, memory_order_relaxed))
        mqs__preempt_take_missed(w);
}

void mqs_preempt_enable(void)
{
    struct mqs_worker *w = mqs__worker_entry();
    struct mqs_task *t = w ? w->curr : NULL;
    if (!t || !t->preempt_off || --t->preempt_off || !t->preempt_pending)
        return;
    t->preempt_pending = false;
    if (!w->in_runtime)
        preempt_point(w, t, MQS__PRE_TICK, false);
}

bool mqs_preempt_on(const mqs_runtime_t *rt)
{
    return rt && rt->pre.on;
}

/* Tick accounting needs the monitor's tick: the policy asks for it, the
 * configuration allows it, and preemption is on.  Sets every worker's
 * acct_tick, and the coarse clock's first value. */
void mqs__accounting_setup(mqs_runtime_t *rt, int accounting)
{
    bool tick = rt->pre.on && accounting != MQS_ACCOUNTING_EXACT &&
                (rt->policy->flags & MQS_POLICY_TICK_ACCOUNTING);
    atomic_store(&rt->pre.jiffy, mqs__clock_ns(&rt->clock));
    for (int i = 0; i < rt->nworkers; i++)
        rt->workers[i]->acct_tick = tick ? rt->pre.tick_ns : 0;
}

bool mqs_accounting_exact(const mqs_runtime_t *rt)
{
    return rt && !rt->workers[0]->acct_tick;
}
