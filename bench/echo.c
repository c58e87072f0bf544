/*
 * echo.c - `mqs-bench echo`: an echo server over loopback TCP, the
 * shape of every request/response server.  --tasks N connections, each
 * with one request of --size B bytes out at a time (a closed loop); the
 * figures are requests/s and p50, p99, p99.9 of a request's latency
 * (bench/help/echo.txt has the definitions and the rows).
 *
 * One client for every row, so that only the server differs: a forked
 * child with one epoll loop over all N connections, checking every byte
 * that comes back.  Its own process, so that the server's N descriptors
 * and the client's N each fit the limit and the server's runtime is the
 * only one in the server's process; its count and histogram lie in a
 * shared mapping the parent reads after it exits.  The window is the
 * peers' (PROTOCOL.md): start when the server is ready, settle, count
 * what completes in --seconds, then wait for the requests still out, so
 * that every connection closes at a request's boundary and a server
 * that sees a cut request or an error is a failure.
 *
 * The epoll row is the no-scheduler reference: a plain level-triggered
 * loop per worker over blocking sockets (a readable one does not block,
 * and a response of B bytes fits the send buffer).  The uring row is the
 * same loop with io_uring as the readiness source (a multishot poll per
 * connection, completions reaped in batches): the measurement behind the
 * poller's choice of epoll (docs/design.md, "The poller").  It needs
 * liburing at build time (MQS_BENCH_URING) and is skipped without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef MQS_BENCH_URING
#include <liburing.h>
#endif

#include "common.h"
#include "expkit.h"
#include "histogram.h"
#include "mqs.h"
#include "peer.h"

#define ECHO_MAX_SIZE 65536
#define ECHO_FDS_SPARE 64 /* descriptors beside the connections */

enum { EX_P50, EX_P99, EX_P999, EX_SRV_US, EX_SRV_CLI, EX_COUNT };
static const bench_extra_col_t echo_extras[EX_COUNT] = {
    [EX_P50] = {"p50_us", "p50 us", 1, BENCH_FOLD_MEAN},
    [EX_P99] = {"p99_us", "p99 us", 1, BENCH_FOLD_MEAN},
    [EX_P999] = {"p999_us", "p99.9 us", 1, BENCH_FOLD_MEAN},
    [EX_SRV_US] = {"server_cpu_us", "srv us", 2, BENCH_FOLD_MEAN},
    [EX_SRV_CLI] = {"server_over_client", "srv/cli", 2, BENCH_FOLD_MEAN},
};
#define EX_PCTS 3 /* the extras that are percentiles */
static const double echo_pcts[EX_PCTS] = {50, 99, 99.9};

static const char *const echo_pseudo[] = {"kernel", "epoll", "uring", "go",
                                          "fiber",  "go1",   "fiber1", NULL};

static const bench_cli_t echo_cli = {
    .name = "echo",
    .summary = "echo server over loopback TCP: requests/s and latency "
               "percentiles per\nnumber of connections",
    .details = BENCH_HELP_ECHO,
    .default_tasks = "1,100,1000,10000",
    .default_policy = "mq,kernel,epoll,go",
    .pseudo = echo_pseudo,
    .default_seconds = 1,
    .default_repeats = 3,
};

/* What the client leaves in the shared mapping (the histogram's
 * counters follow it). */
struct echo_result {
    uint64_t requests; /* completed in the window */
    uint64_t served;   /* completed in the whole run */
    double cpu_s;      /* the client's CPU time, user and system */
    int error; /* an errno, or EIO for a wrong byte; 0: none */
    bench_hist_t lat;
};

struct echo_run;

/* One connection, the server's end. */
struct echo_conn {
    struct echo_run *run;
    int fd;
    size_t got; /* bytes of the request gathered */
    bool bad;   /* the server saw an error or a cut request */
};

