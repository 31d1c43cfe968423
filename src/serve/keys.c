/* API keys and their limits (serve/keys.h). */
#include "serve/keys.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ted/util.h"

enum { KEY_SIZE = 256, LINE_SIZE = 1024 };

typedef struct key {
    char text[KEY_SIZE];
    long per_minute;  /* 0: no limit */
    double tokens;    /* requests it may make now */
    double at;        /* when `tokens` was counted; < 0: never */
} key;

struct serve_keys {
    key *keys;
    int count, capacity;
    pthread_mutex_t lock;
};

/* One line of the file: a key, and a limit or none. */
static ted_status parse_line(char *line, key *k, const char *path, int number, ted_error *err)
{
    char *text = strtok(line, " \t"), *limit = strtok(NULL, " \t"), *more = strtok(NULL, " \t");
    if (strlen(text) >= KEY_SIZE)
        return ted_fail(err, TED_ERR_INPUT, "%s:%d: a key longer than %d bytes", path, number,
                        KEY_SIZE - 1);
    for (const char *c = text; *c; c++)
        if (*c < 0x21 || *c > 0x7e)
            return ted_fail(err, TED_ERR_INPUT,
                            "%s:%d: a key is printable ASCII without spaces", path, number);
    *k = (key){.per_minute = 0, .at = -1.0};
    strcpy(k->text, text);
    if (more)
        return ted_fail(err, TED_ERR_INPUT,
                        "%s:%d: a line is a key and at most a number of requests per minute",
                        path, number);
    if (!limit)
        return TED_OK;
    char *end;
    errno = 0;
    k->per_minute = strtol(limit, &end, 10);
    if (*end || errno || k->per_minute < 1 || k->per_minute > 1000000000L)
        return ted_fail(err, TED_ERR_INPUT,
                        "%s:%d: \"%.40s\" is not a number of requests per minute from 1",
                        path, number, limit);
    return TED_OK;
}

static ted_status add_key(serve_keys *s, const key *k, ted_error *err)
{
    if (s->count == s->capacity) {
        int capacity = s->capacity ? 2 * s->capacity : 16;
        key *grown = realloc(s->keys, (size_t)capacity * sizeof *grown);
        if (!grown)
            return ted_fail(err, TED_ERR_NOMEM, "out of memory reading the keys");
        s->keys = grown;
        s->capacity = capacity;
    }
    s->keys[s->count++] = *k;
    return TED_OK;
}

/* Line `number` of the file, `n` bytes at `at` without its end of line:
 * a key, or nothing (blank, a comment). */
static ted_status read_line(const char *at, size_t n, serve_keys *s, const char *path,
                            int number, ted_error *err)
{
    char line[LINE_SIZE];
    if (n > LINE_SIZE - 2)
        return ted_fail(err, TED_ERR_INPUT, "%s:%d: a line over %d bytes", path, number,
                        LINE_SIZE - 2);
    if (memchr(at, '\0', n))
        return ted_fail(err, TED_ERR_INPUT, "%s:%d: a NUL byte", path, number);
    memcpy(line, at, n);
    line[n] = '\0';
    line[strcspn(line, "\r")] = '\0';
    char *start = line + strspn(line, " \t");
    if (!*start || *start == '#')
        return TED_OK;
    key k;
    ted_status status = parse_line(start, &k, path, number, err);
    return status ? status : add_key(s, &k, err);
}

/* The text of the file (ted_parse_file), line by line. */
static ted_status parse_keys(const char *text, size_t length, const char *path, void *into,
                             ted_error *err)
{
    serve_keys *s = into;
    ted_status status = TED_OK;
    size_t at = 0;
    for (int number = 1; !status && at < length; number++) {
        const char *end = memchr(text + at, '\n', length - at);
        size_t n = end ? (size_t)(end - (text + at)) : length - at;
        status = read_line(text + at, n, s, path, number, err);
        at += n + 1;
    }
    if (!status && s->count == 0)
        status = ted_fail(err, TED_ERR_INPUT, "%s: no key in the file", path);
    return status;
}

ted_status serve_keys_load(const char *path, serve_keys **out, ted_error *err)
{
    *out = NULL;
    serve_keys *s = ted_alloc(1, sizeof *s, "keys", err);
    if (!s)
        return TED_ERR_NOMEM;
    *s = (serve_keys){0};
    pthread_mutex_init(&s->lock, NULL);
    ted_status status = ted_parse_file(path, SERVE_KEYS_MAX_BYTES, TED_ERR_INPUT,
                                       "a file of API keys", parse_keys, s, err);
    if (status) {
        serve_keys_free(s);
        return status;
    }
    *out = s;
    return TED_OK;
}

void serve_keys_free(serve_keys *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s->keys);
    free(s);
}

/* Takes one request from the key's bucket; false when it is empty. */
static bool take(key *k, double now, int *retry_after)
{
    double rate = (double)k->per_minute / 60.0;
    double tokens = k->at < 0.0 ? (double)k->per_minute
                                : k->tokens + (now - k->at) * rate;
    k->tokens = tokens > (double)k->per_minute ? (double)k->per_minute : tokens;
    k->at = now;
    if (k->tokens >= 1.0) {
        k->tokens -= 1.0;
        return true;
    }
    *retry_after = (int)ceil((1.0 - k->tokens) / rate);
    *retry_after = *retry_after < 1 ? 1 : *retry_after;
    return false;
}

serve_key_verdict serve_keys_check(serve_keys *s, const char *text, double now,
                                   int *retry_after)
{
    if (!text || !*text)
        return SERVE_KEY_MISSING;
    serve_key_verdict verdict = SERVE_KEY_INVALID;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->count; i++)
        if (!strcmp(s->keys[i].text, text)) {
            key *k = &s->keys[i];
            verdict = !k->per_minute || take(k, now, retry_after) ? SERVE_KEY_OK
                                                                    : SERVE_KEY_LIMITED;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return verdict;
}
