/*
 * report_run.c - running one experiment of the report as a child process
 * of mqs-bench itself, and reading back what it left.
 *
 * A child per experiment, not a call: a crash, an abort or a hang in one
 * experiment then costs that experiment only, and the report can say
 * what happened (the exit status or signal, its stderr).  The child's
 * stdout goes straight into DIR/<experiment>.csv and its stderr into
 * DIR/<experiment>.stderr, files the reader can open too; the parent
 * polls for the exit ten times a second, draws the progress line, and
 * at the deadline sends SIGTERM, then SIGKILL if it is still there
 * REPORT_RUN_GRACE_S later.  posix_spawn with file actions, so nothing
 * runs between fork and exec.
 *
 * The child stays in the report's process group, so a ^C at the
 * terminal stops both; a separate group would let a killed report leave
 * an experiment running.
 */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "peer.h"

extern char **environ;

#define REPORT_RUN_GRACE_S 3.0
#define REPORT_RUN_POLL_NS 100000000u
#define REPORT_HELP_MAX 16384 /* an experiment's --help, more than enough */
#define REPORT_PROBE_S 60     /* the most a --help may take             */

static double rrun_now(void)
{
    return (double)bench_now_ns() / 1e9;
}

/* ----- --help probe ----- */

void report_probe(const report_t *rp, report_step_t *s)
{
    char *argv[] = {(char *)rp->exe, (char *)s->def->experiment,
                    (char *)"--help", NULL};
    char help[REPORT_HELP_MAX];
    s->status = REPORT_ABSENT;
    if (bench_run_capture(argv, true, help, sizeof help,
                          REPORT_PROBE_S * 1000000000ull) == 0) {
        s->status = REPORT_PLANNED;
        report_parse_help(help, &s->defaults);
    }
}

/* ----- Running a step ----- */

static void rrun_path(const report_t *rp, const report_step_t *s,
                      const char *ext, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s.%s", rp->out_dir, s->def->experiment, ext);
}

static int rrun_spawn(const report_t *rp, const report_step_t *s, pid_t *pid)
{
    char out[4096], err[4096];
    rrun_path(rp, s, "csv", out, sizeof out);
    rrun_path(rp, s, "stderr", err, sizeof err);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY,
                                     0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = posix_spawn(pid, rp->exe, &fa, NULL, s->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

static void rrun_progress(const report_t *rp, const report_step_t *s,
                          int index, double t0)
{
    if (!rp->tty)
        return;
    fprintf(stderr, "\r[%d/%d] %s: %.0f s of %.0f s given ...   ", index,
            rp->nsteps, s->def->experiment, rrun_now() - t0, s->given_s);
    fflush(stderr);
}

/* Wait for pid, killing it at the deadline.  Returns its wait status;
 * *killed says the deadline did it. */
static int rrun_watch(const report_t *rp, const report_step_t *s, int index,
                      pid_t pid, double deadline, bool *killed)
{
    double t0 = rrun_now(), term_at = 0;
    int st;
    *killed = false;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return r == pid ? st : -1;
        double now = rrun_now();
        if (!*killed && now >= deadline) {
            kill(pid, SIGTERM);
            *killed = true;
            term_at = now;
        } else if (*killed && now >= term_at + REPORT_RUN_GRACE_S) {
            kill(pid, SIGKILL);
        }
        rrun_progress(rp, s, index, t0);
        bench_sleep_ns(REPORT_RUN_POLL_NS);
    }
}

/* Read the CSV, stderr and plot a step left in the output directory. */
static void rrun_read_back(const report_t *rp, report_step_t *s)
{
    char path[4096], why[256] = "";
    rrun_path(rp, s, "stderr", path, sizeof path);
    free(s->err_text);
    s->err_text = bench_read_file(path, REPORT_STDERR_MAX);
    rrun_path(rp, s, "csv", path, sizeof path);
    char *text = bench_read_file(path, 0);
    if (s->have_csv)
        report_csv_free(&s->csv);
    s->have_csv = text && *text && report_csv_parse(text, &s->csv, why,
                                                    sizeof why) == 0;
    free(s->csv_error);
    s->csv_error = NULL;
    if (!s->have_csv)
        s->csv_error = strdup(!text    ? "no output file"
                              : !*text ? "no output"
                                       : why);
    free(text);
    struct stat st;
    rrun_path(rp, s, "svg", path, sizeof path);
    s->have_plot = stat(path, &st) == 0 && st.st_size > 0;
}

static void rrun_outcome(report_step_t *s, int st, bool killed)
{
    if (st == -1) {
        s->status = REPORT_FAILED;
        s->exit_status = -1;
    } else if (WIFSIGNALED(st)) {
        s->exit_status = -WTERMSIG(st);
        s->status = killed ? REPORT_TIMED_OUT : REPORT_FAILED;
    } else {
        s->exit_status = WEXITSTATUS(st);
        s->status = killed            ? REPORT_TIMED_OUT
                    : s->exit_status  ? REPORT_FAILED
                    : !s->have_csv    ? REPORT_FAILED
                                      : REPORT_OK;
    }
}

void report_run_step(const report_t *rp, report_step_t *s, int index,
                     double deadline_s)
{
    char svg[4096];
    rrun_path(rp, s, "svg", svg, sizeof svg);
    unlink(svg); /* a plot left from an earlier report is not this one's */
    double t0 = rrun_now();
    pid_t pid;
    int rc = rrun_spawn(rp, s, &pid), st = -1;
    bool killed = false;
    if (rc == 0)
        st = rrun_watch(rp, s, index, pid, deadline_s, &killed);
    s->took_s = rrun_now() - t0;
    if (rp->tty)
        fputs("\r\033[K", stderr);
    rrun_read_back(rp, s);
    if (rc != 0) {
        free(s->err_text);
        if (asprintf(&s->err_text, "could not start %s: %s", rp->exe,
                     strerror(rc)) < 0)
            s->err_text = NULL;
    }
    rrun_outcome(s, st, killed);
}
