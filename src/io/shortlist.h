/* A vocabulary shortlist: for each source token, the target tokens a
 * translation of it is likely to use, and the target tokens every
 * translation may use (the most frequent). Decoding restricts the final
 * Linear + Softmax to the union of these over a batch's source tokens
 * (model/shortlist.c). `ted shortlist` writes the file; its format
 * (docs/decoding.md#vocabulary-shortlist), a text of one line each:
 *
 *   ted-shortlist 1
 *   vocab SRC_VOCAB TGT_VOCAB
 *   frequent T T T ...
 *   S T T T ...          (zero or more: a source id, then its target ids)
 *
 * Lines starting with '#' and blank lines are skipped. Source lines come in
 * increasing source id, each id once; every id is a decimal integer inside
 * its vocabulary. */
#ifndef TED_IO_SHORTLIST_H
#define TED_IO_SHORTLIST_H

#include <stdbool.h>

#include "ted/ted.h"

typedef struct ted_shortlist {
    int src_vocab;
    int tgt_vocab;
    int *offsets;       /* (src_vocab + 1): source s lists targets[offsets[s] .. offsets[s+1]) */
    int *targets;
    int *frequent;      /* (frequent_count) */
    int frequent_count;
    /* What Marian's binary shortlists (io/shortlist_bin.h) add to a batch's
     * union; zero for a text shortlist. */
    bool binary;        /* read from Marian's binary form */
    bool add_sources;   /* the batch's source ids are targets too (one
                         * vocabulary for both sides: the model sets it) */
    int pad_multiple;   /* the union grows to a multiple of this (0: as it is) */
    int pad_from;       /* with the ids not taken from this one up, in order */
} ted_shortlist;

/* Reads a shortlist file for a model of these vocabulary sizes, the text
 * form above or Marian's binary form (io/shortlist_bin.h, known by its
 * magic): a file of other sizes, a bad line or an id outside its
 * vocabulary fails (TED_ERR_FORMAT, naming the file and the line). */
ted_status ted_shortlist_load(const char *path, int src_vocab, int tgt_vocab,
                              ted_shortlist *out, ted_error *err);

/* Parses the text of a shortlist file (or its bytes, in the binary form);
 * `name` names it in messages. */
ted_status ted_shortlist_parse(const char *text, size_t length, const char *name,
                               int src_vocab, int tgt_vocab, ted_shortlist *out,
                               ted_error *err);

void ted_shortlist_free(ted_shortlist *shortlist);

#endif
