/* ted serve: a translation service over HTTP (src/serve/, docs/serving.md). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "serve/libre.h"
#include "serve/request.h"
#include "serve/server.h"

static const char usage[] =
    "usage: ted serve -m [NAME=]DIR [-m [NAME=]DIR ...] [OPTIONS]\n"
    "\n"
    "Serves translations over HTTP (docs/serving.md): POST /v1/translate,\n"
    "GET /v1/models, GET /healthz, GET /openapi.yaml; LibreTranslate's API\n"
    "(POST /translate, POST /detect, GET /languages, GET /frontend/settings),\n"
    "language pairs routed over the models, through English when needed; at /\n"
    "a page that follows a sentence through the model, step by step\n"
    "(docs/learning.md). Each model decodes the\n"
    "sentences of every request together, a sentence joining the running batch\n"
    "at the next step and leaving it when it ends (continuous batching). The\n"
    "first line on standard error says where it listens; then one line per\n"
    "request. SIGTERM or SIGINT: new requests get 503, the accepted ones are\n"
    "answered, exit 0; a second one meanwhile stops at once, exit 1.\n"
    "\n"
    "options:\n"
    "  -m, --model [NAME=]DIR  a model to serve, named NAME in requests (default:\n"
    "                       the directory's name); the first is the default\n"
    "  --host HOST          the address to listen on (default 127.0.0.1)\n"
    "  --port N             the port (default 8080; 0: a free one)\n"
    "  --threads N          threads for each model's matrix products, a pool of\n"
    "                       its own (default 1; at most the CPUs this process may use);\n"
    "                       below them, newcomers are encoded beside the steps on\n"
    "                       as many threads again, within the CPUs left over\n"
    "  --max-batch N        rows a model decodes together (default 32); a sentence\n"
    "                       sampled n_best times takes n_best rows, counted up to\n"
    "                       3/4 of N, and joins whole (docs/serving.md)\n"
    "  --max-queue N        sentences a model holds at once, waiting or decoding;\n"
    "                       past it a request gets 429 (default 1024)\n"
    "  --max-body BYTES     largest request body; past it 413 (default 1048576)\n"
    "  --max-request-tokens N  the most a request may decode: the sum over its\n"
    "                       texts of hypotheses (n_best samples, beam width, or 1)\n"
    "                       x max_length; past it 413 before anything is decoded\n"
    "                       (default 262144)\n"
    "  --alternatives-limit N  the most alternatives a LibreTranslate /translate\n"
    "                       may ask for (a beam of N + 1); past it 400 (default 10)\n"
    "  --timeout S          seconds a connection has to send a whole request\n"
    "                       before it is cut (default 30)\n"
    "  --idle-timeout S     seconds a connection may stay open with no request\n"
    "                       (default 5)\n"
    "  --max-connections N  connections at once (default: what the process's\n"
    "                       file limit allows, less 64); past it the connection\n"
    "                       idle longest is closed to make room\n"
    "  --max-connections-per-client N\n"
    "                       connections at once from one address (an IPv6 /64);\n"
    "                       past it that client's idle longest is closed\n"
    "                       (default 256)\n"
    "  --allow-host NAME    answer requests whose Host is NAME (any port) too;\n"
    "                       by default only localhost, 127.0.0.1 and [::1] (with\n"
    "                       the port or none) and the address listened on, with\n"
    "                       its port (421 otherwise: the defence against DNS\n"
    "                       rebinding); repeatable;\n"
    "                       '*' allows every name\n"
    "  --cors ORIGIN        let web pages of ORIGIN (scheme://host[:port]) read\n"
    "                       the answers, or of every origin with '*'; answers\n"
    "                       CORS preflight requests (default: no CORS headers)\n"
    "  --api-keys FILE      require an API key (the api_key field): one per line,\n"
    "                       each with an optional requests-per-minute limit;\n"
    "                       403 without a valid key, 429 over its limit\n"
    "  -h, --help           show this help\n"
    "\n"
    "Refused (docs/serving.md, \"What ted refuses\"): ambiguous framing (two\n"
    "Content-Lengths, Content-Length with Transfer-Encoding, a final coding\n"
    "other than chunked: 400; another coding: 501), then the connection is\n"
    "closed; a missing or repeated Host (400) or one not of this server (421);\n"
    "a POST body to /v1/ whose Content-Type is not application/json, or to\n"
    "LibreTranslate's /translate and /detect neither JSON nor a form (415); a\n"
    "NUL character in any field, of a body or the query string (400).\n";

typedef struct serve_args {
    serve_config config;
    serve_model *models;  /* (model_count): names and directories until loaded */
    const char **dirs;    /* (model_count) */
    const char **hosts;   /* --allow-host NAMEs (config.allowed_host_count) */
    int threads;
} serve_args;

