/*
 * policy.c - the registry of scheduling policies.
 *
 * Every policy is compiled into the one library and found by name at run
 * time, so benchmarks and the conformance suite can run them side by side
 * in one process.  Adding a policy: write src/policy/<name>.c defining a
 * `const struct mqs_policy mqs_policy_<name>` and add it to the table.
 */
#include <string.h>

#include "internal.h"

extern const struct mqs_policy mqs_policy_mq;
extern const struct mqs_policy mqs_policy_global;
extern const struct mqs_policy mqs_policy_o1;
extern const struct mqs_policy mqs_policy_ule;
extern const struct mqs_policy mqs_policy_cfs;
extern const struct mqs_policy mqs_policy_eevdf;
extern const struct mqs_policy mqs_policy_bfs;
extern const struct mqs_policy mqs_policy_ws;

static const struct mqs_policy *const registry[] = {
    &mqs_policy_mq,
    &mqs_policy_global,
    &mqs_policy_o1,
    &mqs_policy_ule,
    &mqs_policy_cfs,
    &mqs_policy_eevdf,
    &mqs_policy_bfs,
    &mqs_policy_ws,
    NULL,
};

const struct mqs_policy *const *mqs_policy_list(void)
{
    return registry;
}

const struct mqs_policy *mqs_policy_find(const char *name)
{
    if (!name)
        return NULL;
    for (const struct mqs_policy *const *p = registry; *p; p++)
        if (strcmp((*p)->name, name) == 0)
            return *p;
    return NULL;
}
