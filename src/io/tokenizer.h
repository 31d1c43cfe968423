/* Text -> token ids -> text, as the config's tokenizer section says. */
#ifndef TED_IO_TOKENIZER_H
#define TED_IO_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>

#include "io/bpe.h"
#include "io/sentencepiece.h"
#include "io/vocab.h"
#include "ted/ted.h"

/* One side's tokenizer, built once when the model is loaded: the config's
 * tokenizer section (type, lowercase, normalize, source_language, the
 * special ids, source_bos and source_eos), that side's vocabulary and, for
 * the sentencepiece tokenizer, its SentencePiece model. */
typedef struct ted_tokenizer {
    const ted_config *config;
    const ted_vocab *vocab;
    const ted_spm *spm;  /* NULL unless config->tokenizer is sentencepiece */
    bool wrap;           /* source_bos and source_eos apply (the source side) */
    const ted_bpe *bpe;  /* NULL unless config->tokenizer is bpe */
} ted_tokenizer;

/* The ids ted_tokenize makes of one text. */
typedef struct ted_token_ids {
    int *ids;     /* (count), malloc'ed; NULL on failure */
    int count;    /* 0 for empty text, 2 when wrapped in BOS and EOS */
    int unknown;  /* pieces not in the vocabulary, each given unk_id */
} ted_token_ids;

/* Splits `length` bytes of `text` as t->config->tokenizer says:
 *   whitespace:    on ASCII space, tab, CR, LF, vertical tab and form feed;
 *   char:          into UTF-8 characters, a space being the token " " and CR
 *                  and LF dropped;
 *   sentencepiece: as Hugging Face's MarianTokenizer: the spellings of
 *                  unk, eos and pad cut the text into chunks and become
 *                  their ids; in each chunk, language codes (">>fr<<": a
 *                  line's first ">>" to its last "<<") are removed, the one
 *                  at the chunk's start becoming a token, and the rest is
 *                  the pieces t->spm makes of it. More than 64 KiB of text
 *                  is refused (TED_ERR_INPUT).
 *   bpe:           as Hugging Face's BartTokenizer (GPT-2's byte-level BPE,
 *                  io/bpe.h) with t->bpe's merges, add_prefix_space as the
 *                  config says; the spellings of special tokens are text.
 * With normalize: moses, the text is first normalized as sacremoses does for
 * source_language. With lowercase, A-Z and the Latin-1 capitals
 * U+00C0-U+00DE (but U+00D7) are lowercased. Each piece maps to its id in
 * t->vocab, an unknown one to unk_id; with t->wrap, source_bos and
 * source_eos put BOS before and EOS after the ids. Invalid UTF-8 (overlong,
 * surrogate, truncated, beyond U+10FFFF) or a NUL byte is TED_ERR_INPUT
 * naming the byte offset. On failure `*out` is {NULL, 0, 0}. */
ted_status ted_tokenize(const ted_tokenizer *t, const char *text, size_t length,
                        ted_token_ids *out, ted_error *err);

/* Joins the tokens of `ids` with single spaces (whitespace tokenizer) or
 * nothing (char tokenizer), or decodes them with `spm` (sentencepiece, as
 * MarianTokenizer.decode: unk_id is dropped, U+2581 becomes a space, white
 * space is stripped at both ends, and transformers' clean-up removes the
 * space before . , ! ? and in a few English contractions), or turns their
 * byte characters back into bytes (bpe, as BartTokenizer.decode: unk_id is
 * dropped, invalid UTF-8 becomes U+FFFD, then the same clean-up; CR and LF
 * become spaces and NUL bytes are dropped, so that the text is one line),
 * stopping at eos_id and skipping bos_id, pad_id and ids outside the
 * vocabulary.
 * Returns a malloc'ed string, or NULL when out of memory. */
char *ted_detokenize(const ted_config *config, const ted_vocab *vocab, const ted_spm *spm,
                     const int *ids, int count);

#endif