struct echo_run {
    int n, size;
    mqs_runtime_t *rt; /* a policy row's; NULL: kernel, epoll or uring */
    struct echo_conn *c;
    char *buf; /* the loop rows: a request buffer per connection */
};

/* Is spec one of the rows served by a loop per worker? */
static bool echo_loop_row(const char *spec)
{
    return strcmp(spec, "epoll") == 0 || strcmp(spec, "uring") == 0;
}

/* One loop of the epoll or uring row: connections first, first + step, ... */
struct echo_loop {
    struct echo_run *run;
    int first, step;
    bool bad;
};

/* ----- The servers ----- */

/* Close a server's end: a policy row's from its task, through mqs_close
 * (the runtime's poller, which outlives the run, forgets the number). */
static void echo_close(struct echo_conn *c)
{
    if (c->run->rt)
        mqs_close(c->fd);
    else
        close(c->fd);
    c->fd = -1;
}

/* What a read of r bytes into p + c->got does to c: once the request
 * is whole, its response; a failed read, or the end of the stream in the
 * middle of a request, makes c bad.  False when the connection is over
 * (closed by the client, or bad). */
static bool echo_took(struct echo_conn *c, char *p, size_t b, ssize_t r)
{
    c->got += r > 0 ? (size_t)r : 0;
    if (r > 0 && c->got == b) {
        c->bad |= bench_write_all(c->fd, p, b) != 0;
        c->got = 0;
    }
    c->bad |= r < 0 || (r == 0 && c->got != 0);
    return r > 0 && !c->bad;
}

/* One read of c's request into p, and once it is whole, the response;
 * false when the connection is over.  A policy row's task waits in
 * mqs_read; a thread does not wait (epoll row: c is readable) or blocks
 * (kernel row). */
static bool echo_step(struct echo_conn *c, char *p, size_t b)
{
    return echo_took(c, p, b, mqs_read(c->fd, p + c->got, b - c->got));
}

/* A policy row's task or a kernel row's thread. */
static void *echo_serve(void *arg)
{
    struct echo_conn *c = arg;
    char *buf = malloc((size_t)c->run->size);
    while (buf && echo_step(c, buf, (size_t)c->run->size))
        ;
    c->bad |= !buf;
    free(buf);
    echo_close(c);
    return NULL;
}

/* The epoll row's thread: a level-triggered loop over its share. */
static void *echo_epoll_loop(void *arg)
{
    struct echo_loop *l = arg;
    struct echo_run *run = l->run;
    size_t b = (size_t)run->size;
    int ep = epoll_create1(EPOLL_CLOEXEC), live = 0;
    l->bad = ep < 0;
    for (int i = l->first; !l->bad && i < run->n; i += l->step, live++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        l->bad = epoll_ctl(ep, EPOLL_CTL_ADD, run->c[i].fd, &e) != 0;
    }
    struct epoll_event ev[64];
    while (!l->bad && live > 0) {
        int k = epoll_wait(ep, ev, 64, -1);
        for (int j = 0; j < k; j++) {
            uint32_t i = ev[j].data.u32;
            if (echo_step(&run->c[i], run->buf + i * b, b))
                continue;
            epoll_ctl(ep, EPOLL_CTL_DEL, run->c[i].fd, NULL);
            echo_close(&run->c[i]);
            live--;
        }
        l->bad |= k < 0 && errno != EINTR;
    }
    if (ep >= 0)
        close(ep);
    return NULL;
}

#ifdef MQS_BENCH_URING
#define ECHO_URING_REMOVE UINT64_MAX /* a removal's completion */

/* An SQE of ring, submitting the queued ones first when it is full. */
static struct io_uring_sqe *echo_sqe(struct io_uring *ring)
{
    struct io_uring_sqe *s = io_uring_get_sqe(ring);
    if (!s && io_uring_submit(ring) >= 0)
        s = io_uring_get_sqe(ring);
    return s;
}

