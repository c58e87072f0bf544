/*
 * common.c - the clock, option parsing and progress line shared by the
 * mqs-bench experiments.
 *
 * Options are parsed with getopt_long into a bench_opts struct the
 * experiment owns: there is no global state besides getopt's own, which
 * is reset before each parse.  Every value is validated here, so an
 * experiment never starts measuring with a malformed option: a bad one
 * prints a single line ("mqs-bench yield: --tasks: '0' is not an integer
 * in 1..65536") and the process exits with 2.
 *
 * --policy lists mix registered policies, which may carry tunables
 * ("mq:rr_slice_ns=1000000,balance_ms=4"), with pseudo rows the
 * experiment implements itself ("kernel", "floor").  Commas separate both
 * list items and tunables; an item that looks like k=v and has no ':' is
 * taken as one more tunable of the item before it.  Policy names are
 * checked against the registry and tunables by mqs_config_resolve(), the
 * same check a runtime would make, so errors surface before any run.
 */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "mqs.h"
#include "mqs/policy.h"
#include "peer.h"
#include "plot.h"
#include "report.h"

#define MAX_TASKS_ARG 10000000 /* spawn trees of 10^6 and 10^7 */

#if defined(__has_include)
#if __has_include("mqs_build_id.h")
#include "mqs_build_id.h" /* written at every build: cmake/build_id.cmake */
#endif
#endif
#ifndef MQS_BUILD_COMMIT
#define MQS_BUILD_COMMIT "unknown"
#endif

const char *bench_build_commit(void)
{
    return MQS_BUILD_COMMIT;
}

uint64_t bench_now_ns(void)
{
    return mqs__mono_ns(); /* the core's CLOCK_MONOTONIC read */
}

void bench_sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int bench_write_all(int fd, const void *buf, size_t n)
{
    ssize_t k = mqs_write(fd, buf, n);
    int e = k < 0 ? mqs_os_errno((int)k) : 0;
    return k == (ssize_t)n ? 0 : e ? e : EIO;
}

size_t bench_read(int fd, void *buf, size_t n)
{
    ssize_t k = mqs_read(fd, buf, n);
    return k > 0 ? (size_t)k : 0;
}

int bench_tcp_listen(struct sockaddr_in *a, int backlog)
{
    socklen_t len = sizeof *a;
    *a = (struct sockaddr_in){.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (ls >= 0 && (bind(ls, (struct sockaddr *)a, len) ||
                    listen(ls, backlog) ||
                    getsockname(ls, (struct sockaddr *)a, &len))) {
        close(ls);
        return -1;
    }
    return ls;
}

int bench_tcp_dial(const struct sockaddr_in *a)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && (connect(fd, (const struct sockaddr *)a, sizeof *a) ||
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
                               sizeof one))) {
        close(fd);
        return -1;
    }
    return fd;
}

int bench_tcp_pair(int fd[2])
{
    struct sockaddr_in a;
    int ls = bench_tcp_listen(&a, 1), one = 1;
    fd[1] = -1;
    fd[0] = ls >= 0 ? bench_tcp_dial(&a) : -1;
    if (fd[0] >= 0)
        fd[1] = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
    int e = fd[1] < 0 ? (errno ? errno : EIO) : 0;
    if (fd[1] >= 0) /* small messages go now */
        setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (ls >= 0)
        close(ls);
    if (e && fd[0] >= 0)
        close(fd[0]);
    return e;
}

int bench_wait_pid(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return st;
}

char *bench_read_file(const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (max && fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        fseek(f, size > (long)max ? size - (long)max : 0, SEEK_SET);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    size_t n;
    while (m && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, m);
    fclose(f);
    if (!m || fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

bool bench_proc_field(const char *file, const char *key, char *out, size_t n)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    size_t kl = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0 || !strchr(line + kl, ':'))
            continue;
        const char *v = strchr(line + kl, ':') + 1;
        v += strspn(v, " \t");
        snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
        found = *out != '\0';
    }
    fclose(f);
    return found;
}

int bench_cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ----- Scalar and list parsers ----- */

int bench_usage(const char *exp, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "mqs-bench %s: ", exp);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return BENCH_EXIT_USAGE;
}

int bench_parse_int(const char *exp, const char *opt, const char *s, long min,
                    long max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return bench_usage(exp, "%s: '%s' is not an integer in %ld..%ld", opt,
                           s, min, max);
    *out = (int)v;
    return 0;
}

