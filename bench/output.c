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

/* ----- CSV ----- */

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

/* %.6g, with "nan"/"inf" spelled the same on every libc. */
static void num(FILE *out, double v, const char *nan_word)
{
    if (isnan(v))
        fputs(nan_word, out);
    else if (isinf(v))
        fputs(strcmp(nan_word, "null") == 0 ? "null"
              : v > 0                       ? "inf"
                                            : "-inf",
              out);
    else
        fprintf(out, "%.6g", v);
}

static void print_csv(const bench_results_t *rs, FILE *out)
{
    fputs("experiment,row,workers,param,value,unit,ci95,frc", out);
    for (int e = 0; e < rs->nextra; e++)
        fprintf(out, ",%s", rs->extras[e].name);
    fputs(",note\n", out);
    for (int i = 0; i < rs->n; i++) {
        const bench_result_t *r = &rs->r[i];
        csv_str(out, rs->experiment);
        fputc(',', out);
        csv_str(out, r->row);
        fprintf(out, ",%d,", r->workers);
        csv_str(out, r->param);
        fputc(',', out);
        num(out, r->value, "nan");
        fputc(',', out);
        csv_str(out, r->unit);
        fputc(',', out);
        num(out, r->ci95, "nan");
        fprintf(out, ",%d", r->frc ? 1 : 0);
        for (int e = 0; e < rs->nextra; e++) {
            fputc(',', out);
            num(out, r->extra[e], "nan");
        }
        fputc(',', out);
        csv_str(out, r->note ? r->note : "");
        fputc('\n', out);
    }
}

/* ----- JSON ----- */

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

static void json_key(FILE *out, const char *key)
{
    fputs(", ", out);
    bench_json_str(out, key);
    fputs(": ", out);
}

static void print_json_one(const bench_results_t *rs, const bench_result_t *r,
                           FILE *out)
{
    fputs("{\"experiment\": ", out);
    bench_json_str(out, rs->experiment);
    json_key(out, "row");
    bench_json_str(out, r->row);
    json_key(out, "workers");
    fprintf(out, "%d", r->workers);
    json_key(out, "param");
    bench_json_str(out, r->param);
    json_key(out, "value");
    num(out, r->value, "null");
    json_key(out, "unit");
    bench_json_str(out, r->unit);
    json_key(out, "ci95");
    num(out, r->ci95, "null");
    json_key(out, "frc");
    fputs(r->frc ? "true" : "false", out);
    for (int e = 0; e < rs->nextra; e++) {
        json_key(out, rs->extras[e].name);
        num(out, r->extra[e], "null");
    }
    json_key(out, "note");
    bench_json_str(out, r->note);
    fputc('}', out);
}

static void print_json(const bench_results_t *rs, FILE *out)
{
    fputc('[', out);
    for (int i = 0; i < rs->n; i++) {
        fputs(i ? ",\n " : "\n ", out);
        print_json_one(rs, &rs->r[i], out);
    }
    fputs(rs->n ? "\n]\n" : "]\n", out);
}

/* ----- Table ----- */

/* A column of the grid: two heading cells, then one cell per param. */
struct column {
    char head1[CELL], head2[CELL];
    char (*cell)[CELL];
    bool head1_left; /* a group name, written from the column's left */
    bool group;      /* a " | " separator goes before it             */
};

struct grid {
    struct column *col;
    int ncol, nparam;
    const char **params; /* distinct params, first-seen order */
    const char **kinds;  /* distinct rows, first-seen order   */
    int nkind;
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
    if (!r) {
        snprintf(buf, CELL, "-");
        return;
    }
    if (isnan(r->value)) {
        snprintf(buf, CELL, "%s", r->note ? r->note : "n/a");
        return;
    }
    int d = decimals_for(r->value);
    if (isfinite(r->ci95))
        snprintf(buf, CELL, "%.*f ±%.*f%s", d, r->value, d, r->ci95,
                 r->frc ? " FRC" : "");
    else
        snprintf(buf, CELL, "%.*f%s", d, r->value, r->frc ? " FRC" : "");
}

static void extra_cell(char *buf, const bench_result_t *r, double v, int d)
{
    if (!r || isnan(v))
        snprintf(buf, CELL, "-");
    else
        snprintf(buf, CELL, "%.*f", d, v);
}

static const char *param_value(const char *param)
{
    const char *eq = strchr(param, '=');
    return eq ? eq + 1 : param;
}

static struct column *add_column(struct grid *g)
{
    struct column *c = &g->col[g->ncol++];
    memset(c, 0, sizeof *c);
    c->cell = calloc((size_t)g->nparam, sizeof *c->cell);
    return c->cell ? c : NULL;
}

