/*
 * test_schedtrace.c - the schedtrace line (config.schedtrace_ms,
 * MQS_SCHEDTRACE): lines come while the runtime lives, each with the
 * runtime's header and one part per worker, and they say what each
 * worker does: the id of a task spinning alone on worker 0, three
 * yielders queued and switching on worker 1, both workers parked once
 * every task has ended.  A stream that stalls gets no burst of missed
 * lines.  Off (the default), no line.  Bad values are refused with a
 * message.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "helpers.h"
#include "mqs.h"

static atomic_int st_stop;

static void *spinner(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&st_stop, memory_order_relaxed)) {
    }
    return NULL;
}

static void *yielder(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&st_stop, memory_order_relaxed))
        CHECK_OK(mqs_yield());
    return NULL;
}

static void *yielder_once(void *arg)
{
    (void)arg;
    CHECK_OK(mqs_yield());
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* The text written to f, NUL-terminated (caller frees). */
static char *slurp(FILE *f)
{
    long n = ftell(f);
    CHECK(n >= 0);
    char *s = calloc((size_t)n + 1, 1);
    CHECK(s != NULL);
    rewind(f);
    CHECK_EQ((long)fread(s, 1, (size_t)n, f), n);
    return s;
}

/* The part of line `line` (up to its newline) for worker w, as
 * " | w<w> q=.. run=.. sw=.. pull=..", copied into out. */
static bool worker_part(const char *line, int w, char *out, size_t n)
{
    char key[16];
    snprintf(key, sizeof key, " | w%d ", w);
    const char *end = strchr(line, '\n');
    const char *p = strstr(line, key);
    if (!p || !end || p > end)
        return false;
    const char *q = strstr(p + 1, " | w");
    if (!q || q > end)
        q = end;
    size_t len = (size_t)(q - p) < n - 1 ? (size_t)(q - p) : n - 1;
    memcpy(out, p, len);
    out[len] = 0;
    return true;
}

TEST(lines_say_what_each_worker_runs)
{
    mqs_config_t cfg = cfg_workers(2);
    cfg.policy = "mq";
    cfg.schedtrace_ms = 20;
    FILE *f = tmpfile();
    CHECK(f != NULL);
    cfg.schedtrace_file = f;
    mqs_runtime_t *rt = rt_create(&cfg);
    mqs_task_t *spin = spawn_on(rt, 0, spinner, NULL);
    mqs_task_t *y[3];
    for (int i = 0; i < 3; i++)
        y[i] = spawn_on(rt, 1, yielder, NULL);
    uint64_t spin_id = mqs_task_id(spin), yid[3];
    for (int i = 0; i < 3; i++)
        yid[i] = mqs_task_id(y[i]);
    sleep_ms(300);
    atomic_store(&st_stop, 1);
    join(spin);
    for (int i = 0; i < 3; i++)
        join(y[i]);
    sleep_ms(200); /* every task ended: both workers park */
    CHECK_OK(mqs_runtime_destroy(rt));
    long after_destroy = ftell(f);
    sleep_ms(60);
    CHECK_EQ(ftell(f), after_destroy); /* the thread has stopped */
    char *text = slurp(f);
    fclose(f);

    int lines = 0, spin_seen = 0, yield_seen = 0, parked_seen = 0;
    long long last_ms = -1;
    char part[256], want[64];
    for (char *line = text; *line; line = strchr(line, '\n') + 1) {
        CHECK(strchr(line, '\n') != NULL);
        lines++;
        long long ms;
        CHECK_EQ(sscanf(line, "mqs %lldms:", &ms), 1);
        CHECK_GE(ms, last_ms);
        last_ms = ms;
        CHECK(strncmp(strstr(line, ": "), ": policy=mq workers=2 parked=", 29) ==
              0);
        CHECK(worker_part(line, 0, part, sizeof part));
        snprintf(want, sizeof want, " run=t%llu ", (unsigned long long)spin_id);
        if (strstr(part, " q=0") && strstr(part, want))
            spin_seen++;
        CHECK(worker_part(line, 1, part, sizeof part));
        unsigned q;
        unsigned long long sw;
        char run[32];
        CHECK_EQ(sscanf(part, " | w1 q=%u run=%31s sw=%llu", &q, run, &sw), 3);
        for (int i = 0; i < 3; i++) {
            snprintf(want, sizeof want, "t%llu", (unsigned long long)yid[i]);
            if (q == 2 && !strcmp(run, want) && sw > 100 &&
                strstr(line, " tasks=4 "))
                yield_seen++;
        }
        if (strstr(line, " parked=2 ") && worker_part(line, 0, part, sizeof part) &&
            strstr(part, " run=parked ") &&
            worker_part(line, 1, part, sizeof part) &&
            strstr(part, " run=parked ") && strstr(line, " tasks=0 "))
            parked_seen++;
    }
    fprintf(stderr, "  %d lines, the spinner in %d, the yielders in %d, both "
                    "parked in %d; the first:\n  %.*s\n",
            lines, spin_seen, yield_seen, parked_seen,
            (int)(strchr(text, '\n') - text), text);
    /* 25 periods; a noisy host may delay some */
    CHECK_GE(lines, 5);
    CHECK_GE(spin_seen, 2);
    CHECK_GE(yield_seen, 2);
    CHECK_GE(parked_seen, 1);
    free(text);
}

