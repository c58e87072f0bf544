/*
 * peer.c - running a peer runtime's benchmark program (see peer.h).
 *
 * The peer runs as a child process with its stdout on a pipe; stderr is
 * passed through, so its own complaints reach the user.  One measurement
 * is one run: a Go program cannot host several independent runtimes, and
 * a fresh process per repeat keeps peers' warm-up out of each other's
 * figures.  posix_spawn, not fork, because mqs-bench may have worker
 * threads alive when a peer row runs.
 */
#include "peer.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *const bench_peer_names[] = {"go", "fiber", NULL};

#define PEER_MAX_ARGS 32
#define PEER_EXIT_UNSUPPORTED 3

bool bench_peer_is(const char *row)
{
    for (const char *const *p = bench_peer_names; *p; p++)
        if (strcmp(*p, row) == 0)
            return true;
    return false;
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

/* Start the program with stdout on a pipe; returns the read end or -1. */
static int start(const char *path, char **argv, pid_t *pid)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    int rc = posix_spawn(pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return -1;
    }
    return fd[0];
}

/* Read the child's whole stdout into buf (NUL-terminated, truncated). */
static void read_all(int fd, char *buf, size_t n)
{
    size_t len = 0;
    for (;;) {
        ssize_t got = read(fd, buf + len, n - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
        if (len == n - 1) { /* drain the rest so the child can exit */
            char sink[256];
            while (read(fd, sink, sizeof sink) > 0)
                ;
            break;
        }
    }
    buf[len] = '\0';
    close(fd);
}

static int wait_child(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int bench_peer_run(const char *peer, const char *experiment,
                   const char *const *args, bench_peer_result_t *out,
                   char *why, size_t whylen)
{
    char path[PATH_MAX];
    if (!find_program(peer, path, sizeof path)) {
        say(why, whylen, "%s", "not installed");
        return BENCH_PEER_MISSING;
    }
    char *argv[PEER_MAX_ARGS + 3];
    int argc = 0;
    argv[argc++] = path;
    argv[argc++] = (char *)experiment;
    for (int i = 0; args && args[i] && argc < PEER_MAX_ARGS + 2; i++)
        argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    pid_t pid;
    int fd = start(path, argv, &pid);
    if (fd < 0) {
        say(why, whylen, "failed: cannot run %s", path);
        return BENCH_PEER_FAILED;
    }
    char buf[4096];
    read_all(fd, buf, sizeof buf);
    int status = wait_child(pid);
    if (status == PEER_EXIT_UNSUPPORTED) {
        say(why, whylen, "%s", "not supported");
        return BENCH_PEER_UNSUPPORTED;
    }
    if (status != 0 || bench_peer_parse(buf, out) != 0 || out->n == 0) {
        say(why, whylen, "failed: %s", status ? "non-zero exit" : "bad output");
        return BENCH_PEER_FAILED;
    }
    return BENCH_PEER_OK;
}
