/*
 * io.c - the I/O calls: mqs_read, mqs_write (and their timed forms),
 * mqs_fd_wait and mqs_close.  Each tries the system call; on EAGAIN a
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
#include <unistd.h>

#include "internal.h"

typedef ssize_t (*io_op)(int fd, void *buf, size_t n);

static ssize_t do_read(int fd, void *buf, size_t n)
{
    return read(fd, buf, n);
}

static ssize_t do_write(int fd, void *buf, size_t n)
{
    return write(fd, buf, n);
}

/* A regular file's call on the offload pool, its errno taken there. */
struct file_call {
    io_op op;
    int fd;
    void *buf;
    size_t n;
    int err;
};

static void *file_call_run(void *arg)
{
    struct file_call *c = arg;
    ssize_t r = c->op(c->fd, c->buf, c->n);
    c->err = r < 0 ? errno : 0;
    return (void *)r;
}

static ssize_t file_call(io_op op, int fd, void *buf, size_t n)
{
    struct file_call c = {op, fd, buf, n, 0};
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
    *rc = mqs__fd_register(rt, fd, d);
    return rt;
}

/* One call of op, waiting out EAGAIN; deadline 0: none. */
static ssize_t io_once(int fd, int dir, io_op op, void *buf, size_t n,
                       uint64_t deadline, bool try_only)
{
    struct mqs__fd *d = NULL;
    int rc;
    mqs_runtime_t *rt = io_begin(fd, &d, &rc);
    if (rc)
        return rc;
    if (rt && atomic_load(&d->file))
        return file_call(op, fd, buf, n);
    unsigned seq = rt ? atomic_load(&d->seq) : 0;
    for (;;) {
        ssize_t r = op(fd, buf, n);
        if (r >= 0)
            return r;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return MQS_EOS(e);
        if (try_only)
            return MQS_ETIMEDOUT;
        /* A task may resume on another worker: only rt from here. */
        rc = rt ? mqs__fd_wait(rt, d, seq, dir, deadline)
                : wait_thread(fd, dir, deadline, false);
        if (rc)
            return rc;
    }
}

static uint64_t deadline_of(uint64_t timeout_ns)
{
    return timeout_ns == MQS_FOREVER ? 0 : mqs__deadline(timeout_ns);
}

ssize_t mqs_read(int fd, void *buf, size_t n)
{
    return io_once(fd, 0, do_read, buf, n, 0, false);
}

ssize_t mqs_read_timed(int fd, void *buf, size_t n, uint64_t timeout_ns)
{
    return io_once(fd, 0, do_read, buf, n, deadline_of(timeout_ns),
                   timeout_ns == 0);
}

/* Every byte, as a blocking write(2) would: a short count only when an
 * error or the deadline comes after some were written. */
static ssize_t write_all(int fd, const void *buf, size_t n,
                         uint64_t timeout_ns)
{
    uint64_t deadline = deadline_of(timeout_ns);
    size_t done = 0;
    do {
        ssize_t r = io_once(fd, 1, do_write, (char *)buf + done, n - done,
                            deadline, timeout_ns == 0);
        if (r < 0)
            return done ? (ssize_t)done : r;
        done += (size_t)r;
    } while (done < n);
    return (ssize_t)done;
}

ssize_t mqs_write(int fd, const void *buf, size_t n)
{
    return write_all(fd, buf, n, MQS_FOREVER);
}

ssize_t mqs_write_timed(int fd, const void *buf, size_t n,
                        uint64_t timeout_ns)
{
    return write_all(fd, buf, n, timeout_ns);
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
    struct pollfd pfd = {fd, (short)events, 0};
    int r = poll(&pfd, 1, 0);
    if (r > 0)
        return pfd.revents & POLLNVAL ? MQS_EOS(EBADF) : 0;
    if (r < 0 && errno != EINTR)
        return MQS_EOS(errno);
    if (timeout_ns == 0)
        return MQS_ETIMEDOUT;
    return mqs__fd_wait(rt, d, seq, dir, deadline);
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
