/*
 * chat.c - `mqs-bench chat`: the chatroom benchmark (Bill Hartner's
 * "chat" from IBM's Linux scalability work, after VolanoMark).  --rooms
 * R rooms of --users U users (default 20); each user sends --messages M
 * messages of --msg-bytes B bytes (default 100) to its room, and the
 * room delivers every message to the U-1 other users.  The figure is
 * messages delivered per second: R U M (U-1) deliveries over the time
 * from the first sender starting to the last receiver having everything.
 *
 * Structure, as in the original (client and server over loopback TCP,
 * one connection per user, "1 room = 20 users = 80 threads"): per user
 * four tasks, one connection of two directions and a server-side queue:
 *
 *   sender   (client)  writes its M messages to its connection
 *   reader   (server)  reads that user's messages and puts each on the
 *                      out-queue of every other user of the room
 *   writer   (server)  takes its user's out-queue and writes it to the
 *                      user's connection
 *   receiver (client)  reads its connection until M (U-1) messages
 *
 * so a message costs one read and U-1 queue puts on the reading side,
 * then U-1 queue takes, writes and reads.  --transport tcp (the
 * default): each user's connection (up: sender to reader; down: writer
 * to receiver) is a loopback TCP connection, as the original's; the
 * policy rows' tasks use mqs_read/mqs_write on it (only the task
 * waits), the kernel row's threads blocking read/write.  --transport
 * chan: the policy rows use in-process channels for up and down too,
 * and the kernel row socketpair(AF_UNIX, SOCK_STREAM) (a stream socket
 * without the TCP/IP stack).  The out-queue (readers to writer) is an
 * in-process queue under both: an mqs channel of CHAT_CAPACITY messages
 * on the policy rows, a pipe(2) on the kernel row (writes of up to
 * PIPE_BUF bytes are atomic, so messages of the default 100 bytes stay
 * whole when 19 readers write one pipe; bigger ones may interleave,
 * which changes no count).  Every message carries its room and sender,
 * and a policy row's receiver, which reads whole messages, checks both
 * (nothing from another room, nothing from itself); every receiver
 * checks its count of bytes, M (U-1) B.  Receivers, writers and readers
 * start first and block; the clock starts when the senders are started
 * and stops at the last receiver's last message.  The epoll row runs the
 * same rooms, system calls and checks as event loops with no scheduler
 * ("The epoll row" below).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "mqs.h"
#include "expkit.h"

#define CHAT_CAPACITY 64
#define CHAT_MIN_BYTES 16
#define CHAT_MAX_BYTES 65536

enum { CHAT_X_TASKS, CHAT_X_COUNT };
static const bench_extra_col_t chat_extras[CHAT_X_COUNT] = {
    [CHAT_X_TASKS] = {"tasks", NULL, 0, BENCH_FOLD_MEAN},
};

static const char *const chat_pseudo[] = {"kernel", "epoll", "go", "fiber",
                                          "go1",    "fiber1", NULL};

static const bench_cli_t chat_cli = {
    .name = "chat",
    .summary = "chatroom (VolanoMark): rooms of users broadcasting "
               "messages; messages/s delivered",
    .details = BENCH_HELP_CHAT,
    .default_tasks = "1",
    .default_policy = "mq,kernel,epoll,go,fiber",
    .pseudo = chat_pseudo,
    .default_seconds = 1,
    .default_repeats = 5,
};

/* ----- Shape and arithmetic (tested) ----- */

struct chat_shape {
    int rooms, users, messages, bytes;
    bool tcp; /* --transport tcp */
};

/* Messages delivered in a run: each of R U users' M messages reaches the
 * U - 1 others. */
static double chat_deliveries(const struct chat_shape *s)
{
    return (double)s->rooms * s->users * s->messages * (s->users - 1);
}

/* What every message starts with; the rest of its B bytes is filler. */
struct chat_head {
    uint32_t room, user, seq;
};

/* Does a message received by (room, user) come from someone else in the
 * same room? */
static bool chat_valid(const struct chat_head *h, uint32_t room, uint32_t user,
                       int users)
{
    return h->room == room && h->user != user && h->user < (uint32_t)users;
}

/* ----- The tasks, over mqs channels (policy rows) or sockets (kernel) ----- */

struct chat_run;

/* A user's four tasks; each writes only its own failure flag. */
enum { CHAT_SENDER, CHAT_READER, CHAT_WRITER, CHAT_RECEIVER, CHAT_ROLES };

/* The three hops of a message: sender to reader (the connection's up
 * direction), readers to writer (the out-queue), writer to receiver (the
 * connection's down direction). */