/* Arm (again) the multishot poll of connection i; false if no SQE. */
static bool echo_uring_arm(struct io_uring *ring, const struct echo_run *run,
                           uint32_t i)
{
    struct io_uring_sqe *s = echo_sqe(ring);
    if (s) {
        io_uring_prep_poll_multishot(s, run->c[i].fd, POLLIN);
        io_uring_sqe_set_data64(s, i);
    }
    return s != NULL;
}

/* One completion of the uring row: what c's socket holds, read without
 * waiting (a multishot poll reports each arrival once, and may report
 * one that an earlier read took already), and once the request is
 * whole, its response.  False: c is over (closed by the client, or
 * bad). */
static bool echo_uring_step(struct echo_conn *c, char *p, size_t b)
{
    for (;;) {
        ssize_t r = recv(c->fd, p + c->got, b - c->got, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true; /* the rest comes with a later completion */
        if (r < 0 && errno == EINTR)
            continue;
        bool whole = r > 0 && c->got + (size_t)r == b;
        if (!echo_took(c, p, b, r))
            return false;
        if (whole)
            return true; /* answered: the client sends no more until it reads */
    }
}

/* The uring row's thread: the epoll row's loop with io_uring's poll as
 * the readiness source.  A connection that ends has its poll removed
 * before it is closed (the poll holds the file); completions that come
 * after are ignored. */
static void *echo_uring_loop(void *arg)
{
    struct echo_loop *l = arg;
    struct echo_run *run = l->run;
    size_t b = (size_t)run->size;
    struct io_uring ring;
    int live = 0;
    /* Its best mode: completions run only when this thread asks
     * (measured against the plain ring, where each readiness interrupts
     * the thread: 0.55-0.71 of the epoll row, and COOP_TASKRUN, level
     * with it); a kernel before 6.1 refuses it, then the plain ring. */
    l->bad = io_uring_queue_init(256, &ring,
                                 IORING_SETUP_SINGLE_ISSUER |
                                     IORING_SETUP_DEFER_TASKRUN) != 0 &&
             io_uring_queue_init(256, &ring, 0) != 0;
    if (l->bad)
        return NULL;
    for (int i = l->first; !l->bad && i < run->n; i += l->step, live++)
        l->bad = !echo_uring_arm(&ring, run, (uint32_t)i);
    while (!l->bad && live > 0) {
        int rc = io_uring_submit_and_wait(&ring, 1);
        l->bad = rc < 0 && rc != -EINTR;
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            seen++;
            uint64_t d = io_uring_cqe_get_data64(cqe);
            if (d == ECHO_URING_REMOVE)
                continue; /* a poll's removal done */
            uint32_t i = (uint32_t)d;
            struct echo_conn *c = &run->c[i];
            if (c->fd < 0 || cqe->res == -ECANCELED)
                continue; /* ended already */
            c->bad |= cqe->res < 0;
            if (!c->bad && echo_uring_step(c, run->buf + i * b, b)) {
                if (!(cqe->flags & IORING_CQE_F_MORE))
                    l->bad |= !echo_uring_arm(&ring, run, i);
                continue;
            }
            struct io_uring_sqe *s = echo_sqe(&ring);
            l->bad |= !s;
            if (s) {
                io_uring_prep_poll_remove(s, i);
                io_uring_sqe_set_data64(s, ECHO_URING_REMOVE);
            }
            io_uring_submit(&ring);
            echo_close(c);
            live--;
        }
        io_uring_cq_advance(&ring, seen);
    }
    io_uring_queue_exit(&ring);
    return NULL;
}
#endif

/* ----- The client (the forked child) ----- */

struct echo_client {
    int fd;
    size_t got;
    uint64_t sent; /* when its request was written; 0: none outstanding */
};

/* Dial n connections to a, each watched by ep; 0 or an errno. */
static int echo_dial(const struct sockaddr_in *a, struct echo_client *c,
                     int n, int ep)
{
    for (int i = 0; i < n; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if ((c[i].fd = bench_tcp_dial(a)) < 0 ||
            epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &e))
            return errno ? errno : EIO;
    }
    return 0;
}

