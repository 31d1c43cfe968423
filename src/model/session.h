/* The run state of a decoding session: every buffer and cache one decode
 * needs, in one allocation (the arena) that encode(), select() and join()
 * size for the rows and the steps taken so far, step() widens as the steps
 * reach its capacity, and later calls reuse. The model it reads is shared
 * and never written. Private to the session's files:
 *   session.c         new, free, encode, step, attention, accessors
 *   session_layout.c  the arena, its layout, and the rows it carries
 *   session_rows.c    select, join, clear, release, and how the arena grows */
#ifndef TED_MODEL_SESSION_H
#define TED_MODEL_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/decoder.h"
#include "model/encoder.h"
#include "ted/ted.h"

/* The rows of a batch and the positions of each: what a session is laid
 * out for, or what its arena holds. */
typedef struct ted_session_size {
    int rows;        /* batch rows */
    int source_len;  /* source positions of each row */
    int max_steps;   /* decoder positions of each row */
} ted_session_size;

/* A buffer that holds rows of the batch: (layers, batch, blocks,
 * block_bytes), each batch row's blocks following its row through select()
 * and join(). A block is one head's positions, or a row's ids: when the
 * source or step positions widen, each block keeps its first ones. A cache
 * holds a row's positions up to its length only (its source's, or the
 * steps it took; attention reads no further), so only those are carried. */
typedef struct ted_carried {
    void *data;
    int layers;
    int blocks;             /* per batch row: one per head, or 1 */
    size_t block_bytes;
    const int *lengths;     /* NULL (every byte of a block), or the positions each
                             * row holds, by its row in this buffer: the buffers of
                             * lengths are carried before the caches they measure */
    size_t position_bytes;  /* with lengths: the bytes of one position in a block */
    bool per_source;        /* the same in every row of one source (ted_session.origins):
                             * select() copies a row of such a one-layer buffer only
                             * into a row of another source */
} ted_carried;

struct ted_session {
    const ted_model *model;
    bool attention_requested;  /* set by ted_session_keep_attention() */
    bool encoder_attention_unwanted;  /* set by ted_session_keep_encoder_attention() */
    bool keep_attention;       /* in effect since the last encode */
    bool keep_encoder_attention;  /* the encoder's weights too, since the last encode */
    bool encodes;              /* laid out for encode() (the encoder's buffers); an
                                * empty session that rows join has none */
    const ted_cancel *cancel;  /* watched by encode() and step() (ted_session_watch) */

    int batch;             /* active rows */
    int source_len;        /* room per row for source positions: the longest source of
                            * the batch (more once rows joined); shorter ones are padded */
    int max_steps;         /* self-attention cache capacity: the steps laid out, which
                            * double as the decode reaches them (ted_session_grow_steps) */
    int step_limit;        /* the most steps a row may take: a bound that step() checks,
                            * not a size that is allocated */
    int *source_ids;       /* (batch, source_len), padded with pad_id */
    int *source_lengths;   /* (batch) */
    uint64_t *origins;     /* (batch): which encoded or joined source each row decodes;
                            * rows of one origin hold the same per-source buffers
                            * (ted_carried.per_source) */
    uint64_t origins_given;  /* the origins handed out since the last encode */
    float *positions;      /* (position_offset + max(source_len, max_steps), d_model):
                            * the sinusoidal encoding of every position this decode
                            * reaches (unused with learned tables) */
    float *logits;         /* (batch, tgt_vocab_size) */
    bool logits_spread;    /* logits holds the last step's rows (ted_session_spread_logits) */

    /* The two passes. Both read source_lengths and positions above; the
     * encoder's rows are batch * source_len, and encoder.activations.x ends
     * as the memory. The decoder's rows are batch; its caches'
     * self.length is the largest of decoder.steps. */
    ted_encoder_state encoder;
    ted_decoder_state decoder;

    /* The vocabulary shortlist of the rows (model/shortlist.c), when the
     * model has one: the final Linear restricted to the subset's ids. */
    ted_output_subset subset;      /* scores: (subset_scores_room) floats */
    bool subset_active;            /* the subset is gathered for the rows */
    unsigned char *subset_marks;   /* (tgt_vocab): 1 for each id of the subset */
    int *subset_ids;               /* (tgt_vocab): the subset's ids, subset.count of them */
    int subset_count;              /* the marks set */
    void *subset_storage;          /* the gathered rows (ted_output_gather) */
    size_t subset_storage_bytes;
    size_t subset_scores_room;

    float *gather;         /* scratch for ted_session_select(): (gather_size) */
    size_t gather_size;

    char *arena;                /* the one allocation every buffer above lies in */
    size_t arena_bytes;         /* its size */
    ted_session_size room;      /* what the arena holds */
    bool room_keeps_attention;  /* and whether it holds kept attention weights */
    bool room_keeps_encoder_attention;  /* the encoder's among them */
    bool room_encodes;          /* and the encoder's buffers */
    ted_carried *old_carried;   /* (ted_carried_capacity) each, for select() and join() */
    ted_carried *new_carried;
};