enum chat_hop { CHAT_UP, CHAT_OUTQ, CHAT_DOWN, CHAT_HOPS };

struct chat_user {
    struct chat_run *run;
    uint32_t room, user;
    mqs_chan_t *chan[CHAT_HOPS]; /* policy rows: a channel per hop */
    int fd[2]; /* kernel: the connection: [0] client end, [1] server end */
    int q[2];  /* kernel: the out-queue, a pipe: [0] read, [1] write */
    uint64_t got; /* bytes received */
    struct chat_head head; /* the receiver's: the message head it reads */
    bool bad[CHAT_ROLES];
};

struct chat_run {
    struct chat_shape s;
    struct chat_user *u; /* rooms x users, room-major */
    int n;
    _Atomic int receivers_left;
    _Atomic uint64_t t_end;
    mqs_runtime_t *rt; /* NULL: the kernel or the epoll row */
    bool loop;         /* the epoll row */
    _Atomic bool loop_abort; /* epoll row: a loop failed, the others stop */
    _Atomic long loop_stalls; /* epoll row: readers stopped by a full ring */
    int loop_sockbuf; /* epoll row, tests: every end's SO_SNDBUF (0: the
                         system's) */
    int workers;       /* kernel and epoll rows: threads share its first CPUs */
    const char *row;   /* for messages */
    bool aborted;      /* chat_shut closed the out-queues' write ends */
};

/* The descriptor of hop h of u on the kernel row: put writes it, else
 * it is read. */
static int chat_fd(const struct chat_user *u, enum chat_hop h, bool put)
{
    if (h == CHAT_OUTQ)
        return u->q[put];
    return u->fd[(h == CHAT_UP) != put];
}

/* Does hop h of u go through an mqs channel? */
static bool chat_chan(const struct chat_user *u, enum chat_hop h)
{
    return u->run->rt && (h == CHAT_OUTQ || !u->run->s.tcp);
}

/* Put one message on hop h of u; false on failure. */
static bool chat_put(struct chat_user *u, enum chat_hop h, const char *msg)
{
    if (chat_chan(u, h))
        return mqs_chan_send(u->chan[h], msg) == 0;
    return bench_write_all(chat_fd(u, h, true), msg,
                           (size_t)u->run->s.bytes) == 0;
}

/* Take from hop h of u: one whole message off a channel, or up to n
 * bytes of the stream (a whole message when n is its size: the stream
 * is read until then).  How many bytes, 0 on the end or an error. */
static size_t chat_get(struct chat_user *u, enum chat_hop h, char *msg,
                       size_t n)
{
    if (chat_chan(u, h))
        return mqs_chan_recv(u->chan[h], msg) ? 0 : (size_t)u->run->s.bytes;
    size_t got = 0, k = 1;
    while (got < n && k)
        got += k = bench_read(chat_fd(u, h, false), msg + got, n - got);
    return got;
}

static void *chat_sender(void *arg)
{
    struct chat_user *u = arg;
    char *msg = calloc(1, (size_t)u->run->s.bytes);
    struct chat_head h = {u->room, u->user, 0};
    for (int m = 0; msg && m < u->run->s.messages; m++) {
        h.seq = (uint32_t)m;
        memcpy(msg, &h, sizeof h);
        u->bad[CHAT_SENDER] |= !chat_put(u, CHAT_UP, msg);
    }
    u->bad[CHAT_SENDER] |= !msg;
    free(msg);
    return NULL;
}

/* The room's reading side of one user's connection: every message it
 * reads goes to the out-queue of every other user of the room. */
static void *chat_reader(void *arg)
{
    struct chat_user *u = arg;
    const struct chat_shape *s = &u->run->s;
    struct chat_user *room = u - u->user;
    size_t b = (size_t)s->bytes;
    char *msg = malloc(b);
    for (int m = 0; msg && m < s->messages && !u->bad[CHAT_READER]; m++) {
        u->bad[CHAT_READER] |= chat_get(u, CHAT_UP, msg, b) != b;
        for (int v = 0; v < s->users && !u->bad[CHAT_READER]; v++)
            if (v != (int)u->user)
                u->bad[CHAT_READER] |= !chat_put(&room[v], CHAT_OUTQ, msg);
    }
    u->bad[CHAT_READER] |= !msg;
    free(msg);
    return NULL;
}

