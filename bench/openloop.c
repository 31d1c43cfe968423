/* Open-loop HTTP load for make bench-serve (bench/serve_bench.py).
 *
 *     openloop PORT RATE WARMUP SECONDS SEED BODIES [PATH]
 *     openloop PORT cN WARMUP SECONDS SEED BODIES [PATH]
 *
 * BODIES: one request per line, "CLASS<TAB>JSON": a class name (short,
 * long, other) and the JSON body of a POST to PATH (default
 * /v1/translate; /translate for LibreTranslate's API). Requests arrive at
 * random (a Poisson process of RATE a second: exponential gaps, drawn from
 * SEED), each a body chosen at random, whether or not the earlier ones are
 * answered, for WARMUP then SECONDS seconds. A request goes out on a kept
 * connection that is free, or on a new one. Its latency runs from its
 * scheduled arrival to the last byte of its answer, so a generator that
 * falls behind adds to the latencies instead of hiding them.
 *
 * With cN for RATE, a closed loop instead: N requests always in flight,
 * the next sent as soon as one is answered (c1: one at a time, the
 * unloaded latency; c64: the saturation throughput).
 *
 * Prints, for each request that arrived after the warm-up, "CLASS STATUS
 * LATENCY_US", then "answered N": the answers (any status) whose last byte
 * came within the measured seconds. A request still unanswered LINGER
 * seconds after the end is given up and printed with status 0 (a server
 * that stops accepting connections past a limit of its own would otherwise
 * hold the generator for ever). One thread, epoll and a timerfd for
 * the arrivals: the generator takes a few percent of a core at thousands
 * of requests a second, and its own delays are at most the time it takes
 * to send a request (the Python asyncio loop this replaces took most of a
 * core at the toy model's rates, on the cores the server needed).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CONNECTIONS = 8192, BUFFER = 65536, LINGER = 60 };

typedef struct request_body {
    char kind[16];
    char *bytes;  /* the whole HTTP request */
    size_t length;
} request_body;

typedef struct connection {
    int fd;
    const request_body *request;  /* in flight, or NULL: free */
    size_t sent, got, header_end, content_length;
    double arrival;               /* scheduled, s on CLOCK_MONOTONIC */
    char buffer[BUFFER];
} connection;