/* The client's state over one run. */
struct echo_load {
    struct echo_client *c;
    int n, size, ep, outstanding;
    char *req, *in;
    uint64_t t0, t1; /* the window */
    struct echo_result *r;
};

/* Send ci's next request unless the window has closed; 0 or an errno. */
static int echo_send(struct echo_load *ld, struct echo_client *ci,
                     uint64_t now)
{
    ci->sent = now < ld->t1 ? now : 0;
    ld->outstanding += now < ld->t1;
    return now < ld->t1 ? bench_write_all(ci->fd, ld->req, (size_t)ld->size)
                        : 0;
}

/* ci is readable: take the bytes, check them, and at a whole response
 * count it (in the window) and send the next; 0 or an errno. */
static int echo_take(struct echo_load *ld, struct echo_client *ci)
{
    size_t b = (size_t)ld->size;
    ssize_t got = read(ci->fd, ld->in, b - ci->got);
    if (got <= 0 || !ci->sent || memcmp(ld->in, ld->req + ci->got,
                                        (size_t)got) != 0)
        return got < 0 ? errno : EIO;
    if ((ci->got += (size_t)got) < b)
        return 0;
    uint64_t now = bench_now_ns();
    ld->r->served++;
    if (now >= ld->t0 && now < ld->t1) {
        ld->r->requests++;
        bench_hist_record(&ld->r->lat, now - ci->sent);
    }
    ci->got = 0;
    ld->outstanding--;
    return echo_send(ld, ci, now);
}

/* Requests are a byte pattern; every byte that comes back is checked.
 * After the window, the requests still out are waited for (at most
 * 10 s), so that every connection closes at a request's boundary. */
static int echo_client_run(struct echo_load *ld, const struct sockaddr_in *a,
                           double seconds, int go)
{
    ld->c = calloc((size_t)ld->n, sizeof *ld->c);
    for (int i = 0; ld->c && i < ld->n; i++)
        ld->c[i].fd = -1;
    ld->req = malloc((size_t)ld->size);
    ld->in = malloc((size_t)ld->size);
    ld->ep = epoll_create1(EPOLL_CLOEXEC);
    char byte;
    if (!ld->c || !ld->req || !ld->in || ld->ep < 0)
        return ENOMEM;
    for (int i = 0; i < ld->size; i++)
        ld->req[i] = (char)('a' + i % 26);
    int e = echo_dial(a, ld->c, ld->n, ld->ep);
    if (e || read(go, &byte, 1) != 1) /* the server is ready */
        return e ? e : EIO;
    uint64_t now = bench_now_ns(), settle = (uint64_t)(seconds * 1e8);
    ld->t0 = now + (settle < 20000000 ? settle : 20000000);
    ld->t1 = ld->t0 + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < ld->n && !e; i++)
        e = echo_send(ld, &ld->c[i], bench_now_ns());
    struct epoll_event ev[64];
    while (!e && ld->outstanding > 0) {
        int k = epoll_wait(ld->ep, ev, 64, 100);
        for (int j = 0; j < k && !e; j++)
            e = echo_take(ld, &ld->c[ev[j].data.u32]);
        e = e ? e : k < 0 && errno != EINTR ? errno : 0;
        if (!e && bench_now_ns() > ld->t1 + 10000000000ull)
            e = ETIMEDOUT;
    }
    return e;
}

/* Close the client's connections and its epoll set, so that the
 * closing is in its own CPU time (at _exit it would be counted to the
 * server's: 7-8 ms for 1 000 connections here). */
static void echo_client_close(struct echo_load *ld)
{
    for (int i = 0; ld->c && i < ld->n; i++)
        if (ld->c[i].fd >= 0)
            close(ld->c[i].fd);
    if (ld->ep >= 0)
        close(ld->ep);
}

