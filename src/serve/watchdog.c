/* ted serve's watchdog (serve/watchdog.h). */
#include "serve/watchdog.h"

#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "ted/util.h"

/* Whether the client's bytes wait in the socket, sent but not yet read:
 * then the server is behind, not the client. */
static bool unread(int fd)
{
    int bytes = 0;
    return ioctl(fd, FIONREAD, &bytes) == 0 && bytes > 0;
}

/* Cuts the connections that took over --timeout to send their request
 * (headers and body): a slow client must not hold a connection forever;
 * closes those that sent no request line for --idle-timeout. Neither while
 * bytes the client sent wait unread: the server is behind then. */
static void cut_late_connections(server *s)
{
    const serve_config *config = s->config;
    double limit = config->timeout, t = ted_seconds();
    double idle = config->idle_timeout < config->timeout ? config->idle_timeout : limit;
    for (tracked *c = s->connections; c; c = c->next) {
        if (c->answering || c->cut || c->fd < 0)
            continue;
        if (t - c->waiting_since <= (c->receiving ? limit : idle) || unread(c->fd))
            continue;
        shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        if (c->receiving)
            fprintf(stderr, "ted serve: cut a connection: no whole request in %d s (--timeout)\n",
                    config->timeout);
    }
}

/* Says, at most once a second, how many connections were closed or
 * refused to keep within the caps. */
static void log_turned_away(server *s)
{
    double t = ted_seconds();
    if ((!s->evicted && !s->turned_away) || t - s->logged_at < 1.0)
        return;
    fprintf(stderr, "ted serve: at the connection caps (--max-connections %d, "
            "--max-connections-per-client %d): closed %d waiting connections, refused %d\n",
            s->max_connections, s->config->max_client_connections, s->evicted, s->turned_away);
    s->evicted = s->turned_away = 0;
    s->logged_at = t;
}

void *http_watchdog_main(void *arg)
{
    server *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        cut_late_connections(s);
        log_turned_away(s);
        struct timespec until = ted_deadline(CLOCK_MONOTONIC, WATCH_MS);
        pthread_cond_timedwait(&s->stop_watch, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}
