/*
 * plot.c - drawing any experiment's results with gnuplot (see plot.h).
 *
 * The plot is decided from the results alone: which units there are
 * (one panel each), which row kinds (one series each), and what the
 * params look like (numbers, percentiles, or names).  So an experiment
 * written after this file gets a sensible plot without telling it
 * anything, and the plot can never show something the CSV does not.
 *
 * The data travels inside the script as gnuplot datablocks, so one file
 * is the whole plot.  The script is written to a temporary file and
 * gnuplot is started on it by bench_run_capture, with posix_spawn and a
 * time bound (an experiment may still have worker threads; a pipe would
 * also need SIGPIPE handling when gnuplot dies early); on failure the
 * script is kept for the reader.  Every string from the results goes
 * into the script single-quoted, with quotes doubled: in gnuplot's
 * double-quoted strings backquotes run shell commands, in single-quoted
 * ones nothing is interpreted.  The terminal is "noenhanced" so that '_'
 * and '^' in row names stay themselves, and the SVG terminal escapes
 * text itself and references nothing outside the file.
 *
 * Rejected: gnuplot's histogram style for the grouped case (it needs
 * every row at every param, which rows with no value break: the bars are
 * boxes at explicit x instead); plotting FRC points differently (the
 * caption counts them instead; an open marker is easy to miss and hard
 * to explain in a legend); gnuplot's default colours (eight, so twelve
 * rows repeat them: mq and kernel were both purple squares).
 */
#include "plot.h"
#include "common.h"
#include "peer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PLOT_WIDTH 960
#define PLOT_PANEL_HEIGHT 480
#define PLOT_CAPTION_WIDTH 110
#define PLOT_GROUP_SPREAD 0.7 /* of one category's width */
#define PLOT_TIMEOUT_S 300    /* gnuplot drawing a few thousand points */

/* One line of the plot: a row kind (and a worker count when a row kind
 * appears with several in one panel). */
struct plot_series {
    const char *row;
    int workers; /* -1: any */
    int *idx;    /* results in this series, sorted by x */
    int n;
    int style;   /* colour and marker: its index in its unit's panel */
};

/* The rows sharing a unit. */
struct plot_panel {
    const char *unit;
    bench_plot_shape_t shape;
    struct plot_series *s;
    int ns;
    const char **cats; /* groups: the distinct params */
    int ncat;
    bool zoom; /* the panel before's fast series (shares idx, cats) */
};

static const char *plot_unit(const bench_result_t *r)
{
    return r->unit ? r->unit : "";
}

/* Is r a row of unit's panel: with a value (valued), or without one? */
static bool plot_in(const bench_result_t *r, const char *unit, bool valued)
{
    bool has = isfinite(r->value);
    return has == valued && strcmp(plot_unit(r), unit) == 0;
}

static double plot_ci(const bench_result_t *r)
{
    return isfinite(r->ci95) ? r->ci95 : 0;
}

/* "key=number": the number, and the key's length; false otherwise. */
static bool plot_param_number(const char *param, double *x, size_t *keylen)
{
    const char *eq = strchr(param, '=');
    const char *v = eq ? eq + 1 : param;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(d))
        return false;
    *x = d;
    *keylen = eq ? (size_t)(eq - param) : 0;
    return true;
}

static bool plot_param_pct(const char *param, double *p)
{
    size_t kl;
    return strncmp(param, "pct=", 4) == 0 && plot_param_number(param, p, &kl) &&
           *p >= 0 && *p < 100;
}

static bool plot_power_of_two(double x)
{
    if (x < 1 || x != floor(x) || x > 9e15)
        return false;
    unsigned long long v = (unsigned long long)x;
    return (v & (v - 1)) == 0;
}

/* What the rows with a value in this unit have in common. */
struct plot_scan {
    int n, npct;
    bool all_pct, all_num, all_pow2, lower_positive, lower_nonneg;
    const char *key0;
    size_t keylen0;
    double xmin, xmax, vmin, vmax;
};

