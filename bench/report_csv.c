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
 * A scanner over the text builds one field at a time into a growing
 * buffer; rows are arrays of malloc'd strings.
 */
#include "report.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct rcsv_buf {
    char *s;
    size_t len, cap;
};

static int rcsv_putc(struct rcsv_buf *b, char c)
{
    if (b->len + 1 >= b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        char *s = realloc(b->s, cap);
        if (!s)
            return -1;
        b->s = s;
        b->cap = cap;
    }
    b->s[b->len++] = c;
    b->s[b->len] = '\0';
    return 0;
}

/* One parsed line: its fields. */
struct rcsv_line {
    char **f;
    int n, cap;
};

static int rcsv_push_field(struct rcsv_line *l, struct rcsv_buf *b)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        char **f = realloc(l->f, (size_t)cap * sizeof *f);
        if (!f)
            return -1;
        l->f = f;
        l->cap = cap;
    }
    l->f[l->n] = b->s ? b->s : strdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    return l->f[l->n++] ? 0 : -1;
}

static void rcsv_line_free(struct rcsv_line *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->f[i]);
    free(l->f);
    memset(l, 0, sizeof *l);
}

/* A quoted field starting after its opening quote; *p left after the
 * closing one.  -1: unterminated, -2: no memory. */
static int rcsv_quoted(const char **p, struct rcsv_buf *b)
{
    const char *s = *p;
    for (;; s++) {
        if (*s == '\0')
            return -1;
        if (*s == '"') {
            if (s[1] != '"')
                break;
            s++;
        }
        if (rcsv_putc(b, *s))
            return -2;
    }
    *p = s + 1;
    return 0;
}

/* Parse one line from *p into l; *p is left at the next line.  0, -1
 * unterminated quote, -2 no memory. */
static int rcsv_read_line(const char **p, struct rcsv_line *l)
{
    const char *s = *p;
    struct rcsv_buf b = {0};
    for (;;) {
        int rc = 0;
        if (*s == '"') {
            s++;
            rc = rcsv_quoted(&s, &b);
        }
        while (rc == 0 && *s && *s != ',' && *s != '\n' && *s != '\r')
            rc = rcsv_putc(&b, *s++) ? -2 : 0;
        if (rc == 0 && rcsv_push_field(l, &b))
            rc = -2;
        if (rc) {
            free(b.s);
            return rc;
        }
        if (*s != ',')
            break;
        s++;
    }
    s += *s == '\r';
    s += *s == '\n';
    *p = s;
    return 0;
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
