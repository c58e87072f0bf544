/*
 * aarch64.S - context switch for AArch64 (AAPCS64).
 *
 * Saved frame (176 bytes) at the stored stack pointer:
 *   x19..x28 (80), x29 fp, x30 lr (16), d8..d15 (64), FPCR (8), pad (8)
 * A fresh stack from mqs__ctx_make holds x19 = entry, x20 = arg and
 * lr = ctx_start.
 *
 * What AAPCS64 keeps across a call is x19-x29, sp, the low 64 bits of
 * v8-v15 (d8-d15) and, by convention, FPCR (rounding mode, flush-to-zero,
 * default NaN: a task's own setting, like x86-64's MXCSR control bits);
 * FPSR holds sticky status flags, which a caller cannot rely on across a
 * call, so it is not saved.  The frame is a multiple of 16 bytes, so sp
 * stays 16-byte aligned (Linux faults a misaligned sp at its first use).
 * A new context starts with FPCR = 0 (round to nearest, no traps: the
 * Linux default) rather than its creator's, as x86_64.S starts it with
 * the default MXCSR.  No SVE/SME state is kept: a call already clobbers
 * the upper parts of z8-z15 and the predicates, and a task must not
 * switch in streaming mode or with ZA live.  Pointer authentication
 * needs nothing here (each C frame signs and checks its own lr against
 * its own sp, which the switch gives back); this file has no BTI landing
 * pads or GNU property note, so a -mbranch-protection build links as not
 * BTI-protected rather than breaking.  Verified under qemu-user by
 * tests/test_ctx_regs.c (docs/aarch64.md).
 */
#if defined(__aarch64__)
    .text

    .globl mqs__ctx_switch
    .type mqs__ctx_switch, %function
    .p2align 4
/* void *mqs__ctx_switch(void **save, void *to, void *pass)
 * Returns, in the resumed context, the `pass` of whoever switched to it. */
mqs__ctx_switch:
    .cfi_startproc
    sub sp, sp, #176
    .cfi_def_cfa_offset 176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    .cfi_offset x29, -96     /* the same frame shape on either stack, */
    .cfi_offset x30, -88     /* so this holds after sp is moved too   */
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mrs x9, fpcr
    str x9, [sp, #160]
    mov x9, sp
    str x9, [x0]
    mov sp, x1
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    .cfi_restore x29
    .cfi_restore x30
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    ldr x9, [sp, #160]
    msr fpcr, x9
    add sp, sp, #176
    .cfi_def_cfa_offset 0
    mov x0, x2
    ret
    .cfi_endproc
    .size mqs__ctx_switch, .-mqs__ctx_switch

    .type ctx_start, %function
    .p2align 4
ctx_start:
    .cfi_startproc
    .cfi_undefined x30       /* the bottom frame: unwinders stop here */
    mov x1, x2               /* entry(arg, pass of the first switch) */
    mov x0, x20
    blr x19
    brk #0
    .cfi_endproc
    .size ctx_start, .-ctx_start

    .globl mqs__ctx_make
    .type mqs__ctx_make, %function
    .p2align 4
/* void *mqs__ctx_make(void *stack_top, void (*entry)(void *), void *arg) */
mqs__ctx_make:
    .cfi_startproc
    and x0, x0, #~15
    sub x0, x0, #176
    mov x9, #0
    mov x10, #0
    stp x9, x10, [x0, #16]
    stp x9, x10, [x0, #32]
    stp x9, x10, [x0, #48]
    stp x9, x10, [x0, #64]
    stp x9, x10, [x0, #96]
    stp x9, x10, [x0, #112]
    stp x9, x10, [x0, #128]
    stp x9, x10, [x0, #144]
    stp x9, x10, [x0, #160]
    stp x1, x2, [x0, #0]      /* x19 = entry, x20 = arg */
    adr x11, ctx_start
    stp x9, x11, [x0, #80]    /* fp = 0, lr = ctx_start */
    ret
    .cfi_endproc
    .size mqs__ctx_make, .-mqs__ctx_make
#endif
    .section .note.GNU-stack,"",%progbits