static void plot_scan_one(struct plot_scan *sc, const bench_result_t *r)
{
    double x, p, ci = plot_ci(r);
    size_t kl;
    bool pct = plot_param_pct(r->param, &p);
    sc->all_pct = sc->all_pct && pct;
    sc->npct += pct;
    bool num = plot_param_number(r->param, &x, &kl);
    if (num && sc->n == 0) {
        sc->key0 = r->param;
        sc->keylen0 = kl;
    }
    num = num && kl == sc->keylen0 && strncmp(r->param, sc->key0, kl) == 0;
    sc->all_num = sc->all_num && num;
    if (num) {
        sc->xmin = fmin(sc->xmin, x);
        sc->xmax = fmax(sc->xmax, x);
        sc->all_pow2 = sc->all_pow2 && plot_power_of_two(x);
    }
    sc->vmin = fmin(sc->vmin, r->value);
    sc->vmax = fmax(sc->vmax, r->value);
    sc->lower_positive = sc->lower_positive && r->value - ci > 0;
    sc->lower_nonneg = sc->lower_nonneg && r->value - ci >= 0;
    sc->n++;
}

static bool plot_spans(double lo, double hi, double factor)
{
    return lo > 0 && hi / lo > factor;
}

static void plot_scan(const bench_results_t *rs, const char *unit,
                      bool pct_only, struct plot_scan *sc)
{
    *sc = (struct plot_scan){.all_pct = true, .all_num = true,
                             .all_pow2 = true, .lower_positive = true,
                             .lower_nonneg = true,
                             .xmin = INFINITY, .xmax = -INFINITY,
                             .vmin = INFINITY, .vmax = -INFINITY};
    double p;
    for (int i = 0; i < rs->n; i++)
        if (plot_in(&rs->r[i], unit, true) &&
            (!pct_only || plot_param_pct(rs->r[i].param, &p)))
            plot_scan_one(sc, &rs->r[i]);
}

void bench_plot_shape_of(const bench_results_t *rs, const char *unit,
                         bench_plot_shape_t *out)
{
    struct plot_scan sc;
    plot_scan(rs, unit, false, &sc);
    memset(out, 0, sizeof *out);
    if (sc.n == 0) {
        out->kind = BENCH_PLOT_LINES;
        return;
    }
    /* Percentiles among other statistics: the distribution alone. */
    if (!sc.all_pct && sc.npct >= 2) {
        out->pct_only = true;
        plot_scan(rs, unit, true, &sc);
    }
    out->kind = sc.all_pct                         ? BENCH_PLOT_CDF
                : sc.all_num && sc.xmin < sc.xmax ? BENCH_PLOT_LINES
                                                   : BENCH_PLOT_GROUPS;
    if (out->kind == BENCH_PLOT_CDF) {
        out->logx = plot_spans(sc.vmin, sc.vmax, BENCH_PLOT_LOGX_SPAN);
        out->logx_base = 10;
        return;
    }
    if (out->kind == BENCH_PLOT_LINES) {
        out->logx = plot_spans(sc.xmin, sc.xmax, BENCH_PLOT_LOGX_SPAN);
        out->logx_base = sc.all_pow2 ? 2 : 10;
    }
    out->from_zero = sc.lower_nonneg;
    out->logy = sc.lower_positive &&
                plot_spans(sc.vmin, sc.vmax, BENCH_PLOT_LOGY_SPAN);
}

/* ----- Panels and series ----- */

/* Is r one of panel pl's points? */
static bool plot_in_panel(const struct plot_panel *pl,
                          const bench_result_t *r)
{
    double p;
    return plot_in(r, pl->unit, true) &&
           (!pl->shape.pct_only || plot_param_pct(r->param, &p));
}

/* The x of a result in its panel (groups: the category, before the
 * series' offset). */
static double plot_x(const struct plot_panel *pl, const bench_result_t *r)
{
    double x = NAN;
    size_t kl;
    if (pl->shape.kind == BENCH_PLOT_CDF)
        return r->value;
    if (pl->shape.kind == BENCH_PLOT_LINES) {
        plot_param_number(r->param, &x, &kl);
        return x;
    }
    for (int c = 0; c < pl->ncat; c++)
        if (strcmp(pl->cats[c], r->param) == 0)
            return c;
    return NAN;
}

