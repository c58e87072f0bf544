/*
 * report_csv.c - reading back the CSV an experiment printed (RFC 4180).
 *
 * The report builds its tables and results.json from each experiment's
 * stdout, not from structures in memory: the experiment ran in another
 * process, and reading the same file a user would read keeps the report
 * honest about what the experiment said.  bench/output.c quotes a field
 * that holds a comma, a quote or a newline, doubling the quotes; this
 * parser undoes exactly that, and rejects what it cannot read (an
 * unterminated quote, a line with a different number of fields than the
 * header) instead of guessing, so a truncated output shows up as such.
 *
 * The fields are decoded in place in one copy of the text: taking the
 * quotes out only ever shortens a field, so the write position never
 * passes the read position, and each field ends where its delimiter was
 * read.  Rows are arrays of pointers into that copy.
 */
#include "report.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Decode the field at *r (quoted or not, or both: "a"b is ab) to *w and
 * NUL-terminate it; *r is left at the comma or line end after it.  0, or
 * -1 on an unterminated quote. */
static int rcsv_field(char **r, char **w)
{
    char *s = *r, *d = *w;
    if (*s == '"') {
        for (s++; *s && (*s != '"' || s[1] == '"'); s++) {
            s += *s == '"'; /* "" is one quote */
            *d++ = *s;
        }
        if (!*s)
            return -1;
        s++;
    }
    while (*s && !strchr(",\r\n", *s))
        *d++ = *s++;
    *r = s;
    *w = d;
    return 0;
}

/* Parse one line at *r into a malloc'd array of fields (*f, *n); *r is
 * left at the next line.  0, -1 unterminated quote, -2 no memory. */
static int rcsv_read_line(char **r, char **w, char ***f, int *n)
{
    int cap = 0;
    char delim;
    do {
        char *start = *w;
        if (rcsv_field(r, w))
            return -1;
        delim = **r; /* the NUL below may land on it */
        *(*w)++ = '\0';
        *r += delim != '\0';
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            char **a = realloc(*f, (size_t)cap * sizeof *a);
            if (!a)
                return -2;
            *f = a;
        }
        (*f)[(*n)++] = start;
    } while (delim == ',');
    *r += delim == '\r' && **r == '\n';
    return 0;
}

/* Skip one line end (LF or CRLF) if *p is at one; true when it was. */
static bool rcsv_blank(char **p)
{
    char *s = *p;
    s += *s == '\r';
    if (*s != '\n' && *s != '\0')
        return false;
    *p = s + (*s == '\n');
    return true;
}

/* Append row f (ncol fields) to c; -2 when out of memory. */
static int rcsv_add_row(report_csv_t *c, char **f, int *cap)
{
    if (c->nrow == *cap) {
        int n = *cap ? 2 * *cap : 16;
        char ***cell = realloc(c->cell, (size_t)n * sizeof *cell);
        if (!cell)
            return -2;
        c->cell = cell;
        *cap = n;
    }
    c->cell[c->nrow++] = f;
    return 0;
}

static int rcsv_fail(report_csv_t *c, char *err, size_t n, int line, int rc,
                     int fields)
{
    if (rc == -1)
        snprintf(err, n, "line %d: unterminated quote", line);
    else if (rc == -2)
        snprintf(err, n, "line %d: out of memory", line);
    else if (rc == -3)
        snprintf(err, n, "line %d: %d fields, the header has %d", line,
                 fields, c->ncol);
    else
        snprintf(err, n, "no header line");
    report_csv_free(c);
    return -1;
}

int report_csv_parse(const char *text, report_csv_t *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *r = out->text = strdup(text ? text : ""), *w = r;
    int cap = 0, line = 0;
    if (!r)
        return rcsv_fail(out, err, errlen, 1, -2, 0);
    while (*r) {
        char **f = NULL;
        int n = 0;
        line++;
        if (rcsv_blank(&r))
            continue;
        int rc = rcsv_read_line(&r, &w, &f, &n);
        if (rc == 0 && !out->head) {
            out->head = f;
            out->ncol = n;
            continue;
        }
        if (rc == 0 && n != out->ncol)
            rc = -3;
        if (rc == 0)
            rc = rcsv_add_row(out, f, &cap);
        if (rc) {
            free(f);
            return rcsv_fail(out, err, errlen, line, rc, n);
        }
    }
    if (out->ncol == 0)
        return rcsv_fail(out, err, errlen, line, 0, 0);
    return 0;
}

void report_csv_free(report_csv_t *c)
{
    for (int r = 0; r < c->nrow; r++)
        free(c->cell[r]);
    free(c->cell);
    free(c->head);
    free(c->text);
    memset(c, 0, sizeof *c);
}

int report_csv_col(const report_csv_t *c, const char *name)
{
    for (int i = 0; i < c->ncol; i++)
        if (strcmp(c->head[i], name) == 0)
            return i;
    return -1;
}
