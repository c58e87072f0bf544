/*
 * test_trace.c - the trace (config.trace_file, MQS_TRACE): the file a
 * runtime writes at destroy is JSON of the Chrome trace-event format
 * (parsed here in full, each event's fields checked), and a scripted run
 * (spawn from outside, yield, block on a semaphore, a wake-up by another
 * task, a move to another worker, exit) appears in it in that order,
 * with the wake-up's flow ending at the run it caused.  A run longer than
 * a ring keeps every switch, in order, across the spills; on a task's
 * track no runnable span begins before the run before it has ended
 * (a poller ping-pong across workers, where many wake-ups come while
 * the reader is still switching out); one past the
 * limit (trace_max_mb) keeps its first records and counts the rest.
 * Bad settings are refused with a message.
 */
#include <ctype.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "helpers.h"
#include "mqs.h"

/* ------------------------------------------------------------------ */
/* A small JSON reader: the whole document into a tree                 */
/* ------------------------------------------------------------------ */

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
    enum jt t;
    double num;
    char *str;       /* J_STR                                  */
    char *key;       /* an object's member: its name           */
    struct jv *kids; /* J_ARR, J_OBJ: n values (or members)    */
    size_t n;
};

struct jp {
    const char *s;
    bool bad;
};

static void ws(struct jp *p)
{
    while (isspace((unsigned char)*p->s))
        p->s++;
}

static char *jstring(struct jp *p)
{
    if (*p->s != '"') {
        p->bad = true;
        return NULL;
    }
    p->s++;
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    CHECK(out != NULL);
    while (*p->s && *p->s != '"') {
        char c = *p->s++;
        if ((unsigned char)c < 0x20) {
            p->bad = true; /* raw control characters are not JSON */
            break;
        }
        if (c == '\\') {
            char e = *p->s++;
            if (e == 'u') {
                unsigned v;
                if (sscanf(p->s, "%4x", &v) != 1 || v > 0xff) {
                    p->bad = true;
                    break;
                }
                p->s += 4;
                c = (char)v;
            } else if (e == '"' || e == '\\' || e == '/')
                c = e;
            else if (e == 'n')
                c = '\n';
            else {
                p->bad = true;
                break;
            }
        }
        if (n + 2 > cap)
            CHECK((out = realloc(out, cap *= 2)) != NULL);
        out[n++] = c;
    }
    out[n] = 0;
    if (*p->s != '"')
        p->bad = true;
    else
        p->s++;
    return out;
}

static void jvalue(struct jp *p, struct jv *v);

static void jlist(struct jp *p, struct jv *v, char close, bool members)
{
    size_t cap = 0;
    p->s++;
    ws(p);
    if (*p->s == close) {
        p->s++;
        return;
    }
    while (!p->bad) {
        if (v->n == cap)
            CHECK((v->kids = realloc(v->kids, (cap = cap ? 2 * cap : 8) *
                                                  sizeof *v->kids)) != NULL);
        struct jv *k = &v->kids[v->n++];
        memset(k, 0, sizeof *k);
        ws(p);
        if (members) {
            k->key = jstring(p);
            ws(p);
            if (*p->s++ != ':')
                p->bad = true;
        }
        jvalue(p, k);
        ws(p);
        if (*p->s == ',') {
            p->s++;
            continue;
        }
        if (*p->s == close) {
            p->s++;
            return;
        }
        p->bad = true;
    }
}

static void jvalue(struct jp *p, struct jv *v)
{
    ws(p);
    char c = *p->s;
    if (c == '{') {
        v->t = J_OBJ;
        jlist(p, v, '}', true);
    } else if (c == '[') {
        v->t = J_ARR;
        jlist(p, v, ']', false);
    } else if (c == '"') {
        v->t = J_STR;
        v->str = jstring(p);
    } else if (!strncmp(p->s, "true", 4) || !strncmp(p->s, "false", 5)) {
        v->t = J_BOOL;
        v->num = c == 't';
        p->s += c == 't' ? 4 : 5;
    } else if (!strncmp(p->s, "null", 4)) {
        v->t = J_NULL;
        p->s += 4;
    } else {
        char *end;
        v->t = J_NUM;
        v->num = strtod(p->s, &end);
        if (end == p->s)
            p->bad = true;
        p->s = end;
    }
}

