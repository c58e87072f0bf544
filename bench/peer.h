/*
 * peer.h - rows measured by peer runtimes ("go": goroutines, "fiber":
 * Boost.Fiber), run as separate programs so mqs-bench itself needs
 * neither a Go toolchain nor C++.
 *
 * A peer is the program mqs-peer-<name>, looked for in $MQS_PEER_DIR, then
 * in peers/ beside the mqs-bench executable (where the build puts it),
 * then beside the executable (an install).  The protocol, which
 * bench/peers/PROTOCOL.md spells out per experiment:
 *
 *   mqs-peer-<name> <experiment> key=value ...
 *
 * runs ONE measurement and prints one line of `key=value` pairs
 * separated by spaces on stdout (numbers only), then exits 0.  Exit 3
 * means "this peer does not implement that experiment"; anything else
 * non-zero is a failure, with the reason on stderr.
 */
#ifndef MQS_BENCH_PEER_H
#define MQS_BENCH_PEER_H

#include <stdbool.h>
#include <stddef.h>

#define BENCH_PEER_MAX_KEYS 16

enum bench_peer_status {
    BENCH_PEER_OK = 0,
    BENCH_PEER_MISSING = 1,     /* program not found: "not installed"  */
    BENCH_PEER_UNSUPPORTED = 2, /* it exited 3: "not supported"        */
    BENCH_PEER_FAILED = -1,     /* ran and failed, or printed garbage   */
};

typedef struct bench_peer_result {
    int n;
    char key[BENCH_PEER_MAX_KEYS][32];
    double val[BENCH_PEER_MAX_KEYS];
} bench_peer_result_t;

/* Is row one of the peer rows ("go", "fiber")? */
bool bench_peer_is(const char *row);
/* The peer pseudo-row names, NULL-terminated (for bench_cli_t.pseudo). */
extern const char *const bench_peer_names[];

/*
 * Run one measurement: mqs-peer-<peer> <experiment> args[0] args[1] ...
 * (args NULL-terminated, each "key=value").  Returns a bench_peer_status;
 * on anything but OK, why (if not NULL) gets a short reason suitable as a
 * row's note ("not installed", "not supported", "failed: ...").
 */
int bench_peer_run(const char *peer, const char *experiment,
                   const char *const *args, bench_peer_result_t *out,
                   char *why, size_t whylen);

/* The value of key in r, or NAN when it is absent. */
double bench_peer_get(const bench_peer_result_t *r, const char *key);

/* Parse one output line into r (exposed for tests): 0, or -1 when a token
 * is not key=number or there are too many. */
int bench_peer_parse(const char *line, bench_peer_result_t *r);

#endif
