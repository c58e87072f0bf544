/*
 * test_netsoak.c - a soak of the I/O calls over loopback TCP: client
 * tasks connect, send a random number of random-sized pieces (send,
 * writev; half of them through a small send buffer, so that writes are
 * partial) to a server reading pieces of random sizes, sometimes wait on a read that times out, and end each
 * connection at random with a half-close (then check the server's
 * receipt: the byte count and a hash) or a plain close; a server task
 * per connection counts and hashes every byte until end of file.  At the
 * end, every connection's bytes as the server saw them match what its
 * client sent (nothing lost, nothing duplicated or reordered), and the
 * process holds the descriptors it held before (none leaked).
 *
 * MQS_SOAK_S sets the length (seconds, default 60); the seed is printed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"
#include "helpers.h"
#include "net_helpers.h"

enum { CLIENTS = 32, MAX_CONNS = 1 << 20, PIECE_MAX = 1 << 16 };

/* What each side saw of one connection (index: the connection's id). */
struct seen {
    uint64_t bytes, hash;
    atomic_int done; /* client: it ended the connection; server: EOF */
};

struct soak {
    int ls, port;
    uint64_t deadline, seed;
    atomic_int stop;     /* the acceptor ends */
    atomic_uint next_id; /* connections made */
    atomic_ullong bytes, half_closes, closes, timeouts;
    struct seen *cli, *srv;
};

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n; /* the DIR's own descriptor is counted both times */
}

