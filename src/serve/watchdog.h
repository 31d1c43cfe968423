/* ted serve's watchdog thread: every WATCH_MS it cuts the connections that
 * take longer than --timeout to send a request and closes those idle past
 * --idle-timeout, and says how many connections the caps closed or
 * refused. */
#ifndef TED_SERVE_WATCHDOG_H
#define TED_SERVE_WATCHDOG_H

#include "serve/http.h"

void *http_watchdog_main(void *arg);

#endif