/* ---- session_layout.c ----------------------------------------------------- */

/* The most buffers ted_carried_buffers() lists for a model. */
int ted_carried_capacity(const ted_config *c);

/* Makes the arena hold `size` (and no less than it held) and lays the
 * session out empty for size.source_len and size.max_steps: no rows, the
 * positional encoding of every position filled, the self-attention caches
 * empty. What the arena held is gone. `who` names the call in an error. */
ted_status ted_arena_fit(ted_session *s, ted_session_size size, const char *who,
                         ted_error *err);

/* Moves the session to a new arena that holds `size` (and no less than the
 * old one), laid out for size.source_len and size.max_steps, no narrower
 * than now, with rows keep[0..kept) of the batch (keep NULL: the first
 * kept) as its rows 0..kept-1; widened source rows are padded. The
 * encoder's activations and the decoder's scratch are not carried over:
 * the first are done with, the second are rewritten by the next step. On
 * failure the session is as it was. */
ted_status ted_arena_widen(ted_session *s, ted_session_size size, const int *keep, int kept,
                           const char *who, ted_error *err);

/* The steps an encode of `size` lays out for a decode of up to max_steps:
 * all of them when that at most doubles the arena (the source's buffers
 * dominate: a long source, or few steps), else what the arena already
 * holds or TED_SESSION_FIRST_STEPS, whichever is more; the caches then
 * double as the decode reaches them. Leaves the session's pointers unset,
 * as a sizing pass does. */
int ted_arena_first_steps(ted_session *s, ted_session_size size, int max_steps);

/* Frees the arena: the session holds no buffers (and no rows) until the
 * next ted_arena_fit(). */
void ted_arena_release(ted_session *s);

/* Rows keep[0..kept) of the batch become its rows 0..kept-1, in place
 * (kept at most room.rows); a row may repeat. */
void ted_arena_gather(ted_session *s, const int *keep, int kept);

/* The rows of `joining` (encoded, not stepped) become rows batch ..
 * batch + joining->batch - 1 of s, which has room for them, as wide as
 * joining's: their source ids, lengths and encoder-decoder K and V, their
 * source ids padded to s's rows. s->batch stays. */
void ted_arena_copy_joining(ted_session *s, const ted_session *joining);

/* The fewest steps an encode lays out (fewer when the decode's limit is
 * lower): the caches then double as the steps reach them. */
enum { TED_SESSION_FIRST_STEPS = 32 };

/* The largest arena ted_session_clear() keeps for the next rows: a batch
 * that empties and refills reuses its buffers, a larger one goes back
 * (ted_session_empty() keeps any). */
#define TED_SESSION_KEPT_BYTES ((size_t)8 << 20)

/* Makes room for one more step when the caches are full: the step
 * capacity doubles (up to step_limit), the live rows and their filled
 * positions move to the new arena. */
ted_status ted_session_grow_steps(ted_session *s, ted_error *err);

/* ---- shortlist.c ------------------------------------------------------------ */

/* With a model that has a shortlist: prefixes NULL, the subset becomes
 * the union over the session's rows (after encode() and join()); else
 * the ids of the batch's forced prefixes join it. Nothing without a
 * shortlist. On failure the session steps over the whole vocabulary. */
ted_status ted_session_restrict(ted_session *s, const ted_batch *prefixes, ted_error *err);

/* Room in subset.scores for a step of the session's rows. */
ted_status ted_session_subset_scratch(ted_session *s, ted_error *err);

/* Frees the shortlist's buffers. */
void ted_session_free_subset(ted_session *s);

/* ted_session_step, except that with a shortlist the step writes the
 * subset's scores alone (ted_session_step_subset) and leaves the rows of
 * *logits to ted_session_spread_logits. */
ted_status ted_session_step_scores(ted_session *s, const int *tokens, const float **logits,
                                   ted_error *err);

/* The rows of the last step's logits, -infinity outside the shortlist,
 * from its scores; once a step, and nothing without a shortlist. */
void ted_session_spread_logits(ted_session *s);

/* The subset whose scores the last step wrote (subset.scores, (rows,
 * count)), or NULL when that step covered the whole vocabulary. */
const ted_output_subset *ted_session_step_subset(const ted_session *s);

/* ---- shared by the session's files ---------------------------------------- */

/* The largest of n >= 0 counts (0 when n is 0). */
static inline int ted_largest(const int *counts, int n)
{
    int most = 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > most)
            most = counts[i];
    return most;
}

/* row (width) = ids (length), then pad_id; ids may overlap the row's start. */
static inline void ted_copy_padded(int *row, const int *ids, int length, int width, int pad_id)
{
    memmove(row, ids, sizeof(int) * length);
    for (int t = length; t < width; t++)
        row[t] = pad_id;
}

#endif
