/*
 * safepoint.c - where a task may be stopped: the ranges of code a
 * preemption signal may interrupt and switch away from, found once per
 * runtime, and the handler's check of one interrupted context.
 *
 * A stop is safe when all of these hold (the first two are checked by
 * the handler in preempt.c, the rest here):
 *   - the worker is not inside the runtime (in_runtime == 0: no queue
 *     lock, no switch, no wait-queue section, not the worker loop);
 *   - the task has not disabled preemption (mqs_preempt_disable);
 *   - the interrupted instruction lies in the main program's own text,
 *     and not in the runtime's (mqs__text_begin..end below): never in
 *     libc (malloc's arenas and tcache, stdio locks), the dynamic loader,
 *     a sanitizer's runtime or any other shared object, all of which may
 *     keep per-thread state or hold locks that a second task on the same
 *     thread would corrupt or wait for.  A sanitizer's runtime linked
 *     into the program is left out of its text too, and so is the PLT.
 *     These ranges are found once with dl_iterate_phdr; everything else
 *     is unsafe, so a library loaded later needs no registration;
 *   - or it lies in a *leaf call* made straight from that text: the
 *     clock read.  A task that computes and checks the time (a loop
 *     bounded by a deadline) spends most of its time inside
 *     clock_gettime and the vDSO: 28 ns a read on a paravirtualised AMD
 *     host against a few ns of its own code, so nearly every stop landed
 *     there and was deferred, and such a task kept its worker until its
 *     next tick or yield (p90 wake-up latency 0.8 ms behind two of them).
 *     The vDSO and libc's clock_gettime, gettimeofday and time keep no
 *     lock and no per-thread state but errno (which a switch keeps per
 *     task), so a stop inside them is safe when nothing but they lies
 *     between the stop and the program's text: libc calls them from
 *     under its own locks too (syslog, timed waits).  The handler then
 *     unwinds the interrupted stack (the unwinder's tables, through the
 *     kernel's signal frame) and takes the stop only if the first frame
 *     outside those functions is a call from safe text; anything else,
 *     an unwinding failure included, defers it as before.  The unwinder
 *     finds tables with _dl_find_object (glibc 2.35), which takes no
 *     lock, and runs only for a stop inside the clock read.
 *
 * Rejected: single-stepping out of the call (the trap flag: a signal per
 * instruction, x86 only); a shorter retry for such stops (a task 93% in
 * the clock read is hit in its own code once in fourteen tries); taking
 * any stop inside the vDSO (it is also entered from libc's own callers,
 * and from a sanitizer's interceptor).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unwind.h>

#include "ctx.h"
#include "internal.h"

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

/* ------------------------------------------------------------------ */
/* The program's text                                                  */
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
/* Leaf calls: the clock read                                          */
/* ------------------------------------------------------------------ */

#define LEAF_MAX_FRAMES 24 /* the handler's, the signal's, the leaf's */

static bool in_leaf(const struct mqs__preempt_rt *p, uintptr_t pc)
{
    for (unsigned i = 0; i < p->nleaf; i++)
        if (pc >= p->leaf_lo[i] && pc < p->leaf_hi[i])
            return true;
    return false;
}

static void leaf_add(struct mqs__preempt_rt *p, uintptr_t lo, uintptr_t hi)
{
    if (lo < hi && p->nleaf < MQS__PREEMPT_LEAVES) {
        p->leaf_lo[p->nleaf] = lo;
        p->leaf_hi[p->nleaf] = hi;
        p->nleaf++;
    }
}

/* The vDSO's code, from the ELF header the kernel maps (none under
 * qemu-user, whose clock reads are system calls inside libc's). */
static void leaf_vdso(struct mqs__preempt_rt *p)
{
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return;
    const ElfW(Ehdr) *eh = (const void *)base;
    const ElfW(Phdr) *ph = (const void *)(base + eh->e_phoff);
    uintptr_t bias = base;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
            bias = base - ph[i].p_vaddr;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
            leaf_add(p, bias + ph[i].p_vaddr,
                     bias + ph[i].p_vaddr + ph[i].p_memsz);
}

/* libc's function `name` (its own, not an interceptor of the same name
 * in the program), whole, by its symbol's size. */
static void leaf_libc(struct mqs__preempt_rt *p, void *libc, const char *name)
{
    void *f = dlsym(libc, name);
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    if (f && dladdr1(f, &di, (void **)&sym, RTLD_DL_SYMENT) && sym &&
        di.dli_saddr)
        leaf_add(p, (uintptr_t)di.dli_saddr,
                 (uintptr_t)di.dli_saddr + sym->st_size);
}

void mqs__safepoints_find(struct mqs__preempt_rt *p)
{
    dl_iterate_phdr(safe_text, p);
    leaf_vdso(p);
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!libc)
        return;
    leaf_libc(p, libc, "clock_gettime");
    leaf_libc(p, libc, "gettimeofday");
    leaf_libc(p, libc, "time");
    dlclose(libc);
}

struct leaf_walk {
    const mqs_runtime_t *rt;
    uintptr_t pc;
    int frames;
    bool found, safe;
};

/* One frame, innermost first: the handler's own frames until the one
 * interrupted at pc (a signal frame: its IP is the stopped instruction,
 * not a return address), then the leaf's callers up to the first one
 * outside the leaf functions, which decides. */
static _Unwind_Reason_Code leaf_step(struct _Unwind_Context *ctx, void *arg)
{
    struct leaf_walk *k = arg;
    int exact = 0;
    uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(ctx, &exact);
    if (++k->frames > LEAF_MAX_FRAMES || !ip)
        return _URC_END_OF_STACK;
    if (!k->found) {
        k->found = exact && ip == k->pc;
        return _URC_NO_REASON;
    }
    uintptr_t call = exact ? ip : ip - 1; /* inside the call instruction */
    if (in_leaf(&k->rt->pre, call))
        return _URC_NO_REASON;
    k->safe = mqs__preempt_pc_safe(k->rt, call);
    return _URC_END_OF_STACK;
}

bool mqs__preempt_stop_safe(const mqs_runtime_t *rt, const void *uc)
{
    uintptr_t pc = interrupted_pc(uc);
    if (mqs__preempt_pc_safe(rt, pc))
        return true;
    if (!in_leaf(&rt->pre, pc))
        return false;
    struct leaf_walk k = {rt, pc, 0, false, false};
    _Unwind_Backtrace(leaf_step, &k);
    return k.found && k.safe;
}