/* The room's writing side: the user's out-queue onto its connection. */
static void *chat_writer(void *arg)
{
    struct chat_user *u = arg;
    const struct chat_shape *s = &u->run->s;
    long n = (long)s->messages * (s->users - 1);
    size_t b = (size_t)s->bytes;
    char *msg = malloc(b);
    for (long m = 0; msg && m < n && !u->bad[CHAT_WRITER]; m++)
        u->bad[CHAT_WRITER] = chat_get(u, CHAT_OUTQ, msg, b) != b ||
                              !chat_put(u, CHAT_DOWN, msg);
    u->bad[CHAT_WRITER] |= !msg;
    free(msg);
    return NULL;
}

/* Are the message heads in a piece of the down stream (at: its offset
 * in the stream) from the room's other users?  A head cut by the
 * piece's end is completed by the next piece (u->head). */
static bool chat_heads_ok(struct chat_user *u, const char *p, size_t n,
                          uint64_t at)
{
    size_t b = (size_t)u->run->s.bytes, hs = sizeof u->head;
    for (size_t i = 0, k; i < n; i += k) {
        size_t off = (size_t)((at + i) % b);
        k = off < hs ? hs - off : b - off;
        k = k < n - i ? k : n - i;
        if (off < hs)
            memcpy((char *)&u->head + off, p + i, k);
        if (off < hs && off + k == hs &&
            !chat_valid(&u->head, u->room, u->user, u->run->s.users))
            return false;
    }
    return true;
}

/* Receives until every byte is there, in pieces of up to 8 KiB (a
 * channel gives one message at a time), checking every message's head
 * (unless an out-queue pipe of the kernel row may have interleaved
 * messages over PIPE_BUF bytes) and the count. */
static void *chat_receiver(void *arg)
{
    struct chat_user *u = arg;
    const struct chat_shape *s = &u->run->s;
    uint64_t want =
        (uint64_t)s->messages * (uint64_t)(s->users - 1) * (uint64_t)s->bytes;
    size_t cap = s->bytes > 8192 ? (size_t)s->bytes : 8192;
    char *msg = malloc(cap);
    while (msg && u->got < want) {
        uint64_t left = want - u->got;
        size_t k = chat_get(u, CHAT_DOWN, msg, left < 8192 ? left : 8192);
        if (!k)
            break;
        if (u->run->rt || s->bytes <= PIPE_BUF)
            u->bad[CHAT_RECEIVER] |= !chat_heads_ok(u, msg, k, u->got);
        u->got += k;
    }
    u->bad[CHAT_RECEIVER] |= !msg || u->got != want;
    free(msg);
    if (atomic_fetch_sub(&u->run->receivers_left, 1) == 1)
        atomic_store(&u->run->t_end, bench_now_ns());
    return NULL;
}

static void *(*const chat_role_fn[CHAT_ROLES])(void *) = {
    [CHAT_SENDER] = chat_sender,
    [CHAT_READER] = chat_reader,
    [CHAT_WRITER] = chat_writer,
    [CHAT_RECEIVER] = chat_receiver,
};

static int chat_make_users(struct chat_run *run)
{
    run->n = run->s.rooms * run->s.users;
    run->u = calloc((size_t)run->n, sizeof *run->u);
    if (!run->u)
        return -1;
    for (int i = 0; i < run->n; i++) {
        struct chat_user *u = &run->u[i];
        *u = (struct chat_user){.run = run,
                                .room = (uint32_t)(i / run->s.users),
                                .user = (uint32_t)(i % run->s.users),
                                .fd = {-1, -1},
                                .q = {-1, -1}};
        for (int h = 0; h < CHAT_HOPS; h++)
            if (chat_chan(u, h) && mqs_chan_create(&u->chan[h],
                                                   (size_t)run->s.bytes,
                                                   CHAT_CAPACITY))
                return -1;
        int e = run->s.tcp ? bench_tcp_pair(u->fd)
                : run->rt  ? 0
                : socketpair(AF_UNIX, SOCK_STREAM, 0, u->fd) ? errno : 0;
        if (e) {
            u->fd[0] = u->fd[1] = -1;
            fprintf(stderr, "mqs-bench chat: %s: connection: %s\n", run->row,
                    strerror(e));
            return -1;
        }
        if (run->rt || run->loop)
            continue;
        if (pipe(u->q) != 0) {
            u->q[0] = u->q[1] = -1;
            perror("mqs-bench chat: kernel: pipe");
            return -1;
        }
    }
    return 0;
}

/* With abort, after a failed start, which leaves tasks blocked on hops
 * that will never fill: close every channel, or shut every socket down
 * and close the out-queues' write ends, so that they return.  The
 * descriptors stay in the structs (threads still read them), and the
 * final call (abort false: destroy, close and free everything) leaves
 * the closed ones alone. */
