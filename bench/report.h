/*
 * report.h - the parts of `mqs-bench report`, declared for each other and
 * for tests/test_report.c:
 *
 *   report.c          options, the standard set, the run from plan to
 *                     index.html
 *   report_plan.c     the budget planner, and what a step is told
 *   report_run.c      running one experiment as a child of mqs-bench
 *   report_csv.c      reading the CSV an experiment printed
 *   report_machine.c  the machine description in the header
 *   report_write.c    index.html and results.json
 *
 * A step is one experiment of the standard set: planned (its share of the
 * budget, the options that fit it), run (`/proc/self/exe <experiment> ...
 * --csv --plot DIR/<experiment>.svg`, stdout into DIR/<experiment>.csv,
 * stderr into DIR/<experiment>.stderr), then read back.  Everything the
 * report shows comes from those files and the exit status.
 */
#ifndef MQS_BENCH_REPORT_H
#define MQS_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* ----- the standard set: one line per experiment (report.c) ----- */

typedef struct report_def {
    const char *experiment;
    const char *policy; /* --policy; NULL: the experiment's default      */
    const char *tasks;  /* --tasks; NULL: the experiment's default       */
    double weight;      /* share of the budget, relative to the others   */
    double max_seconds; /* cap on --seconds; 0: the experiment's default */
    int params;         /* points per row and --tasks entry: the values of
                         * the experiment's own parameter (pipe's modes,
                         * mixed's mixes, chat's rooms); 0 = 1          */
} report_def_t;

/* ----- CSV (report_csv.c) ----- */

typedef struct report_csv {
    int ncol, nrow;
    char **head;  /* ncol field names             */
    char ***cell; /* nrow rows of ncol fields     */
    char *text;   /* the fields point into it     */
} report_csv_t;

/* Parse RFC 4180 text (quoted fields, "" inside quotes, LF or CRLF, a
 * header line first).  0, or -1 with the reason in err (an unterminated
 * quote, a line with another number of fields than the header). */
int report_csv_parse(const char *text, report_csv_t *out, char *err,
                     size_t errlen);
void report_csv_free(report_csv_t *c);
/* Index of the column named name, or -1. */
int report_csv_col(const report_csv_t *c, const char *name);

/* ----- a step ----- */

typedef enum report_status {
    REPORT_PLANNED = 0, /* not run (yet)                                 */
    REPORT_OK,
    REPORT_FAILED,    /* non-zero exit, a signal, or output not CSV     */
    REPORT_TIMED_OUT, /* killed: it overran its time                    */
    REPORT_ABSENT,    /* `mqs-bench <name> --help` failed               */
    REPORT_SKIPPED,   /* the budget was spent before its turn           */
} report_status_t;

const char *report_status_name(report_status_t s);

/* What `mqs-bench <experiment> --help` says its defaults are. */
typedef struct report_defaults {
    char tasks[512];  /* "" when not found */
    char policy[512]; /* "" when not found */
    char pseudo[256]; /* its pseudo rows, "kernel, floor"; "" when none */
    double seconds;   /* 0 when not found  */
} report_defaults_t;

typedef struct report_step {
    const report_def_t *def;
    report_defaults_t defaults;
    /* the plan */
    char policy[512];      /* the standard rows this build has           */
    char dropped[256];     /* standard rows it has not ("go, fiber")     */
    int points;            /* data points: --tasks entries x rows        */
    double share_s;        /* its share of the budget                    */
    double given_s;        /* the most it can take (<= share_s)          */
    double seconds;        /* --seconds                                  */
    double point_budget_s; /* --budget: seconds per data point           */
    int repeats;           /* --repeats                                  */
    char **argv;           /* NULL-terminated, argv[0] the program       */
    char *command;         /* the command shown: shell-quoted argv       */
    /* the outcome */
    report_status_t status;
    int exit_status; /* the exit code, or -signal                        */
    double took_s;
    char *err_text;      /* its stderr (the last REPORT_STDERR_MAX bytes) */
    bool have_csv;       /* csv holds its output                          */
    report_csv_t csv;
    char *csv_error;     /* why its stdout is not a table, or NULL        */
    bool have_plot;      /* DIR/<experiment>.svg was drawn                */
} report_step_t;

#define REPORT_STDERR_MAX 16384

/* ----- the machine (report_machine.c) ----- */

