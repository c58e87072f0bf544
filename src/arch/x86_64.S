/*
 * x86_64.S - context switch for x86-64 System V.
 *
 * Frame on a suspended stack, from the saved stack pointer upwards:
 *   [sp+0]  MXCSR (4 bytes), x87 control word (2 bytes), pad
 *   [sp+8]  r15, r14, r13, r12, rbx, rbp
 *   [sp+56] return address
 * A fresh stack built by mqs__ctx_make holds the same frame with r12 =
 * entry, r13 = arg and the return address pointing at ctx_start.
 */
#if defined(__x86_64__)
    .text

    .globl mqs__ctx_switch
    .type mqs__ctx_switch, @function
    .p2align 4
/* void *mqs__ctx_switch(void **save, void *to, void *pass)
 * Returns, in the resumed context, the `pass` of whoever switched to it. */
mqs__ctx_switch:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    movq %rdx, %rax
    ret
    .cfi_endproc
    .size mqs__ctx_switch, .-mqs__ctx_switch

    .type ctx_start, @function
    .p2align 4
ctx_start:
    .cfi_startproc
    .cfi_undefined rip
    movq %r13, %rdi
    movq %rdx, %rsi          /* entry(arg, pass of the first switch)    */
    callq *%r12
    ud2
    .cfi_endproc
    .size ctx_start, .-ctx_start

    .globl mqs__ctx_make
    .type mqs__ctx_make, @function
    .p2align 4
/* void *mqs__ctx_make(void *stack_top, void (*entry)(void *), void *arg) */
mqs__ctx_make:
    .cfi_startproc
    movq %rdi, %rax
    andq $-16, %rax          /* 16-byte aligned top: after the first    */
    subq $8, %rax            /* switch's ret, ctx_start runs with rsp   */
    leaq ctx_start(%rip), %rcx
    movq %rcx, (%rax)        /* == top, aligned for its call            */
    subq $8, %rax
    movq $0, (%rax)          /* rbp                                     */
    subq $8, %rax
    movq $0, (%rax)          /* rbx                                     */
    subq $8, %rax
    movq %rsi, (%rax)        /* r12 = entry                             */
    subq $8, %rax
    movq %rdx, (%rax)        /* r13 = arg                               */
    subq $8, %rax
    movq $0, (%rax)          /* r14                                     */
    subq $8, %rax
    movq $0, (%rax)          /* r15                                     */
    subq $8, %rax
    movl $0x1f80, (%rax)     /* default MXCSR                           */
    movw $0x037f, 4(%rax)    /* default x87 control word                */
    movw $0, 6(%rax)
    ret
    .cfi_endproc
    .size mqs__ctx_make, .-mqs__ctx_make
#endif
    .section .note.GNU-stack,"",@progbits
