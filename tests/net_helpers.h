/*
 * net_helpers.h - loopback sockets for the I/O test programs: an address
 * on 127.0.0.1, a bound (and listening) socket on a free port, and a
 * connection to one.  Like helpers.h, each fails the current case
 * instead of returning an error; include it after check.h.
 *
 * The connection goes through mqs_connect, so it parks only the task in
 * a task and simply blocks a thread outside the runtime (include/mqs.h).
 */
#ifndef MQS_TEST_NET_HELPERS_H
#define MQS_TEST_NET_HELPERS_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "mqs.h"

/* 127.0.0.1:port (0: any port, for a bind). */
static inline struct sockaddr_in loopback_addr(int port)
{
    return (struct sockaddr_in){.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

/* A socket of type (SOCK_STREAM, SOCK_DGRAM, with flags) bound to a free
 * loopback port, listening with backlog when backlog > 0; *port gets the
 * port. */
static inline int bind_loopback(int type, int backlog, int *port)
{
    int s = socket(AF_INET, type, 0);
    CHECK_GE(s, 0);
    struct sockaddr_in a = loopback_addr(0);
    CHECK_EQ(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    if (backlog > 0)
        CHECK_EQ(listen(s, backlog), 0);
    socklen_t n = sizeof a;
    CHECK_EQ(getsockname(s, (struct sockaddr *)&a, &n), 0);
    *port = ntohs(a.sin_port);
    return s;
}

/* A listening TCP socket on a free loopback port. */
static inline int listen_loopback(int backlog, int *port)
{
    return bind_loopback(SOCK_STREAM | SOCK_CLOEXEC, backlog, port);
}

/* A TCP socket connected to 127.0.0.1:port within timeout_ns, with a
 * send buffer of sndbuf bytes when sndbuf > 0 (set before connecting). */
static inline int dial_loopback_buf(int port, uint64_t timeout_ns, int sndbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(fd, 0);
    if (sndbuf > 0)
        CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf,
                            sizeof sndbuf),
                 0);
    struct sockaddr_in a = loopback_addr(port);
    CHECK_OK(mqs_connect(fd, (struct sockaddr *)&a, sizeof a, timeout_ns));
    return fd;
}

static inline int dial_loopback(int port, uint64_t timeout_ns)
{
    return dial_loopback_buf(port, timeout_ns, 0);
}

#endif
