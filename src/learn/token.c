/* How the learning tools show a token (learn/token.h). */
#include "ted/learn.h"

#include <stdio.h>
#include <string.h>

#include "core/utf8.h"
#include "io/config.h"

bool ted_learn_is_special(const ted_config *c, int id)
{
    return id == c->unk_id || id == c->pad_id || id == c->bos_id || id == c->eos_id;
}

/* One character of a token as shown, into `out` (room for 4 bytes);
 * returns its length there and advances *p past it. */
static size_t show_char(const unsigned char **p, char *out)
{
    int length = ted_utf8_char(*p, 4, NULL);  /* the NUL ends a cut character */
    size_t n = length > 0 ? (size_t)length : 0;
    if (n == 0 || (n == 1 && (**p < 0x20 || **p == 0x7f))) {
        *p += 1;
        out[0] = '?';  /* a control byte, or a byte that starts no character */
        return 1;
    }
    if (n == 1 && **p == ' ') {
        *p += 1;
        memcpy(out, "\xe2\x90\xa3", 3);  /* ␣ */
        return 3;
    }
    memcpy(out, *p, n);
    *p += n;
    return n;
}

const char *ted_learn_show_token(const char *token, char *buf, size_t size)
{
    static const char ellipsis[] = "\xe2\x80\xa6";  /* … */
    if (size < 8) {
        if (size)
            buf[0] = '\0';
        return buf;
    }
    if (!*token) {
        snprintf(buf, size, "\xe2\x88\x85");  /* ∅ */
        return buf;
    }
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)token;
    while (*p) {
        char c[4];
        size_t len = show_char(&p, c);
        bool last = *p == '\0';
        /* keep room for the ellipsis unless this is the last character */
        if (n + len + (last ? 0 : sizeof ellipsis - 1) + 1 > size) {
            memcpy(buf + n, ellipsis, sizeof ellipsis);
            return buf;
        }
        memcpy(buf + n, c, len);
        n += len;
    }
    buf[n] = '\0';
    return buf;
}

const char *ted_learn_shown_word(const char *dotted_key, int value)
{
    static const char *const labels[][2] = {
        {"relu", "ReLU"},        {"gelu", "GELU"},       {"silu", "SiLU"},
        {"whitespace", "words"}, {"char", "characters"},
        {"sentencepiece", "SentencePiece pieces"},
    };
    const char *word = ted_config_word(dotted_key, value);
    for (size_t i = 0; word && i < sizeof labels / sizeof labels[0]; i++)
        if (strcmp(word, labels[i][0]) == 0)
            return labels[i][1];
    return word ? word : "";
}
