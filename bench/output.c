/*
 * output.c - result rows and their three formats (see output.h).
 *
 * Results are collected first and printed at the end because the table
 * pivots them: its lines are params and its columns row kinds, so it
 * needs every row before the first line.  The table is built as a grid
 * of strings (two heading lines plus one line per param), then each
 * column is padded to its widest cell; widths count UTF-8 characters,
 * not bytes, because of the "±".
 *
 * The table was modelled on the published 2001 multi-queue yield table
 * (threads down the side, one column per scheduler, ±CI and FRC); the
 * fairness figures the classic yield tester printed follow in a group per
 * row kind.  CSV and JSON carry the same fields unpivoted, in the order
 * the experiment added them, for scripts and plots.
 */
#include "output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CELL 64

void bench_results_init(bench_results_t *rs, const char *experiment,
                        const char *title, const bench_extra_col_t *extras,
                        int nextra)
{
    memset(rs, 0, sizeof *rs);
    rs->experiment = experiment;
    rs->title = title;
    rs->extras = extras;
    rs->nextra = nextra > BENCH_MAX_EXTRA ? BENCH_MAX_EXTRA : nextra;
}

int bench_results_add(bench_results_t *rs, const bench_result_t *r)
{
    if (rs->n == rs->cap) {
        int cap = rs->cap ? 2 * rs->cap : 16;
        bench_result_t *p = realloc(rs->r, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        rs->r = p;
        rs->cap = cap;
    }
    bench_result_t c = *r;
    c.row = strdup(r->row);
    c.param = strdup(r->param);
    c.note = r->note ? strdup(r->note) : NULL;
    if (!c.row || !c.param || (r->note && !c.note)) {
        free(c.row);
        free(c.param);
        free((char *)c.note);
        return -1;
    }
    rs->r[rs->n++] = c;
    return 0;
}

void bench_results_free(bench_results_t *rs)
{
    for (int i = 0; i < rs->n; i++) {
        free(rs->r[i].row);
        free(rs->r[i].param);
        free((char *)rs->r[i].note);
    }
    free(rs->r);
    rs->r = NULL;
    rs->n = rs->cap = 0;
}

/* ----- CSV and JSON: the same fields in the same order ----- */

static void csv_str(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* %.6g; NAN and inf are null in JSON, and spelled the same on every libc
 * in CSV. */
static void num(FILE *out, double v, bool json)
{
    if (json && !isfinite(v))
        fputs("null", out);
    else if (isnan(v))
        fputs("nan", out);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", out);
    else
        fprintf(out, "%.6g", v);
}

int bench_utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80             ? 1
            : (s[0] & 0xE0) == 0xC0 ? 2
            : (s[0] & 0xF0) == 0xE0 ? 3
            : (s[0] & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (n == 2 && s[0] < 0xC2)
        return 0; /* overlong */
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

void bench_json_str(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    while (*p) {
        int n = bench_utf8_len(p);
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else if (n == 0)
            fputs("\\ufffd", out);
        else
            fwrite(p, 1, (size_t)n, out);
        p += n ? n : 1;
    }
    fputc('"', out);
}

/* Before each field of a result but the first: ", key: " in JSON, a comma
 * in CSV. */
static void field(FILE *out, bool json, const char *key)
{
    if (!json) {
        fputc(',', out);
        return;
    }
    fputs(", ", out);
    bench_json_str(out, key);
    fputs(": ", out);
}

/* A text field: a JSON string (null for NULL), or a CSV one ("" for NULL). */
static void text(FILE *out, bool json, const char *s)
{
    if (json)
        bench_json_str(out, s);
    else
        csv_str(out, s ? s : "");
}

/* One result: a CSV line, or a JSON object. */
static void print_result(const bench_results_t *rs, const bench_result_t *r,
                         bool json, FILE *out)
{
    fputs(json ? "{\"experiment\": " : "", out);
    text(out, json, rs->experiment);
    field(out, json, "row");
    text(out, json, r->row);
    field(out, json, "workers");
    fprintf(out, "%d", r->workers);
    field(out, json, "param");
    text(out, json, r->param);
    field(out, json, "value");
    num(out, r->value, json);
    field(out, json, "unit");
    text(out, json, r->unit);
    field(out, json, "ci95");
    num(out, r->ci95, json);
    field(out, json, "frc");
    fputs(r->frc ? (json ? "true" : "1") : (json ? "false" : "0"), out);
    for (int e = 0; e < rs->nextra; e++) {
        field(out, json, rs->extras[e].name);
        num(out, r->extra[e], json);
    }
    field(out, json, "note");
    text(out, json, r->note);
    fputs(json ? "}" : "\n", out);
}

static void print_csv(const bench_results_t *rs, FILE *out)
{
    fputs("experiment,row,workers,param,value,unit,ci95,frc", out);
    for (int e = 0; e < rs->nextra; e++)
        fprintf(out, ",%s", rs->extras[e].name);
    fputs(",note\n", out);
    for (int i = 0; i < rs->n; i++)
        print_result(rs, &rs->r[i], false, out);
}

/* {"header": {...}, "rows": [{...}, ...]}: the rows as CSV has them,
 * after what made them. */
static void print_json(const bench_results_t *rs, FILE *out)
{
    fprintf(out, "{\"header\": %s,\n \"rows\": [",
            rs->header_json ? rs->header_json : "null");
    for (int i = 0; i < rs->n; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        print_result(rs, &rs->r[i], true, out);
    }
    fputs(rs->n ? "\n ]}\n" : "]}\n", out);
}

/* ----- Table ----- */

/* A column of the table: the params (kind -1), a row kind's values
 * (extra -1) or one of its extras.  Its cells are formatted when
 * needed, once to size the column and once to print it. */
struct column {
    int kind, extra;
    bool group; /* a " | " separator goes before it                */
    bool left;  /* its first heading, a group name, is written from its
                 * left and does not widen it                     */
    int width;
};

struct table {
    const bench_results_t *rs;
    const char **params; /* distinct params, first-seen order */
    const char **kinds;  /* distinct rows, first-seen order   */
    int nparam, nkind, ncol;
    struct column *col;
};

static int utf8_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

int bench_intern(const char **list, int *n, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(list[i], s) == 0)
            return i;
    list[*n] = s;
    return (*n)++;
}

static const bench_result_t *find(const bench_results_t *rs, const char *kind,
                                  const char *param)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->r[i].row, kind) && !strcmp(rs->r[i].param, param))
            return &rs->r[i];
    return NULL;
}