/* A member of object o, or NULL. */
static const struct jv *jget(const struct jv *o, const char *key)
{
    if (!o || o->t != J_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (o->kids[i].key && !strcmp(o->kids[i].key, key))
            return &o->kids[i];
    return NULL;
}

static const char *jstr(const struct jv *o, const char *key)
{
    const struct jv *v = jget(o, key);
    return v && v->t == J_STR ? v->str : NULL;
}

static bool jnum(const struct jv *o, const char *key, double *out)
{
    const struct jv *v = jget(o, key);
    if (!v || v->t != J_NUM)
        return false;
    *out = v->num;
    return true;
}

/* The file's text, parsed; fails the test unless it is one JSON
 * document. */
static struct jv *read_trace(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK_OK(fseek(f, 0, SEEK_END));
    long n = ftell(f);
    CHECK_GT(n, 0L);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    CHECK(text != NULL);
    CHECK_EQ((long)fread(text, 1, (size_t)n, f), n);
    text[n] = 0;
    fclose(f);
    struct jp p = {text, false};
    struct jv *doc = calloc(1, sizeof *doc);
    CHECK(doc != NULL);
    jvalue(&p, doc);
    ws(&p);
    if (p.bad || *p.s)
        fprintf(stderr, "  not JSON at byte %ld: %.40s\n",
                (long)(p.s - text), p.s);
    CHECK(!p.bad && *p.s == 0);
    CHECK_EQ(doc->t, J_OBJ);
    free(text);
    return doc; /* freed with the test's process */
}

/* One event, as the checks use it. */
struct ev {
    char ph;
    int pid, tid;
    double ts, dur;
    const char *name, *end;
    double task, id;
    bool has_task;
};

/* Every event of the document, each checked for the fields its phase
 * needs. */
static struct ev *events(const struct jv *doc, size_t *count)
{
    const struct jv *arr = jget(doc, "traceEvents");
    CHECK(arr != NULL && arr->t == J_ARR);
    struct ev *out = calloc(arr->n, sizeof *out);
    CHECK(out != NULL);
    for (size_t i = 0; i < arr->n; i++) {
        const struct jv *e = &arr->kids[i];
        struct ev *v = &out[i];
        CHECK_EQ(e->t, J_OBJ);
        const char *ph = jstr(e, "ph");
        CHECK(ph != NULL && strlen(ph) == 1 && strchr("MXisf", ph[0]));
        v->ph = ph[0];
        double pid = 0, tid = -1;
        CHECK(jnum(e, "pid", &pid));
        CHECK(pid == 1 || pid == 2);
        v->pid = (int)pid;
        v->name = jstr(e, "name");
        CHECK(v->name != NULL);
        if (v->ph == 'M') {
            CHECK(jget(e, "args") != NULL);
            v->tid = jnum(e, "tid", &tid) ? (int)tid : -1;
            continue;
        }
        CHECK(jnum(e, "tid", &tid));
        v->tid = (int)tid;
        CHECK(jnum(e, "ts", &v->ts));
        CHECK_GE(v->ts, 0.0);
        if (v->ph == 'X') {
            CHECK(jnum(e, "dur", &v->dur));
            CHECK_GE(v->dur, 0.0);
        }
        if (v->ph == 's' || v->ph == 'f')
            CHECK(jnum(e, "id", &v->id));
        const struct jv *args = jget(e, "args");
        if (args) {
            v->has_task = jnum(args, "task", &v->task);
            v->end = jstr(args, "end");
        }
    }
    *count = arr->n;
    return out;
}

/* The name metadata of task track `task`, or NULL. */
static const char *task_track_name(const struct jv *doc, uint64_t task)
{
    const struct jv *arr = jget(doc, "traceEvents");
    for (size_t i = 0; i < arr->n; i++) {
        const struct jv *e = &arr->kids[i];
        double pid, tid;
        const char *name = jstr(e, "name");
        if (jstr(e, "ph")[0] == 'M' && name && !strcmp(name, "thread_name") &&
            jnum(e, "pid", &pid) && pid == 2 && jnum(e, "tid", &tid) &&
            (uint64_t)tid == task)
            return jstr(jget(e, "args"), "name");
    }
    return NULL;
}

static char trace_path[64];

static void trace_path_make(void)
{
    snprintf(trace_path, sizeof trace_path, "/tmp/mqs-trace-%d.json",
             (int)getpid());
}

/* A traced mq runtime of `workers` workers into trace_path, keeping at
 * most max_mb MiB of records (0: the default). */
static mqs_runtime_t *traced_mq(int workers, int64_t max_mb)
{
    trace_path_make();
    mqs_config_t cfg = cfg_workers(workers);
    cfg.policy = "mq";
    cfg.trace_file = trace_path;
    cfg.trace_max_mb = max_mb;
    return rt_create(&cfg);
}

/* ------------------------------------------------------------------ */
/* The scripted run                                                    */
/* ------------------------------------------------------------------ */

static mqs_sem_t sem;
static atomic_int announced;

/* alpha, on worker 0: yields, blocks on the semaphore, then moves
 * itself to worker 1 and exits there. */
static void *alpha(void *arg)
{
    (void)arg;
    CHECK_OK(mqs_yield());
    atomic_store(&announced, 1);
    CHECK_OK(mqs_sem_wait(&sem));
    mqs_mask_t m;
    mqs_mask_zero(&m);
    mqs_mask_set(&m, 1);
    CHECK_OK(mqs_task_set_affinity(mqs_self(), &m));
    CHECK_OK(mqs_yield()); /* moves: runs on again on worker 1 */
    CHECK_EQ(mqs_worker_self(), 1);
    return NULL;
}

/* beta, on worker 0 too: once alpha has blocked (it announced, and
 * nothing between that and its wait lets beta run), posts. */
static void *beta(void *arg)
{
    (void)arg;
    while (!atomic_load(&announced))
        CHECK_OK(mqs_yield());
    CHECK_OK(mqs_sem_post(&sem));
    return NULL;
}

static mqs_task_t *spawn_named_on(mqs_runtime_t *rt, int w, const char *name,
                                  mqs_task_fn fn)
{
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    mqs_mask_t m;
    mqs_mask_zero(&m);
    mqs_mask_set(&m, w);
    a.affinity = &m;
    a.name = name;
    return spawn_attr(rt, &a, fn, NULL);
}

/* The one X event of pid 1 for `task` that ended with `end`, after
 * index `from` (file order is each worker's order): its index, or -1. */
static long run_ending(const struct ev *e, size_t n, double task,
                       const char *end, size_t from)
{
    for (size_t i = from; i < n; i++)
        if (e[i].ph == 'X' && e[i].pid == 1 && e[i].has_task &&
            e[i].task == task && e[i].end && !strcmp(e[i].end, end))
            return (long)i;
    return -1;
}

/* The instant named `name` (a prefix) of task `task`, or -1. */
static long instant_of(const struct ev *e, size_t n, double task,
                       const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (e[i].ph == 'i' && e[i].has_task && e[i].task == task &&
            !strncmp(e[i].name, name, strlen(name)))
            return (long)i;
    return -1;
}

TEST(a_scripted_run_appears_in_order)
{
    trace_path_make();
    mqs_config_t cfg = cfg_workers(2);
    cfg.policy = "mq";
    cfg.preempt = 0; /* alpha may not be stopped between announce and wait */
    cfg.trace_file = trace_path;
    mqs_runtime_t *rt = rt_create(&cfg);
    CHECK_OK(mqs_sem_init(&sem, 0));
    /* beta first: it is runnable whenever alpha yields, so the yield
     * is a switch */
    mqs_task_t *b = spawn_named_on(rt, 0, "beta", beta);
    mqs_task_t *a = spawn_named_on(rt, 0, "alpha \"1\"", alpha);
    double ida = (double)mqs_task_id(a), idb = (double)mqs_task_id(b);
    join(a);
    join(b);
    CHECK_OK(mqs_runtime_destroy(rt));
    CHECK_OK(mqs_sem_destroy(&sem));

    struct jv *doc = read_trace(trace_path);
    unlink(trace_path);
    CHECK_STR_CONTAINS(jstr(jget(doc, "otherData"), "policy"), "mq");
    size_t n;
    struct ev *e = events(doc, &n);
    const char *na = task_track_name(doc, (uint64_t)ida);
    CHECK(na != NULL);
    CHECK(!strcmp(na, "alpha \"1\"")); /* escaped in the file, whole here */
    CHECK(!strcmp(task_track_name(doc, (uint64_t)idb), "beta"));

    /* spawn (from this thread: the outside track, tid 2), a run ended by
     * the yield, one by the block, the block on the semaphore, beta's
     * wake-up of alpha, the run ended by the move, the migration to
     * worker 1, the run ended by the exit there. */
    long sp = instant_of(e, n, ida, "spawn");
    long y = run_ending(e, n, ida, "yield", 0);
    long bl = run_ending(e, n, ida, "block", 0);
    long bi = instant_of(e, n, ida, "block on semaphore");
    long wk = instant_of(e, n, ida, "wake t");
    long mv = run_ending(e, n, ida, "move", 0);
    long mg = instant_of(e, n, ida, "migrate from w0");
    long ex = run_ending(e, n, ida, "exit", 0);
    fprintf(stderr, "  %zu events; alpha's: spawn %ld yield %ld block %ld "
                    "(%ld) wake %ld move %ld migrate %ld exit %ld\n",
            n, sp, y, bl, bi, wk, mv, mg, ex);
    CHECK(sp >= 0 && y >= 0 && bl >= 0 && bi >= 0 && wk >= 0 && mv >= 0 &&
          mg >= 0 && ex >= 0);
    CHECK_EQ(e[sp].tid, 2);
    CHECK_EQ(e[y].tid, 0);
    CHECK_EQ(e[bl].tid, 0);
    CHECK_EQ(e[mv].tid, 0);
    CHECK_EQ(e[mg].tid, 1);
    CHECK_EQ(e[ex].tid, 1);
    CHECK_LE(e[sp].ts, e[y].ts);
    CHECK_LE(e[y].ts + e[y].dur, e[bl].ts);
    CHECK_LE(e[bl].ts + e[bl].dur, e[bi].ts);
    CHECK_LE(e[bi].ts, e[wk].ts);
    CHECK_LE(e[wk].ts, e[mv].ts);
    CHECK_LE(e[mv].ts + e[mv].dur, e[mg].ts);
    CHECK_LE(e[mg].ts, e[ex].ts);
    /* beta woke it: the wake-up names its waker, and its flow ("s",
     * right after the instant) ends ("f") where the run after it
     * starts */
    const struct jv *wargs = jget(&jget(doc, "traceEvents")->kids[wk], "args");
    double waker = 0;
    CHECK(jnum(wargs, "waker", &waker));
    CHECK_EQ(waker, idb);
    CHECK((size_t)wk + 1 < n && e[wk + 1].ph == 's');
    bool flow_ends = false;
    for (size_t i = 0; i < n; i++)
        flow_ends |= e[i].ph == 'f' && e[i].id == e[wk + 1].id &&
                     e[i].tid == 0 && e[i].ts == e[mv].ts;
    CHECK(flow_ends);
    /* alpha's own track: its runs and the span it was runnable before
     * the run the wake-up caused */
    int on_w0 = 0, on_w1 = 0, runnable_to_mv = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].ph != 'X' || e[i].pid != 2 || e[i].tid != (int)ida)
            continue;
        on_w0 += !strcmp(e[i].name, "on w0");
        on_w1 += !strcmp(e[i].name, "on w1");
        runnable_to_mv += !strcmp(e[i].name, "runnable") &&
                          e[i].ts >= e[wk].ts - 0.002 &&
                          e[i].ts + e[i].dur <= e[mv].ts + 0.002;
    }
    CHECK_GE(on_w0, 3);
    CHECK_EQ(on_w1, 1);
    CHECK_EQ(runnable_to_mv, 1);
}