static void *chat_closer(void *arg)
{
    struct chat_run *run = arg;
    for (int i = 0; i < run->n * 2; i++)
        if (run->u[i / 2].fd[i % 2] >= 0) {
            mqs_close(run->u[i / 2].fd[i % 2]);
            run->u[i / 2].fd[i % 2] = -1;
        }
    return NULL;
}

static void chat_shut(struct chat_run *run, bool abort)
{
    /* A policy row's sockets are closed from a task: mqs_close takes
     * them out of the runtime's poller, which serves the next run too. */
    mqs_task_t *t;
    if (!abort && run->rt && run->u &&
        mqs_spawn(run->rt, &t, NULL, chat_closer, run) == 0)
        mqs_join(t, NULL);
    for (int i = 0; run->u && i < run->n; i++) {
        struct chat_user *u = &run->u[i];
        for (int h = 0; h < CHAT_HOPS; h++)
            if (u->chan[h] && abort)
                mqs_chan_close(u->chan[h]);
            else if (u->chan[h])
                mqs_chan_destroy(u->chan[h]);
        for (int k = 0; k < 2; k++) {
            if (u->fd[k] >= 0 && abort)
                shutdown(u->fd[k], SHUT_RDWR);
            else if (u->fd[k] >= 0)
                close(u->fd[k]);
            if (u->q[k] >= 0 && (abort ? k == 1 : !(k == 1 && run->aborted)))
                close(u->q[k]);
        }
    }
    run->aborted = abort;
    if (!abort) {
        free(run->u);
        run->u = NULL;
    }
}

static int chat_check(const struct chat_run *run)
{
    for (int i = 0; i < run->n; i++)
        if (memchr(run->u[i].bad, true, sizeof run->u[i].bad)) {
            if (!run->rt)
                fprintf(stderr, "mqs-bench chat: %s: a connection "
                                "failed or lost bytes\n", run->row);
            else
                fprintf(stderr,
                        "mqs-bench chat: room %u user %u: got %llu "
                        "messages, or a wrong one\n",
                        run->u[i].room, run->u[i].user,
                        (unsigned long long)(run->u[i].got /
                                             (uint64_t)run->s.bytes));
            return -1;
        }
    return 0;
}

/* ----- The epoll row: the no-scheduler reference ----- */

/*
 * The chatroom written plainly as event loops, one thread per worker and
 * no scheduler: what the machine's sockets give with none in the way.
 * Room r, both its sides (its users' senders and receivers, and the
 * server's readers and writers), runs in loop r mod W, as echo's epoll
 * row serves its share of the connections: no loop waits for another.
 * Every descriptor is non-blocking and registered once, edge-triggered,
 * and each role works until EAGAIN.  The system calls are the other
 * rows': a write(2) per message sent and per delivery, a read of up to
 * the rest of a message by a server reader, reads of up to 8 KiB by a
 * receiver.  An out-queue is a ring of CHAT_CAPACITY messages; a loop
 * writes the rings its events filled once it has handled them all (as a
 * server writes its replies before it sleeps again: Redis's
 * beforeSleep), so a delivery's write does not wait for its reader's
 * next message, nor a reader for the writes.  A reader whose
 * recipient's ring stays full (its connection full too) stops until
 * that writer's next EPOLLOUT makes room.
 *
 * Rejected: the client side in one loop and the server side in another
 * (one room on two CPUs): each loop slept and woke at nearly every
 * segment, 0.14-0.23 M messages/s at one room against about 1.1 M in
 * one loop; writing each delivery through at once, 0.47 M against
 * 0.98 M on one CPU (docs/notes.md).
 */
#define CHAT_LOOP_WAIT_MS 100    /* a loop looks at loop_abort this often */
#define CHAT_LOOP_IDLE_MS 10000  /* no event for this long: the run failed */

/* A user's roles on the epoll row. */
struct chat_lstate {
    int sent;          /* sender: messages written whole */
    size_t s_off;      /* ... bytes of the next one written */
    int read;          /* reader: messages read whole */
    size_t r_got;      /* ... bytes of the next one read */
    int r_next;        /* ... its next recipient, -1: none (reading) */
    int stalled_on;    /* ... the recipient whose full ring stopped it, -1 */
    int head, len;     /* writer: the out-queue ring's messages */
    int stalled;       /* ... readers stopped by this ring */
    size_t w_off;      /* ... bytes of the head message written */
    long written;      /* ... messages written whole */
    bool dirty;        /* ... on its loop's list of rings to write */
    char *s_msg, *r_msg, *ring, *buf; /* one allocation, s_msg first */
};

