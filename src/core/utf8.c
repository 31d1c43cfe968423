/* UTF-8 characters (core/utf8.h). */
#include "core/utf8.h"

static int refuse(const char **problem, const char *why, int answer)
{
    if (problem)
        *problem = why;
    return answer;
}

/* The length the lead byte `c` announces, and the range its second byte
 * must fall in; 0 for a byte that leads nothing. */
static int announced(unsigned char c, unsigned char *low, unsigned char *high,
                     const char **problem)
{
    *low = 0x80, *high = 0xBF;
    if (c < 0x80)
        return 1;
    if (c < 0xC0)
        return refuse(problem, "invalid UTF-8 (unexpected continuation byte)", 0);
    if (c < 0xC2)
        return refuse(problem, "invalid UTF-8 (overlong encoding)", 0);
    if (c < 0xE0)
        return 2;
    if (c < 0xF0) {
        *low = c == 0xE0 ? 0xA0 : 0x80;   /* below: overlong */
        *high = c == 0xED ? 0x9F : 0xBF;  /* above: UTF-16 surrogates */
        return 3;
    }
    if (c < 0xF5) {
        *low = c == 0xF0 ? 0x90 : 0x80;   /* below: overlong */
        *high = c == 0xF4 ? 0x8F : 0xBF;  /* above: beyond U+10FFFF */
        return 4;
    }
    return refuse(problem, "invalid UTF-8 (code point beyond U+10FFFF)", 0);
}

int ted_utf8_char(const unsigned char *s, size_t available, const char **problem)
{
    if (!s || available == 0)
        return refuse(problem, "no bytes to read", 0);
    unsigned char low, high;
    int n = announced(s[0], &low, &high, problem);
    for (int i = 1; i < n; i++) {
        if ((size_t)i >= available)
            return refuse(problem, "invalid UTF-8 (truncated sequence)", -1);
        if (s[i] < 0x80 || s[i] > 0xBF)
            return refuse(problem, "invalid UTF-8 (truncated sequence)", 0);
    }
    if (n > 1 && s[1] < low)
        return refuse(problem, "invalid UTF-8 (overlong encoding)", 0);
    if (n > 1 && s[1] > high)
        return refuse(problem,
                      s[0] == 0xED ? "invalid UTF-8 (UTF-16 surrogate)"
                                   : "invalid UTF-8 (code point beyond U+10FFFF)",
                      0);
    return n;
}
