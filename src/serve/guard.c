/* What ted serve refuses from a request's headers (serve/guard.h). */
#include "serve/guard.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "serve/request.h"


/* ---- framing ----------------------------------------------------------------- */

/* What the header lines say about the framing and the Host. */
typedef struct header_scan {
    int lengths, hosts, encodings;  /* Content-Length, Host, Transfer-Encoding lines */
    bool bad_name;                  /* a header name with a space, or empty */
    const char *host;               /* the first Host */
    int codings, chunked;           /* transfer codings named; how many are chunked */
    bool last_chunked;              /* the final coding is chunked */
    char other[64];                 /* the first coding other than chunked */
} header_scan;

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Reads the comma-separated codings of one Transfer-Encoding line. */
static void read_codings(const char *value, header_scan *scan)
{
    for (const char *at = value; *at;) {
        while (*at == ',' || is_space(*at))
            at++;
        size_t n = strcspn(at, ",");
        while (n > 0 && is_space(at[n - 1]))
            n--;
        if (n == 0)
            break;
        bool chunked = n == 7 && !strncasecmp(at, "chunked", 7);
        scan->codings++;
        scan->chunked += chunked;
        scan->last_chunked = chunked;
        if (!chunked && !scan->other[0]) {
            char coding[sizeof scan->other];
            snprintf(coding, sizeof coding, "%.*s", (int)(n < 60 ? n : 60), at);
            serve_utf8_clean(coding, scan->other, sizeof scan->other);
        }
        at += strcspn(at, ",");
    }
}

static enum MHD_Result visit_header(void *data, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    header_scan *scan = data;
    value = value ? value : "";
    if (!key[0] || strpbrk(key, " \t"))
        scan->bad_name = true;
    else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
        scan->lengths++;
    else if (!strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
        scan->host = scan->hosts++ ? scan->host : value;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        scan->encodings++;
        read_codings(value, scan);
    }
    return MHD_YES;
}

/* RFC 9112 6.1 and 6.3: one way only to find where the body ends. */
static bool check_framing(const header_scan *scan, const char *version, serve_refusal *no)
{
    if (scan->bad_name)
        return serve_refuse(no, MHD_HTTP_BAD_REQUEST, "a header name is empty or holds a space");
    if (scan->lengths > 1)
        return serve_refuse(no, MHD_HTTP_BAD_REQUEST, "Content-Length is given %d times; give it once",
                      scan->lengths);
    if (!scan->encodings)
        return true;
    if (scan->lengths)
        return serve_refuse(no, MHD_HTTP_BAD_REQUEST,
                      "Content-Length and Transfer-Encoding together; give one of them");
    if (strcmp(version, MHD_HTTP_VERSION_1_1))
        return serve_refuse(no, MHD_HTTP_BAD_REQUEST, "Transfer-Encoding in a %s request",
                      version);
    if (!scan->last_chunked)
        return serve_refuse(no, MHD_HTTP_BAD_REQUEST,
                      "Transfer-Encoding: the final coding is not chunked");
    if (scan->chunked > 1)
        return serve_refuse(no, MHD_HTTP_BAD_REQUEST, "Transfer-Encoding: chunked more than once");
    if (scan->codings > 1)
        return serve_refuse(no, MHD_HTTP_NOT_IMPLEMENTED,
                      "Transfer-Encoding: %s is not supported; send the body as it is, "
                      "chunked or with a Content-Length", scan->other);
    return true;
}

/* ---- Host ------------------------------------------------------------------------ */

/* Host's name (`name`, `n` bytes, an IPv6 address in brackets) and port
 * (-1: none); false when it is not NAME[:PORT]. */
static bool split_host(const char *host, const char **name, size_t *n, long *port)
{
    const char *end = host[0] == '[' ? strchr(host, ']') : host + strcspn(host, ":");
    if (!end)
        return false;
    end += host[0] == '[';
    *name = host;
    *n = (size_t)(end - host);
    *port = -1;
    if (*end == '\0' || !strcmp(end, ":"))
        return *n > 0;
    if (*end != ':' || strlen(end + 1) > 5 || strspn(end + 1, "0123456789") != strlen(end + 1))
        return false;
    *port = strtol(end + 1, NULL, 10);
    return *n > 0;
}

static bool same_name(const char *name, size_t n, const char *want)
{
    return want && strlen(want) == n && !strncasecmp(name, want, n);
}

