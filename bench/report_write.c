/*
 * report_write.c - index.html and results.json of `mqs-bench report`.
 *
 * Both are written from the report's steps after every experiment ran,
 * and both say the same things: the machine, then per experiment what
 * ran (the exact command), how it ended, and every row it printed.  The
 * HTML is one file with its style inline; the plots stay beside it as
 * SVG files referenced by <img>, because gnuplot's SVGs each define the
 * same element ids and inlining several into one page would make them
 * share (and overwrite) each other's definitions.
 *
 * Everything that comes from outside the report (row names, params,
 * notes, stderr, paths) is escaped: for HTML the five special
 * characters, for JSON quotes, backslashes and control characters, and
 * in both any byte that is not valid UTF-8 becomes U+FFFD, so a binary
 * blob on an experiment's stderr cannot make either file unreadable.
 * The table is the CSV's columns as the experiment wrote them (less
 * the experiment column, which is the section's title): the report adds
 * no figure of its own.
 */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* before, s escaped for HTML, after. */
static void rwrite_html(FILE *out, const char *before, const char *s,
                        const char *after)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputs(before, out);
    while (*p) {
        int n = bench_utf8_len(p);
        const char *ent = *p == '&'   ? "&amp;"
                          : *p == '<' ? "&lt;"
                          : *p == '>' ? "&gt;"
                          : *p == '"' ? "&quot;"
                          : *p == '\'' ? "&#39;"
                          : n == 0     ? "\xEF\xBF\xBD"
                                       : NULL;
        if (ent)
            fputs(ent, out);
        else if (*p >= 0x20 || *p == '\n' || *p == '\t')
            fwrite(p, 1, (size_t)n, out);
        p += n ? n : 1;
    }
    fputs(after, out);
}

/* A column's name, with a line-break opportunity after each '_' so
 * that a table of long names (mixed's) wraps its header instead of
 * running past the page. */
static void rwrite_head(FILE *out, const char *name)
{
    fputs("<th>", out);
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, "_");
        char part[128];
        snprintf(part, sizeof part, "%.*s", (int)(n < 120 ? n : 120), p);
        rwrite_html(out, "", part, p[n] == '_' ? "_<wbr>" : "");
        p += n + (p[n] == '_');
    }
    fputs("</th>", out);
}

/* ----- Shared wording ----- */

/* Each status's name, and its class in the HTML (the colour). */
static const char *const rwrite_status[][2] = {
    [REPORT_PLANNED] = {"not run", "skipped"},
    [REPORT_OK] = {"ok", "ok"},
    [REPORT_FAILED] = {"failed", "failed"},
    [REPORT_TIMED_OUT] = {"timed out", "timed-out"},
    [REPORT_ABSENT] = {"not in this build", "absent"},
    [REPORT_SKIPPED] = {"skipped", "skipped"},
};

const char *report_status_name(report_status_t s)
{
    return (size_t)s < sizeof rwrite_status / sizeof rwrite_status[0]
               ? rwrite_status[s][0]
               : "?";
}

/* One sentence on how the step ended, into buf. */
static const char *rwrite_outcome(const report_step_t *s, char *buf, size_t n)
{
    double took = s->took_s, given = s->given_s;
    int x = s->exit_status;
    if (s->status == REPORT_OK)
        snprintf(buf, n, "ran in %.0f s of the %.0f s it was given", took,
                 given);
    else if (s->status == REPORT_FAILED && x < 0)
        snprintf(buf, n, "killed by signal %d after %.0f s", -x, took);
    else if (s->status == REPORT_FAILED && x > 0)
        snprintf(buf, n, "exited with status %d after %.0f s", x, took);
    else if (s->status == REPORT_FAILED)
        snprintf(buf, n, "exited 0 after %.0f s but its output is not a table",
                 took);
    else if (s->status == REPORT_TIMED_OUT)
        snprintf(buf, n,
                 "killed after %.0f s: it overran the %.0f s it was given",
                 took, given);
    else if (s->status == REPORT_ABSENT)
        snprintf(buf, n, "not in this build: 'mqs-bench %s --help' failed",
                 s->def->experiment);
    else
        snprintf(buf, n, "not run%s",
                 s->status == REPORT_SKIPPED
                     ? ": the budget was spent before its turn"
                     : "");
    return buf;
}

/* ----- HTML ----- */