/* Decimals that keep about four significant digits of v. */
static int decimals_for(double v)
{
    double a = fabs(v);
    return a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : 3;
}

static void value_cell(char *buf, const bench_result_t *r)
{
    if (!r || isnan(r->value)) {
        snprintf(buf, CELL, "%s", !r ? "-" : r->note ? r->note : "n/a");
        return;
    }
    int d = decimals_for(r->value);
    if (isfinite(r->ci95))
        snprintf(buf, CELL, "%.*f ±%.*f%s", d, r->value, d, r->ci95,
                 r->frc ? " FRC" : "");
    else
        snprintf(buf, CELL, "%.*f%s", d, r->value, r->frc ? " FRC" : "");
}

/* The param column: its key ("tasks" of "tasks=16") over its values. */
static void param_cell(char *buf, const struct table *t, int line)
{
    const char *p = line == -1 ? t->params[0] : t->params[line];
    const char *eq = strchr(p, '=');
    if (line >= 0)
        snprintf(buf, CELL, "%s", eq ? eq + 1 : p);
    else
        snprintf(buf, CELL, "%.*s", eq ? (int)(eq - p) : 5, eq ? p : "param");
}

/* The cell of c at line: -2 and -1 the headings, 0.. the params.  A
 * value column is headed by its kind and the workers of its first
 * result, an extra by its label (the group's first also by its kind). */