static struct {
    int port, epoll, timer;
    connection *connections[MAX_CONNECTIONS];
    int count;
    int free_list[MAX_CONNECTIONS], free_count;
    double measured, until;
    long answered;
    long in_flight;
    int closed;                   /* requests kept in flight, or 0: the open loop */
    const request_body *bodies;
    int body_count;
} g;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fail(const char *what)
{
    fprintf(stderr, "openloop: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t rng_state;

static double uniform(void)  /* in (0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static request_body *read_bodies(const char *path, const char *target, int port, int *count)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail(path);
    request_body *bodies = NULL;
    int n = 0, capacity = 0;
    char *line = NULL;
    size_t size = 0;
    ssize_t got;
    while ((got = getline(&line, &size, f)) > 0) {
        char *tab = strchr(line, '\t');
        if (!tab)
            continue;
        line[got - 1] = line[got - 1] == '\n' ? '\0' : line[got - 1];
        *tab = '\0';
        if (n == capacity) {
            capacity = capacity ? 2 * capacity : 256;
            if (!(bodies = realloc(bodies, capacity * sizeof *bodies)))
                fail("bodies");
        }
        request_body *b = &bodies[n++];
        snprintf(b->kind, sizeof b->kind, "%s", line);
        size_t json = strlen(tab + 1);
        b->bytes = malloc(json + strlen(target) + 256);
        if (!b->bytes)
            fail("bodies");
        b->length = (size_t)sprintf(b->bytes,
                                    "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                                    target, port, json, tab + 1);
    }
    free(line);
    fclose(f);
    *count = n;
    return bodies;
}

static void watch(connection *c, uint32_t events, int op)
{
    struct epoll_event e = {.events = events, .data.ptr = c};
    if (epoll_ctl(g.epoll, op, c->fd, &e))
        fail("epoll_ctl");
}

static connection *open_connection(void)
{
    if (g.count == MAX_CONNECTIONS) {
        fprintf(stderr, "openloop: more than %d requests in flight\n", MAX_CONNECTIONS);
        exit(1);
    }
    connection *c = calloc(1, sizeof *c);
    if (!c)
        fail("connection");
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0)
        fail("socket");
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(g.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) && errno != EINPROGRESS)
        fail("connect");
    g.connections[g.count++] = c;
    watch(c, EPOLLOUT, EPOLL_CTL_ADD);
    return c;
}

static connection *free_connection(void)
{
    if (g.free_count > 0)
        return g.connections[g.free_list[--g.free_count]];
    return open_connection();
}

static void send_more(connection *c)
{
    while (c->sent < c->request->length) {
        ssize_t n = send(c->fd, c->request->bytes + c->sent, c->request->length - c->sent,
                         MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS || errno == ENOTCONN))
            return;
        if (n < 0)
            fail("send");
        c->sent += (size_t)n;
    }
    watch(c, EPOLLIN, EPOLL_CTL_MOD);
}

static void start(connection *c, const request_body *b, double arrival)
{
    c->request = b;
    c->arrival = arrival;
    c->sent = c->got = c->header_end = c->content_length = 0;
    g.in_flight++;
    send_more(c);
}

static int index_of(const connection *c)
{
    for (int i = 0; i < g.count; i++)
        if (g.connections[i] == c)
            return i;
    return -1;
}

/* Closes c and takes it out of the connections (and of the free ones). */
static void remove_connection(connection *c)
{
    int i = index_of(c);
    for (int k = 0; k < g.free_count; k++)
        if (g.free_list[k] == i)
            g.free_list[k--] = g.free_list[--g.free_count];
    close(c->fd);
    free(c);
    g.connections[i] = g.connections[--g.count];
    for (int k = 0; k < g.free_count; k++)
        if (g.free_list[k] == g.count)
            g.free_list[k] = i;
}

/* The server closed a kept connection before answering: the request goes
 * again on a new one, its arrival unchanged. */
static void reopen(connection *c)
{
    const request_body *b = c->request;
    double arrival = c->arrival;
    remove_connection(c);
    g.in_flight--;
    start(open_connection(), b, arrival);
}

/* Parses the status line and Content-Length once the headers are in. */
static void parse_headers(connection *c)
{
    char *end = memmem(c->buffer, c->got, "\r\n\r\n", 4);
    if (!end)
        return;
    c->header_end = (size_t)(end - c->buffer) + 4;
    for (char *p = c->buffer; p < end; p++)
        if ((*p == '\r' || *p == '\n') && strncasecmp(p + 1 + (*p == '\r'), "content-length:", 15) == 0)
            c->content_length = strtoul(p + 1 + (*p == '\r') + 15, NULL, 10);
}

static void start(connection *c, const request_body *b, double arrival);
static connection *free_connection(void);

static const request_body *any_body(void)
{
    return &g.bodies[(size_t)(uniform() * g.body_count)];
}

static void finish(connection *c)
{
    double end = now();
    int status = atoi(c->buffer + 9);
    if (c->arrival >= g.measured)
        printf("%s %d %.0f\n", c->request->kind, status, (end - c->arrival) * 1e6);
    if (end >= g.measured && end < g.until)
        g.answered++;
    c->request = NULL;
    g.in_flight--;
    g.free_list[g.free_count++] = index_of(c);
    watch(c, EPOLLRDHUP, EPOLL_CTL_MOD);  /* a server that closes it idle: remove it */
    if (g.closed && end < g.until)
        start(free_connection(), any_body(), end);
}

static void receive(connection *c)
{
    for (;;) {
        if (c->got == BUFFER) {
            fprintf(stderr, "openloop: an answer longer than %d bytes\n", BUFFER);
            exit(1);
        }
        ssize_t n = recv(c->fd, c->buffer + c->got, BUFFER - c->got, 0);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0 && c->got == 0) {
            reopen(c);
            return;
        }
        if (n <= 0)
            fail("recv");
        c->got += (size_t)n;
        if (!c->header_end)
            parse_headers(c);
        if (c->header_end && c->got >= c->header_end + c->content_length) {
            finish(c);
            return;
        }
    }
}

static void arm(double at)
{
    struct itimerspec t = {.it_value = {(time_t)at, (long)((at - (time_t)at) * 1e9)}};
    if (t.it_value.tv_sec == 0 && t.it_value.tv_nsec == 0)
        t.it_value.tv_nsec = 1;
    if (timerfd_settime(g.timer, TFD_TIMER_ABSTIME, &t, NULL))
        fail("timerfd_settime");
}

int main(int argc, char **argv)
{
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: openloop PORT RATE WARMUP SECONDS SEED BODIES [PATH]\n");
        return 2;
    }
    g.port = atoi(argv[1]);
    double rate = atof(argv[2]), warmup = atof(argv[3]), seconds = atof(argv[4]);
    rng_state = strtoull(argv[5], NULL, 10) * 0x9E3779B97F4A7C15ULL + 1;
    g.closed = argv[2][0] == 'c' ? atoi(argv[2] + 1) : 0;
    g.bodies = read_bodies(argv[6], argc == 8 ? argv[7] : "/v1/translate", g.port,
                           &g.body_count);
    if (g.body_count == 0 || (rate <= 0 && g.closed <= 0)) {
        fprintf(stderr, "openloop: no requests to send\n");
        return 2;
    }
    g.epoll = epoll_create1(0);
    g.timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    if (g.epoll < 0 || g.timer < 0)
        fail("epoll");
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(g.epoll, EPOLL_CTL_ADD, g.timer, &e);
    double begin = now() + 0.1, arrival = begin - log(uniform()) / rate;
    g.measured = begin + warmup;
    g.until = g.measured + seconds;
    if (g.closed) {
        arrival = g.until;  /* no arrivals: the answers start the next requests */
        for (int k = 0; k < g.closed; k++)
            start(free_connection(), any_body(), now());
    } else {
        arm(arrival);
    }
    struct epoll_event events[256];
    while ((arrival < g.until || g.in_flight > 0) && now() < g.until + LINGER) {
        int n = epoll_wait(g.epoll, events, 256, 1000);
        if (n < 0 && errno != EINTR)
            fail("epoll_wait");
        for (int i = 0; i < n; i++) {
            connection *c = events[i].data.ptr;
            if (!c) {
                uint64_t expirations;
                if (read(g.timer, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
                    fail("timerfd");
                for (double t = now(); arrival < g.until && arrival <= t;
                     arrival -= log(uniform()) / rate)
                    start(free_connection(), any_body(), arrival);
                if (arrival < g.until)
                    arm(arrival);
            } else if (c->request && c->sent < c->request->length) {
                send_more(c);
            } else if (c->request) {
                receive(c);
            } else {
                remove_connection(c);  /* a free connection that the server closed */
            }
        }
    }
    for (int i = 0; i < g.count; i++) {
        const connection *c = g.connections[i];
        if (c->request && c->arrival >= g.measured)
            printf("%s 0 %.0f\n", c->request->kind, (now() - c->arrival) * 1e6);
    }
    printf("answered %ld\n", g.answered);
    return 0;
}