struct chat_loop {
    struct chat_run *run;
    struct chat_lstate *ls; /* the run's, a user each */
    int *dirty, ndirty;     /* users whose rings it filled since it wrote */
    int index, ep;
    int parts; /* receivers and writers of its rooms not yet done */
    bool bad;
};

/* The loop of room r, among n loops. */
static int chat_loop_of(uint32_t r, int n)
{
    return (int)(r % (uint32_t)n);
}

/* The recipient of a reader's message after v (-1 for the first), -1
 * after the last; never the reader itself. */
static int chat_next_recipient(int v, uint32_t self, int users)
{
    for (v++; v == (int)self; v++)
        ;
    return v < users ? v : -1;
}

/* One read or write of up to n bytes on fd, EINTR retried: how many
 * bytes, or 0 when the role must stop (EAGAIN: until its edge; an error,
 * or a read's end of the stream before everything came: *bad). */
static size_t chat_loop_io(struct chat_loop *l, bool *bad, int fd, char *p,
                           size_t n, bool wr)
{
    ssize_t r;
    do
        r = wr ? write(fd, p, n) : read(fd, p, n);
    while (r < 0 && errno == EINTR);
    if (r > 0)
        return (size_t)r;
    if (r == 0)
        errno = EPIPE;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
        *bad = l->bad = true;
        atomic_store(&l->run->loop_abort, true);
    }
    return 0;
}

static void chat_loop_send(struct chat_loop *l, struct chat_user *u,
                           struct chat_lstate *x)
{
    size_t b = (size_t)l->run->s.bytes;
    while (x->sent < l->run->s.messages) {
        struct chat_head h = {u->room, u->user, (uint32_t)x->sent};
        if (x->s_off == 0)
            memcpy(x->s_msg, &h, sizeof h);
        size_t r = chat_loop_io(l, &u->bad[CHAT_SENDER], u->fd[0],
                                x->s_msg + x->s_off, b - x->s_off, true);
        if (!r)
            return;
        x->s_off += r;
        if (x->s_off == b) {
            x->s_off = 0;
            x->sent++;
        }
    }
}

/* Write v's out-queue to its connection until empty or EAGAIN. */
static void chat_loop_flush(struct chat_loop *l, struct chat_user *v,
                            struct chat_lstate *y)
{
    const struct chat_shape *s = &l->run->s;
    size_t b = (size_t)s->bytes;
    while (y->len > 0) {
        size_t r = chat_loop_io(l, &v->bad[CHAT_WRITER], v->fd[1],
                                y->ring + (size_t)y->head * b + y->w_off,
                                b - y->w_off, true);
        if (!r)
            return;
        y->w_off += r;
        if (y->w_off < b)
            continue;
        y->w_off = 0;
        y->head = (y->head + 1) % CHAT_CAPACITY;
        y->len--;
        if (++y->written == (long)s->messages * (s->users - 1))
            l->parts--;
    }
}

/* Put msg on v's out-queue, to be written when the loop's events are
 * handled (or now, to make room); false when the ring stays full (its
 * connection takes nothing now). */
static bool chat_loop_put(struct chat_loop *l, struct chat_user *v,
                          struct chat_lstate *y, const char *msg)
{
    size_t b = (size_t)l->run->s.bytes;
    if (y->len == CHAT_CAPACITY)
        chat_loop_flush(l, v, y);
    if (y->len == CHAT_CAPACITY)
        return false;
    memcpy(y->ring + (size_t)((y->head + y->len) % CHAT_CAPACITY) * b, msg, b);
    if (y->len++ == 0 && !y->dirty) {
        y->dirty = true;
        l->dirty[l->ndirty++] = (int)(y - l->ls);
    }
    return true;
}

/* The server reader of u: read, and deliver each whole message to the
 * room's other users, until EAGAIN, a full ring, or all M are read. */
static void chat_loop_read(struct chat_loop *l, struct chat_user *u,
                           struct chat_lstate *x)
{
    const struct chat_shape *s = &l->run->s;
    struct chat_user *room = u - u->user;
    struct chat_lstate *xs = x - u->user;
    size_t b = (size_t)s->bytes;
    while (!l->bad) {
        while (x->r_next >= 0) {
            int v = x->r_next;
            if (!chat_loop_put(l, &room[v], &xs[v], x->r_msg)) {
                x->stalled_on = v;
                xs[v].stalled++;
                atomic_fetch_add_explicit(&l->run->loop_stalls, 1,
                                          memory_order_relaxed);
                return;
            }
            x->r_next = chat_next_recipient(v, u->user, s->users);
        }
        if (x->read == s->messages)
            return;
        size_t r = chat_loop_io(l, &u->bad[CHAT_READER], u->fd[1],
                                x->r_msg + x->r_got, b - x->r_got, false);
        if (!r)
            return;
        x->r_got += r;
        if (x->r_got == b) {
            x->r_got = 0;
            x->read++;
            x->r_next = chat_next_recipient(-1, u->user, s->users);
        }
    }
}