typedef struct report_machine {
    char cpu[256];
    int cores_online, cores_allowed;
    double mem_gib; /* 0 when unknown */
    char kernel[256];
    char compiler[160];
    char version[32];
    char commit[192]; /* "unknown (...)" when not from a git checkout */
    char date[64];    /* when the report started, UTC                 */
    char clock[256];    /* the kernel's clock source, the cycle counter */
    char topology[256]; /* sockets, cores, threads, NUMA nodes, L3      */
    char virt[384];     /* a hypervisor, as the CPU and DMI say         */
    char net[160];      /* TCP congestion control, default qdisc        */
    char build[512];    /* build type and compiler flags of mqs-bench   */
    char peers[512];    /* the peers' toolchains                        */
    char load[256];     /* load and stolen time during the run (finish) */
    /* /proc/loadavg's 1-minute figure and /proc/stat's cpu line (all
     * and steal ticks) at describe, for finish. */
    double load0;
    unsigned long long ticks0, steal0;
    bool stat0;
} report_machine_t;

/* describe: before the run; finish: after it (the load line). */
void report_machine_describe(report_machine_t *m);
void report_machine_finish(report_machine_t *m);
/* The machine, the build and the command as a JSON object (malloc'd;
 * NULL without memory): --json's header. */
char *report_machine_json(const char *command);

/* ----- the whole report ----- */

typedef struct report {
    const char *out_dir;
    const char *exe;       /* run for each step: /proc/self/exe          */
    const char *exe_shown; /* its name in the commands shown             */
    double budget_s;
    int workers;        /* --workers passed through; 0: not given        */
    const char *policy; /* --policy passed through; NULL: not given      */
    bool plots;         /* gnuplot is there: steps get --plot            */
    bool tty;           /* progress line on stderr                       */
    report_machine_t machine;
    report_step_t *steps;
    int nsteps;
    double total_s;
    char *invocation; /* the report's own command line */
} report_t;

/* ----- the plan (report_plan.c) ----- */

#define REPORT_RESERVE 0.10     /* of the budget kept for setup and plots */
#define REPORT_REPEATS 3        /* --repeats given to every step          */
#define REPORT_MIN_SECONDS 0.05 /* shortest --seconds the planner gives   */
#define REPORT_RUN_COST_S 0.05  /* a run's start-up beyond --seconds      */
#define REPORT_GUESS_TASKS 4    /* entries when --help does not say       */
#define REPORT_GUESS_ROWS 4     /* rows when --help does not say          */

/* Fill d from the text of `<experiment> --help` (the option list that
 * bench/common.c prints). */
void report_parse_help(const char *help, report_defaults_t *d);
/* Entries of a comma-separated list; 0 for "" or NULL. */
int report_count_list(const char *list);
/* Rows of a --policy list: "all" counts every registered policy, a
 * tunable continuing the item before counts nothing. */
int report_count_rows(const char *policy);

/*
 * Plan every step whose status is REPORT_PLANNED (absent ones are left
 * out and their share goes to the others): points from its lists, its
 * share of budget_s x (1 - REPORT_RESERVE) by weight (but never below
 * the least the step can run with at REPORT_MIN_SECONDS), and --seconds,
 * --repeats and --budget such that points x report_point_cost() fits the
 * share (given_s is that product).  Then the argv and the command
 * shown.  0, or -1 with the reason in err (a budget too small for some
 * step at REPORT_MIN_SECONDS: it says how much is needed).
 */
int report_plan(report_t *rp, char *err, size_t errlen);

/* The most one data point of a step can take with these options. */
double report_point_cost(double seconds, double budget);

/* argv joined with spaces, each word shell-quoted when it needs it. */
char *report_shell_join(char *const *argv);

/* ----- running (report_run.c) ----- */

/* Run `exe <experiment> --help`: absent (status REPORT_ABSENT) when it
 * fails, else defaults read from what it printed. */
void report_probe(const report_t *rp, report_step_t *s);
/* Run the planned step (step index of nsteps, for the progress line)
 * until it exits or deadline_s passes (seconds on the bench_now_ns()
 * clock), then read its output back and set its status. */
void report_run_step(const report_t *rp, report_step_t *s, int index,
                     double deadline_s);

/* ----- writing (report_write.c) ----- */

int report_write_html(const report_t *rp, FILE *out);
int report_write_json(const report_t *rp, FILE *out);

void report_free(report_t *rp);

#endif
