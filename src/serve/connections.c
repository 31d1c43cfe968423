/* The caps on ted serve's connections (serve/connections.h). */
#include "serve/connections.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ted/util.h"

/* A client's address as the caps on connections count it: IPv4, or the
 * /64 network of IPv6 (one host's share), an IPv4-mapped address as IPv4. */
static void client_key(const struct sockaddr *address, unsigned char key[CLIENT_KEY])
{
    memset(key, 0, CLIENT_KEY);
    if (address && address->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)address)->sin_addr, 4);
    } else if (address && address->sa_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)address)->sin6_addr;
        bool mapped = IN6_IS_ADDR_V4MAPPED(v6);
        key[0] = mapped ? 4 : 6;
        memcpy(key + 1, v6->s6_addr + (mapped ? 12 : 0), mapped ? 4 : 8);
    }
}

void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
    server *s = cls;
    tracked *t = *socket_context;
    pthread_mutex_lock(&s->lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED && (t = calloc(1, sizeof *t))) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *client =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *t = (tracked){.fd = info ? info->connect_fd : -1, .waiting_since = ted_seconds(),
                       .next = s->connections};
        client_key(client ? client->client_addr : NULL, t->client);
        if (s->connections)
            s->connections->prev = t;
        s->connections = t;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && t) {
        *(t->prev ? &t->prev->next : &s->connections) = t->next;
        if (t->next)
            t->next->prev = t->prev;
        free(t);
        t = NULL;
    }
    *socket_context = t;
    pthread_mutex_unlock(&s->lock);
}

/* Called when a request line has come: the connection is no longer idle. */
void *http_request_begins(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)uri;
    server *s = cls;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&s->lock);
    if (info && info->socket_context)
        ((tracked *)info->socket_context)->receiving = true;
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Closes the connection that has waited longest, of the client `key`
 * (NULL: of any client): an idle one if there is one, else one still
 * sending its request; never one being answered. False when none is left.
 * The lock is held. */
static bool evict(server *s, const unsigned char *key)
{
    tracked *victim = NULL;
    for (tracked *t = s->connections; t; t = t->next) {
        if (t->cut || t->answering || t->fd < 0 || (key && memcmp(t->client, key, CLIENT_KEY)))
            continue;
        if (!victim || (victim->receiving && !t->receiving) ||
            (victim->receiving == t->receiving && t->waiting_since < victim->waiting_since))
            victim = t;
    }
    if (!victim)
        return false;
    shutdown(victim->fd, SHUT_RDWR);
    victim->cut = true;
    s->evicted++;
    return true;
}

/* libmicrohttpd's accept policy: a new connection is taken when it finds
 * room under --max-connections and --max-connections-per-client, making
 * room by closing the longest-waiting idle connection (of the same client
 * when that client is at its cap). */
enum MHD_Result http_admit(void *cls, const struct sockaddr *address, socklen_t length)
{
    (void)length;
    server *s = cls;
    unsigned char key[CLIENT_KEY];
    client_key(address, key);
    pthread_mutex_lock(&s->lock);
    int total = 0, mine = 0;
    for (const tracked *t = s->connections; t; t = t->next)
        if (!t->cut) {
            total++;
            mine += !memcmp(t->client, key, CLIENT_KEY);
        }
    bool room = mine >= s->config->max_client_connections ? evict(s, key)
                : total >= s->max_connections              ? evict(s, NULL)
                                                           : true;
    s->turned_away += !room;
    pthread_mutex_unlock(&s->lock);
    return room ? MHD_YES : MHD_NO;
}