/* Does some row kind appear with two worker counts in this panel? */
static bool plot_split_workers(const bench_results_t *rs,
                               const struct plot_panel *pl)
{
    for (int i = 0; i < rs->n; i++)
        for (int j = i + 1; j < rs->n; j++) {
            const bench_result_t *a = &rs->r[i], *b = &rs->r[j];
            if (plot_in_panel(pl, a) && plot_in_panel(pl, b) &&
                !strcmp(a->row, b->row) && a->workers != b->workers)
                return true;
        }
    return false;
}

static struct plot_series *plot_series_for(struct plot_panel *pl,
                                           const bench_result_t *r,
                                           bool split)
{
    int w = split ? r->workers : -1;
    for (int k = 0; k < pl->ns; k++)
        if (!strcmp(pl->s[k].row, r->row) && pl->s[k].workers == w)
            return &pl->s[k];
    struct plot_series *s = &pl->s[pl->ns];
    s->row = r->row;
    s->workers = w;
    s->style = pl->ns++;
    return s;
}

/* Sort a series' results by x (insertion sort: a series is short). */
static void plot_sort_series(const bench_results_t *rs,
                             const struct plot_panel *pl,
                             struct plot_series *s)
{
    for (int i = 1; i < s->n; i++) {
        int v = s->idx[i], j = i;
        double x = plot_x(pl, &rs->r[v]);
        for (; j > 0 && plot_x(pl, &rs->r[s->idx[j - 1]]) > x; j--)
            s->idx[j] = s->idx[j - 1];
        s->idx[j] = v;
    }
}

static int plot_panel_build(const bench_results_t *rs, const char *unit,
                            struct plot_panel *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->unit = unit;
    bench_plot_shape_of(rs, unit, &pl->shape);
    size_t n = rs->n ? (size_t)rs->n : 1;
    pl->s = calloc(n, sizeof *pl->s);
    pl->cats = calloc(n, sizeof *pl->cats);
    if (!pl->s || !pl->cats)
        return -1;
    bool split = plot_split_workers(rs, pl);
    for (int i = 0; i < rs->n; i++) {
        const bench_result_t *r = &rs->r[i];
        if (!plot_in_panel(pl, r))
            continue;
        bench_intern(pl->cats, &pl->ncat, r->param);
        struct plot_series *s = plot_series_for(pl, r, split);
        if (!s->idx && !(s->idx = calloc(n, sizeof *s->idx)))
            return -1;
        s->idx[s->n++] = i;
    }
    for (int k = 0; k < pl->ns; k++)
        plot_sort_series(rs, pl, &pl->s[k]);
    return 0;
}

static void plot_panel_free(struct plot_panel *pl)
{
    for (int k = 0; !pl->zoom && pl->s && k < pl->ns; k++)
        free(pl->s[k].idx);
    free(pl->s);
    if (!pl->zoom)
        free(pl->cats);
}

/* The largest value of series s. */
static double plot_series_max(const bench_results_t *rs,
                              const struct plot_series *s)
{
    double m = -INFINITY;
    for (int i = 0; i < s->n; i++)
        m = fmax(m, rs->r[s->idx[i]].value);
    return m;
}

/* The zoom of panel pl (a log y axis whose fast series bundle at its
 * bottom) into z: the series whose largest value is at most
 * BENCH_PLOT_ZOOM times the smallest series' largest, on a linear axis;
 * false when there is nothing to zoom (fewer than two such series, or no
 * other series).  -1 when out of memory. */
static int plot_zoom_of(const bench_results_t *rs,
                        const struct plot_panel *pl, struct plot_panel *z)
{
    if (pl->shape.kind == BENCH_PLOT_CDF || !pl->shape.logy || pl->ns < 3)
        return 0;
    double least = INFINITY;
    for (int k = 0; k < pl->ns; k++)
        least = fmin(least, plot_series_max(rs, &pl->s[k]));
    int fast = 0;
    for (int k = 0; k < pl->ns; k++)
        fast += plot_series_max(rs, &pl->s[k]) <= BENCH_PLOT_ZOOM * least;
    if (fast < 2 || fast == pl->ns)
        return 0;
    *z = *pl;
    z->zoom = true;
    z->shape.logy = false;
    z->shape.from_zero = true;
    z->ns = 0;
    if (!(z->s = calloc((size_t)fast, sizeof *z->s)))
        return -1;
    for (int k = 0; k < pl->ns; k++)
        if (plot_series_max(rs, &pl->s[k]) <= BENCH_PLOT_ZOOM * least)
            z->s[z->ns++] = pl->s[k];
    return 1;
}