/* The address the client reached, as a Host names it: 192.0.2.1 or [2001:db8::1]. */
static void local_address(struct MHD_Connection *c, char *text, size_t size)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    text[0] = '\0';
    if (!info || getsockname(info->connect_fd, (struct sockaddr *)&address, &length))
        return;
    char ip[INET6_ADDRSTRLEN] = "";
    if (address.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&address)->sin_addr, ip, sizeof ip);
        snprintf(text, size, "%s", ip);
        return;
    }
    const struct in6_addr *v6 = &((struct sockaddr_in6 *)&address)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(v6))
        inet_ntop(AF_INET, v6->s6_addr + 12, ip, sizeof ip);
    else
        inet_ntop(AF_INET6, v6, ip, sizeof ip);
    snprintf(text, size, IN6_IS_ADDR_V4MAPPED(v6) ? "%s" : "[%s]", ip);
}

/* The names of this machine's loopback: no other machine's page can
 * have the browser send them (DNS rebinding sends the page's own name). */
static bool loopback_name(const char *name, size_t n)
{
    return same_name(name, n, "localhost") || same_name(name, n, "127.0.0.1") ||
           same_name(name, n, "[::1]");
}

/* Whether `name` is one of this server's own: reached with its port. */
static bool own_name(struct MHD_Connection *c, const serve_hosts *hosts, const char *name,
                     size_t n)
{
    char listen[300], local[INET6_ADDRSTRLEN + 2];
    snprintf(listen, sizeof listen, strchr(hosts->listen, ':') ? "[%s]" : "%s", hosts->listen);
    local_address(c, local, sizeof local);
    return loopback_name(name, n) || same_name(name, n, listen) ||
           (local[0] && same_name(name, n, local));
}

static bool host_allowed(struct MHD_Connection *c, const serve_hosts *hosts, const char *host)
{
    const char *name;
    size_t n;
    long port;
    if (!split_host(host, &name, &n, &port))
        return false;
    for (int i = 0; i < hosts->allowed_count; i++)
        if (!strcmp(hosts->allowed[i], "*") || same_name(name, n, hosts->allowed[i]))
            return true;
    if (port < 0 && loopback_name(name, n))
        return true;  /* a client or a proxy that names the host without the port */
    bool port_right = port < 0 ? hosts->port == 80 : (unsigned long)port == hosts->port;
    return port_right && own_name(c, hosts, name, n);
}

static bool check_host(struct MHD_Connection *c, const header_scan *scan, const char *version,
                       const serve_hosts *hosts, serve_refusal *no)
{
    if (scan->hosts > 1)
        return serve_refuse(no, MHD_HTTP_BAD_REQUEST, "Host is given %d times; give it once",
                      scan->hosts);
    if (!scan->hosts)
        return strcmp(version, MHD_HTTP_VERSION_1_1) ||
               serve_refuse(no, MHD_HTTP_BAD_REQUEST, "an HTTP/1.1 request needs a Host header");
    if (host_allowed(c, hosts, scan->host))
        return true;
    char host[FIELD_NAME_SHOWN];
    serve_utf8_clean(scan->host, host, sizeof host);
    return serve_refuse(no, MHD_HTTP_MISDIRECTED_REQUEST,
                  "Host \"%s\" is not a name of this server (it answers to localhost and "
                  "127.0.0.1, with port %u or none, and the address it listens on with port "
                  "%u; --allow-host NAME adds one)",
                  host, hosts->port, hosts->port);
}

bool serve_guard_headers(struct MHD_Connection *c, const char *version,
                         const serve_hosts *hosts, serve_refusal *no)
{
    header_scan scan = {0};
    no->status = 0;
    MHD_get_connection_values(c, MHD_HEADER_KIND, visit_header, &scan);
    return check_framing(&scan, version, no) && check_host(c, &scan, version, hosts, no);
}

/* ---- Content-Type ---------------------------------------------------------------- */

bool serve_guard_json(struct MHD_Connection *c, serve_refusal *no)
{
    static const char json[] = "application/json";
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *at = type ? type : "";
    while (is_space(*at))
        at++;
    size_t n = strcspn(at, ";");
    while (n > 0 && is_space(at[n - 1]))
        n--;
    if (n == sizeof json - 1 && !strncasecmp(at, json, n))
        return true;
    char shown[FIELD_NAME_SHOWN];
    serve_utf8_clean(type ? type : "", shown, sizeof shown);
    return type ? serve_refuse(no, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                         "Content-Type \"%s\": the body must be application/json", shown)
                : serve_refuse(no, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
                         "no Content-Type: the body must be application/json");
}
