/*
 * report_machine.c - the machine a report ran on, for its header: CPU
 * model, cores (online, and those this process may use), memory, kernel,
 * the compiler that built mqs-bench and its flags, the mqs version, the
 * git commit of the source tree, the date; the clock (the kernel's clock
 * source, whether the cycle counter mqs reads is invariant, the CPU's
 * nominal MHz), the topology (sockets, cores, threads per core, NUMA
 * nodes, L3), a hypervisor if the CPU or the firmware names one, the
 * network stack's settings that move the TCP experiments (the TCP
 * congestion control and the default queueing discipline: the TCP
 * chatroom under sustained load delivered 30-125% more under BBR than
 * under cubic, docs/benchmarks.md), the peers' toolchains, and the load
 * during the run (the 1-minute load
 * average before and after, and the share of CPU time the host stole:
 * on a VM the figures mean little when it is high).
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
#include "mqs_build_flags.h"
#include "peer.h"

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

/* Is `flag` among the CPU's flags (x86: "flags", aarch64: "Features")? */
static bool rmach_cpu_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    size_t fl = strlen(flag);
    while (!found && getline(&line, &cap, f) > 0) {
        if (strncmp(line, "flags", 5) && strncmp(line, "Features", 8))
            continue;
        for (char *p = strchr(line, ':'); p && !found;
             p = strchr(p + 1, ' '))
            found = !strncmp(p + 1, flag, fl) &&
                    (p[1 + fl] == ' ' || p[1 + fl] == '\n' || !p[1 + fl]);
        break; /* the first CPU's line says it */
    }
    free(line);
    fclose(f);
    return found;
}

/* The first line of a small file, or "" (false). */
static bool rmach_file_line(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    out[0] = 0;
    if (!f)
        return false;
    if (!fgets(out, (int)n, f))
        out[0] = 0;
    fclose(f);
    out[strcspn(out, "\n")] = 0;
    return out[0] != 0;
}

static void rmach_clock(report_machine_t *m)
{
    char src[64], mhz[64];
    if (!rmach_file_line(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            src, sizeof src))
        snprintf(src, sizeof src, "unknown");
    const char *counter;
#if defined(__x86_64__)
    counter = rmach_cpu_flag("constant_tsc") && rmach_cpu_flag("nonstop_tsc")
                  ? "TSC, invariant (constant_tsc, nonstop_tsc): mqs reads it"
                  : "TSC not invariant: mqs reads CLOCK_MONOTONIC";
#elif defined(__aarch64__)
    counter = "the generic timer (cntvct_el0): mqs reads it";
#else
    counter = "none: mqs reads CLOCK_MONOTONIC";
#endif
    bool have_mhz = bench_proc_field("/proc/cpuinfo", "cpu MHz", mhz,
                                     sizeof mhz);
    snprintf(m->clock, sizeof m->clock, "kernel clock source %s; cycle "
             "counter: %s%s%s%s", src, counter, have_mhz ? "; " : "",
             have_mhz ? mhz : "", have_mhz ? " MHz as the kernel reads it" : "");
}

/* How many distinct values `key` has in /proc/cpuinfo (physical id). */
static int rmach_distinct(const char *key)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[256], seen[64][32];
    int n = 0;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f) && n < 64) {
        const char *c = strchr(line, ':');
        if (strncmp(line, key, kl) || !c)
            continue;
        char v[32];
        snprintf(v, sizeof v, "%.*s", (int)strcspn(c + 2, "\n"), c + 2);
        bool dup = false;
        for (int i = 0; i < n && !dup; i++)
            dup = !strcmp(seen[i], v);
        if (!dup)
            snprintf(seen[n++], sizeof seen[0], "%s", v);
    }
    fclose(f);
    return n;
}

static void rmach_topology(report_machine_t *m)
{
    int sockets = rmach_distinct("physical id");
    char cores[32] = "", siblings[32] = "", l3[32] = "";
    bool c = bench_proc_field("/proc/cpuinfo", "cpu cores", cores,
                              sizeof cores);
    bool s = bench_proc_field("/proc/cpuinfo", "siblings", siblings,
                              sizeof siblings);
    int nodes = 0;
    char path[96];
    for (int i = 0; i < 1024; i++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", i);
        if (access(path, F_OK) != 0)
            break;
        nodes++;
    }
    /* index3 is the L3 on x86 and on most arm64 machines that have one */
    char lvl[8] = "";
    rmach_file_line("/sys/devices/system/cpu/cpu0/cache/index3/level", lvl,
                    sizeof lvl);
    if (strcmp(lvl, "3") ||
        !rmach_file_line("/sys/devices/system/cpu/cpu0/cache/index3/size",
                         l3, sizeof l3))
        snprintf(l3, sizeof l3, "unknown");
    int per_core = c && s && atoi(cores) > 0 ? atoi(siblings) / atoi(cores)
                                             : 0;
    char pc[32] = "unknown";
    if (per_core > 0)
        snprintf(pc, sizeof pc, "%d", per_core);
    snprintf(m->topology, sizeof m->topology,
             "%d socket(s); %s core(s) a socket; %s thread(s) a core; %d "
             "NUMA node(s); L3 %s (as cpu0 sees it)",
             sockets ? sockets : 1, c ? cores : "unknown", pc,
             nodes ? nodes : 1, l3);
}