int bench_parse_double(const char *exp, const char *opt, const char *s,
                       double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= min && v <= max))
        return bench_usage(exp, "%s: '%s' is not a number in %g..%g", opt, s,
                           min, max);
    *out = v;
    return 0;
}

int bench_parse_int_list(const char *exp, const char *opt, const char *s,
                         long min, long max, int **out, int *n)
{
    int cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    int *v = malloc((size_t)cap * sizeof *v);
    char *copy = strdup(s);
    int rc = v && copy ? 0 : bench_usage(exp, "out of memory");
    int k = 0;
    char *save = NULL;
    for (char *t = copy; rc == 0 && k < cap; t = NULL) {
        char *item = strtok_r(t, ",", &save);
        if (!item)
            break;
        rc = bench_parse_int(exp, opt, item, min, max, &v[k++]);
    }
    if (rc == 0 && (k == 0 || k != cap))
        rc = bench_usage(exp, "%s: '%s' is not a comma-separated list", opt, s);
    free(copy);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = k;
    return 0;
}

/* ----- --policy lists ----- */

bool bench_listed(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0)
            return true;
    return false;
}

/* "k=v" with no ':' is a tunable continuing the previous item. */
static bool is_tunable(const char *item)
{
    return strchr(item, '=') && !strchr(item, ':');
}

static void list_known(const char *const *pseudo)
{
    fputs("  known:", stderr);
    for (const struct mqs_policy *const *p = mqs_policy_list(); p && *p; p++)
        fprintf(stderr, " %s", (*p)->name);
    for (; pseudo && *pseudo; pseudo++)
        fprintf(stderr, " %s", *pseudo);
    fputs(" all\n", stderr);
}

static int rows_push(bench_row_spec_t **rows, int *n, const char *spec,
                     bool pseudo)
{
    bench_row_spec_t *r = realloc(*rows, (size_t)(*n + 1) * sizeof *r);
    if (!r)
        return -1;
    *rows = r;
    r[*n].spec = strdup(spec);
    r[*n].pseudo = pseudo;
    if (!r[*n].spec)
        return -1;
    (*n)++;
    return 0;
}

/* Check a policy row "name[:k=v,...]" the way a runtime would. */
static int check_policy(const char *exp, const char *spec,
                        const char *const *pseudo)
{
    size_t len = strcspn(spec, ":");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, spec);
    if (!mqs_policy_find(name)) {
        bench_usage(exp, "--policy: unknown policy or row '%s'", name);
        list_known(pseudo);
        return BENCH_EXIT_USAGE;
    }
    char err[256] = "";
    mqs_config_t cfg, res;
    mqs_config_init(&cfg);
    cfg.policy = spec;
    cfg.ignore_env = true;
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    if (mqs_config_resolve(&cfg, &res) != 0)
        return bench_usage(exp, "--policy: '%s': %s", spec,
                           err[0] ? err : "rejected by the runtime");
    return 0;
}

static bool row_listed(const bench_row_spec_t *rows, int n, const char *spec)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].spec, spec) == 0)
            return true;
    return false;
}

static int add_all_policies(bench_row_spec_t **rows, int *n)
{
    for (const struct mqs_policy *const *p = mqs_policy_list(); p && *p; p++)
        if (!row_listed(*rows, *n, (*p)->name) &&
            rows_push(rows, n, (*p)->name, false))
            return -1;
    return 0;
}

/* One item (already joined with its tunables) of a --policy list. */
static int add_row(const char *exp, const char *spec, const char *const *pseudo,
                   bench_row_spec_t **rows, int *n)
{
    if (strcmp(spec, "all") == 0)
        return add_all_policies(rows, n) ? bench_usage(exp, "out of memory")
                                         : 0;
    if (row_listed(*rows, *n, spec))
        return bench_usage(exp, "--policy: '%s' is listed twice", spec);
    bool ps = bench_listed(pseudo, spec);
    if (!ps) {
        int rc = check_policy(exp, spec, pseudo);
        if (rc)
            return rc;
    }
    return rows_push(rows, n, spec, ps) ? bench_usage(exp, "out of memory") : 0;
}

size_t bench_rows_item_len(const char *s)
{
    size_t i = strcspn(s, ",");
    while (s[i] == ',') {
        size_t next = strcspn(s + i + 1, ",");
        char tok[256];
        snprintf(tok, sizeof tok, "%.*s", (int)next, s + i + 1);
        if (!is_tunable(tok))
            break;
        i += 1 + next;
    }
    return i;
}

