/* Text for the terminal and for the files the commands write
 * (cli/text.h). */
#include "cli/text.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int cli_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

/* The bar's length in eighths of a block. */
static int bar_units(double value, int width)
{
    if (!(value > 0))
        return 0;
    return (int)lround((value > 1 ? 1 : value) * width * 8);
}

int cli_bar_columns(double value, int width)
{
    int units = bar_units(value, width);
    return units / 8 + (units % 8 > 0);
}

int cli_bar(FILE *out, double value, int width)
{
    static const char *const eighths[8] = {"",
                                           "\xe2\x96\x8f", "\xe2\x96\x8e", "\xe2\x96\x8d",
                                           "\xe2\x96\x8c", "\xe2\x96\x8b", "\xe2\x96\x8a",
                                           "\xe2\x96\x89"};
    int units = bar_units(value, width);
    for (int i = 0; i < units / 8; i++)
        fputs("\xe2\x96\x88", out);  /* █ */
    fputs(eighths[units % 8], out);
    return units / 8 + (units % 8 > 0);
}

void cli_xml_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
                fputc('?', out);
            else
                fputc(*s, out);
        }
    }
}

void cli_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

bool cli_parse_int(const char *text, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}