/* v's connection takes more: write its out-queue, then resume the
 * readers its full ring stopped while it has room. */
static void chat_loop_writable(struct chat_loop *l, struct chat_user *v,
                               struct chat_lstate *y)
{
    chat_loop_flush(l, v, y);
    struct chat_user *room = v - v->user;
    struct chat_lstate *ys = y - v->user;
    for (int w = 0; w < l->run->s.users && y->stalled &&
                    y->len < CHAT_CAPACITY;
         w++)
        if (ys[w].stalled_on == (int)v->user) {
            ys[w].stalled_on = -1;
            y->stalled--;
            chat_loop_read(l, &room[w], &ys[w]);
        }
}

/* The receiver of u: read and check until EAGAIN or everything is in. */
static void chat_loop_recv(struct chat_loop *l, struct chat_user *u,
                           struct chat_lstate *x)
{
    const struct chat_shape *s = &l->run->s;
    uint64_t want =
        (uint64_t)s->messages * (uint64_t)(s->users - 1) * (uint64_t)s->bytes;
    while (u->got < want) {
        uint64_t left = want - u->got;
        size_t r = chat_loop_io(l, &u->bad[CHAT_RECEIVER], u->fd[0], x->buf,
                                left < 8192 ? left : 8192, false);
        if (!r)
            return;
        u->bad[CHAT_RECEIVER] |= !chat_heads_ok(u, x->buf, r, u->got);
        u->got += r;
        if (u->got < want)
            continue;
        l->parts--;
        if (atomic_fetch_sub(&l->run->receivers_left, 1) == 1)
            atomic_store(&l->run->t_end, bench_now_ns());
    }
}

/* A loop's thread: its senders start, then events until its receivers
 * and writers are done (or a loop failed, or nothing moved for
 * CHAT_LOOP_IDLE_MS). */
static void *chat_loop_run(void *arg)
{
    struct chat_loop *l = arg;
    struct chat_run *run = l->run;
    int idle = 0;
    for (int i = 0; i < run->n; i++)
        if (chat_loop_of(run->u[i].room, run->workers) == l->index)
            chat_loop_send(l, &run->u[i], &l->ls[i]);
    struct epoll_event ev[64];
    while (l->parts > 0 && !l->bad && !atomic_load(&run->loop_abort)) {
        /* What the last events put on out-queues (a ring that stays
         * non-empty is written again at its EPOLLOUT). */
        while (l->ndirty > 0 && !l->bad) {
            int i = l->dirty[--l->ndirty];
            l->ls[i].dirty = false;
            chat_loop_writable(l, &run->u[i], &l->ls[i]);
        }
        int k = epoll_wait(l->ep, ev, 64, CHAT_LOOP_WAIT_MS);
        if (k < 0 && errno != EINTR)
            l->bad = true;
        idle = k == 0 ? idle + CHAT_LOOP_WAIT_MS : 0;
        l->bad |= idle >= CHAT_LOOP_IDLE_MS;
        for (int j = 0; j < k && !l->bad; j++) {
            int i = (int)(ev[j].data.u64 >> 1);
            uint32_t e = ev[j].events;
            bool in = e & (EPOLLIN | EPOLLERR | EPOLLHUP);
            bool out = e & (EPOLLOUT | EPOLLERR | EPOLLHUP);
            struct chat_user *u = &run->u[i];
            struct chat_lstate *x = &l->ls[i];
            if (ev[j].data.u64 & 1) { /* the server's end */
                if (out)
                    chat_loop_writable(l, u, x);
                if (in && x->stalled_on < 0)
                    chat_loop_read(l, u, x);
            } else {
                if (in)
                    chat_loop_recv(l, u, x);
                if (out)
                    chat_loop_send(l, u, x);
            }
        }
    }
    if (l->bad)
        atomic_store(&run->loop_abort, true);
    return NULL;
}

