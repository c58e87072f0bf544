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
 * A scanner over the text builds one field at a time in a memory
 * stream; rows are arrays of malloc'd strings.
 */
#include "report.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One parsed line: its fields. */
struct rcsv_line {
    char **f;
    int n, cap;
};

static void rcsv_line_free(struct rcsv_line *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->f[i]);
    free(l->f);
    memset(l, 0, sizeof *l);
}

/* One field at *p (quoted or not, or both: "a"b is ab), *p left at the
 * comma or line end after it.  A malloc'd string, or NULL with *rc -1
 * (unterminated quote) or -2 (no memory). */
static char *rcsv_field(const char **p, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    const char *s = *p;
    *rc = f ? 0 : -2;
    if (f && *s == '"') {
        for (s++; *s && (*s != '"' || s[1] == '"'); s++) {
            s += *s == '"'; /* "" is one quote */
            fputc(*s, f);
        }
        *rc = *s ? 0 : -1;
        s += *s == '"';
    }
    while (*rc == 0 && *s && !strchr(",\r\n", *s))
        fputc(*s++, f);
    if (f && fclose(f) != 0 && *rc == 0)
        *rc = -2;
    *p = s;
    if (*rc)
        free(buf);
    return *rc ? NULL : buf;
}

/* Add field f to l (freeing it when there is no room): 0 or -2. */
static int rcsv_push(struct rcsv_line *l, char *f)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **a = realloc(l->f, (size_t)cap * sizeof *a);
        if (!a) {
            free(f);
            return -2;
        }
        l->f = a;
        l->cap = cap;
    }
    l->f[l->n++] = f;
    return 0;
}

/* Parse one line from *p into l; *p is left at the next line.  0, -1
 * unterminated quote, -2 no memory. */
static int rcsv_read_line(const char **p, struct rcsv_line *l)
{
    int rc;
    for (;;) {
        char *f = rcsv_field(p, &rc);
        if (rc == 0)
            rc = rcsv_push(l, f);
        if (rc || **p != ',')
            break;
        ++*p;
    }
    *p += **p == '\r';
    *p += **p == '\n';
    return rc;
}

static int rcsv_add_row(report_csv_t *c, struct rcsv_line *l, int *cap)
{
    if (c->nrow == *cap) {
        int n = *cap ? 2 * *cap : 16;
        char ***cell = realloc(c->cell, (size_t)n * sizeof *cell);
        if (!cell)
            return -1;
        c->cell = cell;
        *cap = n;
    }
    c->cell[c->nrow++] = l->f;
    memset(l, 0, sizeof *l);
    return 0;
}

/* Skip one line end (LF or CRLF) if *p is at one; true when it was. */
static bool rcsv_blank(const char **p)
{
    const char *s = *p;
    s += *s == '\r';
    if (*s != '\n' && *s != '\0')
        return false;
    *p = s + (*s == '\n');
    return true;
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
    const char *p = text ? text : "";
    int cap = 0, line = 0;
    while (*p) {
        struct rcsv_line l = {0};
        line++;
        if (rcsv_blank(&p))
            continue;
        int rc = rcsv_read_line(&p, &l);
        if (rc == 0 && !out->head) {
            out->head = l.f;
            out->ncol = l.n;
            continue;
        }
        int fields = l.n;
        if (rc == 0 && l.n != out->ncol)
            rc = -3;
        if (rc == 0 && rcsv_add_row(out, &l, &cap))
            rc = -2;
        rcsv_line_free(&l);
        if (rc)
            return rcsv_fail(out, err, errlen, line, rc, fields);
    }
    if (out->ncol == 0)
        return rcsv_fail(out, err, errlen, line, 0, 0);
    return 0;
}

void report_csv_free(report_csv_t *c)
{
    for (int r = 0; r < c->nrow; r++) {
        for (int i = 0; i < c->ncol; i++)
            free(c->cell[r][i]);
        free(c->cell[r]);
    }
    for (int i = 0; i < c->ncol; i++)
        free(c->head[i]);
    free(c->cell);
    free(c->head);
    memset(c, 0, sizeof *c);
}

int report_csv_col(const report_csv_t *c, const char *name)
{
    for (int i = 0; i < c->ncol; i++)
        if (strcmp(c->head[i], name) == 0)
            return i;
    return -1;
}