/* -m [NAME=]DIR: NAME, or the last part of DIR. */
static bool take_model(cli_args *a, const char *option, serve_args *s)
{
    if (!cli_take_value(a, option))
        return false;
    int n = s->config.model_count;
    serve_model *models = realloc(s->models, (n + 1) * sizeof *models);
    const char **dirs = realloc(s->dirs, (n + 1) * sizeof *dirs);
    if (models)
        s->models = models;
    if (dirs)
        s->dirs = dirs;
    if (!models || !dirs) {
        a->failed = true;
        cli_error("out of memory");
        return false;
    }
    const char *value = a->value, *equals = strchr(value, '=');
    char *name = equals ? strndup(value, (size_t)(equals - value)) : strdup(value);
    if (!name) {
        a->failed = true;
        cli_error("out of memory");
        return false;
    }
    size_t end = strlen(name);
    while (!equals && end > 1 && name[end - 1] == '/')
        name[--end] = '\0';
    const char *slash = equals ? NULL : strrchr(name, '/');
    if (slash && slash[1])
        memmove(name, slash + 1, strlen(slash));
    s->models[n] = (serve_model){name, NULL, NULL};
    s->dirs[n] = equals ? equals + 1 : value;
    s->config.model_count++;
    return true;
}

/* --allow-host NAME, once per name. */
static bool take_host(cli_args *a, const char *option, serve_args *s)
{
    if (!cli_take_value(a, option))
        return false;
    int n = s->config.allowed_host_count;
    const char **hosts = realloc(s->hosts, (n + 1) * sizeof *hosts);
    if (!hosts) {
        a->failed = true;
        cli_error("out of memory");
        return false;
    }
    hosts[n] = a->value;
    s->hosts = hosts;
    s->config.allowed_hosts = hosts;
    s->config.allowed_host_count = n + 1;
    return true;
}

/* The options on connections: their number, how long they may idle, the
 * names they may ask for. False when `option` is none of them. */
static bool connection_option(cli_args *a, const char *option, serve_args *s)
{
    serve_config *c = &s->config;
    if (!strcmp(option, "--idle-timeout"))
        cli_take_int(a, option, 1, 86400, &c->idle_timeout);
    else if (!strcmp(option, "--max-connections"))
        cli_take_int(a, option, 1, 1000000, &c->max_connections);
    else if (!strcmp(option, "--max-connections-per-client"))
        cli_take_int(a, option, 1, 1000000, &c->max_client_connections);
    else if (!strcmp(option, "--allow-host"))
        take_host(a, option, s);
    else if (!strcmp(option, "--cors") || !strcmp(option, "--api-keys")) {
        if (cli_take_value(a, option))
            *(option[2] == 'c' ? &c->cors : &c->api_keys) = a->value;
    } else
        return false;
    return true;
}

