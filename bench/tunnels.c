// Opens N concurrent CONNECT tunnels through an HTTP proxy and holds them idle.
//
//   tunnels PROXY_HOST PROXY_PORT N [PROXY_AUTHORIZATION_VALUE]
//
// It is its own upstream: it listens on 127.0.0.1 (a port of the kernel's choosing) in a forked child, which
// accepts and holds the proxy's upstream connections (so each process needs only ~N descriptors), asks the
// proxy to CONNECT there, and counts a tunnel as open only when the proxy answered 200 AND the proxy's
// upstream connection arrived at the listener. At most 128 handshakes are in flight at once; it gives up when
// none completes for 15 s. When all N are open (or on failure) it prints one line
//   ready OPEN UPSTREAM_ACCEPTED FAILED
// and then holds every tunnel open until its stdin reaches EOF, then closes everything and exits 0 (1 if
// fewer than N tunnels opened). Raise `ulimit -n` above N+64 first.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { IN_FLIGHT = 128, TIMEOUT_S = 300, STALL_S = 15 };

struct tunnel {
    int fd;
    int state;  // 0 connecting, 1 sent, 2 open, 3 failed
    size_t got;
    char buf[512];
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char* what) {
    perror(what);
    exit(2);
}

int main(int argc, char** argv) {
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s PROXY_HOST PROXY_PORT N [PROXY_AUTHORIZATION_VALUE]\n", argv[0]);
        return 2;
    }
    const char* auth = argc == 5 ? argv[4] : NULL;
    long n = strtol(argv[3], NULL, 10);
    if (n <= 0 || n > 1000000) {
        fprintf(stderr, "bad N\n");
        return 2;
    }
    struct sockaddr_in proxy = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &proxy.sin_addr) != 1) {
        fprintf(stderr, "bad proxy address %s\n", argv[1]);
        return 2;
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) die("socket");
    struct sockaddr_in up = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(lfd, (struct sockaddr*)&up, sizeof up) < 0) die("bind");
    if (listen(lfd, 4096) < 0) die("listen");
    socklen_t ul = sizeof up;
    getsockname(lfd, (struct sockaddr*)&up, &ul);
    int upport = ntohs(up.sin_port);

    // The acceptor: a child that holds every upstream connection; it counts them in a shared page.
    volatile long* accepted_count =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (accepted_count == MAP_FAILED) die("mmap");
    *accepted_count = 0;
    pid_t parent = getpid();
    pid_t acceptor = fork();
    if (acceptor < 0) die("fork");
    if (acceptor == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);
        int aep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event aev = {.events = EPOLLIN};
        epoll_ctl(aep, EPOLL_CTL_ADD, lfd, &aev);
        for (;;) {
            struct epoll_event got;
            if (epoll_wait(aep, &got, 1, -1) < 0 && errno != EINTR) _exit(1);
            for (;;) {
                int a = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (a < 0) {
                    if (errno == EMFILE || errno == ENFILE) {
                        perror("tunnels: acceptor: accept (raise ulimit -n)");
                        _exit(1);
                    }
                    break;
                }
                __atomic_add_fetch(accepted_count, 1, __ATOMIC_SEQ_CST);  // held open until this process ends
            }
        }
    }
    close(lfd);

    char req[1024];
    int reqlen;
    if (auth)
        reqlen =
            snprintf(req, sizeof req,
                     "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nProxy-Authorization: %s\r\n\r\n",
                     upport, upport, auth);
    else
        reqlen = snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
                          upport, upport);

    struct tunnel* t = calloc((size_t)n, sizeof *t);
    if (!t) die("calloc");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev;

    long next = 0, inflight = 0, open = 0, failed = 0, nacc = 0;
    double deadline = now() + TIMEOUT_S;
    struct epoll_event evs[256];
    double settle = 0;  // once every handshake is done: a few seconds for the last upstream accepts to arrive
    long last_done = -1;
    double last_progress = now();
    while (now() < deadline) {
        nacc = __atomic_load_n(accepted_count, __ATOMIC_SEQ_CST);
        if (open + failed != last_done) {
            last_done = open + failed;
            last_progress = now();
        } else if (now() - last_progress > STALL_S) {
            fprintf(stderr, "tunnels: no progress for %d s; giving up on %ld handshakes\n", STALL_S,
                    n - open - failed);
            break;
        }
        if (open + failed >= n) {
            if (nacc >= open) break;
            if (settle == 0) settle = now() + 5;
            if (now() > settle) break;
        }
        while (next < n && inflight < IN_FLIGHT) {
            struct tunnel* c = &t[next];
            c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (c->fd < 0) {
                perror("tunnels: socket (raise ulimit -n)");
                c->state = 3;
                failed++;
                next++;
                continue;
            }
            int r = connect(c->fd, (struct sockaddr*)&proxy, sizeof proxy);
            if (r < 0 && errno != EINPROGRESS) {
                c->state = 3;
                failed++;
                close(c->fd);
                next++;
                continue;
            }
            ev.events = EPOLLOUT | EPOLLIN;
            ev.data.u64 = (uint64_t)next;
            epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
            inflight++;
            next++;
        }
        int k = epoll_wait(ep, evs, 256, 1000);
        for (int i = 0; i < k; i++) {
            struct tunnel* c = &t[evs[i].data.u64];
            if (c->state == 0 && (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
                int err = 0;
                socklen_t el = sizeof err;
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err || write(c->fd, req, (size_t)reqlen) != reqlen) {
                    c->state = 3;
                } else {
                    c->state = 1;
                    ev.events = EPOLLIN;
                    ev.data.u64 = evs[i].data.u64;
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                    continue;
                }
            } else if (c->state == 1) {
                ssize_t r = read(c->fd, c->buf + c->got, sizeof c->buf - 1 - c->got);
                if (r <= 0) {
                    if (r < 0 && errno == EAGAIN) continue;
                    c->state = 3;
                } else {
                    c->got += (size_t)r;
                    c->buf[c->got] = 0;
                    if (strstr(c->buf, "\r\n\r\n")) {
                        c->state = (strncmp(c->buf, "HTTP/1.", 7) == 0 && strncmp(c->buf + 8, " 200", 4) == 0)
                                       ? 2
                                       : 3;
                        if (c->state == 3 && failed == 0)
                            fprintf(stderr, "tunnels: refused: %.80s\n", c->buf);
                    } else if (c->got >= sizeof c->buf - 1) {
                        c->state = 3;
                    } else {
                        continue;
                    }
                }
            }
            if (c->state >= 2) {
                // Done with the handshake either way: an open tunnel stays registered with no interest
                // (idle).
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                inflight--;
                if (c->state == 2) {
                    open++;
                } else {
                    failed++;
                    close(c->fd);
                }
            }
        }
    }
    nacc = __atomic_load_n(accepted_count, __ATOMIC_SEQ_CST);
    printf("ready %ld %ld %ld\n", open, nacc, failed + (n - open - failed));
    fflush(stdout);

    char sink[64];
    while (read(0, sink, sizeof sink) > 0) {
    }
    for (long i = 0; i < n; i++)
        if (t[i].state == 2) close(t[i].fd);
    kill(acceptor, SIGKILL);
    waitpid(acceptor, NULL, 0);
    return open == n ? 0 : 1;
}
