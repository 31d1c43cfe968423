/* Language codes and ISO 639 (io/language.h, ted_language_iso). */
#include "io/language.h"

#include <ctype.h>
#include <string.h>

#include "ted/ted.h"

ted_code_parts ted_code_split(const char *code)
{
    size_t n = strlen(code);
    const char *begin = code, *end = code + n;
    if (n > 4 && ((!strncmp(code, ">>", 2) && !strcmp(code + n - 2, "<<")) ||
                  (!strncmp(code, "__", 2) && !strcmp(code + n - 2, "__")))) {
        begin += 2;
        end -= 2;
    } else if (n > 3 && !strncmp(code, "<2", 2) && code[n - 1] == '>') {
        begin += 2;
        end -= 1;
    }
    size_t base = strcspn(begin, "_-");
    if (base > (size_t)(end - begin))
        base = (size_t)(end - begin);
    ted_code_parts parts = {begin, begin + base, base, 0};
    if (begin + base < end) {
        parts.rest = begin + base + 1;
        parts.rest_length = (size_t)(end - parts.rest);
    }
    return parts;
}

/* The ISO 639-1 code of a 639-1, 639-3 or 639-2/B code, or of an
 * individual language of a macrolanguage (lowercase); NULL: none (the
 * table holds some languages without one, for their names). */
static const char *iso1_of(const char *base)
{
    for (int i = 0; i < ted_iso639_count; i++) {
        const ted_iso639 *e = &ted_iso639_table[i];
        if (e->iso1[0] &&
            (!strcmp(base, e->iso1) || !strcmp(base, e->iso3) || !strcmp(base, e->bibliographic)))
            return e->iso1;
    }
    for (int i = 0; i < ted_iso639_member_count; i++)
        if (!strcmp(base, ted_iso639_members[i].code))
            return ted_iso639_members[i].iso1;
    return NULL;
}

bool ted_language_iso(const char *code, char *iso, size_t size)
{
    if (!code || !iso || size == 0)
        return false;
    ted_code_parts parts = ted_code_split(code);
    char lower[TED_LANGUAGE_CODE_SIZE];
    if (parts.language_length == 0 || parts.language_length >= sizeof lower)
        return false;
    for (size_t i = 0; i < parts.language_length; i++)
        lower[i] = (char)tolower((unsigned char)parts.language[i]);
    lower[parts.language_length] = '\0';
    const char *iso1 = iso1_of(lower);
    const char *out = iso1 ? iso1 : lower;
    if (strlen(out) >= size)
        return false;
    strcpy(iso, out);
    return true;
}

const char *ted_language_name(const char *iso)
{
    if (!iso)
        return NULL;
    for (int i = 0; i < ted_iso639_count; i++)
        if (!strcmp(iso, ted_iso639_table[i].iso1))
            return ted_iso639_table[i].name;
    for (int i = 0; i < ted_iso639_count; i++)
        if (!strcmp(iso, ted_iso639_table[i].iso3))
            return ted_iso639_table[i].name;
    return NULL;
}
