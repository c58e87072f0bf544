/*
 * output.h - the one result schema of mqs-bench and its three formats.
 *
 * Every experiment produces rows of
 *     experiment,row,workers,param,value,unit,ci95,frc[,extra...]
 * where `row` says what was measured (a policy, "kernel", "floor"),
 * `param` the point on the x axis ("tasks=16"), `value` the mean of the
 * repeats, `ci95` its 95% confidence half-width in `unit`, and `frc` that
 * the precision target was not reached.  An experiment declares its extra
 * columns once (name, table label, format); every row carries a value for
 * each (NAN when it has none).
 *
 *   table  (default) one line per param, one column per row kind
 *          ("tasks | mq | kernel | floor"), value ±ci and FRC, then the
 *          extra columns grouped by row kind; the 2001 table's shape.
 *   csv    a header line, then one line per (row, param) in the order
 *          added; exactly the columns above, extras after, then `note`
 *          (empty unless the row has no value, e.g. "not installed");
 *          fields with a comma or quote are quoted (RFC 4180); frc is 0
 *          or 1.
 *   json   an array of objects with the same keys; NAN/inf are null.
 */
#ifndef MQS_BENCH_OUTPUT_H
#define MQS_BENCH_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

typedef enum bench_format {
    BENCH_TABLE = 0,
    BENCH_CSV,
    BENCH_JSON,
} bench_format_t;

#define BENCH_MAX_EXTRA 16

typedef struct bench_extra_col {
    const char *name;  /* CSV/JSON key: "fairness_min_over_mean"         */
    const char *label; /* table heading: "min/mean"; NULL = not in table  */
    int decimals;      /* digits after the point in the table            */
    int fold;          /* over the repeats: enum bench_fold (expkit.h)    */
} bench_extra_col_t;

typedef struct bench_result {
    char *row; /* malloc'd copies */
    char *param;
    int workers;
    double value, ci95;
    const char *unit; /* static string */
    bool frc;
    double extra[BENCH_MAX_EXTRA];
    /* Why there is no value ("not installed", "not supported"), or NULL;
     * copied by bench_results_add.  Shown in place of the value in the
     * table, in the last column ("note") of CSV and JSON. */
    const char *note;
} bench_result_t;

typedef struct bench_results {
    const char *experiment; /* "yield"                                   */
    const char *title;      /* table heading: "ns per yield"            */
    const bench_extra_col_t *extras;
    int nextra;
    bench_result_t *r;
    int n, cap;
    /* --json: a JSON object written as "header" before the rows (what
     * made them: bench_output fills it), or NULL for null. */
    const char *header_json;
} bench_results_t;

/* extras: nextra (<= BENCH_MAX_EXTRA) column descriptions, not copied. */
void bench_results_init(bench_results_t *rs, const char *experiment,
                        const char *title, const bench_extra_col_t *extras,
                        int nextra);
/* Append a copy of *r (row and param strings are copied).  -1: no memory. */
int bench_results_add(bench_results_t *rs, const bench_result_t *r);
void bench_results_free(bench_results_t *rs);

/* Index of s in list[0..*n), appending it (and counting it in *n) when
 * absent: the distinct strings in first-seen order. */
int bench_intern(const char **list, int *n, const char *s);

/* Length of the valid UTF-8 sequence at s, or 0 when it is not one. */
int bench_utf8_len(const unsigned char *s);
/* s as a JSON string (null when NULL): quotes, backslashes and control
 * characters escaped, a byte that is not valid UTF-8 as U+FFFD. */
void bench_json_str(FILE *out, const char *s);

/* Write every result in the format; returns 0 or -1 on a write error. */
int bench_results_print(const bench_results_t *rs, bench_format_t fmt,
                        FILE *out);

#endif