static const char rwrite_style[] =
    "body{font-family:sans-serif;max-width:1100px;margin:1em auto;"
    "padding:0 1em;color:#222}\n"
    "table{border-collapse:collapse;margin:.5em 0}\n"
    "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}\n"
    "td.n{white-space:nowrap}\np.part{margin:.6em 0 0;color:#555}\n"
    "table.results th{font-size:80%;vertical-align:bottom}\n"
    /* a table that still cannot fit scrolls inside the page */
    "table.results{display:block;max-width:100%;overflow-x:auto}\n"
    "th{background:#f0f0f0}\ntd.n{text-align:right;"
    "font-variant-numeric:tabular-nums}\n"
    "tr.frc td{background:#fff6e0}\n"
    "pre{background:#f6f6f6;padding:.5em;overflow-x:auto;"
    "white-space:pre-wrap}\n"
    ".ok{color:#070}.failed,.timed-out{color:#b00}"
    ".absent,.skipped{color:#777}\n"
    "img{max-width:100%;border:1px solid #ddd}\n";

static void rwrite_kv(FILE *out, const char *k, const char *v)
{
    fprintf(out, "<tr><th>%s</th>", k);
    rwrite_html(out, "<td>", v, "</td></tr>\n");
}

static void rwrite_machine(FILE *out, const report_t *rp)
{
    const report_machine_t *m = &rp->machine;
    char buf[512];
    fputs("<table class=\"machine\">\n", out);
    rwrite_kv(out, "CPU", m->cpu);
    snprintf(buf, sizeof buf, "%d online, %d usable by this process",
             m->cores_online, m->cores_allowed);
    rwrite_kv(out, "cores", buf);
    if (m->mem_gib > 0)
        snprintf(buf, sizeof buf, "%.1f GiB", m->mem_gib);
    else
        snprintf(buf, sizeof buf, "unknown");
    rwrite_kv(out, "memory", buf);
    rwrite_kv(out, "topology", m->topology);
    rwrite_kv(out, "clock", m->clock);
    rwrite_kv(out, "virtualisation", m->virt);
    rwrite_kv(out, "network", m->net);
    rwrite_kv(out, "load", m->load);
    rwrite_kv(out, "kernel", m->kernel);
    rwrite_kv(out, "compiler", m->compiler);
    rwrite_kv(out, "build", m->build);
    rwrite_kv(out, "peers", m->peers);
    rwrite_kv(out, "mqs", m->version);
    rwrite_kv(out, "git commit", m->commit);
    rwrite_kv(out, "date", m->date);
    snprintf(buf, sizeof buf, "%.0f s, of a budget of %.1f minutes",
             rp->total_s, rp->budget_s / 60);
    rwrite_kv(out, "total time", buf);
    rwrite_kv(out, "command", rp->invocation);
    rwrite_kv(out, "plots", rp->plots ? "drawn by gnuplot"
                                      : "none: gnuplot was not found");
    fputs("</table>\n", out);
}

static void rwrite_summary(FILE *out, const report_t *rp)
{
    fputs("<table class=\"summary\">\n<tr><th>experiment</th><th>status</th>"
          "<th>rows</th><th>took</th><th>given</th></tr>\n",
          out);
    for (int i = 0; i < rp->nsteps; i++) {
        const report_step_t *s = &rp->steps[i];
        fprintf(out, "<tr><td><a href=\"#%s\">", s->def->experiment);
        rwrite_html(out, "", s->def->experiment, "</a></td>");
        fprintf(out, "<td class=\"%s\">%s</td><td class=\"n\">%d</td>",
                rwrite_status[s->status][1], report_status_name(s->status),
                s->have_csv ? s->csv.nrow : 0);
        if (s->status == REPORT_ABSENT || s->status == REPORT_SKIPPED)
            fputs("<td></td><td></td></tr>\n", out);
        else
            fprintf(out, "<td class=\"n\">%.0f s</td><td class=\"n\">%.0f s"
                         "</td></tr>\n",
                    s->took_s, s->given_s);
    }
    fputs("</table>\n", out);
}

static bool rwrite_numeric(const char *v)
{
    char *end;
    if (!*v)
        return false;
    strtod(v, &end);
    return *end == '\0' || !strcmp(v, "nan") || !strcmp(v, "inf");
}

