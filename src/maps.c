/*
 * maps.c - the process's memory mappings, counted: for the stack layer's
 * message when the kernel refuses a mapping (vm.max_map_count) and for
 * `mqs-bench spawn --live`.  A file of its own, with no other dependency,
 * so that mqs-bench-shared can build it in: the shared library exports
 * only the public `mqs_` names (src/libmqs.map).
 */
#include <stdio.h>

#include "internal.h"

long mqs__count_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    long n = 0;
    for (int c; (c = getc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}