/* The distinct units, first-seen order, of every row (with a value or
 * not: a unit whose rows all lack one still gets a panel saying so); no
 * rows at all are one empty panel, of unit "". */
static int plot_units(const bench_results_t *rs, const char **units)
{
    int n = 0;
    units[0] = "";
    for (int i = 0; i < rs->n; i++)
        bench_intern(units, &n, plot_unit(&rs->r[i]));
    return n ? n : 1;
}

/* ----- The script ----- */

/* Fourteen colours that tell apart (Tableau's and d3's categories), and
 * fourteen markers; series k has colour k % 14, marker k % 14 and, from
 * the fifteenth on, a dashed line. */
static const char *const plot_colours[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#000000", "#4e79a7",
    "#aec7e8", "#f28e2b"};
static const int plot_markers[] = {7, 5, 9, 13, 11, 15, 6,
                                   4, 8, 12, 10, 14, 1, 2};
#define PLOT_STYLES (int)(sizeof plot_colours / sizeof *plot_colours)
_Static_assert(sizeof plot_markers / sizeof *plot_markers ==
                   sizeof plot_colours / sizeof *plot_colours,
               "a marker for every colour");

/* A gnuplot single-quoted string: nothing inside is interpreted but ''. */
static void plot_q(FILE *out, const char *s)
{
    fputc('\'', out);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', out);
        fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
    }
    fputc('\'', out);
}

static void plot_series_title(FILE *out, const struct plot_series *s)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s w=%d", s->row, s->workers);
    plot_q(out, s->workers < 0 ? s->row : buf);
}

/* y of a CDF point: P on the nines scale. */
static double plot_nines(double pct)
{
    return -log10(1 - pct / 100);
}

static void plot_datablock(FILE *out, const bench_results_t *rs,
                           const struct plot_panel *pl, int p, int k)
{
    const struct plot_series *s = &pl->s[k];
    double off = (k - (pl->ns - 1) / 2.0) * PLOT_GROUP_SPREAD / pl->ns;
    fprintf(out, "$P%dS%d << EOD\n", p, k);
    for (int i = 0; i < s->n; i++) {
        const bench_result_t *r = &rs->r[s->idx[i]];
        double x = plot_x(pl, r), y = r->value, pct = NAN;
        if (pl->shape.kind == BENCH_PLOT_CDF) {
            plot_param_pct(r->param, &pct);
            y = plot_nines(pct);
        } else if (pl->shape.kind == BENCH_PLOT_GROUPS) {
            x += off;
        }
        fprintf(out, "%.9g %.9g %.9g\n", x, y, plot_ci(r));
    }
    fputs("EOD\n", out);
}

static void plot_caption_missing(FILE *f, const bench_results_t *rs,
                                 const char *unit)
{
    int listed = 0;
    for (int i = 0; i < rs->n; i++) {
        const bench_result_t *r = &rs->r[i];
        if (!plot_in(r, unit, false))
            continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) {
            const bench_result_t *q = &rs->r[j];
            seen = plot_in(q, unit, false) && !strcmp(q->row, r->row) &&
                   !strcmp(q->note ? q->note : "", r->note ? r->note : "");
        }
        if (seen)
            continue;
        fprintf(f, "%s%s (%s)", listed++ ? ", " : "not plotted (no value): ",
                r->row, r->note ? r->note : "no value");
    }
    if (listed)
        fputc('\n', f);
}