/*
 * A numeric CSV cell as the table shows it (results.json keeps the
 * experiment's own text): nan and inf as a dash (no value), integers
 * under a million whole, values from a million up in M or G with three
 * significant digits, other values with three significant digits and no
 * exponent down to 0.001 (0.00435078 reads 0.00435, 17.3456 reads
 * 17.3), below that as d.dde-N.  Cells that are not numbers stay as
 * they are.
 */
static void report_number(const char *v, char *buf, size_t n)
{
    char *end;
    double x = strtod(v, &end);
    double a = fabs(x);
    if (!*v || *end) {
        snprintf(buf, n, "%s", v);
    } else if (isnan(x) || isinf(x)) {
        snprintf(buf, n, "\u2013");
    } else if (a >= 1e9) {
        snprintf(buf, n, "%.3g G", x / 1e9);
    } else if (a >= 1e6) {
        snprintf(buf, n, "%.3g M", x / 1e6);
    } else if (x == floor(x)) {
        snprintf(buf, n, "%.0f", x);
    } else if (a >= 100) {
        snprintf(buf, n, "%.0f", x);
    } else if (a >= 0.001) {
        int digits = a >= 10 ? 1 : a >= 1 ? 2 : 2 - (int)floor(log10(a));
        snprintf(buf, n, "%.*f", digits, x);
    } else {
        snprintf(buf, n, "%.2e", x);
    }
}

/* Columns a table part shows beside the rows' names; a wider CSV
 * (mixed's seventeen) is split into parts that each fit the page, every
 * part repeating the columns that name a row. */
#define RWRITE_PART_COLS 10

static bool rwrite_names_row(const report_csv_t *c, int i)
{
    return !strcmp(c->head[i], "row") || !strcmp(c->head[i], "workers") ||
           !strcmp(c->head[i], "param");
}

/* One part: the naming columns and the others numbered [from, to) among
 * those that do not name a row. */
