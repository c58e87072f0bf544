/*
 * aarch64.S - context switch for AArch64 (AAPCS64).
 *
 * Saved frame (176 bytes) at the stored stack pointer:
 *   x19..x28 (80), x29 fp, x30 lr (16), d8..d15 (64), FPCR (8), pad (8)
 * A fresh stack from mqs__ctx_make holds x19 = entry, x20 = arg and
 * lr = ctx_start.
 */
#if defined(__aarch64__)
    .text

    .globl mqs__ctx_switch
    .type mqs__ctx_switch, %function
    .p2align 4
/* void *mqs__ctx_switch(void **save, void *to, void *pass)
 * Returns, in the resumed context, the `pass` of whoever switched to it. */
mqs__ctx_switch:
    sub sp, sp, #176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
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
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    ldr x9, [sp, #160]
    msr fpcr, x9
    add sp, sp, #176
    mov x0, x2
    ret
    .size mqs__ctx_switch, .-mqs__ctx_switch

    .type ctx_start, %function
    .p2align 4
ctx_start:
    mov x1, x2               /* entry(arg, pass of the first switch) */
    mov x0, x20
    blr x19
    brk #0
    .size ctx_start, .-ctx_start

    .globl mqs__ctx_make
    .type mqs__ctx_make, %function
    .p2align 4
/* void *mqs__ctx_make(void *stack_top, void (*entry)(void *), void *arg) */
mqs__ctx_make:
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
    .size mqs__ctx_make, .-mqs__ctx_make
#endif
    .section .note.GNU-stack,"",%progbits