/* Each user's state and both ends' registration with their loops. */
static int chat_loop_setup(struct chat_run *run, struct chat_loop *loops,
                           struct chat_lstate *ls)
{
    size_t b = (size_t)run->s.bytes;
    for (int k = 0; k < run->workers; k++) {
        loops[k] = (struct chat_loop){.run = run, .ls = ls, .index = k,
                                      .ep = epoll_create1(EPOLL_CLOEXEC)};
        loops[k].dirty = malloc((size_t)run->n * sizeof *loops[k].dirty);
        if (loops[k].ep < 0 || !loops[k].dirty)
            return -1;
    }
    for (int i = 0; i < run->n; i++) {
        struct chat_user *u = &run->u[i];
        ls[i] = (struct chat_lstate){.r_next = -1, .stalled_on = -1};
        ls[i].s_msg = calloc(1, b * (2 + CHAT_CAPACITY) + 8192);
        if (!ls[i].s_msg)
            return -1;
        ls[i].r_msg = ls[i].s_msg + b;
        ls[i].ring = ls[i].r_msg + b;
        ls[i].buf = ls[i].ring + b * CHAT_CAPACITY;
        struct chat_loop *l = &loops[chat_loop_of(u->room, run->workers)];
        for (int side = 0; side < 2; side++) {
            struct epoll_event e = {.events = EPOLLIN | EPOLLOUT | EPOLLET,
                                    .data.u64 = (uint64_t)i << 1 | side};
            int fl = fcntl(u->fd[side], F_GETFL), sb = run->loop_sockbuf;
            if (sb && setsockopt(u->fd[side], SOL_SOCKET, SO_SNDBUF, &sb,
                                 sizeof sb))
                return -1;
            if (fl < 0 || fcntl(u->fd[side], F_SETFL, fl | O_NONBLOCK) ||
                epoll_ctl(l->ep, EPOLL_CTL_ADD, u->fd[side], &e))
                return -1;
            l->parts++; /* its receiver (client end) or writer (server) */
        }
    }
    return 0;
}

/* One run of the epoll row: chat_run_all's for loops. */
static int chat_loop_all(struct chat_run *run, double *secs)
{
    int nl = run->workers > 0 ? run->workers : 1;
    run->workers = nl;
    struct chat_loop *loops = calloc((size_t)nl, sizeof *loops);
    int nu = run->s.rooms * run->s.users;
    struct chat_lstate *ls = calloc((size_t)nu, sizeof *ls);
    bool ok = loops && ls && chat_make_users(run) == 0 &&
              chat_loop_setup(run, loops, ls) == 0;
    if (!ok)
        fprintf(stderr, "mqs-bench chat: %s: setting up the loops: %s\n",
                run->row, strerror(errno));
    atomic_store(&run->receivers_left, run->n);
    bench_group_t g = {.workers = nl, .stack = BENCH_KERNEL_STACK};
    uint64_t t0 = bench_now_ns();
    ok = ok && bench_group_start(&g, "chat", run->row, nl, chat_loop_run,
                                 loops, sizeof *loops) == 0;
    if (!ok)
        atomic_store(&run->loop_abort, true);
    ok = bench_group_join(&g) == 0 && ok;
    *secs = (double)(atomic_load(&run->t_end) - t0) / 1e9;
    for (int k = 0; loops && k < nl; k++) {
        ok = ok && !loops[k].bad;
        if (loops[k].ep > 0)
            close(loops[k].ep);
        free(loops[k].dirty);
    }
    int rc = ok ? chat_check(run) : -1;
    if (!ok)
        fprintf(stderr, "mqs-bench chat: %s: a loop failed or stalled\n",
                run->row);
    for (int i = 0; ls && i < nu; i++)
        free(ls[i].s_msg);
    free(ls);
    free(loops);
    chat_shut(run, false);
    return rc;
}

/* One run: seconds of wall time into *secs.  Receivers, writers and
 * readers start first and block on their empty hops; the clock starts
 * when the senders are started. */
static int chat_run_all(struct chat_run *run, double *secs)
{
    if (run->loop)
        return chat_loop_all(run, secs);
    bench_group_t g[CHAT_ROLES];
    uint64_t t0 = 0;
    bool ok = chat_make_users(run) == 0;
    atomic_store(&run->receivers_left, run->n);
    for (int k = CHAT_ROLES - 1; k >= 0; k--) {
        g[k] = (bench_group_t){.rt = run->rt, .workers = run->workers,
                               .stack = BENCH_KERNEL_STACK};
        if (k == CHAT_SENDER)
            t0 = bench_now_ns();
        ok = ok && bench_group_start(&g[k], "chat", run->row, run->n,
                                     chat_role_fn[k], run->u,
                                     sizeof *run->u) == 0;
    }
    if (!ok)
        chat_shut(run, true);
    for (int k = CHAT_ROLES - 1; k >= 0; k--)
        ok = bench_group_join(&g[k]) == 0 && ok;
    *secs = (double)(atomic_load(&run->t_end) - t0) / 1e9;
    int rc = ok ? chat_check(run) : -1;
    chat_shut(run, false);
    return rc;
}