/* ----- One measurement ----- */

/* Accept the child's n connections, giving up when it has exited. */
static int echo_accept(int ls, struct echo_run *run, pid_t child)
{
    int one = 1;
    for (int i = 0; i < run->n;) {
        struct pollfd p = {.fd = ls, .events = POLLIN};
        if (poll(&p, 1, 200) == 0 && waitpid(child, NULL, WNOHANG) != 0)
            return -1;
        int fd = p.revents ? accept4(ls, NULL, NULL, SOCK_CLOEXEC) : -1;
        if (fd >= 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            run->c[i++].fd = fd;
        }
    }
    return 0;
}

/* Start the server of p's row over run's connections, into g. */
static int echo_start(bench_point_t *p, struct echo_run *run,
                      bench_group_t *g, struct echo_loop *loops)
{
    *g = (bench_group_t){.rt = run->rt, .workers = p->workers,
                         .stack = BENCH_KERNEL_STACK};
    if (!run->buf)
        return bench_group_start(g, "echo", p->row->spec, run->n, echo_serve,
                                 run->c, sizeof *run->c);
    void *(*loop)(void *) = echo_epoll_loop;
#ifdef MQS_BENCH_URING
    if (strcmp(p->row->spec, "uring") == 0)
        loop = echo_uring_loop;
#endif
    for (int i = 0; i < p->workers; i++)
        loops[i] = (struct echo_loop){run, i, p->workers, false};
    return bench_group_start(g, "echo", p->row->spec, p->workers, loop,
                             loops, sizeof *loops);
}

/* A go row's server: the Go peer in its server-only mode, on the
 * listening socket and a ready pipe it inherits, run from a thread
 * (bench_peer_run waits for its exit: when the client has gone and
 * every connection has closed). */
struct echo_peer {
    bench_point_t *p;
    int ls, ready[2];
    int status; /* bench_peer_run's, or -1 */
    _Atomic bool done;
    pthread_t t;
};

static void *echo_peer_main(void *arg)
{
    struct echo_peer *e = arg;
    bench_point_t *p = e->p;
    bench_peer_args_t a = p->peer_args; /* its list points into p's */
    bench_peer_result_t r;
    int w = bench_peer_one_thread(p->row->spec) ? 1 : p->workers;
    e->status = bench_peer_args_add(&a, "listen_fd", "%d", e->ls) ||
                        bench_peer_args_add(&a, "ready_fd", "%d",
                                            e->ready[1]) ||
                        bench_peer_args_common(&a, w, bench_point_seconds(p))
                    ? -1
                    : bench_peer_run(p->row->spec, p->experiment, a.list, 0,
                                     &r, p->note, sizeof p->note);
    const int *shape = p->ctx; /* connections, bytes */
    if (e->status == BENCH_PEER_OK &&
        bench_peer_get(&r, "served") != (double)shape[0]) {
        snprintf(p->note, sizeof p->note, "failed: bad %s output",
                 p->row->spec);
        e->status = BENCH_PEER_FAILED;
    }
    if (e->status == BENCH_PEER_OK)
        p->workers = (int)bench_peer_get(&r, "workers");
    atomic_store(&e->done, true);
    return NULL;
}

/* Start it and wait until it has accepted every connection (its byte on
 * the ready pipe); -1 when it failed first. */
static int echo_peer_start(bench_point_t *p, int ls, struct echo_peer *e)
{
    char byte;
    int ready[2];
    *e = (struct echo_peer){.p = p, .ls = ls, .ready = {-1, -1}, .status = -1};
    if (pipe2(ready, O_CLOEXEC) != 0)
        return -1;
    e->ready[0] = ready[0];
    e->ready[1] = ready[1];
    /* the two it inherits (nothing else is spawned meanwhile) */
    if (fcntl(ls, F_SETFD, 0) != 0 || fcntl(e->ready[1], F_SETFD, 0) != 0 ||
        pthread_create(&e->t, NULL, echo_peer_main, e) != 0) {
        close(e->ready[0]);
        close(e->ready[1]);
        e->ready[0] = -1;
        return -1;
    }
    for (;;) {
        struct pollfd w = {.fd = e->ready[0], .events = POLLIN};
        if (poll(&w, 1, 100) > 0)
            return read(e->ready[0], &byte, 1) == 1 ? 0 : -1;
        if (atomic_load(&e->done))
            return -1;
    }
}

