/*
 * report_machine.c - the machine a report ran on, for its header: CPU
 * model, cores (online, and those this process may use), memory, kernel,
 * the compiler that built mqs-bench, the mqs version, the git commit of
 * the source tree, and the date.
 *
 * Figures without the machine are not results, so every field is filled
 * with something, "unknown" when the system does not say.  The commit is
 * read at run time with git, in the working directory, and only when that
 * is an mqs checkout (include/mqs.h at its top); "+dirty" when tracked
 * files differ from it.  A commit baked in at configure time was
 * rejected: it goes stale on every commit without a re-run of CMake, and
 * a stale commit is worse than none.  The report says which directory
 * the commit was read in, since it may not be the one the binary was
 * built from.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "mqs.h"

/* The value of the first "key<spaces>: value" line of a /proc file. */
static bool rmach_proc_field(const char *file, const char *key, char *out,
                             size_t n)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    size_t kl = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) != 0 || !strchr(line + kl, ':'))
            continue;
        const char *v = strchr(line + kl, ':') + 1;
        v += strspn(v, " \t");
        snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
        found = *out != '\0';
    }
    fclose(f);
    return found;
}

static void rmach_cpu(report_machine_t *m)
{
    if (rmach_proc_field("/proc/cpuinfo", "model name", m->cpu, sizeof m->cpu))
        return;
    char impl[64] = "", part[64] = "";
    if (rmach_proc_field("/proc/cpuinfo", "CPU implementer", impl,
                         sizeof impl) &&
        rmach_proc_field("/proc/cpuinfo", "CPU part", part, sizeof part)) {
        snprintf(m->cpu, sizeof m->cpu, "implementer %s part %s", impl, part);
        return;
    }
    snprintf(m->cpu, sizeof m->cpu, "unknown");
}

static void rmach_memory(report_machine_t *m)
{
    char v[64];
    if (rmach_proc_field("/proc/meminfo", "MemTotal", v, sizeof v))
        m->mem_gib = strtod(v, NULL) / (1024.0 * 1024.0); /* kB */
}

static void rmach_kernel(report_machine_t *m)
{
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname,
                 u.release, u.machine);
    else
        snprintf(m->kernel, sizeof m->kernel, "unknown");
}

static void rmach_compiler(report_machine_t *m)
{
#if defined(__clang__)
    snprintf(m->compiler, sizeof m->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(m->compiler, sizeof m->compiler, "gcc %s", __VERSION__);
#else
    snprintf(m->compiler, sizeof m->compiler, "unknown");
#endif
}

/* First line of a shell command's output, or "" (git is optional). */
static void rmach_first_line(const char *cmd, char *out, size_t n)
{
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (fgets(out, (int)n, p))
        out[strcspn(out, "\n")] = '\0';
    while (fgetc(p) != EOF) /* let it finish writing */
        ;
    pclose(p);
}

static void rmach_commit(report_machine_t *m)
{
    char top[4096], path[4200], sha[64], dirty[8];
    rmach_first_line("git rev-parse --show-toplevel 2>/dev/null", top,
                     sizeof top);
    snprintf(path, sizeof path, "%s/include/mqs.h", top);
    if (!top[0] || access(path, R_OK) != 0) {
        snprintf(m->commit, sizeof m->commit,
                 "unknown (the working directory is not an mqs checkout)");
        return;
    }
    rmach_first_line("git rev-parse --short=12 HEAD 2>/dev/null", sha,
                     sizeof sha);
    rmach_first_line("git status --porcelain --untracked-files=no "
                     "2>/dev/null | head -c 1",
                     dirty, sizeof dirty);
    snprintf(m->commit, sizeof m->commit, "%s%s (of %.60s)",
             sha[0] ? sha : "unknown", dirty[0] ? "+dirty" : "", top);
}

void report_machine_describe(report_machine_t *m)
{
    memset(m, 0, sizeof *m);
    rmach_cpu(m);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores_online = online > 0 ? (int)online : 0;
    m->cores_allowed = bench_cpus_allowed();
    rmach_memory(m);
    rmach_kernel(m);
    rmach_compiler(m);
    snprintf(m->version, sizeof m->version, "%d.%d.%d", MQS_VERSION_MAJOR,
             MQS_VERSION_MINOR, MQS_VERSION_PATCH);
    rmach_commit(m);
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M:%S UTC", &tm);
}
