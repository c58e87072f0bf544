/*
 * io.c - the I/O calls: mqs_read, mqs_write (and their timed forms),
 * readv/writev, the socket calls (recv, send, recvfrom, sendto, recvmsg,
 * sendmsg, accept, connect), mqs_fd_wait and mqs_close.  Each tries the system call; on EAGAIN a
 * task waits on the descriptor (poll.c) and tries again, so only the
 * task blocks.  A regular file, which epoll cannot watch and which is
 * always "ready" while its read may still wait for a disk, goes to the
 * offload pool instead (offload.c).  From a thread that is not a task
 * the same calls block that thread (poll(2) where the runtime made the
 * file non-blocking).
 *
 * Errors.  An error of the system call comes back as MQS_EOS(errno), in
 * the same negative space as the MQS_E* codes (mqs.h): no errno is set,
 * so the calls mean the same from a task, whose errno the preload layer
 * of mqs-run will keep per task, and from any thread.
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* The arguments of every call, and the call itself as an op on them. */
struct io_args {
    void *buf;
    size_t n;
    const struct iovec *iov;
    int iovcnt;
    int flags;
    struct sockaddr *addr;    /* recvfrom, accept: the peer             */
    socklen_t *addrlen;
    const struct sockaddr *to; /* sendto                                */
    socklen_t tolen;
    struct msghdr *msg;
};
typedef ssize_t (*io_op)(int fd, struct io_args *a);

static ssize_t op_read(int fd, struct io_args *a)
{
    return read(fd, a->buf, a->n);
}
static ssize_t op_write(int fd, struct io_args *a)
{
    return write(fd, a->buf, a->n);
}
static ssize_t op_readv(int fd, struct io_args *a)
{
    return readv(fd, a->iov, a->iovcnt);
}
static ssize_t op_writev(int fd, struct io_args *a)
{
    return writev(fd, a->iov, a->iovcnt);
}
static ssize_t op_recv(int fd, struct io_args *a)
{
    return recvfrom(fd, a->buf, a->n, a->flags, a->addr, a->addrlen);
}
static ssize_t op_send(int fd, struct io_args *a)
{
    return sendto(fd, a->buf, a->n, a->flags, a->to, a->tolen);
}
static ssize_t op_recvmsg(int fd, struct io_args *a)
{
    return recvmsg(fd, a->msg, a->flags);
}
static ssize_t op_sendmsg(int fd, struct io_args *a)
{
    return sendmsg(fd, a->msg, a->flags);
}
static ssize_t op_accept(int fd, struct io_args *a)
{
    return accept4(fd, a->addr, a->addrlen, a->flags);
}

/* A regular file's call on the offload pool, its errno taken there. */
struct file_call {
    io_op op;
    int fd;
    struct io_args *a;
    int err;
};

static void *file_call_run(void *arg)
{
    struct file_call *c = arg;
    ssize_t r = c->op(c->fd, c->a);
    c->err = r < 0 ? errno : 0;
    return (void *)r;
}

static ssize_t file_call(io_op op, int fd, struct io_args *a)
{
    struct file_call c = {op, fd, a, 0};
    void *res = NULL;
    int rc = mqs_offload(file_call_run, &c, &res);
    if (rc)
        return rc;
    return c.err ? MQS_EOS(c.err) : (ssize_t)(intptr_t)res;
}

/* A thread that is not a task: poll(2) until ready or the deadline (0:
 * none; try_only: one look). */
static int wait_thread(int fd, int dir, uint64_t deadline, bool try_only)
{
    struct pollfd pfd = {fd, (short)(dir ? POLLOUT : POLLIN), 0};
    for (;;) {
        int ms = -1;
        if (try_only) {
            ms = 0;
        } else if (deadline) {
            uint64_t now = mqs_now_ns();
            if (now >= deadline)
                return MQS_ETIMEDOUT;
            uint64_t left = (deadline - now + 999999) / 1000000;
            ms = left > INT32_MAX ? INT32_MAX : (int)left;
        }
        int r = poll(&pfd, 1, ms);
        if (r > 0)
            return pfd.revents & POLLNVAL ? MQS_EOS(EBADF) : 0;
        if (r < 0 && errno != EINTR)
            return MQS_EOS(errno);
        if (try_only)
            return MQS_ETIMEDOUT;
    }
}

/* The caller's runtime when it is a task (its descriptor registered),
 * else NULL.  *rc: an error that ends the call. */
static mqs_runtime_t *io_begin(int fd, struct mqs__fd **d, int *rc)
{
    struct mqs_worker *w = mqs__worker_self();
    *rc = fd < 0 ? MQS_EINVAL : mqs__rt_gate(w);
    if (*rc || !w || !w->curr)
        return NULL;
    mqs_runtime_t *rt = w->rt;
    /* A stop deferred while the task was in a system call's wrapper is
     * taken here, at its next call (preempt.c), rather than by another
     * signal that would most likely land in the next system call. */
    if (atomic_load_explicit(&w->pre.missed, memory_order_relaxed))
        mqs__preempt_take_missed(w);
    *rc = mqs__fd_register(rt, fd, d);
    return rt;
}