static void rmach_virt(report_machine_t *m)
{
    char vendor[64] = "", product[64] = "", hv[32] = "";
    rmach_file_line("/sys/class/dmi/id/sys_vendor", vendor, sizeof vendor);
    rmach_file_line("/sys/class/dmi/id/product_name", product,
                    sizeof product);
    rmach_file_line("/sys/hypervisor/type", hv, sizeof hv);
    bool flag = rmach_cpu_flag("hypervisor");
    char fw[136];
    snprintf(fw, sizeof fw, "%s%s%s", vendor[0] ? vendor : "not readable",
             product[0] ? " " : "", product);
    if (!flag && !hv[0]) {
        snprintf(m->virt, sizeof m->virt,
                 "none seen (no hypervisor flag; firmware: %s)", fw);
        return;
    }
    snprintf(m->virt, sizeof m->virt,
             "a virtual machine (%s%s%s; firmware: %s): vCPUs may be "
             "descheduled by the host (see the stolen time under load)",
             flag ? "the CPU's hypervisor flag" : "", flag && hv[0] ? ", " : "",
             hv[0] ? hv : "", fw);
}

/* The settings of the network stack that the TCP experiments' figures
 * depend on, each "unknown" when /proc does not say. */
static void rmach_net(report_machine_t *m)
{
    char cc[64] = "", qdisc[64] = "";
    if (!rmach_file_line("/proc/sys/net/ipv4/tcp_congestion_control", cc,
                         sizeof cc) || !cc[0])
        snprintf(cc, sizeof cc, "unknown");
    if (!rmach_file_line("/proc/sys/net/core/default_qdisc", qdisc,
                         sizeof qdisc) || !qdisc[0])
        snprintf(qdisc, sizeof qdisc, "unknown");
    snprintf(m->net, sizeof m->net,
             "TCP congestion control %s; default qdisc %s", cc, qdisc);
}

/* /proc/stat's first line: all ticks and the stolen ones. */
static bool rmach_stat(unsigned long long *all, unsigned long long *steal)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return false;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4)
        return false;
    *all = 0;
    for (int i = 0; i < 8; i++)
        *all += v[i];
    *steal = n >= 8 ? v[7] : 0;
    return true;
}

static double rmach_load(void)
{
    char l[64];
    return rmach_file_line("/proc/loadavg", l, sizeof l) ? strtod(l, NULL)
                                                         : -1;
}

void report_machine_finish(report_machine_t *m)
{
    unsigned long long all, steal;
    double load1 = rmach_load();
    int k = snprintf(m->load, sizeof m->load,
                     "1-minute load average %.2f before the run, %.2f after",
                     m->load0, load1);
    if (m->stat0 && rmach_stat(&all, &steal) && all > m->ticks0 &&
        k > 0 && (size_t)k < sizeof m->load)
        snprintf(m->load + k, sizeof m->load - (size_t)k,
                 "; %.1f%% of the CPU time stolen by the host during the run",
                 100.0 * (double)(steal - m->steal0) /
                     (double)(all - m->ticks0));
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
    fputs(", \"network\": ", f);
    bench_json_str(f, m.net);
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
    rmach_clock(m);
    rmach_topology(m);
    rmach_virt(m);
    rmach_net(m);
    snprintf(m->build, sizeof m->build, "%s", MQS_BUILD_FLAGS);
    char go[200], fiber[200];
    bench_peer_version("go", go, sizeof go);
    bench_peer_version("fiber", fiber, sizeof fiber);
    snprintf(m->peers, sizeof m->peers, "go: %s; fiber: %s", go, fiber);
    m->load0 = rmach_load();
    m->stat0 = rmach_stat(&m->ticks0, &m->steal0);
    snprintf(m->load, sizeof m->load, "not measured (the report did not "
                                      "run)");
}
