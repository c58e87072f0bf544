/*
 * report_machine.c - the machine a report ran on, for its header: CPU
 * model, cores (online, and those this process may use), memory, kernel,
 * the compiler that built mqs-bench, the mqs version, the git commit of
 * the source tree, and the date.
 *
 * Figures without the machine are not results, so every field is filled
 * with something, "unknown" when the system does not say.  The commit is
 * the one mqs-bench was built from (MQS_BUILD_COMMIT, written at every
 * build by cmake/build_id.cmake, "+dirty" when tracked files differed
 * from it).  Rejected: reading git in the working directory at run time
 * (it named whatever checkout the user stood in, not the binary's
 * source) and a commit baked in at configure time (stale after the next
 * commit without a re-run of CMake).
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "mqs.h"

static void rmach_cpu(report_machine_t *m)
{
    if (bench_proc_field("/proc/cpuinfo", "model name", m->cpu, sizeof m->cpu))
        return;
    char impl[64] = "", part[64] = "";
    if (bench_proc_field("/proc/cpuinfo", "CPU implementer", impl,
                         sizeof impl) &&
        bench_proc_field("/proc/cpuinfo", "CPU part", part, sizeof part)) {
        snprintf(m->cpu, sizeof m->cpu, "implementer %s part %s", impl, part);
        return;
    }
    snprintf(m->cpu, sizeof m->cpu, "unknown");
}

#if defined(__clang__)
#define RMACH_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define RMACH_COMPILER "gcc " __VERSION__
#else
#define RMACH_COMPILER "unknown"
#endif


char *report_machine_json(const char *command)
{
    report_machine_t m;
    report_machine_describe(&m);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("{\"tool\": \"mqs-bench\", \"mqs_version\": ", f);
    bench_json_str(f, m.version);
    fputs(", \"library_version\": ", f);
    bench_json_str(f, mqs_version());
    fputs(", \"commit\": ", f);
    bench_json_str(f, m.commit);
    fputs(", \"command\": ", f);
    bench_json_str(f, command);
    fputs(", \"date\": ", f);
    bench_json_str(f, m.date);
    fputs(",\n  \"machine\": {\"cpu\": ", f);
    bench_json_str(f, m.cpu);
    fprintf(f, ", \"cores_online\": %d, \"cores_allowed\": %d, "
               "\"mem_gib\": %.1f, \"kernel\": ",
            m.cores_online, m.cores_allowed, m.mem_gib);
    bench_json_str(f, m.kernel);
    fputs(", \"compiler\": ", f);
    bench_json_str(f, m.compiler);
    fputs("}}", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

void report_machine_describe(report_machine_t *m)
{
    char mem[64];
    struct utsname u;
    memset(m, 0, sizeof *m);
    rmach_cpu(m);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores_online = online > 0 ? (int)online : 0;
    m->cores_allowed = bench_cpus_allowed();
    if (bench_proc_field("/proc/meminfo", "MemTotal", mem, sizeof mem))
        m->mem_gib = strtod(mem, NULL) / (1024.0 * 1024.0); /* kB */
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release,
                 u.machine);
    else
        snprintf(m->kernel, sizeof m->kernel, "unknown");
    snprintf(m->compiler, sizeof m->compiler, "%s", RMACH_COMPILER);
    snprintf(m->version, sizeof m->version, "%d.%d.%d", MQS_VERSION_MAJOR,
             MQS_VERSION_MINOR, MQS_VERSION_PATCH);
    snprintf(m->commit, sizeof m->commit, "%s", bench_build_commit());
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M:%S UTC", &tm);
}
