/*
 * common.h - what every mqs-bench experiment shares: the clock, the
 * command-line options most experiments take (--tasks, --policy,
 * --workers, --seconds, --repeats, --ci-target, --budget, --csv, --json,
 * --plot), the output step (print, then plot), the progress line, and
 * the experiments the CLI's table points at.
 *
 * Usage errors print one line naming the option and what it accepts and
 * make the experiment exit with BENCH_EXIT_USAGE (2); failures while
 * measuring exit with 1.
 */
#ifndef MQS_BENCH_COMMON_H
#define MQS_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bench_help.h" /* generated from bench/help/<experiment>.txt */
#include "output.h"
#include "stats.h"

#define BENCH_EXIT_USAGE 2
/* --ci-target's default: the 95% CI half-width a point repeats until,
 * as a fraction of its mean (the report states it). */
#define BENCH_CI_TARGET 0.01
/* Returned by bench_parse_options() after printing --help. */
#define BENCH_HELP_SHOWN (-100)

/* Experiments: table entries run by bench_exp_main (expkit.h). */
struct bench_exp;
extern const struct bench_exp bench_yield_exp, bench_ring_exp, bench_pipe_exp,
    bench_wake_exp, bench_mixed_exp, bench_spawn_exp, bench_chat_exp,
    bench_echo_exp;
/* `mqs-bench report`: runs the standard set into an HTML report. */
int bench_report_main(int argc, char **argv);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);
/* The commit mqs-bench was built from ("unknown" outside a checkout). */
const char *bench_build_commit(void);
/* Sleep for ns nanoseconds (restarted on EINTR). */
void bench_sleep_ns(uint64_t ns);
/* Write all of buf to fd (mqs_write: from a task only the task waits,
 * from a thread the thread); 0 or an errno. */
int bench_write_all(int fd, const void *buf, size_t n);
/* mqs_read of up to n bytes: how many, 0 at the end of the stream or on
 * an error. */
size_t bench_read(int fd, void *buf, size_t n);
/* A connected loopback TCP pair (fd[0] dialled, fd[1] accepted; Nagle
 * off); 0 or an errno. */
int bench_tcp_pair(int fd[2]);
/* A loopback socket listening with backlog, its address into *a; or -1
 * with errno set. */
struct sockaddr_in;
int bench_tcp_listen(struct sockaddr_in *a, int backlog);
/* A socket connected to a, Nagle off; or -1 with errno set. */
int bench_tcp_dial(const struct sockaddr_in *a);
/* waitpid(pid), restarted on EINTR: the wait status, or -1. */
int bench_wait_pid(pid_t pid);
/* The whole file, NUL-terminated (malloc'd); NULL when it cannot be
 * read.  With max, only its last max bytes. */
char *bench_read_file(const char *path, size_t max);
/* The value of the first "key<spaces>: value" line of a /proc file into
 * out; false when there is none. */
bool bench_proc_field(const char *file, const char *key, char *out, size_t n);
/* Is s one of the strings of list (NULL-terminated; NULL: none)? */
bool bench_listed(const char *const *list, const char *s);
/* CPUs this process may run on (its affinity mask). */
int bench_cpus_allowed(void);

/* ----- rows: policies and pseudo rows ----- */

/*
 * One row of an experiment: a registered policy with optional tunables
 * ("mq", "mq:rr_slice_ns=1000000,balance_ms=4") or a pseudo row the
 * experiment implements itself ("kernel", "floor").
 */
typedef struct bench_row_spec {
    char *spec;  /* as given (malloc'd): the row's name in the output */
    bool pseudo; /* one of the experiment's pseudo rows              */
} bench_row_spec_t;

/* ----- options ----- */

/* What an experiment tells the parser about itself. */
typedef struct bench_cli {
    const char *name;           /* "yield"                              */
    const char *summary;        /* first line of --help                 */
    const char *details;        /* paragraph(s) after the options       */
    const char *default_tasks;  /* "1,2,4,...": default --tasks         */
    const char *default_policy; /* "mq,kernel,floor"                    */
    const char *const *pseudo;  /* NULL-terminated pseudo row names     */
    double default_seconds;
    int default_repeats;
} bench_cli_t;