/* ------------------------------------------------------------------ */
/* Wake-ups that come while the task is still on its CPU               */
/* ------------------------------------------------------------------ */

#define PONG_ROUNDS 10000

static int pong_fd[2][2]; /* pong_fd[i]: the pipe side i reads */

/* Side i of a ping-pong over two pipes across the two workers: writes a
 * byte to the other side, waits in mqs_read for the answer.  The byte
 * often arrives while the reader is still switching out from its wait,
 * and the poller's wake-up is then recorded before that run's end. */
static void *pong(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c = 'x';
    for (int k = 0; k < PONG_ROUNDS; k++) {
        if (i == 0 || k > 0)
            CHECK_EQ(mqs_write(pong_fd[!i][1], &c, 1), 1);
        CHECK_EQ(mqs_read(pong_fd[i][0], &c, 1), 1);
    }
    if (i == 1)
        CHECK_EQ(mqs_write(pong_fd[0][1], &c, 1), 1);
    return NULL;
}

static int by_ts(const void *a, const void *b)
{
    const struct ev *x = *(const struct ev *const *)a,
                    *y = *(const struct ev *const *)b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* On a task's track a runnable span begins no earlier than the end of
 * the run before it (a task is not runnable while it still runs), also
 * when its wake-up was recorded before its run ended: Perfetto's JSON
 * importer calls overlapping slices of one track misnested. */
TEST(runnable_spans_begin_after_the_run_before)
{
    mqs_runtime_t *rt = traced_mq(2, 0);
    CHECK_EQ(pipe(pong_fd[0]), 0);
    CHECK_EQ(pipe(pong_fd[1]), 0);
    mqs_task_t *a = spawn_on(rt, 0, pong, (void *)(intptr_t)0);
    mqs_task_t *b = spawn_on(rt, 1, pong, (void *)(intptr_t)1);
    double ids[2] = {(double)mqs_task_id(a), (double)mqs_task_id(b)};
    join(a);
    join(b);
    for (int i = 0; i < 4; i++)
        mqs_close(pong_fd[i / 2][i % 2]);
    CHECK_OK(mqs_runtime_destroy(rt));
    struct jv *doc = read_trace(trace_path);
    unlink(trace_path);
    size_t n;
    struct ev *e = events(doc, &n);
    const struct ev **mine = calloc(n, sizeof *mine);
    CHECK(mine != NULL);
    long spans = 0, early = 0;
    for (int side = 0; side < 2; side++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (e[i].ph == 'X' && e[i].pid == 2 && e[i].tid == (int)ids[side])
                mine[m++] = &e[i];
        qsort(mine, m, sizeof *mine, by_ts);
        double run_end = -1;
        for (size_t i = 0; i < m; i++) {
            if (strcmp(mine[i]->name, "runnable") != 0) {
                run_end = mine[i]->ts + mine[i]->dur;
                continue;
            }
            spans++;
            early += mine[i]->ts < run_end - 0.0015;
        }
    }
    free(mine);
    fprintf(stderr, "  %ld runnable spans, %ld beginning before the run "
                    "before them ended\n", spans, early);
    CHECK_GE(spans, (long)PONG_ROUNDS);
    CHECK_EQ(early, 0L);
}

/* ------------------------------------------------------------------ */
/* Spills                                                              */
/* ------------------------------------------------------------------ */

/* Switches to make: 60 000 records, seven rings' worth. */
#define PING_SWITCHES 30000

static atomic_int pingers_up;

/* Yield until the worker has switched PING_SWITCHES times: a policy may
 * pick the yielder again (mq about once in 25 yields here, more under
 * TSan), so a count of yields is not a count of switches. */
static void *pinger(void *arg)
{
    mqs_runtime_t *rt = arg;
    atomic_fetch_add(&pingers_up, 1);
    while (atomic_load(&pingers_up) < 2)
        CHECK_OK(mqs_yield());
    for (;;) {
        for (int i = 0; i < 100; i++)
            CHECK_OK(mqs_yield());
        mqs_worker_stats_t ws;
        CHECK_OK(mqs_worker_stats(rt, 0, &ws));
        if (ws.switches >= PING_SWITCHES)
            return NULL;
    }
}

TEST(a_long_run_keeps_every_switch_across_spills)
{
    mqs_runtime_t *rt = traced_mq(1, 0);
    mqs_task_t *a = spawn(rt, pinger, rt), *b = spawn(rt, pinger, rt);
    double ida = (double)mqs_task_id(a), idb = (double)mqs_task_id(b);
    join(a);
    join(b);
    mqs_worker_stats_t ws0;
    CHECK_OK(mqs_worker_stats(rt, 0, &ws0));
    CHECK_OK(mqs_runtime_destroy(rt));
    struct jv *doc = read_trace(trace_path);
    unlink(trace_path);
    size_t n;
    struct ev *e = events(doc, &n);
    /* Two records a switch, 8192 a ring: several spills.  Every switch
     * the worker counted is in the file: each ends a run (an X event on
     * its track) except those from the worker's loop into a task (at
     * the start, after a park: a handful).  The two tasks alternate
     * (their runs number about the same) and runs in file order never
     * overlap. */
    long runs[2] = {0, 0}, total = 0;
    double last_end = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].ph != 'X' || e[i].pid != 1 || !e[i].has_task)
            continue;
        CHECK_EQ(e[i].tid, 0);
        CHECK_GE(e[i].ts + 0.0005, last_end);
        last_end = e[i].ts + e[i].dur;
        runs[e[i].task == idb] += e[i].task == ida || e[i].task == idb;
        total++;
    }
    fprintf(stderr, "  %zu events, %ld runs (%ld and %ld), %llu switches\n",
            n, total, runs[0], runs[1], (unsigned long long)ws0.switches);
    CHECK_EQ(total, runs[0] + runs[1]);
    CHECK_LE(total, (long)ws0.switches);
    CHECK_GE(total, (long)ws0.switches - 10);
    CHECK_GE(total, (long)PING_SWITCHES - 10); /* several rings */
    CHECK_LE(labs(runs[0] - runs[1]), 1L);
}

