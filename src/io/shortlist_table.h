/* A vocabulary shortlist as decoding reads it, whichever file it came
 * from: the text form (io/shortlist.h) or Marian's binary form
 * (io/shortlist_bin.h). */
#ifndef TED_IO_SHORTLIST_TABLE_H
#define TED_IO_SHORTLIST_TABLE_H

#include <stdbool.h>

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

#endif
