/*
 * peer.c - running a peer runtime's benchmark program (see peer.h).
 *
 * The peer runs as a child process with its stdout on a pipe; stderr is
 * passed through, so its own complaints reach the user.  One measurement
 * is one run: a Go program cannot host several independent runtimes, and
 * a fresh process per repeat keeps peers' warm-up out of each other's
 * figures.  posix_spawn, not fork, because mqs-bench may have worker
 * threads alive when a peer row runs.
 *
 * The time bound: the pipe is read with poll() against a deadline, and
 * the child is reaped with WNOHANG polls until the same deadline; past it
 * the child gets SIGKILL (which no runtime can catch or defer) and the
 * run fails.  Polling the exit every millisecond rather than a SIGCHLD
 * handler: mqs-bench is a library user and must not take the process's
 * signal dispositions.
 */
#include "peer.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* go1, fiber1: the same programs on one thread (GOMAXPROCS=1, one
 * fiber thread), the peers at their best per core. */
static const char *const peer_names[] = {"go", "fiber", "go1", "fiber1",
                                         NULL};
const char *const bench_kernel_and_peers[] = {"kernel", "go",  "fiber",
                                              "go1",    "fiber1", NULL};

#define PEER_EXIT_UNSUPPORTED 3

bool bench_peer_is(const char *row)
{
    return bench_listed(peer_names, row);
}

bool bench_peer_one_thread(const char *row)
{
    size_t n = strlen(row);
    return bench_peer_is(row) && row[n - 1] == '1';
}

static void say(char *why, size_t n, const char *fmt, const char *arg)
{
    if (why && n)
        snprintf(why, n, fmt, arg);
}

/* Directory of the running executable, with a trailing '/'. */
static bool exe_dir(char *buf, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    if (len <= 0)
        return false;
    buf[len] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return false;
    slash[1] = '\0';
    return true;
}

/* Find mqs-peer-<peer>; false when there is none. */
static bool find_program(const char *peer, char *path, size_t n)
{
    char dir[PATH_MAX / 2];
    const char *env = getenv("MQS_PEER_DIR");
    if (env && *env) {
        snprintf(path, n, "%s/mqs-peer-%s", env, peer);
        return access(path, X_OK) == 0;
    }
    if (!exe_dir(dir, sizeof dir))
        return false;
    static const char *const sub[] = {"peers/", ""};
    for (int i = 0; i < 2; i++) {
        int len = snprintf(path, n, "%s%smqs-peer-%s", dir, sub[i], peer);
        if (len > 0 && (size_t)len < n && access(path, X_OK) == 0)
            return true;
    }
    return false;
}

bool bench_peer_version(const char *peer, char *out, size_t n)
{
    char path[PATH_MAX], line[256] = "";
    if (!find_program(peer, path, sizeof path - 8)) {
        snprintf(out, n, "not installed");
        return false;
    }
    strcat(path, ".version");
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(line, sizeof line, f))
            line[0] = 0;
        fclose(f);
    }
    line[strcspn(line, "\n")] = 0;
    snprintf(out, n, "%s", line[0] ? line : "version unknown");
    return true;
}

int bench_peer_parse(const char *line, bench_peer_result_t *r)
{
    r->n = 0;
    const char *s = line;
    for (;;) {
        s += strspn(s, " \t\r\n");
        if (!*s)
            return 0;
        size_t klen = strcspn(s, "= \t\r\n");
        if (s[klen] != '=' || klen == 0 || klen >= sizeof r->key[0] ||
            r->n == BENCH_PEER_MAX_KEYS)
            return -1;
        char *end;
        double v = strtod(s + klen + 1, &end);
        if (end == s + klen + 1 || (*end && !strchr(" \t\r\n", *end)))
            return -1;
        memcpy(r->key[r->n], s, klen);
        r->key[r->n][klen] = '\0';
        r->val[r->n++] = v;
        s = end;
    }
}

double bench_peer_get(const bench_peer_result_t *r, const char *key)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0)
            return r->val[i];
    return NAN;
}

/* Start the program with stdout on a pipe (quiet: stderr to /dev/null);
 * returns the read end or -1. */
static int start(const char *path, char **argv, bool quiet, pid_t *pid)
{
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    if (quiet)
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
                                         O_WRONLY, 0);
    int rc = posix_spawn(pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return -1;
    }
    return fd[0];
}

/* Milliseconds left until deadline, for poll(): at least 1 until it. */
static int ms_left(uint64_t deadline)
{
    uint64_t now = bench_now_ns();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Read the child's whole stdout into buf (NUL-terminated, truncated: the
 * rest is drained so the child can exit).  -1 when the deadline passed
 * before end of file. */
static int read_all(int fd, char *buf, size_t n, uint64_t deadline)
{
    size_t len = 0;
    int rc = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = ms_left(deadline);
        int ready = ms ? poll(&p, 1, ms) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0) {
            rc = -1;
            break;
        }
        char sink[256];
        bool full = len == n - 1;
        ssize_t got = full ? read(fd, sink, sizeof sink)
                           : read(fd, buf + len, n - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (!full)
            len += (size_t)got;
    }
    buf[len] = '\0';
    close(fd);
    return rc;
}

