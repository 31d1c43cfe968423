/* ted serve's connections, tracked from libmicrohttpd's callbacks: each
 * one's client and state, and the caps (--max-connections, in all and per
 * client address) that a new connection must find room under, made by
 * closing the longest-waiting idle one. */
#ifndef TED_SERVE_CONNECTIONS_H
#define TED_SERVE_CONNECTIONS_H

#include "serve/http.h"

void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code);
/* Called when a request line has come: the connection is no longer idle. */
void *http_request_begins(void *cls, const char *uri, struct MHD_Connection *c);
/* libmicrohttpd's accept policy: a new connection is taken when it finds
 * room under --max-connections and --max-connections-per-client, making
 * room by closing the longest-waiting idle connection (of the same client
 * when that client is at its cap). */
enum MHD_Result http_admit(void *cls, const struct sockaddr *address, socklen_t length);

#endif