/* FNV-1a over a buffer, continuing from h. */
static uint64_t hash(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#define HASH0 14695981039346656037ull

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* ------------------------------------------------------------------ */
/* The server side                                                     */
/* ------------------------------------------------------------------ */

static ssize_t recv_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = mqs_recv(fd, (char *)buf + got, n - got, 0,
                             30000000000ull);
        if (r <= 0)
            return r < 0 ? r : (ssize_t)got;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

struct conn {
    struct soak *s;
    int fd;
};

static void *server(void *arg)
{
    struct conn c = *(struct conn *)arg;
    free(arg);
    uint32_t id;
    CHECK_EQ(recv_all(c.fd, &id, sizeof id), (ssize_t)sizeof id);
    CHECK_LT(id, MAX_CONNS);
    unsigned char *buf = malloc(PIECE_MAX);
    CHECK(buf != NULL);
    uint64_t bytes = 0, h = HASH0, rnd = id * 2654435761u + 1;
    for (;;) {
        /* Reads of random sizes: partial reads of the client's pieces. */
        size_t want = 1 + next_rand(&rnd) % PIECE_MAX;
        ssize_t r = mqs_recv(c.fd, buf, want, 0, 30000000000ull);
        CHECK_GE(r, 0); /* a reset or a 30 s silence is a failure */
        if (r == 0)
            break;
        bytes += (uint64_t)r;
        h = hash(h, buf, (size_t)r);
    }
    free(buf);
    struct seen *v = &c.s->srv[id];
    v->bytes = bytes;
    v->hash = h;
    atomic_store(&v->done, 1);
    /* The receipt; a client that closed without a half-close is gone
     * (EPIPE or ECONNRESET: expected, nothing to check). */
    uint64_t receipt[2] = {bytes, h};
    ssize_t r = mqs_send(c.fd, receipt, sizeof receipt, MSG_NOSIGNAL,
                         30000000000ull);
    CHECK(r == (ssize_t)sizeof receipt || r == MQS_EOS(EPIPE) ||
          r == MQS_EOS(ECONNRESET));
    CHECK_OK(mqs_close(c.fd));
    return NULL;
}

static void *acceptor(void *arg)
{
    struct soak *s = arg;
    mqs_task_attr_t a;
    mqs_task_attr_init(&a);
    a.detached = true;
    a.stack_size = 64 * 1024;
    while (!atomic_load(&s->stop)) {
        int fd = mqs_accept(s->ls, NULL, NULL, SOCK_CLOEXEC, 20000000);
        if (fd == MQS_ETIMEDOUT)
            continue;
        CHECK_GE(fd, 0);
        struct conn *c = malloc(sizeof *c);
        CHECK(c != NULL);
        *c = (struct conn){s, fd};
        mqs_task_t *t = NULL;
        CHECK_OK(mqs_spawn(mqs_runtime_self(), &t, &a, server, c));
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The client side                                                     */
/* ------------------------------------------------------------------ */

/* Byte k of a connection's stream: a function of its id and k. */
static void fill(unsigned char *p, size_t n, uint32_t id, uint64_t k)
{
    for (size_t i = 0; i < n; i++, k++)
        p[i] = (unsigned char)((k * 131u + id * 7u) ^ (k >> 9));
}

/* One connection, ended at random.  False when no id is left. */
static bool one_conn(struct soak *s, uint64_t *rnd, unsigned char *buf)
{
    uint32_t id = atomic_fetch_add(&s->next_id, 1);
    if (id >= MAX_CONNS)
        return false;
    /* Half of them with a small send buffer: partial writes. */
    int sndbuf = next_rand(rnd) % 2 ? 4096 << (next_rand(rnd) % 4) : 0;
    int fd = dial_loopback_buf(s->port, 30000000000ull, sndbuf);
    CHECK_EQ(mqs_send(fd, &id, sizeof id, MSG_NOSIGNAL, MQS_FOREVER),
             (ssize_t)sizeof id);
    uint64_t bytes = 0, h = HASH0;
    int pieces = (int)(next_rand(rnd) % 9);
    for (int i = 0; i < pieces; i++) {
        size_t n = 1 + next_rand(rnd) % PIECE_MAX;
        fill(buf, n, id, bytes);
        if (next_rand(rnd) % 2) {
            CHECK_EQ(mqs_send(fd, buf, n, MSG_NOSIGNAL, MQS_FOREVER),
                     (ssize_t)n);
        } else { /* in two pieces of a vector */
            struct iovec v[2] = {{buf, n / 2}, {buf + n / 2, n - n / 2}};
            size_t left = n;
            struct iovec *p = v;
            int cnt = 2;
            while (left) {
                ssize_t r = mqs_writev(fd, p, cnt, MQS_FOREVER);
                CHECK_GT(r, 0);
                left -= (size_t)r;
                while (cnt && (size_t)r >= p->iov_len) {
                    r -= (ssize_t)p->iov_len;
                    p++;
                    cnt--;
                }
                if (cnt) {
                    p->iov_base = (char *)p->iov_base + r;
                    p->iov_len -= (size_t)r;
                }
            }
        }
        bytes += n;
        h = hash(h, buf, n);
    }
    if (next_rand(rnd) % 10 == 0) { /* nothing comes before the EOF */
        char b;
        CHECK_EQ(mqs_recv(fd, &b, 1, 0, 1000000), MQS_ETIMEDOUT);
        atomic_fetch_add(&s->timeouts, 1);
    }
    struct seen *v = &s->cli[id];
    v->bytes = bytes;
    v->hash = h;
    atomic_store(&v->done, 1);
    atomic_fetch_add(&s->bytes, bytes);
    if (next_rand(rnd) % 2) {
        CHECK_EQ(shutdown(fd, SHUT_WR), 0);
        uint64_t receipt[2];
        CHECK_EQ(recv_all(fd, receipt, sizeof receipt),
                 (ssize_t)sizeof receipt);
        CHECK_EQ(receipt[0], bytes);
        CHECK(receipt[1] == h);
        char b;
        CHECK_EQ(mqs_recv(fd, &b, 1, 0, 30000000000ull), 0);
        atomic_fetch_add(&s->half_closes, 1);
    } else {
        atomic_fetch_add(&s->closes, 1);
    }
    CHECK_OK(mqs_close(fd));
    return true;
}

struct client {
    struct soak *s;
    uint64_t rnd; /* its own generator, never 0 */
};

static void *client(void *arg)
{
    struct client *k = arg;
    struct soak *s = k->s;
    uint64_t rnd = k->rnd;
    unsigned char *buf = malloc(PIECE_MAX);
    CHECK(buf != NULL);
    while (mqs_now_ns() < s->deadline && one_conn(s, &rnd, buf))
        ;
    free(buf);
    return NULL;
}

TEST(a_soak_of_connects_sends_half_closes_and_closes)
{
    const char *e = getenv("MQS_SOAK_S");
    long secs = e ? strtol(e, NULL, 10) : 60;
    CHECK_GT(secs, 0);
    struct soak *s = calloc(1, sizeof *s);
    CHECK(s != NULL);
    s->cli = calloc(MAX_CONNS, sizeof *s->cli);
    s->srv = calloc(MAX_CONNS, sizeof *s->srv);
    CHECK(s->cli && s->srv);
    s->seed = test_shuffle_seed() ? test_shuffle_seed()
                                  : (uint64_t)mqs_now_ns() | 1;
    printf("  %ld s, seed %llu\n", secs, (unsigned long long)s->seed);
    int fds_before = open_fds();

    s->ls = listen_loopback(1024, &s->port);

    mqs_runtime_t *rt = rt_new(2);
    s->deadline = mqs_now_ns() + (uint64_t)secs * 1000000000ull;
    mqs_task_t *acc = spawn(rt, acceptor, s);
    mqs_task_t *c[CLIENTS];
    struct client k[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        k[i] = (struct client){s, s->seed * (2 * (uint64_t)i + 1) | 1};
        c[i] = spawn(rt, client, &k[i]);
    }
    for (int i = 0; i < CLIENTS; i++)
        join(c[i]);
    atomic_store(&s->stop, 1);
    join(acc);
    CHECK_OK(mqs_runtime_destroy(rt)); /* waits for the servers */
    CHECK_EQ(close(s->ls), 0);

    unsigned conns = atomic_load(&s->next_id);
    if (conns > MAX_CONNS)
        conns = MAX_CONNS;
    unsigned checked = 0;
    for (unsigned i = 0; i < conns; i++) {
        CHECK_EQ(atomic_load(&s->cli[i].done), 1);
        CHECK_EQ(atomic_load(&s->srv[i].done), 1);
        CHECK_EQ(s->srv[i].bytes, s->cli[i].bytes);
        CHECK(s->srv[i].hash == s->cli[i].hash);
        checked++;
    }
    printf("  %u connections (%llu half-closed, %llu closed, %llu read "
           "timeouts), %llu bytes, every one accounted for\n",
           checked, (unsigned long long)atomic_load(&s->half_closes),
           (unsigned long long)atomic_load(&s->closes),
           (unsigned long long)atomic_load(&s->timeouts),
           (unsigned long long)atomic_load(&s->bytes));
    CHECK_GT(checked, 0);
    CHECK_EQ(open_fds(), fds_before);
    free(s->cli);
    free(s->srv);
    free(s);
}