/* After the client: its exit closed every connection, so the peer
 * exits; its status (0, or why not in p->note). */
static int echo_peer_join(struct echo_peer *e)
{
    if (e->ready[0] < 0)
        return -1;
    pthread_join(e->t, NULL);
    close(e->ready[0]);
    close(e->ready[1]);
    return e->status;
}

/* Did every part of the run go right?  Says what did not. */
static bool echo_check(const bench_point_t *p, const struct echo_run *run,
                       const struct echo_loop *loops, int status,
                       const struct echo_result *r)
{
    const char *why = r->error ? strerror(r->error)
                      : status != 0 ? "the client died"
                      : !r->requests ? "no request completed" : NULL;
    for (int i = 0; !why && i < run->n; i++)
        why = run->c[i].bad ? "a server saw an error" : NULL;
    for (int i = 0; !why && run->buf && i < p->workers; i++)
        why = loops[i].bad ? "a server loop failed" : NULL;
    if (why)
        fprintf(stderr, "mqs-bench echo: %s: %s\n", p->row->spec, why);
    return !why;
}

/* CPU time, user and system, of `who` (RUSAGE_SELF or RUSAGE_CHILDREN:
 * the children waited for), in seconds. */
static double echo_cpu_s(int who)
{
    struct rusage u;
    if (getrusage(who, &u) != 0)
        return NAN;
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/* The client in a child, the server here: one run of the window.  The
 * server's CPU time over the whole run goes to *server_s: this
 * process's (the runtime's threads, a kernel row's, the loops'), plus
 * a go row's peer process, which is what the children waited for
 * used beyond the client's own figure (the client reports it). */
static int echo_run_all(bench_point_t *p, struct echo_run *run,
                        struct echo_loop *loops, struct echo_result *r,
                        double *server_s)
{
    struct sockaddr_in a;
    int go[2], ls = bench_tcp_listen(&a, run->n), st = -1;
    if (ls < 0 || pipe2(go, O_CLOEXEC) != 0) {
        perror("mqs-bench echo: listen");
        return -1;
    }
    double self0 = echo_cpu_s(RUSAGE_SELF), kids0 = echo_cpu_s(RUSAGE_CHILDREN);
    pid_t child = fork();
    if (child == 0) {
        struct echo_load ld = {
            .n = run->n, .size = run->size, .ep = -1, .r = r};
        r->error = echo_client_run(&ld, &a, bench_point_seconds(p), go[0]);
        echo_client_close(&ld);
        r->cpu_s = echo_cpu_s(RUSAGE_SELF);
        _exit(r->error ? 1 : 0);
    }
    bench_group_t g = {0};
    struct echo_peer peer = {.ready = {-1, -1}};
    bool is_peer = bench_peer_is(p->row->spec);
    bool ok = child > 0 && (is_peer ? echo_peer_start(p, ls, &peer) == 0
                                    : echo_accept(ls, run, child) == 0 &&
                                          echo_start(p, run, &g, loops) == 0);
    if (!ok && is_peer && child > 0) /* no server to answer it */
        kill(child, SIGKILL);
    ok = write(go[1], "g", 1) == 1 && ok; /* the client starts */
    if (child > 0)
        st = bench_wait_pid(child);
    for (int i = 0; !ok && i < run->n; i++) /* wake servers left waiting */
        if (run->c[i].fd >= 0)
            shutdown(run->c[i].fd, SHUT_RDWR);
    int peer_st = is_peer ? echo_peer_join(&peer) : 0;
    ok = (is_peer ? peer_st == 0 : bench_group_join(&g) == 0) && ok;
    for (int i = 0; i < run->n; i++) /* those no server took */
        if (run->c[i].fd >= 0)
            close(run->c[i].fd);
    close(ls);
    close(go[0]);
    close(go[1]);
    *server_s = echo_cpu_s(RUSAGE_SELF) - self0 +
                (echo_cpu_s(RUSAGE_CHILDREN) - kids0 - r->cpu_s);
    if (peer_st == BENCH_PEER_MISSING || peer_st == BENCH_PEER_UNSUPPORTED)
        return BENCH_POINT_SKIP; /* p->note says why */
    return ok && echo_check(p, run, loops, st, r) ? 0 : -1;
}

/* One measurement: requests/s, the percentiles in µs, and the server's
 * CPU time a request (µs) and over the client's: both over the whole
 * run, every request the client completed, so that the ratio says what
 * the server costs whatever the host's speed at the time. */
static int echo_measure(bench_point_t *p, double *value, double *extra)
{
    const int *shape = p->ctx; /* connections, bytes */
    struct echo_run run = {.n = shape[0], .size = shape[1], .rt = p->rt};
    size_t len = sizeof(struct echo_result) +
                 BENCH_HIST_BUCKETS * sizeof(uint64_t);
    struct echo_result *r = mmap(NULL, len, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct echo_loop *loops = calloc((size_t)p->workers, sizeof *loops);
    run.c = calloc((size_t)run.n, sizeof *run.c);
    if (echo_loop_row(p->row->spec))
        run.buf = malloc((size_t)run.n * (size_t)run.size);
    int rc = -1;
    double server_s = 0;
    if (r != MAP_FAILED && loops && run.c &&
        (run.buf || !echo_loop_row(p->row->spec))) {
        r->lat.counts = (uint64_t *)(r + 1);
        bench_hist_reset(&r->lat);
        for (int i = 0; i < run.n; i++)
            run.c[i] = (struct echo_conn){.run = &run, .fd = -1};
        rc = echo_run_all(p, &run, loops, r, &server_s);
    }
    *value = rc == 0 ? (double)r->requests / bench_point_seconds(p) : NAN;
    for (int i = 0; rc == 0 && i < EX_PCTS; i++)
        extra[i] = bench_hist_percentile(&r->lat, echo_pcts[i]) / 1e3;
    if (rc == 0 && r->served > 0 && r->cpu_s > 0) {
        extra[EX_SRV_US] = server_s / (double)r->served * 1e6;
        extra[EX_SRV_CLI] = server_s / r->cpu_s;
    }
    if (r != MAP_FAILED)
        munmap(r, len);
    free(loops);
    free(run.c);
    free(run.buf);
    return rc;
}

/* The row, with room for the connections: the server's n descriptors
 * and the client's n each under the limit (its soft value raised to
 * the hard one when needed), or the row is skipped.  SIGPIPE is
 * ignored while the row runs: a client gone mid-request is an error a
 * write reports, not the end of mqs-bench. */
static void (*echo_old_pipe)(int);

static int echo_open(bench_point_t *p)
{
    const int *shape = p->ctx;
    struct rlimit l;
    /* No warm-up: every run starts afresh (a new client process, new
     * connections), and a quarter-length window can close before the
     * first request completes (a 64 KiB echo takes 3-11 ms under TSan). */
    p->no_warm = true;
    echo_old_pipe = signal(SIGPIPE, SIG_IGN); /* close restores it */
#ifndef MQS_BENCH_URING
    if (strcmp(p->row->spec, "uring") == 0) {
        snprintf(p->note, sizeof p->note, "built without liburing");
        return BENCH_POINT_SKIP;
    }
#endif
    rlim_t need = (rlim_t)shape[0] + ECHO_FDS_SPARE;
    if (getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < need) {
        l.rlim_cur = l.rlim_max < need ? l.rlim_max : need;
        setrlimit(RLIMIT_NOFILE, &l);
    }
    if (getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur < need) {
        snprintf(p->note, sizeof p->note, "needs %llu descriptors, the "
                 "limit is %llu", (unsigned long long)need,
                 (unsigned long long)l.rlim_max);
        return BENCH_POINT_SKIP;
    }
    return bench_row_open(p);
}

static void echo_row_close(bench_point_t *p)
{
    bench_row_close(p);
    signal(SIGPIPE, echo_old_pipe);
}

static const bench_point_kind_t echo_kind = {echo_open, echo_measure,
                                             echo_row_close};
/* The go rows: the Go server under the same client (echo_peer_start);
 * fiber's stay bench_peer_kind's (it has no echo: exit 3). */
static const bench_row_kind_t echo_kinds[] = {{"epoll", &echo_kind},
                                              {"uring", &echo_kind},
                                              {"go", &echo_kind},
                                              {"go1", &echo_kind},
                                              {NULL, NULL}};

/* ----- The go row, options and the table entry ----- */

static const bench_peer_map_t echo_peer_map = {
    .value_key = "requests_per_s",
    .extra_key = {[EX_P50] = "p50_ns", [EX_P99] = "p99_ns",
                  [EX_P999] = "p999_ns"},
    .extra_scale = {[EX_P50] = 1e-3, [EX_P99] = 1e-3, [EX_P999] = 1e-3},
};

struct echo_args {
    int size;
    int shape[2];       /* the point's: connections, bytes */
    char tasks_opt[96]; /* "--tasks=" and --connections' value */
};

static int echo_options(bench_sweep_t *sw, int *argc, char **argv)
{
    struct echo_args *a = sw->arg;
    const char *v = "64", *conns = NULL;
    const bench_xopt_t xo[] = {{"size", &v, &a->size, 1, ECHO_MAX_SIZE},
                               {"connections", &conns, NULL, 0, 0},
                               {0}};
    int rc = bench_take_options("echo", argc, argv, xo, NULL);
    if (rc || !conns)
        return rc;
    /* --connections is --tasks by its name here: handed on as
     * "--tasks=V" in the slot its own taking freed (argv keeps its
     * NULL), before any "--". */
    for (int i = 1; i < *argc && strcmp(argv[i], "--"); i++)
        if (!strncmp(argv[i], "--tasks", 7))
            return bench_usage("echo", "--connections and --tasks name the "
                                       "same list: give one");
    if (snprintf(a->tasks_opt, sizeof a->tasks_opt, "--tasks=%s", conns) >=
        (int)sizeof a->tasks_opt)
        return bench_usage("echo", "--connections %s: too long", conns);
    memmove(argv + 2, argv + 1, (size_t)*argc * sizeof *argv);
    argv[1] = a->tasks_opt;
    ++*argc;
    return 0;
}

static int echo_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct echo_args *a = sw->arg;
    a->shape[0] = sw->o->tasks[i];
    a->shape[1] = a->size;
    p->ctx = a->shape;
    p->unit = "req/s";
    p->peer_map = &echo_peer_map;
    bench_peer_args_add(&p->peer_args, "connections", "%d", a->shape[0]);
    bench_peer_args_add(&p->peer_args, "size", "%d", a->size);
    snprintf(p->param, sizeof p->param, "connections=%d", a->shape[0]);
    return 0;
}

const bench_exp_t bench_echo_exp = {
    .cli = &echo_cli,
    .arg_size = sizeof(struct echo_args),
    .title = "requests per second",
    .extras = echo_extras,
    .nextra = EX_COUNT,
    .kind = &echo_kind,
    .kinds = echo_kinds,
    .options = echo_options,
    .setup = echo_setup,
};
