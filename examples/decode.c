/* Decoding through the C API below translation: prepare sources, decode
 * a batch with beam search into n-best lists, then step the decoder by
 * hand as a strategy of your own would.
 *
 *   cc decode.c $(pkg-config --cflags --libs ted) -o decode
 *   ./decode models/toy-en-fr "the black cat eats the small bird ." "the dog sleeps ."
 */
#include <stdio.h>
#include <stdlib.h>

#include "ted/ted.h"

enum { N_BEST = 2, MAX_SOURCES = 8 };

static int fail(const ted_error *err)
{
    fprintf(stderr, "%s\n", err->message);
    return 1;
}

/* Beam search over every source at once: N_BEST hypotheses each. */
static int beam_search(ted_session *session, const ted_source *sources, int count)
{
    const ted_model *model = ted_session_model(session);
    const int *ids[MAX_SOURCES];
    int lengths[MAX_SOURCES], max_lengths[MAX_SOURCES];
    for (int i = 0; i < count; i++) {
        ids[i] = sources[i].ids;
        lengths[i] = sources[i].count;
        max_lengths[i] = ted_max_target_length(model, lengths[i], 0);
    }
    ted_batch batch = {.source_ids = ids, .source_lengths = lengths,
                       .max_lengths = max_lengths, .count = count};
    ted_decode_options options = {.strategy = TED_DECODE_BEAM,
                                  .beam = ted_beam_default_params(),
                                  .n_best = N_BEST};
    ted_hypothesis found[MAX_SOURCES * N_BEST];
    ted_error err = {0};
    if (ted_decode(session, &batch, &options, NULL, found, &err) != TED_OK)
        return fail(&err);
    for (int i = 0; i < count * N_BEST; i++) {
        char *text = ted_decode_target(model, found[i].ids, found[i].length);
        printf("%d.%d %.4f %s\n", i / N_BEST, i % N_BEST, found[i].score, text ? text : "");
        free(text);
    }
    ted_hypotheses_free(found, count * N_BEST);
    return 0;
}

/* Greedy decoding of the first source, one ted_session_step() at a time. */
static int step_by_step(ted_session *session, const ted_source *source)
{
    const ted_model *model = ted_session_model(session);
    ted_config_view config = ted_config_get_view(ted_model_config(model));
    int max_length = ted_max_target_length(model, source->count, 0);
    const int *ids = source->ids;
    ted_error err = {0};
    if (ted_session_encode(session, &ids, &source->count, 1, max_length, &err) != TED_OK)
        return fail(&err);
    int token = config.tokens.bos_id;
    printf("step by step:");
    for (int step = 0; step < max_length; step++) {
        const float *logits;
        if (ted_session_step(session, &token, &logits, &err) != TED_OK)
            return fail(&err);
        token = ted_argmax(logits, config.model.tgt_vocab_size);
        if (token == config.tokens.eos_id)
            break;
        printf(" %s", ted_target_token(model, token));
    }
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc - 2 > MAX_SOURCES) {
        fprintf(stderr, "usage: %s MODEL_DIR SENTENCE... (at most %d)\n", argv[0],
                MAX_SOURCES);
        return 1;
    }
    ted_model *model = NULL;
    ted_session *session = NULL;
    ted_error err = {0};
    if (ted_model_load(argv[1], &model, &err) != TED_OK ||
        ted_session_new(model, &session, &err) != TED_OK) {
        ted_model_free(model);
        return fail(&err);
    }
    int count = 0, status = 0;
    ted_source sources[MAX_SOURCES];
    for (; count < argc - 2; count++)
        if (ted_prepare_source(model, argv[2 + count], NULL, &sources[count], &err) != TED_OK) {
            status = fail(&err);
            break;
        }
    if (!status)
        status = beam_search(session, sources, count);
    if (!status)
        status = step_by_step(session, &sources[0]);
    for (int i = 0; i < count; i++)
        ted_source_free(&sources[i]);
    ted_session_free(session);
    ted_model_free(model);
    return status;
}
