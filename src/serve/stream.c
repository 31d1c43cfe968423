/* Streamed answers (serve/stream.h). */
#include "serve/stream.h"

#include <cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/request.h"

/* What sentence i has shown so far. */
typedef struct stream_sentence {
    int *ids;         /* (capacity): the tokens appended so far (job->progress) */
    int count, capacity;
    int sent;         /* tokens already in an event */
    size_t shown;     /* bytes of its text already in an event */
    bool done;        /* its translation is in job->outputs */
    bool flushed;     /* its last text is out */
    bool no_memory;   /* a token could not be kept: the stream ends with an error */
} stream_sentence;

struct serve_stream {
    pthread_mutex_t lock;
    int holds;                       /* the request, the loop, the response */
    serve_job *job;
    bool scores;
    bool held_back;                  /* SentencePiece: the last word waits (stable_length) */
    stream_sentence *sentences;      /* (job->count) */
    struct MHD_Connection *connection;  /* NULL once the request is over */
    bool suspended;                  /* by read_events, until the next token */
    bool finished;                   /* the job is done */
    bool ended;                      /* the last event is written */
    char *out;                       /* events written, not yet all read */
    size_t length, read, capacity;
};

static void release(serve_stream *s)
{
    pthread_mutex_lock(&s->lock);
    bool last = --s->holds == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    for (int i = 0; i < s->job->count; i++)
        free(s->sentences[i].ids);
    free(s->sentences);
    serve_job_free(s->job);
    free(s->out);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The reader waits for an event: resume its connection. The lock is held. */
static void wake(serve_stream *s)
{
    if (s->suspended && s->connection) {
        s->suspended = false;
        MHD_resume_connection(s->connection);
    }
}

static bool keep_token(stream_sentence *t, int token)
{
    if (t->count == t->capacity) {
        int capacity = t->capacity ? 2 * t->capacity : 32;
        int *ids = realloc(t->ids, (size_t)capacity * sizeof *ids);
        if (!ids)
            return false;
        t->ids = ids;
        t->capacity = capacity;
    }
    t->ids[t->count++] = token;
    return true;
}

/* job->progress, on the decoding thread. */
static void progress(serve_job *job, int index, int token)
{
    serve_stream *s = job->done_data;
    pthread_mutex_lock(&s->lock);
    stream_sentence *t = &s->sentences[index];
    if (token < 0)
        t->done = true;
    else if (!t->no_memory && !keep_token(t, token))
        t->no_memory = true;
    wake(s);
    pthread_mutex_unlock(&s->lock);
}

/* job->done, on a decoding thread: the loop's hold ends. */
static void job_done(serve_job *job, void *data)
{
    (void)job;
    serve_stream *s = data;
    pthread_mutex_lock(&s->lock);
    s->finished = true;
    wake(s);
    pthread_mutex_unlock(&s->lock);
    release(s);
}

serve_stream *serve_stream_new(serve_job *job, bool scores)
{
    serve_stream *s = calloc(1, sizeof *s);
    stream_sentence *sentences = calloc(job->count > 0 ? (size_t)job->count : 1,
                                        sizeof *sentences);
    if (!s || !sentences) {
        free(s);
        free(sentences);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->holds = 1;
    s->job = job;
    s->scores = scores;
    s->sentences = sentences;
    ted_config_tokens tokens = ted_config_get_view(ted_model_config(job->model)).tokens;
    s->held_back = tokens.tokenizer == TED_TOKENIZER_SENTENCEPIECE;
    for (int i = 0; i < job->count; i++)
        sentences[i].done = !serve_job_pending(job, i);  /* a blank text */
    job->progress = progress;
    job->done = job_done;
    job->done_data = s;
    return s;
}

serve_admission serve_stream_submit(serve_stream *s, serve_loop *loop)
{
    pthread_mutex_lock(&s->lock);
    s->finished = s->job->unfinished == 0;  /* every text blank: nothing to decode */
    s->holds += !s->finished;  /* before the loop may call job_done */
    pthread_mutex_unlock(&s->lock);
    if (s->finished)
        return SERVE_ACCEPTED;
    serve_admission admission = serve_loop_submit(loop, s->job);
    if (admission != SERVE_ACCEPTED)
        release(s);
    return admission;
}

/* ---- events --------------------------------------------------------------------- */

/* Appends `event: NAME\ndata: JSON\n\n` (json freed); false when out of
 * memory. */
static bool write_event(serve_stream *s, const char *name, char *json)
{
    size_t need = json ? strlen("event: \ndata: \n\n") + strlen(name) + strlen(json) + 1 : 0;
    if (json && s->length + need > s->capacity) {
        size_t capacity = 2 * (s->length + need);
        char *out = realloc(s->out, capacity);
        if (out) {
            s->out = out;
            s->capacity = capacity;
        }
    }
    bool fits = json && s->length + need <= s->capacity;
    if (fits)
        s->length += (size_t)snprintf(s->out + s->length, need, "event: %s\ndata: %s\n\n",
                                      name, json);
    free(json);
    return fits;
}

/* How much of a prefix's text no later token changes: all of it, as
 * tokens are joined; with SentencePiece, up to its last space, since the
 * next pieces may join the last word ("l" + "'" + "avion") or take the
 * space before them away (transformers' clean-up: " ." becomes "."). */
static size_t stable_length(const serve_stream *s, const char *text)
{
    if (!s->held_back)
        return strlen(text);
    const char *space = strrchr(text, ' ');
    return space ? (size_t)(space - text) : 0;
}

/* The text that sentence i adds now: the rest of its translation once
 * done, else what its tokens so far fix. malloc'ed; NULL when out of
 * memory. */
static char *new_text(serve_stream *s, int i)
{
    stream_sentence *t = &s->sentences[i];
    const serve_job *job = s->job;
    bool done = t->done || s->finished;  /* then the decoding thread has written outputs */
    const char *final = done ? job->outputs[(size_t)i * job->options.decode.n_best].text : NULL;
    char *text = done ? strdup(final ? final : "")
                      : ted_decode_target(job->model, t->ids, t->count);
    if (!text)
        return NULL;
    size_t stable = done ? strlen(text) : stable_length(s, text);
    size_t added = stable > t->shown ? stable - t->shown : 0;
    memmove(text, text + stable - added, added);
    text[added] = '\0';
    t->shown += added;
    return text;
}

/* The tokens of sentence i's best hypothesis, EOS left out, kept as if
 * streamed: beam search and n_best samples stream none while they decode
 * (no hypothesis is best before the end), so their one event lists them
 * all. Called once the sentence is done; false when out of memory. */
static bool keep_best(serve_stream *s, int i)
{
    stream_sentence *t = &s->sentences[i];
    const serve_job *job = s->job;
    const ted_hypothesis *h = &job->outputs[(size_t)i * job->options.decode.n_best].hypothesis;
    int n = h->length;
    if (n > 0 && h->ids[n - 1] == ted_config_get_view(ted_model_config(job->model)).tokens.eos_id)
        n--;
    for (int k = 0; k < n; k++)
        if (!keep_token(t, h->ids[k]))
            return false;
    return true;
}

/* A token event for sentence i, when it has news; false when out of memory. */
static bool sentence_event(serve_stream *s, int i)
{
    stream_sentence *t = &s->sentences[i];
    bool last = t->done || s->finished;
    if (t->flushed || (t->sent == t->count && !last))
        return true;
    if (last && t->count == 0 && !keep_best(s, i))
        return false;
    char *text = new_text(s, i);
    cJSON *o = cJSON_CreateObject();
    cJSON *tokens = o && cJSON_AddNumberToObject(o, "index", i)
                        ? cJSON_AddArrayToObject(o, "tokens") : NULL;
    for (int k = t->sent; tokens && k < t->count; k++)
        if (!cJSON_AddItemToArray(tokens, cJSON_CreateString(
                                              ted_target_token(s->job->model, t->ids[k]))))
            tokens = NULL;
    bool ok = text && tokens && cJSON_AddStringToObject(o, "text", text);
    bool news = t->count > t->sent || (text && text[0]);
    t->sent = t->count;
    t->flushed = last;
    free(text);
    if (ok && news)
        ok = write_event(s, "token", cJSON_PrintUnformatted(o));
    cJSON_Delete(o);
    return ok;
}

/* The last event: the whole answer, or the job's failure. */
static bool final_event(serve_stream *s)
{
    const serve_job *job = s->job;
    s->ended = true;
    if (job->status)
        return write_event(s, "error", serve_error_json(job->error.message));
    return write_event(s, "done", serve_answer(job, s->scores));
}

/* Writes the events that are ready into s->out; false when out of memory. */
static bool write_events(serve_stream *s)
{
    bool ok = true;
    for (int i = 0; ok && i < s->job->count; i++) {
        if (s->sentences[i].no_memory)
            return false;
        if (!(s->finished && s->job->status))  /* a failed job's texts may be missing */
            ok = sentence_event(s, i);
    }
    if (ok && s->finished)
        ok = final_event(s);
    return ok;
}

/* libmicrohttpd's content reader: the events written and not yet read,
 * else the new ones; when there are none, the connection is suspended
 * until the next token (progress) or the job's end (job_done). */
static ssize_t read_events(void *data, uint64_t position, char *buffer, size_t max)
{
    (void)position;
    serve_stream *s = data;
    pthread_mutex_lock(&s->lock);
    ssize_t n = 0;
    if (s->read == s->length) {
        s->read = s->length = 0;
        if (!s->ended && !write_events(s))
            n = MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (!n && s->read < s->length) {
        n = (ssize_t)(s->length - s->read < max ? s->length - s->read : max);
        memcpy(buffer, s->out + s->read, (size_t)n);
        s->read += (size_t)n;
    } else if (!n && s->ended) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else if (!n && s->connection) {
        s->suspended = true;
        MHD_suspend_connection(s->connection);
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

static void response_freed(void *data)
{
    release(data);
}

struct MHD_Response *serve_stream_response(serve_stream *s, struct MHD_Connection *connection)
{
    struct MHD_Response *answer = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 4096, read_events, s, response_freed);
    if (!answer)
        return NULL;
    pthread_mutex_lock(&s->lock);
    s->holds++;
    s->connection = connection;
    pthread_mutex_unlock(&s->lock);
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(answer, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(answer, "X-Accel-Buffering", "no");  /* nginx: pass each event on */
    return answer;
}

bool serve_stream_close(serve_stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->connection = NULL;
    bool cut = !s->ended || s->read < s->length;
    if (!s->finished)
        serve_job_cancel(s->job);
    pthread_mutex_unlock(&s->lock);
    release(s);
    return cut;
}