typedef struct bench_opts {
    int *tasks; /* --tasks list                             */
    int ntasks;
    bench_row_spec_t *rows; /* --policy list, expanded ("all")          */
    int nrows;
    int workers;            /* --workers; 0 = the runtime's default     */
    double seconds;         /* --seconds per measurement                */
    bench_precision_t prec; /* --repeats, --ci-target, --budget         */
    bench_format_t format;  /* table, --csv, --json                     */
    char *plot;             /* --plot FILE.svg (malloc'd), or NULL      */
    char *trace;            /* --trace FILE.json (malloc'd), or NULL    */
    char *command;          /* the command line, for --json (malloc'd)  */
} bench_opts_t;

/*
 * Parse argv (argv[0] the experiment name) into o.  Returns 0,
 * BENCH_HELP_SHOWN after printing help on stdout, BENCH_EXIT_USAGE after
 * printing what is wrong on stderr, or 1 when --plot was asked and
 * gnuplot is not installed (said on stderr before anything is measured).
 * Free with bench_opts_free().
 */
int bench_parse_options(const bench_cli_t *cli, int argc, char **argv,
                        bench_opts_t *o);
void bench_opts_free(bench_opts_t *o);

/* --trace FILE.json (bench_parse_options sets it; NULL turns it off):
 * every mqs runtime the experiment makes is traced (config.trace_file),
 * the first into FILE.json, the n-th into FILE-n.json.  next: the next
 * runtime's file name into out, false when --trace was not given.  The
 * process's own setting (the bench is a program, not the library). */
void bench_trace_set(const char *path);
bool bench_trace_next(char *out, size_t size);

/* "mqs-bench <exp>: <fmt...>" on stderr; returns BENCH_EXIT_USAGE. */
int bench_usage(const char *exp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parsers used by the above, exposed for tests and other experiments.
 * Each prints "mqs-bench <exp>: <opt>: ..." on failure and returns
 * BENCH_EXIT_USAGE. */
int bench_parse_int(const char *exp, const char *opt, const char *s, long min,
                    long max, int *out);
int bench_parse_double(const char *exp, const char *opt, const char *s,
                       double min, double max, double *out);
int bench_parse_int_list(const char *exp, const char *opt, const char *s,
                         long min, long max, int **out, int *n);
/*
 * Split a --policy value into row specs: items are separated by commas,
 * and an item of the form k=v without a ':' continues the tunables of
 * the item before it ("mq:a=1,b=2,kernel" is two rows).  "all" expands
 * to every registered policy.  Names are checked against the registry
 * and pseudo; tunables are checked by mqs_config_resolve().
 */
int bench_parse_rows(const char *exp, const char *s, const char *const *pseudo,
                     bench_row_spec_t **out, int *n);

/* Length of the --policy item starting at s: up to the next comma that
 * is not followed by a tunable ("mq:a=1,b=2,kernel" -> 10). */
size_t bench_rows_item_len(const char *s);

/*
 * The end of every experiment: print rs in o->format on stdout, then,
 * with --plot, draw it (bench/plot.h).  0, or 1 when printing or
 * plotting failed (the reason is on stderr).
 */
int bench_output(const bench_results_t *rs, const bench_opts_t *o);

/* ----- progress line ----- */

/* "\r[3/12] mq tasks=16 repeat 4 ..." on stderr, only when it is a
 * terminal (repeat 0 shows as "warm-up"); cleared by
 * bench_progress_done(). */
typedef struct bench_progress {
    bool tty;
    int total, index; /* data points: total, and the current one (1-based) */
    int width;        /* of the last line drawn                          */
} bench_progress_t;

void bench_progress_init(bench_progress_t *p, int total);
void bench_progress_show(bench_progress_t *p, const char *row,
                         const char *param, int repeat);
void bench_progress_done(bench_progress_t *p);

#endif