static void rows_free(bench_row_spec_t *rows, int n)
{
    for (int i = 0; i < n; i++)
        free(rows[i].spec);
    free(rows);
}

int bench_parse_rows(const char *exp, const char *s, const char *const *pseudo,
                     bench_row_spec_t **out, int *n)
{
    bench_row_spec_t *rows = NULL;
    int k = 0, rc = 0;
    if (is_tunable(s))
        rc = bench_usage(exp, "--policy: '%s' starts with a tunable", s);
    for (const char *p = s; rc == 0 && *p;) {
        size_t len = bench_rows_item_len(p);
        char *spec = strndup(p, len);
        if (!spec || len == 0)
            rc = bench_usage(exp, "--policy: empty item in '%s'", s);
        else
            rc = add_row(exp, spec, pseudo, &rows, &k);
        free(spec);
        p += len;
        if (*p == ',' && *++p == '\0')
            rc = rc ? rc : bench_usage(exp, "--policy: trailing comma");
    }
    if (rc == 0 && k == 0)
        rc = bench_usage(exp, "--policy: no rows in '%s'", s);
    if (rc) {
        rows_free(rows, k);
        return rc;
    }
    *out = rows;
    *n = k;
    return 0;
}

/* ----- The common option set ----- */

enum {
    OPT_TASKS = 256,
    OPT_POLICY,
    OPT_WORKERS,
    OPT_SECONDS,
    OPT_REPEATS,
    OPT_CI,
    OPT_BUDGET,
    OPT_CSV,
    OPT_JSON,
    OPT_PLOT,
    OPT_TRACE,
    OPT_HELP,
};