/* ----- The row kind (policy and kernel rows) ----- */

/* One run of the point's shape (its ctx). */
static int chat_measure(bench_point_t *p, double *value, double *extra)
{
    const struct chat_shape *s = p->ctx;
    double secs = 0;
    struct chat_run run = {
        .s = *s, .rt = p->rt, .row = p->row->spec,
        .loop = strcmp(p->row->spec, "epoll") == 0};
    /* the loops: one per CPU the kernel row would use */
    run.workers = run.loop ? p->workers : p->o->workers;
    int rc = chat_run_all(&run, &secs);
    if (rc != 0 || secs <= 0)
        return -1;
    *value = chat_deliveries(s) / secs;
    extra[CHAT_X_TASKS] = 4.0 * s->rooms * s->users;
    return 0;
}

static const bench_point_kind_t chat_kind = {bench_row_open, chat_measure,
                                             bench_row_close};
static const bench_row_kind_t chat_kinds[] = {{"epoll", &chat_kind},
                                              {NULL, NULL}};

static const bench_peer_map_t chat_peer_map = {.value_key = "msgs_per_s"};

/* What a peer row is told about the point. */
static void chat_peer_args(bench_point_t *p, const struct chat_shape *s)
{
    p->peer_map = &chat_peer_map;
    bench_peer_args_add(&p->peer_args, "rooms", "%d", s->rooms);
    bench_peer_args_add(&p->peer_args, "users", "%d", s->users);
    bench_peer_args_add(&p->peer_args, "messages", "%d", s->messages);
    bench_peer_args_add(&p->peer_args, "msg_bytes", "%d", s->bytes);
    bench_peer_args_add(&p->peer_args, "transport", "%s",
                        s->tcp ? "tcp" : "chan");
}

/* ----- Options and the table entry ----- */

struct chat_args {
    int *rooms, nrooms;
    struct chat_shape s; /* users, messages, bytes; rooms: the point's */
};

static int chat_options(bench_sweep_t *sw, int *argc, char **argv)
{
    struct chat_args *a = sw->arg;
    const char *v[5] = {"1,10", "20", "100", "100", "tcp"};
    const bench_xopt_t xo[] = {
        {"rooms", &v[0], NULL, 0, 0},
        {"users", &v[1], &a->s.users, 2, 1000},
        {"messages", &v[2], &a->s.messages, 1, 100000000},
        {"msg-bytes", &v[3], &a->s.bytes, CHAT_MIN_BYTES, CHAT_MAX_BYTES},
        {"transport", &v[4], NULL, 0, 0},
        {0}};
    int rc = bench_take_options("chat", argc, argv, xo, NULL);
    a->s.tcp = !strcmp(v[4], "tcp");
    if (rc == 0 && !a->s.tcp && strcmp(v[4], "chan")) {
        fprintf(stderr, "mqs-bench chat: --transport %s: expected tcp or "
                        "chan\n", v[4]);
        rc = BENCH_EXIT_USAGE;
    }
    if (rc == 0)
        rc = bench_parse_int_list("chat", "--rooms", v[0], 1, 1000, &a->rooms,
                                  &a->nrooms);
    sw->nparams = a->nrooms;
    return rc;
}

static int chat_setup(bench_sweep_t *sw, int i, bench_point_t *p)
{
    struct chat_args *a = sw->arg;
    a->s.rooms = a->rooms[i];
    chat_peer_args(p, &a->s);
    p->unit = "msgs/s";
    p->ctx = &a->s;
    snprintf(p->param, sizeof p->param, "rooms=%d", a->s.rooms);
    return 0;
}

static void chat_done(bench_sweep_t *sw)
{
    free(((struct chat_args *)sw->arg)->rooms);
}

const bench_exp_t bench_chat_exp = {
    .cli = &chat_cli,
    .arg_size = sizeof(struct chat_args),
    .title = "messages delivered per second",
    .extras = chat_extras,
    .nextra = CHAT_X_COUNT,
    .kind = &chat_kind,
    .kinds = chat_kinds,
    .options = chat_options,
    .setup = chat_setup,
    .done = chat_done,
};
