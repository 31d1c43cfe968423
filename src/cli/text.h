/* Text for the terminal and for the files the commands write: display
 * widths, bars of block characters, XML and JSON strings, whole numbers
 * read from arguments. (How a token is shown is the learning tools'
 * own: learn/token.h.) */
#ifndef TED_CLI_TEXT_H
#define TED_CLI_TEXT_H

#include <stdbool.h>
#include <stdio.h>

/* Display width in terminal columns (UTF-8 code points). */
int cli_width(const char *s);

/* A bar of at most `width` columns for a value in [0, 1], in eighths of a
 * block. Returns the columns it took. */
int cli_bar_columns(double value, int width);
int cli_bar(FILE *out, double value, int width);

/* Writes s with &, <, >, " and ' escaped (HTML, XML). */
void cli_xml_escaped(FILE *out, const char *s);
/* Writes s as a JSON string, quotes included. */
void cli_json_string(FILE *out, const char *s);

/* Parses "N" as an int in [min, max]. */
bool cli_parse_int(const char *text, int min, int max, int *out);

#endif