/* The x label's text: what x is, then the caption. */
static int plot_caption(const bench_results_t *rs,
                        const struct plot_panel *pl, const char *what,
                        char **out)
{
    const char *unit = pl->unit;
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    if (!f)
        return -1;
    fprintf(f, "%s\n", what);
    if (pl->zoom) {
        fprintf(f, "the rows of the panel above whose values stay within "
                   "%gx of the lowest row's, on a linear axis\n",
                BENCH_PLOT_ZOOM);
        return fclose(f) == 0 ? 0 : -1;
    }
    int n = 0, frc = 0, other = 0;
    for (int i = 0; i < rs->n; i++)
        if (plot_in_panel(pl, &rs->r[i])) {
            n++;
            frc += rs->r[i].frc;
        } else if (plot_in(&rs->r[i], unit, true)) {
            other++;
        }
    fputs(n ? "error bars: 95% confidence half-width\n"
            : "no row has a value in this unit\n",
          f);
    if (frc)
        fprintf(f, "%d of %d points FRC (CI target not reached)\n", frc, n);
    if (other)
        fprintf(f, "the %d values that are not percentiles (max, mean, "
                   "...) are in the table only\n", other);
    plot_caption_missing(f, rs, unit);
    return fclose(f) == 0 ? 0 : -1;
}

/* Write text as a gnuplot string expression: single-quoted lines joined
 * with "\n", long lines wrapped at a ", " or space. */
static void plot_q_lines(FILE *out, const char *text)
{
    bool first = true;
    char line[PLOT_CAPTION_WIDTH + 1];
    while (*text) {
        size_t n = strcspn(text, "\n");
        if (n > PLOT_CAPTION_WIDTH) {
            n = PLOT_CAPTION_WIDTH;
            while (n > 1 && text[n] != ' ')
                n--;
            if (n == 1)
                n = PLOT_CAPTION_WIDTH;
        }
        snprintf(line, sizeof line, "%.*s", (int)n, text);
        if (!first)
            fputs(".\"\\n\".", out);
        plot_q(out, line);
        first = false;
        text += n;
        text += *text == '\n' || *text == ' ';
    }
    if (first)
        plot_q(out, "");
}

/* Length of the "key" that every category shares as "key=...", or 0. */
static size_t plot_cat_key(const struct plot_panel *pl)
{
    const char *eq = pl->ncat ? strchr(pl->cats[0], '=') : NULL;
    size_t n = eq ? (size_t)(eq - pl->cats[0]) : 0;
    for (int c = 1; n && c < pl->ncat; c++)
        if (strncmp(pl->cats[c], pl->cats[0], n + 1) != 0)
            n = 0;
    return n;
}

static void plot_x_axis(FILE *out, const struct plot_panel *pl)
{
    const bench_plot_shape_t *sh = &pl->shape;
    if (sh->logx)
        fprintf(out, "set logscale x %d\n", sh->logx_base);
    if (sh->kind == BENCH_PLOT_GROUPS) {
        fprintf(out, "set xrange [-0.5:%g]\nset xtics (", pl->ncat - 0.5);
        size_t key = plot_cat_key(pl);
        for (int c = 0; c < pl->ncat; c++) {
            fputs(c ? ", " : "", out);
            plot_q(out, pl->cats[c] + (key ? key + 1 : 0));
            fprintf(out, " %d", c);
        }
        fputs(")\n", out);
    } else if (sh->kind == BENCH_PLOT_LINES && pl->ns > 0) {
        fputs("set offsets graph 0.03, graph 0.03, 0, 0\n", out);
    }
}

/* The x label: what x is, then the caption. */
static int plot_x_label(FILE *out, const bench_results_t *rs,
                        const struct plot_panel *pl)
{
    char what[128] = "", *cap;
    if (pl->shape.kind == BENCH_PLOT_CDF)
        snprintf(what, sizeof what, "%s", pl->unit);
    else if (pl->shape.kind == BENCH_PLOT_LINES && pl->ns > 0) {
        const char *p = rs->r[pl->s[0].idx[0]].param, *eq = strchr(p, '=');
        snprintf(what, sizeof what, "%.*s", eq ? (int)(eq - p) : 0, p);
    } else if (pl->shape.kind == BENCH_PLOT_GROUPS) {
        snprintf(what, sizeof what, "%.*s", (int)plot_cat_key(pl),
                 pl->ncat ? pl->cats[0] : "");
    }
    if (plot_caption(rs, pl, what, &cap) != 0)
        return -1;
    fputs("set xlabel ", out);
    plot_q_lines(out, cap);
    fputc('\n', out);
    free(cap);
    return 0;
}