static void cell(char *buf, const struct table *t, const struct column *c,
                 int line)
{
    const char *kind = c->kind >= 0 ? t->kinds[c->kind] : NULL;
    const bench_extra_col_t *x = c->extra >= 0 ? &t->rs->extras[c->extra]
                                               : NULL;
    buf[0] = '\0';
    if (!kind && line > -2)
        param_cell(buf, t, line);
    else if (line == -2 && kind && (!x || c->left))
        snprintf(buf, CELL, "%s", kind);
    else if (line == -1 && x)
        snprintf(buf, CELL, "%s", x->label);
    for (int p = 0; line == -1 && kind && !x && p < t->nparam; p++) {
        const bench_result_t *r = find(t->rs, kind, t->params[p]);
        if (r) {
            snprintf(buf, CELL, "w=%d", r->workers);
            break;
        }
    }
    const bench_result_t *r = line >= 0 && kind
                                  ? find(t->rs, kind, t->params[line])
                                  : NULL;
    if (line >= 0 && kind && x && r && !isnan(r->extra[c->extra]))
        snprintf(buf, CELL, "%.*f", x->decimals, r->extra[c->extra]);
    else if (line >= 0 && kind && x)
        snprintf(buf, CELL, "-");
    else if (line >= 0 && kind)
        value_cell(buf, r);
}

static void add_column(struct table *t, int kind, int extra, bool group,
                       bool left)
{
    struct column *c = &t->col[t->ncol++];
    *c = (struct column){kind, extra, group, left, 0};
    char buf[CELL];
    for (int line = left ? -1 : -2; line < t->nparam; line++) {
        cell(buf, t, c, line);
        c->width = utf8_width(buf) > c->width ? utf8_width(buf) : c->width;
    }
}

/* The params, then each kind's values, then each kind's group of the
 * extras that have a label. */
static int table_build(struct table *t, const bench_results_t *rs)
{
    *t = (struct table){.rs = rs};
    t->params = calloc((size_t)rs->n, sizeof *t->params);
    t->kinds = calloc((size_t)rs->n, sizeof *t->kinds);
    t->col = calloc((size_t)(1 + rs->n * (1 + rs->nextra)), sizeof *t->col);
    if (!t->params || !t->kinds || !t->col)
        return -1;
    for (int i = 0; i < rs->n; i++) {
        bench_intern(t->params, &t->nparam, rs->r[i].param);
        bench_intern(t->kinds, &t->nkind, rs->r[i].row);
    }
    add_column(t, -1, -1, false, false);
    for (int k = 0; k < t->nkind; k++)
        add_column(t, k, -1, k == 0, false);
    for (int k = 0; k < t->nkind; k++) {
        bool first = true;
        for (int e = 0; e < rs->nextra; e++)
            if (rs->extras[e].label) {
                add_column(t, k, e, first, first);
                first = false;
            }
    }
    return 0;
}

/* Right-align s in w columns (left-align when left). */
static void pad(FILE *out, const char *s, int w, bool left)
{
    int n = w - utf8_width(s);
    if (left)
        fputs(s, out);
    for (int i = 0; i < n; i++)
        fputc(' ', out);
    if (!left)
        fputs(s, out);
}

/* line: -2 and -1 are the headings, 0.. the params.  Built in memory so
 * the padding of trailing empty cells can be trimmed. */
static void print_line(FILE *out, const struct table *t, int line)
{
    char *buf = NULL, s[CELL];
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return;
    for (int i = 0; i < t->ncol; i++) {
        const struct column *c = &t->col[i];
        fputs(i == 0 ? "" : c->group ? " | " : "  ", m);
        cell(s, t, c, line);
        pad(m, s, c->width, line == -2 && c->left);
    }
    fclose(m);
    while (len > 0 && buf[len - 1] == ' ')
        buf[--len] = '\0';
    fprintf(out, "%s\n", buf);
    free(buf);
}

static int print_table(const bench_results_t *rs, FILE *out)
{
    if (rs->n == 0) {
        fprintf(out, "%s: no results\n", rs->experiment);
        return 0;
    }
    struct table t;
    int rc = table_build(&t, rs);
    if (rc == 0) {
        fprintf(out,
                "%s: %s, mean ±95%% CI half-width (FRC: CI target not "
                "reached in the time budget)\n",
                rs->experiment, rs->title);
        for (int line = -2; line < t.nparam; line++)
            print_line(out, &t, line);
    }
    free(t.params);
    free(t.kinds);
    free(t.col);
    return rc;
}

int bench_results_print(const bench_results_t *rs, bench_format_t fmt,
                        FILE *out)
{
    int rc = 0;
    if (fmt == BENCH_CSV)
        print_csv(rs, out);
    else if (fmt == BENCH_JSON)
        print_json(rs, out);
    else
        rc = print_table(rs, out);
    if (fflush(out) != 0 || ferror(out))
        rc = -1;
    return rc;
}
