/* Translation jobs (serve/job.h). */
#include "serve/job.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ted/util.h"

/* Sentence i's n_best outputs: empty texts and hypotheses. */
static ted_status fill_blank(serve_job *job, int i, ted_error *err)
{
    for (int k = 0; k < job->options.decode.n_best; k++) {
        ted_translation *t = &job->outputs[(size_t)i * job->options.decode.n_best + k];
        if (!(t->text = ted_alloc(1, 1, "translation", err)))
            return TED_ERR_NOMEM;
    }
    return TED_OK;
}

/* Each text made a source (ted_prepare_source); a blank one, nothing to
 * decode, is done at once. */
static ted_status tokenize(serve_job *job, const char *const *texts, ted_error *err)
{
    for (int i = 0; i < job->count; i++) {
        ted_source source;
        if (ted_prepare_source(job->model, texts[i], &job->options.languages, &source, err))
            return ted_fail_context(err, "text[%d]", i);
        job->ids[i] = source.ids;  /* the ids and the prefix move into the job */
        job->lengths[i] = source.count;
        job->prefix_ids[i] = source.prefix_ids;
        job->prefix_lengths[i] = source.prefix_count;
        if (!source.blank)
            job->unfinished++;
        else if (fill_blank(job, i, err))
            return TED_ERR_NOMEM;
    }
    return TED_OK;
}

/* *copy: a copy of `code`, the job's own (the request that names it may be
 * freed before the job is done: its client left); left NULL when code is. */
static ted_status own_code(const char *code, const char **copy, ted_error *err)
{
    if (!code)
        return TED_OK;
    size_t bytes = strlen(code) + 1;
    char *own = ted_alloc(bytes, 1, "language code", err);
    if (!own)
        return TED_ERR_NOMEM;
    *copy = memcpy(own, code, bytes);
    return TED_OK;
}

ted_status serve_job_new(const ted_model *model, const ted_translate_options *options,
                         const char *const *texts, int count, serve_job **out, ted_error *err)
{
    *out = NULL;
    serve_job *job = ted_alloc(1, sizeof *job, "job", err);
    if (!job)
        return TED_ERR_NOMEM;
    size_t room = count > 0 ? (size_t)count : 1;
    *job = (serve_job){.model = model, .options = *options, .count = count};
    job->options.languages = (ted_languages){NULL, NULL};  /* until copied */
    atomic_init(&job->cancelled, false);
    job->client_fd = -1;
    job->options.first_index = 0;  /* sentence i samples from stream i */
    job->ids = ted_alloc(room, sizeof *job->ids, "job", err);
    job->lengths = ted_alloc(room, sizeof *job->lengths, "job", err);
    job->prefix_ids = ted_alloc(room, sizeof *job->prefix_ids, "job", err);
    job->prefix_lengths = ted_alloc(room, sizeof *job->prefix_lengths, "job", err);
    job->outputs = ted_alloc(ted_mul_size(room, options->decode.n_best), sizeof *job->outputs, "job",
                             err);
    ted_status status = job->ids && job->lengths && job->prefix_ids && job->prefix_lengths &&
                                job->outputs
                            ? TED_OK
                            : TED_ERR_NOMEM;
    ted_languages *codes = &job->options.languages;
    if (!status && options->decode.strategy == TED_DECODE_BEAM)
        status = ted_cancel_new(&job->stop, err);
    if (!status && !(status = own_code(options->languages.source, &codes->source, err)))
        status = own_code(options->languages.target, &codes->target, err);
    if (!status)
        status = tokenize(job, texts, err);
    if (status) {
        serve_job_free(job);
        return status;
    }
    *out = job;
    return TED_OK;
}

void serve_job_free(serve_job *job)
{
    if (!job)
        return;
    for (int i = 0; job->ids && i < job->count; i++)
        free(job->ids[i]);
    for (int i = 0; job->prefix_ids && i < job->count; i++)
        free(job->prefix_ids[i]);
    free(job->ids);
    free(job->lengths);
    free(job->prefix_ids);
    free(job->prefix_lengths);
    free((char *)job->options.languages.source);
    free((char *)job->options.languages.target);
    if (job->outputs)
        ted_translations_free(job->outputs, job->count * job->options.decode.n_best);
    free(job->outputs);
    ted_cancel_free(job->stop);
    free(job);
}

void serve_job_fail(serve_job *job, const ted_error *err)
{
    if (job->status)
        return;
    job->status = err->status ? err->status : TED_ERR_NOMEM;
    job->error = *err;
}

bool serve_job_pending(const serve_job *job, int i)
{
    return !job->outputs[(size_t)i * job->options.decode.n_best].text;
}

const char **serve_job_best(const serve_job *job)
{
    const char **texts = calloc(job->count > 0 ? (size_t)job->count : 1, sizeof *texts);
    for (int i = 0; texts && i < job->count; i++)
        texts[i] = job->outputs[(size_t)i * job->options.decode.n_best].text;
    return texts;
}

void serve_job_cancel(serve_job *job)
{
    atomic_store(&job->cancelled, true);
    ted_cancel_request(job->stop);
}

bool serve_job_is_cancelled(const serve_job *job)
{
    return atomic_load(&job->cancelled);
}

bool serve_job_client_gone(const serve_job *job)
{
    if (job->client_fd < 0)
        return false;
    struct pollfd p = {.fd = job->client_fd, .events = POLLIN};
    if (poll(&p, 1, 0) < 1)
        return false;
    if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
        return true;
    char byte;
    ssize_t n = recv(job->client_fd, &byte, 1, MSG_PEEK);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

bool serve_job_left(serve_job *job)
{
    if (serve_job_is_cancelled(job))
        return true;
    if (job->progress || !serve_job_client_gone(job))
        return false;
    serve_job_cancel(job);
    return true;
}

void serve_job_cancelled_error(ted_error *err, int index)
{
    ted_fail(err, TED_ERR_ARGUMENT, "text[%d]: dropped: the client left", index);
}