/* A limit of 1 MiB (32 768 records) under a run of 60 000: the file
 * keeps the run's first switches, about 16 000 runs, says how many
 * records it left out, and is still one JSON document. */
TEST(the_limit_keeps_the_first_records_and_counts_the_rest)
{
    mqs_runtime_t *rt = traced_mq(1, 1);
    mqs_task_t *a = spawn(rt, pinger, rt), *b = spawn(rt, pinger, rt);
    join(a);
    join(b);
    CHECK_OK(mqs_runtime_destroy(rt));
    struct jv *doc = read_trace(trace_path);
    unlink(trace_path);
    double limit = 0, past = 0;
    const struct jv *other = jget(doc, "otherData");
    CHECK(jnum(other, "limit_mb", &limit));
    CHECK(jnum(other, "records_past_limit", &past));
    size_t n;
    struct ev *e = events(doc, &n);
    long runs = 0;
    double last = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].ph == 'X' && e[i].pid == 1 && e[i].has_task) {
            runs++;
            last = e[i].ts > last ? e[i].ts : last;
        }
    fprintf(stderr, "  %ld runs kept, the last at %.0f us; %.0f records past "
                    "the limit\n", runs, last, past);
    CHECK_EQ(limit, 1.0);
    CHECK_GE(past, 20000.0); /* 60 000 made, 32 768 kept */
    CHECK_LE(runs, 16384L);  /* two records a switch */
    CHECK_GE(runs, 15000L);
}