static int fill_param_column(struct grid *g)
{
    struct column *c = add_column(g);
    if (!c)
        return -1;
    const char *p0 = g->params[0], *eq = strchr(p0, '=');
    snprintf(c->head2, CELL, "%.*s", eq ? (int)(eq - p0) : 5,
             eq ? p0 : "param");
    for (int p = 0; p < g->nparam; p++)
        snprintf(c->cell[p], CELL, "%s", param_value(g->params[p]));
    return 0;
}

static int fill_value_columns(struct grid *g, const bench_results_t *rs)
{
    for (int k = 0; k < g->nkind; k++) {
        struct column *c = add_column(g);
        if (!c)
            return -1;
        c->group = k == 0;
        snprintf(c->head1, CELL, "%s", g->kinds[k]);
        for (int p = 0; p < g->nparam; p++) {
            const bench_result_t *r = find(rs, g->kinds[k], g->params[p]);
            value_cell(c->cell[p], r);
            if (r && !c->head2[0])
                snprintf(c->head2, CELL, "w=%d", r->workers);
        }
    }
    return 0;
}

static int fill_extra_group(struct grid *g, const bench_results_t *rs, int k)
{
    bool first = true;
    for (int e = 0; e < rs->nextra; e++) {
        const bench_extra_col_t *x = &rs->extras[e];
        if (!x->label)
            continue;
        struct column *c = add_column(g);
        if (!c)
            return -1;
        c->group = first;
        c->head1_left = first;
        if (first)
            snprintf(c->head1, CELL, "%s", g->kinds[k]);
        snprintf(c->head2, CELL, "%s", x->label);
        for (int p = 0; p < g->nparam; p++) {
            const bench_result_t *r = find(rs, g->kinds[k], g->params[p]);
            extra_cell(c->cell[p], r, r ? r->extra[e] : NAN, x->decimals);
        }
        first = false;
    }
    return 0;
}

static int col_width(const struct column *c, int nparam)
{
    int w = utf8_width(c->head2);
    if (!c->head1_left && utf8_width(c->head1) > w)
        w = utf8_width(c->head1);
    for (int p = 0; p < nparam; p++)
        if (utf8_width(c->cell[p]) > w)
            w = utf8_width(c->cell[p]);
    return w;
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
static void print_line(FILE *out, const struct grid *g, const int *w, int line)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return;
    for (int i = 0; i < g->ncol; i++) {
        const struct column *c = &g->col[i];
        fputs(i == 0 ? "" : c->group ? " | " : "  ", m);
        const char *s = line == -2   ? c->head1
                        : line == -1 ? c->head2
                                     : c->cell[line];
        pad(m, s, w[i], line == -2 && c->head1_left);
    }
    fclose(m);
    while (len > 0 && buf[len - 1] == ' ')
        buf[--len] = '\0';
    fprintf(out, "%s\n", buf);
    free(buf);
}

static void print_grid(FILE *out, const struct grid *g, const char *title)
{
    int *w = calloc((size_t)g->ncol, sizeof *w);
    if (!w)
        return;
    for (int i = 0; i < g->ncol; i++)
        w[i] = col_width(&g->col[i], g->nparam);
    fprintf(out, "%s\n", title);
    for (int line = -2; line < g->nparam; line++)
        print_line(out, g, w, line);
    free(w);
}

static void grid_free(struct grid *g)
{
    for (int i = 0; i < g->ncol; i++)
        free(g->col[i].cell);
    free(g->col);
    free(g->params);
    free(g->kinds);
}

static int grid_build(struct grid *g, const bench_results_t *rs)
{
    memset(g, 0, sizeof *g);
    g->params = calloc((size_t)rs->n, sizeof *g->params);
    g->kinds = calloc((size_t)rs->n, sizeof *g->kinds);
    if (!g->params || !g->kinds)
        return -1;
    for (int i = 0; i < rs->n; i++) {
        bench_intern(g->params, &g->nparam, rs->r[i].param);
        bench_intern(g->kinds, &g->nkind, rs->r[i].row);
    }
    g->col = calloc((size_t)(1 + g->nkind * (1 + rs->nextra)), sizeof *g->col);
    if (!g->col || fill_param_column(g) || fill_value_columns(g, rs))
        return -1;
    for (int k = 0; k < g->nkind; k++)
        if (fill_extra_group(g, rs, k))
            return -1;
    return 0;
}

static int print_table(const bench_results_t *rs, FILE *out)
{
    if (rs->n == 0) {
        fprintf(out, "%s: no results\n", rs->experiment);
        return 0;
    }
    struct grid g;
    int rc = grid_build(&g, rs);
    if (rc == 0) {
        char title[256];
        snprintf(title, sizeof title,
                 "%s: %s, mean ±95%% CI half-width (FRC: CI target not "
                 "reached in the time budget)",
                 rs->experiment, rs->title);
        print_grid(out, &g, title);
    }
    grid_free(&g);
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
