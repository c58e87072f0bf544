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
 *
 * A peer that hangs is killed: each run has a time bound, by default
 * BENCH_PEER_GRACE_S + BENCH_PEER_PER_SECOND x the seconds= argument (a
 * time-based run takes about `seconds`; the rest covers start-up and the
 * count-based experiments), or $MQS_PEER_TIMEOUT seconds when set.  A
 * killed peer is a failure ("failed: timed out after N s").
 */
#ifndef MQS_BENCH_PEER_H
#define MQS_BENCH_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_PEER_MAX_KEYS 16
#define BENCH_PEER_MAX_ARGS 32
#define BENCH_PEER_GRACE_S 60
#define BENCH_PEER_PER_SECOND 10

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

/* The version of peer `peer`'s toolchain as its build recorded it
 * (mqs-peer-<peer>.version beside the program: "go version go1.19.8
 * linux/amd64", "Boost 1.74.0, GNU 12.2.0"), into out: "version unknown"
 * when not recorded; "not installed" (and false) when there is no such
 * program. */
bool bench_peer_version(const char *peer, char *out, size_t n);
/* Is row one of the peer rows ("go", "fiber")? */
bool bench_peer_is(const char *row);
/* Is it a one-thread peer row (go1, fiber1)? */
bool bench_peer_one_thread(const char *row);
/* The pseudo rows of every experiment with a kernel row but no other:
 * "kernel" and the peers (for bench_cli_t.pseudo), and such a CLI's
 * default rows and pseudo rows (BENCH_PEER_ROWS in its initializer). */
extern const char *const bench_kernel_and_peers[];
#define BENCH_PEER_ROWS                                                      \
    .default_policy = "mq,kernel,go,fiber", .pseudo = bench_kernel_and_peers

/*
 * Run one measurement: mqs-peer-<peer> <experiment> args[0] args[1] ...
 * (args NULL-terminated, each "key=value"), killed after timeout_ns (0:
 * bench_peer_timeout_ns(args)).  Returns a bench_peer_status; on anything
 * but OK, why (if not NULL) gets a short reason suitable as a row's note
 * ("not installed", "not supported[: the peer's reason]", "failed: ...").
 */
int bench_peer_run(const char *peer, const char *experiment,
                   const char *const *args, uint64_t timeout_ns,
                   bench_peer_result_t *out, char *why, size_t whylen);

/* The bound bench_peer_run puts on a run with these args (see above). */
uint64_t bench_peer_timeout_ns(const char *const *args);

/* Building a peer's arguments: bench_peer_args_init, then one
 * bench_peer_args_add per key ("tasks", "%d", n), then pass list as
 * args.  Returns -1 when full or too long. */
typedef struct bench_peer_args {
    int n;
    char kv[BENCH_PEER_MAX_ARGS][64];
    const char *list[BENCH_PEER_MAX_ARGS + 1]; /* NULL-terminated */
} bench_peer_args_t;

void bench_peer_args_init(bench_peer_args_t *a);
int bench_peer_args_add(bench_peer_args_t *a, const char *key,
                        const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* workers=W seconds=S, which every experiment takes. */
int bench_peer_args_common(bench_peer_args_t *a, int workers, double seconds);

/*
 * Run argv[0] (a path) with argv, its stdout into buf (NUL-terminated,
 * cut at n - 1 bytes), its stderr passed through or (quiet) dropped.
 * Returns its exit status (128 + signal when killed by one), -1 when it
 * was killed at timeout_ns, -2 when it could not be run.
 */
int bench_run_capture(char **argv, bool quiet, char *buf, size_t n,
                      uint64_t timeout_ns);

/* The value of key in r, or NAN when it is absent. */
double bench_peer_get(const bench_peer_result_t *r, const char *key);

/* Parse one output line into r (exposed for tests): 0, or -1 when a token
 * is not key=number or there are too many. */
int bench_peer_parse(const char *line, bench_peer_result_t *r);

#endif