static void plot_y_axis(FILE *out, const bench_results_t *rs,
                        const struct plot_panel *pl)
{
    if (pl->shape.kind != BENCH_PLOT_CDF) {
        if (pl->shape.logy)
            fputs("set logscale y 10\n", out);
        else if (pl->shape.from_zero)
            fputs("set yrange [0:*]\n", out);
        fputs("set ylabel ", out);
        plot_q(out, pl->unit);
        fputc('\n', out);
        return;
    }
    /* One tic per percentile present, on the nines scale. */
    fputs("set ylabel 'percentile'\nset ytics (", out);
    int t = 0;
    char seen[512] = "";
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < rs->n; i++) {
        double p;
        const bench_result_t *r = &rs->r[i];
        if (!plot_in_panel(pl, r) || !plot_param_pct(r->param, &p) ||
            strstr(seen, r->param))
            continue;
        /* each percentile once, though every row has it */
        snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s;",
                 r->param);
        fprintf(out, "%s'%g' %.9g", t++ ? ", " : "", p, plot_nines(p));
        lo = fmin(lo, plot_nines(p));
        hi = fmax(hi, plot_nines(p));
    }
    fprintf(out, ")\nset yrange [%.9g:%.9g]\n", lo - 0.25, hi + 0.25);
}

static const char *const plot_style[] = {[BENCH_PLOT_LINES] = "yerrorlines",
                                         [BENCH_PLOT_CDF] = "xerrorlines",
                                         [BENCH_PLOT_GROUPS] = "boxerrorbars"};

static void plot_command(FILE *out, const struct plot_panel *pl, int p)
{
    if (pl->ns == 0) {
        fputs("set xrange [0:1]\nset yrange [0:1]\nunset logscale\n"
              "set label 1 'no values to plot' at graph 0.5, graph 0.5 "
              "center\nplot NaN notitle\nunset label 1\n",
              out);
        return;
    }
    if (pl->shape.kind == BENCH_PLOT_GROUPS)
        fprintf(out, "set boxwidth %.9g absolute\n"
                     "set style fill solid 0.7 border rgb 'black'\n",
                PLOT_GROUP_SPREAD / pl->ns);
    fputs("plot ", out);
    for (int k = 0; k < pl->ns; k++) {
        int st = pl->s[k].style;
        fprintf(out, "%s$P%dS%d using 1:2:3 with %s lw 2 lc rgb '%s' pt %d "
                     "ps 1 dt %d title ",
                k ? ", \\\n     " : "", p, k, plot_style[pl->shape.kind],
                plot_colours[st % PLOT_STYLES],
                plot_markers[st % PLOT_STYLES], 1 + st / PLOT_STYLES);
        plot_series_title(out, &pl->s[k]);
    }
    fputc('\n', out);
}

static int plot_panel_script(FILE *out, const bench_results_t *rs,
                             const struct plot_panel *pl, int p)
{
    fputs("reset\nset grid\nset key outside right top\n"
          "set bmargin 6\nset border 3\nset tics nomirror\n",
          out);
    char t[256]; /* the title, over the first panel */
    snprintf(t, sizeof t, "%s: %s", rs->experiment, rs->title ? rs->title : "");
    fputs("set title ", out);
    plot_q(out, p == 0 ? t : "");
    fputc('\n', out);
    plot_x_axis(out, pl);
    plot_y_axis(out, rs, pl);
    if (plot_x_label(out, rs, pl) != 0)
        return -1;
    plot_command(out, pl, p);
    return 0;
}

static void plot_header(FILE *out, const char *svg, int npanel)
{
    fprintf(out,
            "# drawn by mqs-bench --plot from the results only\n"
            "set terminal svg size %d,%d fixed noenhanced font 'Sans,12' "
            "background rgb 'white'\nset encoding utf8\nset output ",
            PLOT_WIDTH, PLOT_PANEL_HEIGHT * npanel);
    plot_q(out, svg);
    fputc('\n', out);
}