/* A stream that does not take the lines for a while (a full pipe, a
 * stopped terminal) gets one late line when it takes them again, then
 * lines a period apart: not one line per missed period, back to back.
 * The pipe is a page, filled before the runtime starts; it is widened
 * after 300 ms (30 periods of 10 ms). */
TEST(a_stalled_stream_gets_no_burst_of_missed_lines)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 4096);
    CHECK_EQ(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
    char fill[512];
    memset(fill, 'x', sizeof fill);
    size_t filled = 0;
    for (ssize_t n; (n = write(p[1], fill, sizeof fill)) > 0;)
        filled += (size_t)n;
    CHECK_EQ(fcntl(p[1], F_SETFL, 0), 0);
    FILE *f = fdopen(p[1], "w");
    CHECK(f != NULL);
    mqs_config_t cfg = cfg_workers(2);
    cfg.schedtrace_ms = 10;
    cfg.schedtrace_file = f;
    mqs_runtime_t *rt = rt_create(&cfg);
    sleep_ms(300);
    CHECK(fcntl(p[1], F_SETPIPE_SZ, 1 << 20) >= 1 << 20);
    sleep_ms(100);
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(fclose(f), 0);

    static char text[1 << 20];
    size_t len = 0;
    for (ssize_t n; (n = read(p[0], text + len, sizeof text - 1 - len)) > 0;)
        len += (size_t)n;
    close(p[0]);
    text[len] = 0;
    CHECK(len > filled);
    int lines = 0, back_to_back = 0;
    long long last = -1;
    for (char *line = text + filled; *line; line = strchr(line, '\n') + 1) {
        CHECK(strchr(line, '\n') != NULL);
        long long ms;
        CHECK_EQ(sscanf(line, "mqs %lldms:", &ms), 1);
        back_to_back += last >= 0 && ms - last < 5;
        last = ms;
        lines++;
    }
    fprintf(stderr, "  %d lines, %d of them less than half a period after "
                    "the one before\n", lines, back_to_back);
    CHECK_GE(lines, 3);
    CHECK_LE(back_to_back, 3); /* 28 or more when every missed period writes */
}

TEST(off_by_default_no_line)
{
    mqs_config_t cfg = cfg_workers(2);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    cfg.schedtrace_file = f; /* a stream alone does not turn it on */
    mqs_runtime_t *rt = rt_create(&cfg);
    join(spawn(rt, yielder_once, NULL));
    sleep_ms(50);
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_EQ(ftell(f), 0L);
    fclose(f);
}

TEST(bad_values_refused)
{
    mqs_config_t cfg, out;
    char err[256];
    const long long bad[] = {-1, 3600001};
    for (int i = 0; i < 2; i++) {
        mqs_config_init(&cfg);
        cfg.ignore_env = true;
        cfg.schedtrace_ms = bad[i];
        cfg.errbuf = err;
        cfg.errbuf_size = sizeof err;
        CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
        CHECK_STR_CONTAINS(err, "config.schedtrace_ms");
    }
    const char *env_bad[] = {"x", "-5", "3600001", "20ms"};
    for (int i = 0; i < 4; i++) {
        mqs_config_init(&cfg);
        cfg.errbuf = err;
        cfg.errbuf_size = sizeof err;
        setenv("MQS_SCHEDTRACE", env_bad[i], 1);
        CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
        CHECK_STR_CONTAINS(err, "MQS_SCHEDTRACE=");
    }
    mqs_config_init(&cfg);
    setenv("MQS_SCHEDTRACE", "250", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.schedtrace_ms, 250);
    unsetenv("MQS_SCHEDTRACE");
}
