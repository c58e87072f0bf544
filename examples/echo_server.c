/* echo_server.c - the README's TCP echo server: a task per connection,
 * each blocking only itself in mqs_recv/mqs_send.  Usage: echo_server
 * [PORT] (default 7007; 0: any free port, printed). */
#include <mqs.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static void *serve(void *arg)                   /* one task per connection */
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    ssize_t n;
    while ((n = mqs_recv(fd, buf, sizeof buf, 0, MQS_FOREVER)) > 0)
        if (mqs_send(fd, buf, (size_t)n, MSG_NOSIGNAL, MQS_FOREVER) < 0)
            break;
    mqs_close(fd);
    return NULL;
}

static void *server(void *arg)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)*(int *)arg)};
    socklen_t len = sizeof a;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (bind(ls, (struct sockaddr *)&a, len) || listen(ls, 128) ||
        getsockname(ls, (struct sockaddr *)&a, &len))
        return perror("echo_server"), NULL;
    printf("listening on port %d (pid %d)\n", ntohs(a.sin_port), getpid());
    fflush(stdout);
    mqs_task_attr_t at;
    mqs_task_attr_init(&at);
    at.detached = true;
    for (int fd; (fd = mqs_accept(ls, NULL, NULL, 0, MQS_FOREVER)) >= 0;) {
        mqs_task_t *t;
        mqs_spawn(mqs_runtime_self(), &t, &at, serve, (void *)(intptr_t)fd);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int port = argc > 1 ? atoi(argv[1]) : 7007;
    return mqs_main(NULL, server, &port, NULL) ? 1 : 0;
}