int bench_plot_script(const bench_results_t *rs, const char *svg_path,
                      FILE *out)
{
    size_t n = rs->n ? (size_t)rs->n : 1;
    const char **units = calloc(n, sizeof *units);
    struct plot_panel *pls = calloc(2 * n, sizeof *pls); /* and zooms */
    int nunit = units && pls ? plot_units(rs, units) : 0, rc = 0;
    int npanel = 0;
    if (!units || !pls)
        rc = -1;
    for (int u = 0; rc == 0 && u < nunit; u++) {
        rc = plot_panel_build(rs, units[u], &pls[npanel++]);
        int z = rc == 0 ? plot_zoom_of(rs, &pls[npanel - 1], &pls[npanel])
                        : 0;
        rc = z < 0 ? -1 : rc;
        npanel += z > 0;
    }
    if (rc == 0)
        plot_header(out, svg_path, npanel);
    for (int p = 0; rc == 0 && p < npanel; p++)
        for (int k = 0; k < pls[p].ns; k++)
            plot_datablock(out, rs, &pls[p], p, k);
    if (rc == 0 && npanel > 1)
        fprintf(out, "set multiplot layout %d,1\n", npanel);
    for (int p = 0; rc == 0 && p < npanel; p++)
        rc = plot_panel_script(out, rs, &pls[p], p);
    if (rc == 0 && npanel > 1)
        fputs("unset multiplot\n", out);
    for (int p = 0; pls && p < npanel; p++)
        plot_panel_free(&pls[p]);
    free(pls);
    free(units);
    if (fflush(out) != 0 || ferror(out))
        rc = -1;
    return rc;
}

/* ----- Running gnuplot ----- */

bool bench_plot_find_gnuplot(char *buf, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return false;
    while (*path) {
        size_t len = strcspn(path, ":");
        snprintf(buf, n, "%.*s%sgnuplot", (int)len, path, len ? "/" : "./");
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            return true;
        path += len + (path[len] == ':');
    }
    return false;
}

/* Write the script into a fresh temporary file; its name into tmpl. */
static int plot_write_temp(const bench_results_t *rs, const char *svg,
                           char *tmpl, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(tmpl, n, "%s/mqs-plot-XXXXXX.gp", dir && *dir ? dir : "/tmp");
    int fd = mkstemps(tmpl, 3);
    if (fd < 0) {
        fprintf(stderr, "mqs-bench %s: --plot: %s: %s\n", rs->experiment, tmpl,
                strerror(errno));
        return -1;
    }
    FILE *f = fdopen(fd, "w");
    int rc = f ? bench_plot_script(rs, svg, f) : -1;
    if ((f ? fclose(f) : close(fd)) != 0)
        rc = -1;
    if (rc)
        fprintf(stderr, "mqs-bench %s: --plot: writing %s failed\n",
                rs->experiment, tmpl);
    return rc;
}

bool bench_plot_have_gnuplot(const char *experiment)
{
    char path[4096];
    if (bench_plot_find_gnuplot(path, sizeof path))
        return true;
    fprintf(stderr,
            "mqs-bench %s: --plot: gnuplot not found on PATH (Debian: "
            "apt-get install gnuplot-nox, or scripts/deps.sh)\n",
            experiment);
    return false;
}

int bench_plot_svg(const bench_results_t *rs, const char *svg_path)
{
    char gnuplot[4096], script[4096], out[256];
    char *argv[] = {gnuplot, script, NULL};
    struct stat st;
    if (!bench_plot_have_gnuplot(rs->experiment) ||
        !bench_plot_find_gnuplot(gnuplot, sizeof gnuplot))
        return 1;
    if (plot_write_temp(rs, svg_path, script, sizeof script) != 0)
        return 1;
    if (bench_run_capture(argv, false, out, sizeof out,
                          PLOT_TIMEOUT_S * 1000000000ull) != 0 ||
        stat(svg_path, &st) != 0 || st.st_size == 0) {
        fprintf(stderr,
                "mqs-bench %s: --plot: gnuplot failed to draw %s; its script "
                "is kept in %s\n",
                rs->experiment, svg_path, script);
        return 1;
    }
    unlink(script);
    return 0;
}
