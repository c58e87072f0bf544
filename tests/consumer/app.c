/* Runs one task through an installed mqs and prints what it computed. */
#include <mqs.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void *square(void *arg)
{
    intptr_t n = (intptr_t)arg;
    mqs_yield();
    return (void *)(n * n);
}

int main(void)
{
    mqs_runtime_t *rt = NULL;
    if (mqs_runtime_create(&rt, NULL) != 0)
        return 1;
    mqs_task_t *t = NULL;
    void *r = NULL;
    if (mqs_spawn(rt, &t, NULL, square, (void *)(intptr_t)7) != 0 ||
        mqs_join(t, &r) != 0 || mqs_runtime_destroy(rt) != 0)
        return 1;
    printf("mqs %s: 7 squared is %ld\n", mqs_version(), (long)(intptr_t)r);
    return (intptr_t)r == 49 && strcmp(mqs_version(), "") != 0 ? 0 : 1;
}