/* ------------------------------------------------------------------ */
/* Settings                                                            */
/* ------------------------------------------------------------------ */

TEST(bad_settings_are_refused_with_a_message)
{
    char err[256];
    mqs_config_t cfg = cfg_workers(1);
    cfg.trace_file = "/nonexistent-folder-of-mqs/t.json";
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    mqs_runtime_t *rt = NULL;
    CHECK_ERR(mqs_runtime_create(&rt, &cfg), MQS_ESYS);
    CHECK(rt == NULL);
    CHECK_STR_CONTAINS(err, "/nonexistent-folder-of-mqs/t.json");
    CHECK_STR_CONTAINS(err, "No such file");

    mqs_config_t out;
    mqs_config_init(&cfg);
    cfg.errbuf = err;
    cfg.errbuf_size = sizeof err;
    cfg.trace_file = "";
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "config.trace_file=");
    cfg.trace_file = NULL;
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    setenv("MQS_TRACE", longname, 1);
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "MQS_TRACE=");
    setenv("MQS_TRACE", "/tmp/x.json", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK(out.trace_file && !strcmp(out.trace_file, "/tmp/x.json"));
    CHECK_EQ(out.trace_max_mb, 256); /* the default */
    unsetenv("MQS_TRACE");

    cfg.trace_max_mb = -1;
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    CHECK_STR_CONTAINS(err, "config.trace_max_mb=-1");
    cfg.trace_max_mb = 1048577;
    CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
    cfg.trace_max_mb = 0;
    const char *bad[] = {"0", "x", "1048577", "5M"};
    for (int i = 0; i < 4; i++) {
        setenv("MQS_TRACE_MAX_MB", bad[i], 1);
        CHECK_ERR(mqs_config_resolve(&cfg, &out), MQS_EINVAL);
        CHECK_STR_CONTAINS(err, "MQS_TRACE_MAX_MB=");
        CHECK_STR_CONTAINS(err, "1 to 1048576");
    }
    setenv("MQS_TRACE_MAX_MB", "64", 1);
    CHECK_OK(mqs_config_resolve(&cfg, &out));
    CHECK_EQ(out.trace_max_mb, 64);
    unsetenv("MQS_TRACE_MAX_MB");
}