static const struct option long_opts[] = {
    {"tasks", required_argument, NULL, OPT_TASKS},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"seconds", required_argument, NULL, OPT_SECONDS},
    {"repeats", required_argument, NULL, OPT_REPEATS},
    {"ci-target", required_argument, NULL, OPT_CI},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"csv", no_argument, NULL, OPT_CSV},
    {"json", no_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static void print_help(const bench_cli_t *cli, FILE *out)
{
    fprintf(out,
            "usage: mqs-bench %s [options]\n%s\n\n"
            "options:\n"
            "  --tasks N,N,...     task counts (default %s)\n"
            "  --policy P,P,...    rows: registered policies (mq, ...), 'all',"
            "\n"
            "                      or a pseudo row (",
            cli->name, cli->summary, cli->default_tasks);
    for (const char *const *p = cli->pseudo; p && *p; p++)
        fprintf(out, "%s%s", p == cli->pseudo ? "" : ", ", *p);
    fprintf(out,
            "); default %s.\n"
            "                      A policy may carry tunables, "
            "name:k=v,k=v: a comma\n"
            "                      item that is k=v (no ':') continues the "
            "item before.\n"
            "  --workers W         workers (default: the runtime's default,"
            " i.e. the\n"
            "                      CPUs this process may use)\n"
            "  --seconds S         length of one measurement (default %g)\n"
            "  --repeats R         minimum repeats per data point "
            "(default %d)\n"
            "  --ci-target F       repeat until the 95%% CI half-width <= F *"
            " mean\n"
            "                      (default %g)\n"
            "  --budget S          ... or S seconds are spent on the data "
            "point; then\n"
            "                      flag FRC (default max(2, 10 * seconds))\n"
            "  --csv, --json       machine-readable output (default: an "
            "aligned table)\n"
            "  --plot FILE.svg     also draw the results with gnuplot "
            "(needs gnuplot)\n"
            "  --trace FILE.json   trace every mqs runtime of the run "
            "(MQS_TRACE):\n"
            "                      the first into FILE.json, the n-th "
            "into FILE-n.json\n"
            "  --help              this text\n\n%s",
            cli->default_policy, cli->default_seconds, cli->default_repeats,
            BENCH_CI_TARGET, cli->details);
}

static int parse_one(const bench_cli_t *cli, int key, const char *arg,
                     bench_opts_t *o)
{
    const char *e = cli->name;
    switch (key) {
    case OPT_TASKS:
        free(o->tasks);
        o->tasks = NULL;
        return bench_parse_int_list(e, "--tasks", arg, 1, MAX_TASKS_ARG,
                                    &o->tasks, &o->ntasks);
    case OPT_POLICY:
        rows_free(o->rows, o->nrows);
        o->rows = NULL;
        o->nrows = 0;
        return bench_parse_rows(e, arg, cli->pseudo, &o->rows, &o->nrows);
    case OPT_WORKERS:
        return bench_parse_int(e, "--workers", arg, 1, MQS_MAX_WORKERS,
                               &o->workers);
    case OPT_SECONDS:
        return bench_parse_double(e, "--seconds", arg, 0.001, 3600,
                                  &o->seconds);
    case OPT_REPEATS:
        return bench_parse_int(e, "--repeats", arg, 1, 10000,
                               &o->prec.min_repeats);
    case OPT_CI:
        return bench_parse_double(e, "--ci-target", arg, 1e-6, 1,
                                  &o->prec.ci_target);
    case OPT_BUDGET:
        return bench_parse_double(e, "--budget", arg, 0, 86400,
                                  &o->prec.budget_s);
    case OPT_CSV:
    case OPT_JSON: {
        bench_format_t f = key == OPT_CSV ? BENCH_CSV : BENCH_JSON;
        if (o->format != BENCH_TABLE && o->format != f)
            return bench_usage(e, "--csv and --json exclude each other");
        o->format = f;
        return 0;
    }
    case OPT_PLOT:
        if (!*arg)
            return bench_usage(e, "--plot: needs a file name");
        free(o->plot);
    free(o->trace);
        o->plot = strdup(arg);
        return o->plot ? 0 : bench_usage(e, "out of memory");
    case OPT_TRACE:
        if (!*arg || strlen(arg) > 200)
            return bench_usage(e, "--trace: needs a file name (at most "
                                  "200 bytes)");
        free(o->trace);
        o->trace = strdup(arg);
        return o->trace ? 0 : bench_usage(e, "out of memory");
    }
    return bench_usage(e, "internal: unhandled option %d", key);
}

/* The runtime's settings from the environment (MQS_WORKERS=0, a bad
 * MQS_PREEMPT_TICK_NS ...) with --workers, checked as a runtime of the
 * first policy row would check them: refused now (exit 2), not as a
 * failed row after the others were measured. */
static int check_environment(const char *exp, const bench_opts_t *o)
{
    const char *spec = NULL;
    for (int i = 0; i < o->nrows && !spec; i++)
        if (!o->rows[i].pseudo && !bench_peer_is(o->rows[i].spec))
            spec = o->rows[i].spec;
    if (!spec)
        return 0;
    char err[256] = "";
    mqs_config_t cfg, res;
    mqs_config_init(&cfg);
    cfg.workers = o->workers;
    cfg.policy = spec;
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    if (mqs_config_resolve(&cfg, &res) != 0)
        return bench_usage(exp, "the runtime's settings: %s",
                           err[0] ? err : "rejected by the runtime");
    return 0;
}

/* --trace: the file name given, and how many runtimes were traced. */
static struct {
    char path[256];
    int runtimes;
} bench_trace;

void bench_trace_set(const char *path)
{
    snprintf(bench_trace.path, sizeof bench_trace.path, "%s",
             path ? path : "");
    bench_trace.runtimes = 0;
}

/* The n-th runtime's trace file: FILE.json, FILE-2.json, ... (the
 * number before the last extension of the file's own name). */
static void trace_name(char *out, size_t size, const char *path, int n)
{
    if (n == 1) {
        snprintf(out, size, "%s", path);
        return;
    }
    const char *base = strrchr(path, '/');
    const char *dot = strrchr(base ? base + 1 : path, '.');
    if (!dot || dot == (base ? base + 1 : path))
        snprintf(out, size, "%s-%d", path, n);
    else
        snprintf(out, size, "%.*s-%d%s", (int)(dot - path), path, n, dot);
}

bool bench_trace_next(char *out, size_t size)
{
    if (!bench_trace.path[0])
        return false;
    trace_name(out, size, bench_trace.path, ++bench_trace.runtimes);
    return true;
}

/* --plot FILE: its folder must exist and be writable (said now, not
 * after the measurements). */
static int check_out_path(const char *exp, const char *opt, const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (access(dir, W_OK) != 0)
        return bench_usage(exp, "%s %s: folder %s: %s", opt, path, dir,
                           strerror(errno));
    return 0;
}

static int finish_defaults(const bench_cli_t *cli, bench_opts_t *o)
{
    int rc = 0;
    if (!o->tasks)
        rc = parse_one(cli, OPT_TASKS, cli->default_tasks, o);
    if (rc == 0 && !o->rows)
        rc = parse_one(cli, OPT_POLICY, cli->default_policy, o);
    if (o->prec.budget_s < 0)
        o->prec.budget_s = fmax(2.0, 10.0 * o->seconds);
    /* Enough room that the budget, not the count, ends a data point. */
    o->prec.max_repeats = o->prec.min_repeats + 1000;
    /* Say a missing gnuplot now, not after minutes of measuring. */
    if (rc == 0 && o->plot && !bench_plot_have_gnuplot(cli->name))
        rc = 1;
    if (rc == 0 && o->plot)
        rc = check_out_path(cli->name, "--plot", o->plot);
    if (rc == 0 && o->trace)
        rc = check_out_path(cli->name, "--trace", o->trace);
    if (rc == 0)
        bench_trace_set(o->trace);
    if (rc == 0)
        rc = check_environment(cli->name, o);
    return rc;
}

/* "mqs-bench yield --tasks 16": the experiment's argv after the program's
 * name, an argument with a space or a quote in single quotes. */
static char *command_line(int argc, char **argv)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("mqs-bench", f);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[strcspn(a, " \t'\"\\$")] == '\0' && a[0]) {
            fprintf(f, " %s", a);
            continue;
        }
        fputs(" '", f);
        for (; *a; a++) {
            if (*a == '\'')
                fputs("'\\''", f); /* close, an escaped quote, reopen */
            else
                fputc(*a, f);
        }
        fputc('\'', f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int bench_parse_options(const bench_cli_t *cli, int argc, char **argv,
                        bench_opts_t *o)
{
    /* max_repeats is set after parsing; budget_s < 0 is "the default" */
    *o = (bench_opts_t){.seconds = cli->default_seconds,
                        .prec = {.min_repeats = cli->default_repeats,
                                 .ci_target = BENCH_CI_TARGET,
                                 .budget_s = -1},
                        .format = BENCH_TABLE};
    optind = 1;
    opterr = 0;
    int key, rc = 0;
    while (rc == 0 &&
           (key = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        if (key == 'h' || key == OPT_HELP) {
            print_help(cli, stdout);
            rc = BENCH_HELP_SHOWN;
        } else if (key == '?' || key == ':') {
            rc =
                bench_usage(cli->name, "%s '%s' (see mqs-bench %s --help)",
                            key == ':' ? "missing value for" : "unknown option",
                            argv[optind - 1], cli->name);
        } else {
            rc = parse_one(cli, key, optarg, o);
        }
    }
    if (rc == 0 && optind < argc)
        rc = bench_usage(cli->name, "unexpected argument '%s'", argv[optind]);
    if (rc == 0 && !(o->command = command_line(argc, argv)))
        rc = bench_usage(cli->name, "out of memory");
    if (rc == 0)
        rc = finish_defaults(cli, o);
    if (rc)
        bench_opts_free(o);
    return rc;
}

void bench_opts_free(bench_opts_t *o)
{
    free(o->tasks);
    rows_free(o->rows, o->nrows);
    free(o->plot);
    free(o->command);
    *o = (bench_opts_t){0};
}

/* ----- Output ----- */

int bench_output(const bench_results_t *rs, const bench_opts_t *o)
{
    bench_results_t with = *rs;
    char *header = o->format == BENCH_JSON
                       ? report_machine_json(o->command ? o->command : "")
                       : NULL;
    with.header_json = header;
    int rc = bench_results_print(&with, o->format, stdout) != 0;
    free(header);
    if (rc)
        fprintf(stderr, "mqs-bench %s: writing the results failed\n",
                rs->experiment);
    if (o->plot && bench_plot_svg(rs, o->plot) != 0)
        rc = 1;
    return rc;
}

/* ----- Progress line ----- */

void bench_progress_init(bench_progress_t *p, int total)
{
    *p = (bench_progress_t){.tty = isatty(STDERR_FILENO), .total = total};
}

void bench_progress_show(bench_progress_t *p, const char *row,
                         const char *param, int repeat)
{
    if (!p->tty)
        return;
    char what[32] = "warm-up";
    if (repeat > 0)
        snprintf(what, sizeof what, "repeat %d", repeat);
    int w = fprintf(stderr, "\r[%d/%d] %s %s %s ...", p->index, p->total, row,
                    param, what);
    for (int i = w; i < p->width; i++)
        fputc(' ', stderr);
    p->width = w > p->width ? w : p->width;
    fflush(stderr);
}

void bench_progress_done(bench_progress_t *p)
{
    if (!p->tty || p->width == 0)
        return;
    fprintf(stderr, "\r%*s\r", p->width, "");
    fflush(stderr);
    p->width = 0;
}