/* op's system call, marked as an I/O call's (preempt.c,
 * mqs__preempt_syscall_begin): a stop deferred inside it is taken as it
 * returns.  Its errno in *err (0 on success), read before that stop,
 * whose scheduling point may make system calls of its own. */
static ssize_t io_syscall(io_op op, int fd, struct io_args *a, int *err)
{
    struct mqs_worker *w = mqs__preempt_syscall_begin();
    ssize_t r = op(fd, a);
    *err = r < 0 ? errno : 0;
    mqs__preempt_syscall_end(w);
    return r;
}

/* One call of op, waiting out EAGAIN; deadline 0: none. */
static ssize_t io_once(int fd, int dir, io_op op, struct io_args *a,
                       uint64_t deadline, bool try_only)
{
    struct mqs__fd *d = NULL;
    int rc;
    mqs_runtime_t *rt = io_begin(fd, &d, &rc);
    if (rc)
        return rc;
    if (rt && atomic_load(&d->file))
        return file_call(op, fd, a);
    unsigned seq = rt ? atomic_load(&d->seq) : 0;
    for (;;) {
        unsigned ticket = rt ? mqs__fd_ticket(d, dir) : 0;
        int e;
        ssize_t r = io_syscall(op, fd, a, &e);
        if (r >= 0)
            return r;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return MQS_EOS(e);
        if (try_only)
            return MQS_ETIMEDOUT;
        /* A task may resume on another worker: only rt from here. */
        rc = rt ? mqs__fd_wait(rt, d, seq, dir, ticket, deadline)
                : wait_thread(fd, dir, deadline, false);
        if (rc)
            return rc;
    }
}

static uint64_t deadline_of(uint64_t timeout_ns)
{
    return timeout_ns == MQS_FOREVER ? 0 : mqs__deadline(timeout_ns);
}

/* One call, waiting for readiness up to timeout_ns (0: do not wait). */
static ssize_t io_timed(int fd, int dir, io_op op, struct io_args *a,
                        uint64_t timeout_ns)
{
    return io_once(fd, dir, op, a, deadline_of(timeout_ns),
                   timeout_ns == 0);
}

ssize_t mqs_read(int fd, void *buf, size_t n)
{
    return mqs_read_timed(fd, buf, n, MQS_FOREVER);
}

ssize_t mqs_read_timed(int fd, void *buf, size_t n, uint64_t timeout_ns)
{
    struct io_args a = {.buf = buf, .n = n};
    return io_timed(fd, 0, op_read, &a, timeout_ns);
}

/* Every byte, as a blocking write(2) or send(2) would: a short count only
 * when an error or the deadline comes after some were written. */
static ssize_t send_all(int fd, io_op op, struct io_args *a,
                        uint64_t timeout_ns)
{
    uint64_t deadline = deadline_of(timeout_ns);
    size_t done = 0, n = a->n;
    char *base = a->buf;
    do {
        a->buf = base + done;
        a->n = n - done;
        ssize_t r = io_once(fd, 1, op, a, deadline, timeout_ns == 0);
        if (r < 0)
            return done ? (ssize_t)done : r;
        done += (size_t)r;
    } while (done < n);
    return (ssize_t)done;
}

ssize_t mqs_write(int fd, const void *buf, size_t n)
{
    return mqs_write_timed(fd, buf, n, MQS_FOREVER);
}

ssize_t mqs_write_timed(int fd, const void *buf, size_t n,
                        uint64_t timeout_ns)
{
    struct io_args a = {.buf = (void *)buf, .n = n};
    return send_all(fd, op_write, &a, timeout_ns);
}

ssize_t mqs_readv(int fd, const struct iovec *iov, int iovcnt,
                  uint64_t timeout_ns)
{
    struct io_args a = {.iov = iov, .iovcnt = iovcnt};
    return io_timed(fd, 0, op_readv, &a, timeout_ns);
}

ssize_t mqs_writev(int fd, const struct iovec *iov, int iovcnt,
                   uint64_t timeout_ns)
{
    struct io_args a = {.iov = iov, .iovcnt = iovcnt};
    return io_timed(fd, 1, op_writev, &a, timeout_ns);
}

ssize_t mqs_recv(int fd, void *buf, size_t n, int flags,
                 uint64_t timeout_ns)
{
    struct io_args a = {.buf = buf, .n = n, .flags = flags};
    return io_timed(fd, 0, op_recv, &a, timeout_ns);
}

