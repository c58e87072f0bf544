/*
 * test_examples.c - the README's programs work as shown: the TCP echo
 * server (examples/echo_server.c) started on a free port serves several
 * clients at once, each getting its own bytes back, while one client
 * that says nothing holds its connection open (its task blocks, not the
 * worker).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "helpers.h"
#include "net_helpers.h"

#ifndef ECHO_SERVER
#error "ECHO_SERVER: the example's path (tests/CMakeLists.txt)"
#endif

/* A connection to the server; a hung server fails the case. */
static int dial(int port)
{
    int fd = dial_loopback(port, 30000000000ull);
    struct timeval tv = {30, 0};
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    return fd;
}

TEST(the_readme_echo_server_serves_clients_at_once)
{
    /* A cross build runs the example under the emulator.  The server
     * never outlives the case by more than two minutes (timeout), and
     * holds none of the test's own output (2>&1: ctest waits for it). */
    const char *emu = getenv("MQS_TEST_EMULATOR");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "exec timeout 120 %s '%s' 0 2>&1",
             emu ? emu : "", ECHO_SERVER);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    char line[256];
    CHECK(fgets(line, sizeof line, p) != NULL);
    int port = 0, pid = 0;
    CHECK_EQ(sscanf(line, "listening on port %d (pid %d)", &port, &pid), 2);
    CHECK_GT(port, 0);
    /* A silent client first: with one worker blocked by its read, the
     * others would never be served. */
    int silent = dial(port);
    enum { N = 8 };
    int fd[N];
    for (int i = 0; i < N; i++)
        fd[i] = dial(port);
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < N; i++) {
            char msg[64];
            int n = snprintf(msg, sizeof msg, "client %d round %d", i, round);
            CHECK_EQ(send(fd[i], msg, (size_t)n, MSG_NOSIGNAL), n);
        }
        for (int i = 0; i < N; i++) {
            char want[64], got[64];
            int n = snprintf(want, sizeof want, "client %d round %d", i,
                             round);
            int have = 0;
            while (have < n) {
                ssize_t r = recv(fd[i], got + have, (size_t)(n - have), 0);
                CHECK_GT(r, 0);
                have += (int)r;
            }
            CHECK(memcmp(got, want, (size_t)n) == 0);
        }
    }
    for (int i = 0; i < N; i++)
        close(fd[i]);
    close(silent);
    CHECK_EQ(kill(pid, SIGTERM), 0);
    pclose(p);
}