static bool serve_option(cli_args *a, const char *option, void *options)
{
    serve_args *s = options;
    serve_config *c = &s->config;
    int body = (int)c->max_body, tokens = (int)c->max_request_tokens;
    if (!strcmp(option, "-m") || !strcmp(option, "--model"))
        take_model(a, option, s);
    else if (cli_value_option(a, option, "--host", NULL, &c->host))
        return true;
    else if (!strcmp(option, "--port"))
        cli_take_int(a, option, 0, 65535, &c->port);
    else if (!strcmp(option, "--threads"))
        cli_take_int(a, option, 1, 256, &s->threads);
    else if (!strcmp(option, "--max-batch"))
        cli_take_int(a, option, 1, 4096, &c->max_batch);
    else if (!strcmp(option, "--max-queue"))
        cli_take_int(a, option, 1, 1 << 20, &c->max_queue);
    else if (!strcmp(option, "--max-body")) {
        if (cli_take_int(a, option, 1, SERVE_MAX_BODY_LIMIT, &body))
            c->max_body = (size_t)body;
    } else if (!strcmp(option, "--max-request-tokens")) {
        if (cli_take_int(a, option, 1, INT_MAX, &tokens))
            c->max_request_tokens = tokens;
    } else if (!strcmp(option, "--timeout"))
        cli_take_int(a, option, 1, 86400, &c->timeout);
    else if (!strcmp(option, "--alternatives-limit"))
        cli_take_int(a, option, 0, FRONTEND_N_BEST_MAX - 1, &c->alternatives_limit);
    else
        return connection_option(a, option, s);
    return true;
}

static int check_serve(const cli_args *a, void *options)
{
    const serve_args *s = options;
    (void)a;
    if (s->config.model_count == 0)
        return cli_error("serve: no model; give one with -m DIR");
    const char *cors = s->config.cors;
    const char *host = !cors                         ? NULL
                       : !strncmp(cors, "http://", 7)  ? cors + 7
                       : !strncmp(cors, "https://", 8) ? cors + 8
                                                       : NULL;
    if (cors && strcmp(cors, "*") && (!host || !*host || strpbrk(host, "/?# \t")))
        return cli_error("serve: --cors %s: give an origin (http://host or https://host, with "
                         "a port or none, no path) or '*'",
                         cors);
    for (int i = 0; i < s->config.model_count; i++) {
        if (!s->models[i].name[0])
            return cli_error("serve: -m =%s: the model's name is empty", s->dirs[i]);
        for (int j = 0; j < i; j++)
            if (!strcmp(s->models[i].name, s->models[j].name))
                return cli_error("serve: two models are named %s; name them with -m NAME=DIR",
                                 s->models[i].name);
    }
    return 0;
}

static int serve_command(ted_model *unused, const cli_args *a, void *options)
{
    (void)unused;
    (void)a;
    serve_args *s = options;
    int status = 0;
    for (int i = 0; i < s->config.model_count && !status; i++)
        if (!(s->models[i].model = cli_load_model(s->dirs[i])))
            status = 1;
        else
            s->models[i].dir = s->dirs[i];
    ted_error err = {0};
    s->config.threads = cli_threads(s->threads);  /* each loop's pool, not the process's */
    s->config.models = s->models;
    if (!status && serve_run(&s->config, &err) != TED_OK)
        status = cli_error("serve: %s", err.message);
    for (int i = 0; i < s->config.model_count; i++)
        ted_model_free((ted_model *)s->models[i].model);
    return status;
}

int cli_serve(int argc, char **argv)
{
    static const cli_command command = {"serve", usage, serve_option, check_serve,
                                        serve_command, true};
    serve_args s = {.config = {.host = "127.0.0.1", .port = 8080, .max_batch = 32,
                               .max_queue = 1024, .max_body = SERVE_MAX_BODY_BYTES, .timeout = 30,
                               .idle_timeout = 5, .max_client_connections = 256,
                               .max_request_tokens = SERVE_MAX_REQUEST_TOKENS,
                               .alternatives_limit = LIBRE_ALTERNATIVES_LIMIT},
                    .threads = 1};
    int status = cli_run(&command, &s, argc, argv);
    for (int i = 0; i < s.config.model_count; i++)
        free((char *)s.models[i].name);
    free(s.models);
    free(s.dirs);
    free(s.hosts);
    return status;
}