static void rwrite_table_part(FILE *out, const report_csv_t *c, int from,
                              int to, int nother)
{
    int skip = report_csv_col(c, "experiment"), frc = report_csv_col(c, "frc");
    if (from > 0 || to < nother)
        fprintf(out, "<p class=\"part\">columns %d to %d of %d:</p>\n",
                from + 1, to, nother);
    fputs("<table class=\"results\">\n<tr>", out);
    for (int i = 0, k = 0; i < c->ncol; i++) {
        bool name = rwrite_names_row(c, i);
        if (i != skip && (name || (k >= from && k < to)))
            rwrite_head(out, c->head[i]);
        k += i != skip && !name;
    }
    fputs("</tr>\n", out);
    for (int r = 0; r < c->nrow; r++) {
        bool flagged = frc >= 0 && !strcmp(c->cell[r][frc], "1");
        fputs(flagged ? "<tr class=\"frc\">" : "<tr>", out);
        for (int i = 0, k = 0; i < c->ncol; i++) {
            bool name = rwrite_names_row(c, i);
            bool shown_here = i != skip && (name || (k >= from && k < to));
            k += i != skip && !name;
            if (!shown_here)
                continue;
            bool num = rwrite_numeric(c->cell[r][i]);
            char shown[64];
            report_number(c->cell[r][i], shown, sizeof shown);
            rwrite_html(out, num ? "<td class=\"n\">" : "<td>",
                        num ? shown : c->cell[r][i], "</td>");
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

static void rwrite_table(FILE *out, const report_csv_t *c)
{
    int skip = report_csv_col(c, "experiment"), frc = report_csv_col(c, "frc");
    int nother = 0;
    for (int i = 0; i < c->ncol; i++)
        nother += i != skip && !rwrite_names_row(c, i);
    /* parts of equal width, none wider than RWRITE_PART_COLS */
    int parts = (nother + RWRITE_PART_COLS - 1) / RWRITE_PART_COLS;
    parts = parts ? parts : 1;
    int each = (nother + parts - 1) / parts;
    for (int from = 0; from < nother || from == 0; from += each) {
        rwrite_table_part(out, c, from,
                          from + each < nother ? from + each : nother,
                          nother);
        if (each == 0)
            break;
    }
    int missed = 0;
    for (int r = 0; frc >= 0 && r < c->nrow; r++)
        missed += !strcmp(c->cell[r][frc], "1");
    if (frc >= 0)
        fprintf(out, "<p class=\"frcnote\">%d of %d rows missed the CI "
                     "target%s</p>\n",
                missed, c->nrow, missed ? " (shaded)" : ".");
}

static void rwrite_plot(FILE *out, const report_t *rp, const report_step_t *s)
{
    if (s->have_plot) {
        fprintf(out, "<p><img src=\"%s.svg\" alt=\"plot of %s\"></p>\n",
                s->def->experiment, s->def->experiment);
        return;
    }
    fprintf(out, "<p class=\"skipped\">no plot: %s</p>\n",
            !rp->plots ? "gnuplot was not found"
                       : "the experiment did not draw one");
}

static void rwrite_step(FILE *out, const report_t *rp, const report_step_t *s)
{
    const char *e = s->def->experiment;
    fprintf(out,
            "<section id=\"%s\">\n<h2>%s <span class=\"%s\">(%s)</span>"
            "</h2>\n",
            e, e, rwrite_status[s->status][1], report_status_name(s->status));
    char outcome[256];
    rwrite_html(out, "<p>", rwrite_outcome(s, outcome, sizeof outcome),
                ".</p>\n");
    if (s->status == REPORT_ABSENT || s->status == REPORT_SKIPPED) {
        fputs("</section>\n", out);
        return;
    }
    fprintf(out, "<p>%d data points planned; --seconds %.3f, --repeats %d, "
                 "--budget %.2f s per point.  To reproduce:</p>\n",
            s->points, s->seconds, s->repeats, s->point_budget_s);
    rwrite_html(out, "<pre>", s->command, "</pre>\n");
    if (s->dropped[0])
        rwrite_html(out, "<p>Standard rows not in this build, left out: ",
                    s->dropped, "</p>\n");
    rwrite_plot(out, rp, s);
    if (s->have_csv)
        rwrite_table(out, &s->csv);
    else
        rwrite_html(out, "<p class=\"failed\">no table: ", s->csv_error,
                    "</p>\n");
    if (s->err_text && *s->err_text) { /* open when it went wrong */
        fprintf(out, "<details%s><summary>stderr</summary>",
                s->status != REPORT_OK ? " open" : "");
        rwrite_html(out, "<pre>", s->err_text, "</pre></details>\n");
    }
    fputs("</section>\n", out);
}

int report_write_html(const report_t *rp, FILE *out)
{
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                 "charset=\"utf-8\">\n<title>mqs-bench report</title>\n"
                 "<style>\n%s</style>\n</head>\n<body>\n"
                 "<h1>mqs-bench report</h1>\n",
            rwrite_style);
    rwrite_machine(out, rp);
    fputs("<h2>Experiments</h2>\n", out);
    rwrite_summary(out, rp);
    fprintf(out,
            "<p>Values are means of the repeats with their 95%% confidence "
            "half-width (ci95).  The CI target: repeats until ci95 is at "
            "most %g%% of the mean, or the point's time is spent; frc = 1 "
            "(shaded) means it was not reached.  results.json holds the "
            "same rows.</p>\n",
            BENCH_CI_TARGET * 100);
    for (int i = 0; i < rp->nsteps; i++)
        rwrite_step(out, rp, &rp->steps[i]);
    fputs("</body>\n</html>\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* ----- JSON ----- */

static void rwrite_key(FILE *out, const char *k, bool first)
{
    fputs(first ? "" : ", ", out);
    bench_json_str(out, k);
    fputs(": ", out);
}

/* A key after the first, and its string value. */
static void rwrite_kstr(FILE *out, const char *k, const char *v)
{
    rwrite_key(out, k, false);
    bench_json_str(out, v);
}

/* The columns of output.h's schema that hold text. */
static const char *const rwrite_string_cols[] = {"experiment", "row", "param",
                                                 "unit", "note", NULL};

/* A CSV field as a JSON value: strings stay strings, frc a boolean, nan
 * and inf null, numbers numbers (an unreadable number stays a string). */
static void rwrite_json_cell(FILE *out, const char *col, const char *v)
{
    char *end;
    double d = strtod(v, &end);
    if (bench_listed(rwrite_string_cols, col))
        bench_json_str(out, v);
    else if (!strcmp(col, "frc") && (!strcmp(v, "0") || !strcmp(v, "1")))
        fputs(*v == '1' ? "true" : "false", out);
    else if (*v && *end == '\0' && isfinite(d))
        fprintf(out, "%.15g", d);
    else if (!*v || !strcmp(v, "nan") || *end == '\0')
        fputs("null", out);
    else
        bench_json_str(out, v);
}

static void rwrite_json_rows(FILE *out, const report_t *rp)
{
    bool first = true;
    fputs("\"rows\": [", out);
    for (int i = 0; i < rp->nsteps; i++) {
        const report_step_t *s = &rp->steps[i];
        for (int r = 0; s->have_csv && r < s->csv.nrow; r++) {
            fputs(first ? "\n  {" : ",\n  {", out);
            first = false;
            for (int c = 0; c < s->csv.ncol; c++) {
                rwrite_key(out, s->csv.head[c], c == 0);
                rwrite_json_cell(out, s->csv.head[c], s->csv.cell[r][c]);
            }
            fputc('}', out);
        }
    }
    fputs(first ? "]" : "\n ]", out);
}

static void rwrite_json_machine(FILE *out, const report_machine_t *m)
{
    fputs("\"machine\": {", out);
    rwrite_key(out, "cpu", true);
    bench_json_str(out, m->cpu);
    fprintf(out,
            ", \"cores_online\": %d, \"cores_allowed\": %d, "
            "\"memory_gib\": %.2f",
            m->cores_online, m->cores_allowed, m->mem_gib);
    const char *const kv[][2] = {{"kernel", m->kernel},
                                 {"compiler", m->compiler},
                                 {"topology", m->topology},
                                 {"clock", m->clock},
                                 {"virtualisation", m->virt},
                                 {"network", m->net},
                                 {"load", m->load},
                                 {"build", m->build},
                                 {"peers", m->peers},
                                 {"mqs_version", m->version},
                                 {"git_commit", m->commit},
                                 {"date", m->date}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        rwrite_kstr(out, kv[i][0], kv[i][1]);
    fputc('}', out);
}

static void rwrite_json_argv(FILE *out, const report_t *rp,
                             const report_step_t *s)
{
    fputc('[', out);
    for (int i = 0; s->argv && s->argv[i]; i++) {
        fputs(i ? ", " : "", out);
        bench_json_str(out, i == 0 ? rp->exe_shown : s->argv[i]);
    }
    fputc(']', out);
}

static void rwrite_json_step(FILE *out, const report_t *rp,
                             const report_step_t *s)
{
    char outcome[256];
    fputs("{", out);
    rwrite_key(out, "experiment", true);
    bench_json_str(out, s->def->experiment);
    rwrite_kstr(out, "status", report_status_name(s->status));
    rwrite_kstr(out, "outcome", rwrite_outcome(s, outcome, sizeof outcome));
    rwrite_kstr(out, "command", s->command);
    rwrite_key(out, "argv", false);
    rwrite_json_argv(out, rp, s);
    rwrite_kstr(out, "rows_not_in_build", s->dropped);
    fprintf(out,
            ", \"points\": %d, \"seconds\": %.3f, \"repeats\": %d, "
            "\"point_budget_seconds\": %.2f, \"given_seconds\": %.1f, "
            "\"took_seconds\": %.1f, \"exit_status\": %d, \"rows\": %d",
            s->points, s->seconds, s->repeats, s->point_budget_s, s->given_s,
            s->took_s, s->exit_status, s->have_csv ? s->csv.nrow : 0);
    rwrite_kstr(out, "csv_error", s->csv_error);
    rwrite_key(out, "plot", false);
    if (s->have_plot)
        fprintf(out, "\"%s.svg\"", s->def->experiment);
    else
        fputs("null", out);
    rwrite_kstr(out, "stderr", s->err_text ? s->err_text : "");
    fputc('}', out);
}

int report_write_json(const report_t *rp, FILE *out)
{
    fputs("{\"generator\": \"mqs-bench report\",\n ", out);
    rwrite_json_machine(out, &rp->machine);
    fprintf(out, ",\n \"budget_minutes\": %.2f, \"total_seconds\": %.1f, "
                 "\"plots\": %s,\n \"command\": ",
            rp->budget_s / 60, rp->total_s, rp->plots ? "true" : "false");
    bench_json_str(out, rp->invocation);
    fputs(",\n \"steps\": [", out);
    for (int i = 0; i < rp->nsteps; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        rwrite_json_step(out, rp, &rp->steps[i]);
    }
    fputs(rp->nsteps ? "\n ],\n " : "],\n ", out);
    rwrite_json_rows(out, rp);
    fputs("\n}\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