/* The child's exit status (128 + signal when killed by one), or -1 when
 * it was still running at the deadline (it is then killed and reaped). */
static int wait_child(pid_t pid, uint64_t deadline)
{
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR)
            return -2;
        if (r == 0 && bench_now_ns() >= deadline)
            break;
        if (r == 0)
            bench_sleep_ns(1000000);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return -1;
}

uint64_t bench_peer_timeout_ns(const char *const *args)
{
    const char *env = getenv("MQS_PEER_TIMEOUT");
    char *end;
    double s = env && *env ? strtod(env, &end) : NAN;
    if (env && *env && *end == '\0' && s > 0)
        return (uint64_t)(s * 1e9);
    double seconds = 1;
    for (int i = 0; args && args[i]; i++)
        if (strncmp(args[i], "seconds=", 8) == 0)
            seconds = strtod(args[i] + 8, NULL);
    if (!(seconds >= 0) || seconds > 1e6)
        seconds = 1;
    return (uint64_t)((BENCH_PEER_GRACE_S + BENCH_PEER_PER_SECOND * seconds) *
                      1e9);
}

int bench_run_capture(char **argv, bool quiet, char *buf, size_t n,
                      uint64_t timeout_ns)
{
    pid_t pid;
    int fd = start(argv[0], argv, quiet, &pid);
    if (fd < 0)
        return -2;
    uint64_t deadline = bench_now_ns() + timeout_ns;
    int late = read_all(fd, buf, n, deadline);
    int status = wait_child(pid, late ? 0 : deadline);
    return late ? -1 : status;
}

static void say_failed(char *why, size_t n, int status, uint64_t timeout_ns,
                       const char *path)
{
    if (!why || !n)
        return;
    if (status == -1)
        snprintf(why, n, "failed: timed out after %.0f s",
                 (double)timeout_ns / 1e9);
    else if (status == -2)
        snprintf(why, n, "failed: cannot run %s", path);
    else if (status > 0)
        snprintf(why, n, "failed: exit %d", status);
    else
        snprintf(why, n, "failed: bad output");
}

int bench_peer_run(const char *peer, const char *experiment,
                   const char *const *args, uint64_t timeout_ns,
                   bench_peer_result_t *out, char *why, size_t whylen)
{
    char path[PATH_MAX], name[16];
    if (!timeout_ns)
        timeout_ns = bench_peer_timeout_ns(args);
    snprintf(name, sizeof name, "%.*s", (int)strcspn(peer, "1"), peer);
    if (!find_program(name, path, sizeof path)) {
        say(why, whylen, "%s", "not installed");
        return BENCH_PEER_MISSING;
    }
    char *argv[BENCH_PEER_MAX_ARGS + 3];
    int argc = 0;
    argv[argc++] = path;
    argv[argc++] = (char *)experiment;
    for (int i = 0; args && args[i] && argc < BENCH_PEER_MAX_ARGS + 2; i++)
        argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    char buf[4096];
    int status = bench_run_capture(argv, false, buf, sizeof buf, timeout_ns);
    if (status == PEER_EXIT_UNSUPPORTED) { /* its stdout: the reason */
        buf[strcspn(buf, "\n")] = '\0';
        say(why, whylen, buf[0] ? "not supported: %s" : "not supported%s", buf);
        return BENCH_PEER_UNSUPPORTED;
    }
    if (status != 0 || bench_peer_parse(buf, out) != 0 || out->n == 0) {
        say_failed(why, whylen, status, timeout_ns, path);
        return BENCH_PEER_FAILED;
    }
    return BENCH_PEER_OK;
}

/* ----- building arguments ----- */

void bench_peer_args_init(bench_peer_args_t *a)
{
    a->n = 0;
    a->list[0] = NULL;
}

int bench_peer_args_add(bench_peer_args_t *a, const char *key,
                        const char *fmt, ...)
{
    if (a->n == BENCH_PEER_MAX_ARGS)
        return -1;
    char *kv = a->kv[a->n];
    int k = snprintf(kv, sizeof a->kv[0], "%s=", key);
    if (k < 0 || (size_t)k >= sizeof a->kv[0])
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int v = vsnprintf(kv + k, sizeof a->kv[0] - (size_t)k, fmt, ap);
    va_end(ap);
    if (v < 0 || (size_t)(k + v) >= sizeof a->kv[0])
        return -1;
    a->list[a->n++] = kv;
    a->list[a->n] = NULL;
    return 0;
}

int bench_peer_args_common(bench_peer_args_t *a, int workers, double seconds)
{
    return bench_peer_args_add(a, "workers", "%d", workers) ||
                   bench_peer_args_add(a, "seconds", "%g", seconds)
               ? -1
               : 0;
}