ssize_t mqs_recvfrom(int fd, void *buf, size_t n, int flags,
                     struct sockaddr *from, socklen_t *fromlen,
                     uint64_t timeout_ns)
{
    struct io_args a = {.buf = buf, .n = n, .flags = flags, .addr = from,
                        .addrlen = fromlen};
    return io_timed(fd, 0, op_recv, &a, timeout_ns);
}

ssize_t mqs_send(int fd, const void *buf, size_t n, int flags,
                 uint64_t timeout_ns)
{
    struct io_args a = {.buf = (void *)buf, .n = n, .flags = flags};
    return send_all(fd, op_send, &a, timeout_ns);
}

ssize_t mqs_sendto(int fd, const void *buf, size_t n, int flags,
                   const struct sockaddr *to, socklen_t tolen,
                   uint64_t timeout_ns)
{
    struct io_args a = {.buf = (void *)buf, .n = n, .flags = flags,
                        .to = to, .tolen = tolen};
    return send_all(fd, op_send, &a, timeout_ns);
}

ssize_t mqs_recvmsg(int fd, struct msghdr *msg, int flags,
                    uint64_t timeout_ns)
{
    struct io_args a = {.msg = msg, .flags = flags};
    return io_timed(fd, 0, op_recvmsg, &a, timeout_ns);
}

ssize_t mqs_sendmsg(int fd, const struct msghdr *msg, int flags,
                    uint64_t timeout_ns)
{
    struct io_args a = {.msg = (struct msghdr *)msg, .flags = flags};
    return io_timed(fd, 1, op_sendmsg, &a, timeout_ns);
}

int mqs_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags,
               uint64_t timeout_ns)
{
    struct io_args a = {.addr = addr, .addrlen = addrlen, .flags = flags};
    return (int)io_timed(fd, 0, op_accept, &a, timeout_ns);
}

int mqs_connect(int fd, const struct sockaddr *addr, socklen_t len,
                uint64_t timeout_ns)
{
    struct mqs__fd *d = NULL;
    int rc;
    mqs_runtime_t *rt = io_begin(fd, &d, &rc);
    if (rc)
        return rc;
    if (connect(fd, addr, len) == 0)
        return 0;
    int e = errno;
    if (e != EINPROGRESS && e != EINTR)
        return MQS_EOS(e);
    /* In progress: writable or in error once it is done (look: the edge
     * may have come before the ticket), then SO_ERROR says how. */
    uint64_t deadline = deadline_of(timeout_ns);
    unsigned seq = rt ? atomic_load(&d->seq) : 0;
    for (;;) {
        unsigned ticket = rt ? mqs__fd_ticket(d, 1) : 0;
        struct pollfd pfd = {fd, POLLOUT, 0};
        if (poll(&pfd, 1, 0) > 0)
            break;
        if (timeout_ns == 0)
            return MQS_ETIMEDOUT;
        rc = rt ? mqs__fd_wait(rt, d, seq, 1, ticket, deadline)
                : wait_thread(fd, 1, deadline, false);
        if (rc)
            return rc;
    }
    int err = 0;
    socklen_t n = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n) != 0)
        return MQS_EOS(errno);
    return err ? MQS_EOS(err) : 0;
}

int mqs_fd_wait(int fd, int events, uint64_t timeout_ns)
{
    if (events != POLLIN && events != POLLOUT)
        return MQS_EINVAL;
    int dir = events == POLLOUT;
    struct mqs__fd *d = NULL;
    int rc;
    mqs_runtime_t *rt = io_begin(fd, &d, &rc);
    if (rc)
        return rc;
    uint64_t deadline = deadline_of(timeout_ns);
    if (!rt || atomic_load(&d->file))
        return rt ? 0 : wait_thread(fd, dir, deadline, timeout_ns == 0);
    /* Ready now (the edge may have come before the registration)? */
    unsigned seq = atomic_load(&d->seq);
    unsigned ticket = mqs__fd_ticket(d, dir);
    struct pollfd pfd = {fd, (short)events, 0};
    int r = poll(&pfd, 1, 0);
    if (r > 0)
        return pfd.revents & POLLNVAL ? MQS_EOS(EBADF) : 0;
    if (r < 0 && errno != EINTR)
        return MQS_EOS(errno);
    if (timeout_ns == 0)
        return MQS_ETIMEDOUT;
    return mqs__fd_wait(rt, d, seq, dir, ticket, deadline);
}

int mqs_close(int fd)
{
    if (fd < 0)
        return MQS_EINVAL;
    struct mqs_worker *w = mqs__worker_self();
    int rc = mqs__rt_gate(w);
    if (rc)
        return rc;
    /* May wake (and so switch): w is not used after it. */
    if (w && w->curr)
        mqs__fd_forget(w->rt, fd);
    return close(fd) == 0 ? 0 : MQS_EOS(errno);
}
