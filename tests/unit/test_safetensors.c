/* Safetensors files built byte by byte: the valid layouts the format allows
 * and every malformation the reader must refuse with a message naming it. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "refusal.h"
#include "temp_file.h"

#define FILE_NAME "model.safetensors"

typedef struct built_file {
    unsigned char *bytes;  /* exactly `size` bytes, so ASan sees any overread */
    size_t size;
} built_file;

static void put_u64_le(unsigned char *p, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(value >> (8 * i));
}

/* 8-byte length `declared` + `header` + `data`; `declared` may lie. */
static built_file build_with_length(uint64_t declared, const char *header, const void *data,
                                    size_t data_size)
{
    size_t header_size = strlen(header);
    built_file f = {.size = 8 + header_size + data_size};
    f.bytes = malloc(f.size);
    cr_assert_not_null(f.bytes);
    put_u64_le(f.bytes, declared);
    memcpy(f.bytes + 8, header, header_size);
    if (data_size)
        memcpy(f.bytes + 8 + header_size, data, data_size);
    return f;
}

static built_file build(const char *header, const void *data, size_t data_size)
{
    return build_with_length(strlen(header), header, data, data_size);
}

/* Parses `header` followed by `data_size` zero bytes. */
static ted_status parse_header(const char *header, size_t data_size, ted_safetensors *st,
                              ted_error *err)
{
    unsigned char *data = calloc(data_size ? data_size : 1, 1);
    cr_assert_not_null(data);
    built_file f = build(header, data, data_size);
    free(data);
    ted_status status = ted_safetensors_parse(f.bytes, f.size, FILE_NAME, st, err);
    free(f.bytes);
    return status;
}

/* Asserts that parsing fails with TED_ERR_FORMAT and a message holding both
 * `part1` and `part2`, and that the struct is left empty. */
static void expect_format_error(const char *header, size_t data_size, const char *part1,
                                const char *part2)
{
    ted_safetensors st;
    ted_error err = {0};
    ted_status status = parse_header(header, data_size, &st, &err);
    cr_assert_eq(status, TED_ERR_FORMAT, "status %d for header %s", status, header);
    cr_assert_eq(err.status, TED_ERR_FORMAT);
    expect_message(&err, FILE_NAME, part1, part2);
    cr_assert_eq(st.count, 0);
    cr_assert_null(st.tensors);
    ted_safetensors_close(&st);
}

/* Three tensors, one of each dtype, laid out F32 | F16 | BF16. */
static const char VALID_HEADER[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"enc.w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"dec.h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[24,28]},"
    "\"dec.b\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[28,32]}}";

static void valid_data(unsigned char data[32])
{
    const float f32[6] = {1.0f, -2.0f, 0.5f, 3.25f, 0.0f, -0.125f};
    const uint16_t f16[2] = {0x3C00, 0xC000};   /* 1.0, -2.0 */
    const uint16_t bf16[2] = {0x3F80, 0x4040};  /* 1.0, 3.0 */
    memcpy(data, f32, sizeof f32);
    memcpy(data + 24, f16, sizeof f16);
    memcpy(data + 28, bf16, sizeof bf16);
}

static void check_valid_tensors(const ted_safetensors *st, const unsigned char *data_section)
{
    cr_assert_eq(st->count, 3);

    const ted_st_tensor *w = ted_safetensors_find(st, "enc.w");
    cr_assert_not_null(w);
    cr_assert_str_eq(w->name, "enc.w");
    cr_assert_eq(w->dtype, TED_DTYPE_F32);
    cr_assert_eq(w->ndim, 2);
    cr_assert_eq(w->shape[0], 2);
    cr_assert_eq(w->shape[1], 3);
    cr_assert_eq(w->bytes, 24);
    cr_assert_eq(w->data, data_section);
    float values[6];
    memcpy(values, w->data, sizeof values);
    cr_assert_float_eq(values[1], -2.0f, 0);
    cr_assert_float_eq(values[3], 3.25f, 0);
    cr_assert_float_eq(values[5], -0.125f, 0);

    const ted_st_tensor *h = ted_safetensors_find(st, "dec.h");
    cr_assert_not_null(h);
    cr_assert_eq(h->dtype, TED_DTYPE_F16);
    cr_assert_eq(h->ndim, 1);
    cr_assert_eq(h->shape[0], 2);
    cr_assert_eq(h->bytes, 4);
    cr_assert_eq(h->data, data_section + 24);
    uint16_t halves[2];
    memcpy(halves, h->data, sizeof halves);
    cr_assert_eq(halves[0], 0x3C00);
    cr_assert_eq(halves[1], 0xC000);

    const ted_st_tensor *b = ted_safetensors_find(st, "dec.b");
    cr_assert_not_null(b);
    cr_assert_eq(b->dtype, TED_DTYPE_BF16);
    cr_assert_eq(b->ndim, 2);
    cr_assert_eq(b->shape[0], 1);
    cr_assert_eq(b->shape[1], 2);
    cr_assert_eq(b->bytes, 4);
    cr_assert_eq(b->data, data_section + 28);
    memcpy(halves, b->data, sizeof halves);
    cr_assert_eq(halves[0], 0x3F80);
    cr_assert_eq(halves[1], 0x4040);

    cr_assert_null(ted_safetensors_find(st, "__metadata__"));
    cr_assert_null(ted_safetensors_find(st, "enc"));
    cr_assert_null(ted_safetensors_find(st, "missing"));
}

/* ---- valid files ------------------------------------------------------- */

Test(safetensors, dtype_names_and_sizes)
{
    cr_assert_str_eq(ted_dtype_name(TED_DTYPE_F32), "F32");
    cr_assert_str_eq(ted_dtype_name(TED_DTYPE_F16), "F16");
    cr_assert_str_eq(ted_dtype_name(TED_DTYPE_BF16), "BF16");
    cr_assert_eq(ted_dtype_size(TED_DTYPE_F32), 4);
    cr_assert_eq(ted_dtype_size(TED_DTYPE_F16), 2);
    cr_assert_eq(ted_dtype_size(TED_DTYPE_BF16), 2);
}

Test(safetensors, parses_each_dtype_with_metadata)
{
    unsigned char data[32];
    valid_data(data);
    built_file f = build(VALID_HEADER, data, sizeof data);
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_parse(f.bytes, f.size, FILE_NAME, &st, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(st.bytes, f.bytes);
    cr_assert_eq(st.size, f.size);
    cr_assert(!st.mapped);
    check_valid_tensors(&st, f.bytes + 8 + strlen(VALID_HEADER));
    ted_safetensors_close(&st);
    free(f.bytes);
}

Test(safetensors, tensors_are_sorted_by_name)
{
    unsigned char data[32];
    valid_data(data);
    built_file f = build(VALID_HEADER, data, sizeof data);
    ted_safetensors st;
    cr_assert_eq(ted_safetensors_parse(f.bytes, f.size, FILE_NAME, &st, NULL), TED_OK);
    cr_assert_str_eq(st.tensors[0].name, "dec.b");
    cr_assert_str_eq(st.tensors[1].name, "dec.h");
    cr_assert_str_eq(st.tensors[2].name, "enc.w");
    ted_safetensors_close(&st);
    free(f.bytes);
}

Test(safetensors, header_padded_with_spaces)
{
    char header[512];
    snprintf(header, sizeof header,
             "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}%s", "       ");
    float one = 1.0f;
    built_file f = build(header, &one, sizeof one);
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_parse(f.bytes, f.size, FILE_NAME, &st, &err), TED_OK, "%s",
                 err.message);
    const ted_st_tensor *x = ted_safetensors_find(&st, "x");
    cr_assert_not_null(x);
    cr_assert_eq(x->data, f.bytes + 8 + strlen(header));
    ted_safetensors_close(&st);
    free(f.bytes);
}

Test(safetensors, zero_tensors_is_allowed)
{
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header("{}", 0, &st, &err), TED_OK, "%s", err.message);
    cr_assert_eq(st.count, 0);
    cr_assert_null(ted_safetensors_find(&st, "x"));
    ted_safetensors_close(&st);

    cr_assert_eq(parse_header("{\"__metadata__\":{}}", 0, &st, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(st.count, 0);
    ted_safetensors_close(&st);
}

Test(safetensors, scalar_and_empty_tensors)
{
    const char *header =
        "{\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
        "\"e\":{\"dtype\":\"F16\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[2,2]}}";
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header(header, 4, &st, &err), TED_OK, "%s", err.message);
    const ted_st_tensor *s = ted_safetensors_find(&st, "s");
    cr_assert_eq(s->ndim, 0);
    cr_assert_eq(s->bytes, 4);
    const ted_st_tensor *e = ted_safetensors_find(&st, "e");
    cr_assert_eq(e->ndim, 3);
    cr_assert_eq(e->shape[2], 4294967296LL);
    cr_assert_eq(e->bytes, 0);
    ted_safetensors_close(&st);
}

Test(safetensors, gaps_between_tensors_are_allowed)
{
    const char *header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header(header, 16, &st, &err), TED_OK, "%s", err.message);
    cr_assert_eq(st.count, 2);
    ted_safetensors_close(&st);
}

Test(safetensors, unknown_entry_keys_are_ignored)
{
    const char *header =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":[1]}}";
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header(header, 4, &st, &err), TED_OK, "%s", err.message);
    ted_safetensors_close(&st);
}

Test(safetensors, opens_a_file)
{
    unsigned char data[32];
    valid_data(data);
    built_file f = build(VALID_HEADER, data, sizeof data);
    char *path = write_scratch_file("safetensors", f.bytes, f.size);
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_open(path, &st, &err), TED_OK, "%s", err.message);
    cr_assert(st.mapped);
    cr_assert_eq(st.size, f.size);
    check_valid_tensors(&st, st.bytes + 8 + strlen(VALID_HEADER));
    ted_safetensors_close(&st);
    cr_assert_null(st.bytes);
    cr_assert(!st.mapped);
    remove_scratch_file(path);
    free(f.bytes);
}

Test(safetensors, close_is_safe_on_zeroed_and_closed_structs)
{
    ted_safetensors st = {0};
    ted_safetensors_close(&st);
    ted_safetensors_close(&st);
    ted_safetensors_close(NULL);
    cr_assert_null(ted_safetensors_find(&st, "x"));
    cr_assert_null(ted_safetensors_find(NULL, "x"));
}

Test(safetensors, missing_arguments)
{
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_parse(NULL, 8, FILE_NAME, &st, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_safetensors_parse("{}", 2, FILE_NAME, NULL, &err), TED_ERR_ARGUMENT);
    cr_assert_eq(ted_safetensors_open(NULL, &st, &err), TED_ERR_ARGUMENT);
}

/* ---- open() failures --------------------------------------------------- */

Test(safetensors, open_nonexistent_path)
{
    ted_safetensors st;
    ted_error err = {0};
    const char *path = "/nonexistent/dir/model.safetensors";
    cr_assert_eq(ted_safetensors_open(path, &st, &err), TED_ERR_IO);
    cr_assert(strstr(err.message, path), "message: %s", err.message);
    cr_assert_eq(st.count, 0);
    ted_safetensors_close(&st);
}

Test(safetensors, open_directory)
{
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_open("/tmp", &st, &err), TED_ERR_IO);
    cr_assert(strstr(err.message, "not a regular file"), "message: %s", err.message);
    ted_safetensors_close(&st);
}

Test(safetensors, open_empty_file)
{
    char *path = write_scratch_file("safetensors", "", 0);
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_open(path, &st, &err), TED_ERR_FORMAT);
    cr_assert(strstr(err.message, path), "message: %s", err.message);
    cr_assert(strstr(err.message, "too short"), "message: %s", err.message);
    cr_assert_null(st.bytes);
    ted_safetensors_close(&st);
    remove_scratch_file(path);
}

Test(safetensors, open_truncated_file)
{
    unsigned char data[32];
    valid_data(data);
    built_file f = build(VALID_HEADER, data, sizeof data);
    char *path = write_scratch_file("safetensors", f.bytes, f.size - 3);
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_open(path, &st, &err), TED_ERR_FORMAT);
    cr_assert(strstr(err.message, "'dec.b'"), "message: %s", err.message);
    cr_assert(strstr(err.message, "truncated"), "message: %s", err.message);
    cr_assert_null(st.bytes);
    cr_assert(!st.mapped);
    ted_safetensors_close(&st);
    remove_scratch_file(path);
    free(f.bytes);
}

/* ---- the length prefix and the JSON ------------------------------------ */

Test(safetensors, shorter_than_length_prefix)
{
    ted_safetensors st;
    ted_error err = {0};
    const unsigned char bytes[5] = {2, 0, 0, 0, 0};
    cr_assert_eq(ted_safetensors_parse(bytes, sizeof bytes, FILE_NAME, &st, &err),
                 TED_ERR_FORMAT);
    cr_assert(strstr(err.message, "too short"), "message: %s", err.message);
}

Test(safetensors, header_length_past_end_of_file)
{
    built_file f = build_with_length(100, "{}", NULL, 0);
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_parse(f.bytes, f.size, FILE_NAME, &st, &err), TED_ERR_FORMAT);
    cr_assert(strstr(err.message, "header length 100 runs past"), "message: %s", err.message);
    free(f.bytes);
}

Test(safetensors, header_length_over_limit)
{
    const uint64_t lengths[] = {((uint64_t)100 << 20) + 1, UINT64_MAX};
    for (size_t i = 0; i < 2; i++) {
        built_file f = build_with_length(lengths[i], "{}", NULL, 0);
        ted_safetensors st;
        ted_error err = {0};
        cr_assert_eq(ted_safetensors_parse(f.bytes, f.size, FILE_NAME, &st, &err),
                     TED_ERR_FORMAT);
        cr_assert(strstr(err.message, "limit"), "message: %s", err.message);
        free(f.bytes);
    }
}

Test(safetensors, header_not_json)
{
    expect_format_error("", 0, "not valid JSON", "");
    expect_format_error("{\"a\":", 0, "not valid JSON", "");
    expect_format_error("{\"a\":{\"dtype\":\"F32\"", 4, "not valid JSON", "");
    expect_format_error("{'a':1}", 0, "not valid JSON", "");
}

/* The header ends exactly where the buffer does, inside a string escape:
 * a reader scanning for the closing quote must not step past the end. */
Test(safetensors, header_cut_inside_escape)
{
    expect_format_error("{\"a\\", 0, "not valid JSON", "");
    expect_format_error("{\"a\\u12", 0, "not valid JSON", "");
    expect_format_error("{\"", 0, "not valid JSON", "");
}

/* JSON forbids control characters in strings; cJSON lets them through, and
 * a NUL, raw or escaped, would cut a name short ("a\0b" read as "a"). */
Test(safetensors, header_control_characters_refused)
{
    static const char raw_nul[] = "{\"a\0b\":{\"dtype\":\"F32\",\"shape\":[1],"
                                  "\"data_offsets\":[0,4]}}";
    built_file f = {.size = 8 + sizeof raw_nul - 1 + 4};
    f.bytes = calloc(f.size, 1);
    cr_assert_not_null(f.bytes);
    put_u64_le(f.bytes, sizeof raw_nul - 1);
    memcpy(f.bytes + 8, raw_nul, sizeof raw_nul - 1);
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_parse(f.bytes, f.size, FILE_NAME, &st, &err), TED_ERR_FORMAT);
    cr_assert(strstr(err.message, "control character at header byte 3"), "%s", err.message);
    free(f.bytes);

    expect_format_error("{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],"
                        "\"data_offsets\":[0,4]}}", 4, "escaped NUL", "header byte 3");
    expect_format_error("{\"a\":{\"dtype\":\"F32\\u0000x\",\"shape\":[1],"
                        "\"data_offsets\":[0,4]}}", 4, "escaped NUL", "");
    expect_format_error("{\"a\tb\":{}}", 0, "control character", "header byte 3");
    expect_format_error("{\"a\":\n{}\x01}", 0, "control character", "header byte 8");
}

/* An escaped backslash before "u0000" is not an escaped NUL; tabs and
 * newlines between tokens are whitespace. */
Test(safetensors, header_escapes_and_whitespace_accepted)
{
    const char *header = "{\n\t\"a\\\\u0000\\\"\\t\" :\r\n"
                         "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header(header, 4, &st, &err), TED_OK, "%s", err.message);
    cr_assert_not_null(ted_safetensors_find(&st, "a\\u0000\"\t"));
    ted_safetensors_close(&st);
}

Test(safetensors, header_with_trailing_garbage)
{
    expect_format_error("{}  x", 0, "data after its JSON", "byte 4");
    expect_format_error("{}{}", 0, "data after its JSON", "");
}

Test(safetensors, header_not_utf8)
{
    expect_format_error("{\"a\xff\":{}}", 0, "UTF-8", "byte 3");
    expect_format_error("{\"\xc0\xaf\":{}}", 0, "UTF-8", "");          /* overlong '/' */
    expect_format_error("{\"\xed\xa0\x80\":{}}", 0, "UTF-8", "");      /* surrogate */
    expect_format_error("{\"\xe2\x82\":1}", 0, "UTF-8", "");           /* cut sequence */
}

Test(safetensors, header_utf8_names_accepted)
{
    const char *header = "{\"caf\xc3\xa9.\xf0\x9f\x98\x80\":"
                         "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header(header, 4, &st, &err), TED_OK, "%s", err.message);
    cr_assert_not_null(ted_safetensors_find(&st, "caf\xc3\xa9.\xf0\x9f\x98\x80"));
    ted_safetensors_close(&st);
}

Test(safetensors, header_not_object)
{
    expect_format_error("[]", 0, "not a JSON object", "");
    expect_format_error("\"x\"", 0, "not a JSON object", "");
    expect_format_error("12", 0, "not a JSON object", "");
}

Test(safetensors, deeply_nested_header)
{
    enum { depth = 5000 };
    char *header = malloc(6 + 2 * depth + 2);
    cr_assert_not_null(header);
    strcpy(header, "{\"a\":");
    memset(header + 5, '[', depth);
    memset(header + 5 + depth, ']', depth);
    strcpy(header + 5 + 2 * depth, "}");
    expect_format_error(header, 0, "nests deeper than 3 levels", "");
    free(header);
}

Test(safetensors, metadata_not_object)
{
    expect_format_error("{\"__metadata__\":\"pt\"}", 0, "__metadata__", "not an object");
}

/* ---- one tensor entry -------------------------------------------------- */

Test(safetensors, entry_not_object)
{
    expect_format_error("{\"w\":3}", 0, "tensor 'w'", "not an object");
    expect_format_error("{\"w\":[0,4]}", 4, "tensor 'w'", "not an object");
}

Test(safetensors, empty_name)
{
    expect_format_error("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                        "empty name", "");
    /* cJSON would end a name at an escaped NUL, emptying this one: refused
     * before that. */
    expect_format_error("{\"\\u0000x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                        4, "escaped NUL", "header byte 2");
}

Test(safetensors, missing_or_mistyped_dtype)
{
    expect_format_error("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w'",
                        "no \"dtype\"");
    expect_format_error("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                        "tensor 'w'", "\"dtype\" is not a string");
}

Test(safetensors, unsupported_dtype)
{
    expect_format_error("{\"w\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
                        "tensor 'w'", "unsupported dtype 'I64'");
    expect_format_error("{\"w\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
                        "tensor 'w'", "unsupported dtype 'F64'");
    expect_format_error("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                        "tensor 'w'", "unsupported dtype 'f32'");
}

Test(safetensors, missing_or_mistyped_shape)
{
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'w'",
                        "no \"shape\"");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4,
                        "tensor 'w'", "\"shape\" is not an array");
}

Test(safetensors, too_many_dimensions)
{
    expect_format_error(
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
        "tensor 'w'", "5 dimensions");
}

Test(safetensors, bad_shape_entries)
{
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,4]}}", 4,
                        "tensor 'w'", "shape[1]");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
                        "tensor 'w'", "shape[0]");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8,
                        "tensor 'w'", "shape[0]");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}}", 4,
                        "tensor 'w'", "shape[0]");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1e999],\"data_offsets\":[0,4]}}", 4,
                        "tensor 'w'", "shape[0]");
}

Test(safetensors, shape_byte_count_overflows)
{
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                        "\"data_offsets\":[0,4]}}",
                        4, "tensor 'w'", "overflows");
    expect_format_error("{\"w\":{\"dtype\":\"BF16\",\"shape\":[9007199254740992,2048],"
                        "\"data_offsets\":[0,4]}}",
                        4, "tensor 'w'", "overflows");
}

Test(safetensors, missing_or_mistyped_offsets)
{
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'w'",
                        "no \"data_offsets\"");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":4}}", 4,
                        "tensor 'w'", "not an array of 2");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
                        "tensor 'w'", "not an array of 2");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
                        "tensor 'w'", "not an array of 2");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 4,
                        "tensor 'w'", "not an array of 2");
}

Test(safetensors, bad_offset_values)
{
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0.5,4]}}", 4,
                        "tensor 'w'", "not whole numbers");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4,
                        "tensor 'w'", "not whole numbers");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,null]}}", 4,
                        "tensor 'w'", "not whole numbers");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,1e30]}}", 4,
                        "tensor 'w'", "not whole numbers");
}

Test(safetensors, reversed_offsets)
{
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8,
                        "tensor 'w'", "[8, 4] are reversed");
}

Test(safetensors, offsets_past_data_section)
{
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 7,
                        "tensor 'w'", "end past the 7-byte data section");
    expect_format_error("{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[9,9]}}", 8,
                        "tensor 'w'", "end past");
}

Test(safetensors, span_differs_from_shape)
{
    ted_safetensors st;
    ted_error err = {0};
    const char *header =
        "{\"x.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}}";
    cr_assert_eq(parse_header(header, 24, &st, &err), TED_ERR_FORMAT);
    cr_assert_str_eq(err.message, "model.safetensors: tensor 'x.weight': data_offsets [0, 12] "
                                  "span 12 bytes but shape [2, 3] of F32 needs 24");
    expect_format_error("{\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
                        "tensor 'h'", "shape [4] of F16 needs 8");
}

Test(safetensors, overlapping_tensors)
{
    expect_format_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
                        20, "'a' [0, 16] and 'b' [12, 20]", "overlap");
    /* One inside another, listed after a third that starts earlier. */
    expect_format_error("{\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                        "\"a\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]},"
                        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[32,36]}}",
                        36, "'a' [0, 32] and 'c' [8, 12]", "overlap");
    expect_format_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                        4, "'a'", "'b'");
}

Test(safetensors, empty_tensor_inside_another_is_not_an_overlap)
{
    const char *header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                         "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}";
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header(header, 16, &st, &err), TED_OK, "%s", err.message);
    ted_safetensors_close(&st);
}

Test(safetensors, duplicate_names)
{
    expect_format_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                        8, "tensor 'a'", "appears twice");
    /* An escaped NUL would cut the second name down to the first: refused
     * before that. */
    expect_format_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        "\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                        8, "escaped NUL", "header byte 56");
}

Test(safetensors, later_tensor_error_frees_earlier_ones)
{
    expect_format_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,9]}}",
                        9, "tensor 'b'", "span 5 bytes");
}

/* ---- non-finite values ------------------------------------------------- */

/* A tensor over `data` (not necessarily aligned) of the given dtype and shape. */
static ted_st_tensor tensor_over(const void *data, ted_dtype dtype, int ndim, const int64_t *shape)
{
    ted_st_tensor t = {.name = "t", .dtype = dtype, .ndim = ndim, .data = data};
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        t.shape[i] = shape[i];
        count *= (size_t)shape[i];
    }
    t.bytes = count * ted_dtype_size(dtype);
    return t;
}

static void expect_finite(const ted_st_tensor *t)
{
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_check_finite(t, FILE_NAME, &err), TED_OK, "%s", err.message);
}

static void expect_non_finite(const ted_st_tensor *t, const char *message)
{
    ted_error err = {0};
    cr_assert_eq(ted_safetensors_check_finite(t, FILE_NAME, &err), TED_ERR_WEIGHTS);
    cr_assert_str_eq(err.message, message);
}

Test(safetensors, finite_values_pass_the_check)
{
    /* zeros of both signs, the smallest subnormal, the largest finite value */
    const uint32_t f32[6] = {0x00000000, 0x80000000, 0x00000001, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000};
    const uint16_t f16[4] = {0x0000, 0x8001, 0x7BFF, 0xFBFF};
    const uint16_t bf16[4] = {0x0000, 0x8001, 0x7F7F, 0xFF7F};
    ted_st_tensor t = tensor_over(f32, TED_DTYPE_F32, 2, (int64_t[]){2, 3});
    expect_finite(&t);
    t = tensor_over(f16, TED_DTYPE_F16, 1, (int64_t[]){4});
    expect_finite(&t);
    t = tensor_over(bf16, TED_DTYPE_BF16, 1, (int64_t[]){4});
    expect_finite(&t);
    t = tensor_over(f32, TED_DTYPE_F32, 2, (int64_t[]){0, 3});
    expect_finite(&t);
}

Test(safetensors, nan_and_infinities_are_named_with_their_element)
{
    uint32_t f32[2 * 3] = {0};
    ted_st_tensor t = tensor_over(f32, TED_DTYPE_F32, 2, (int64_t[]){2, 3});
    f32[5] = 0x7FC00000;
    expect_non_finite(&t, "model.safetensors: tensor 't' holds NaN at [1, 2] (element 5); "
                          "weights must be finite");
    f32[4] = 0x7F800000;
    expect_non_finite(&t, "model.safetensors: tensor 't' holds +inf at [1, 1] (element 4); "
                          "weights must be finite");
    f32[1] = 0xFF800000;
    expect_non_finite(&t, "model.safetensors: tensor 't' holds -inf at [0, 1] (element 1); "
                          "weights must be finite");
    f32[0] = 0xFFFFFFFF;  /* a negative NaN is a NaN */
    expect_non_finite(&t, "model.safetensors: tensor 't' holds NaN at [0, 0] (element 0); "
                          "weights must be finite");

    uint16_t f16[3] = {0x3C00, 0x3C00, 0xFC00};
    t = tensor_over(f16, TED_DTYPE_F16, 3, (int64_t[]){1, 3, 1});
    expect_non_finite(&t, "model.safetensors: tensor 't' holds -inf at [0, 2, 0] (element 2); "
                          "weights must be finite");
    f16[1] = 0x7C01;
    expect_non_finite(&t, "model.safetensors: tensor 't' holds NaN at [0, 1, 0] (element 1); "
                          "weights must be finite");

    uint16_t bf16[2] = {0x7F80, 0x3F80};
    t = tensor_over(bf16, TED_DTYPE_BF16, 1, (int64_t[]){2});
    expect_non_finite(&t, "model.safetensors: tensor 't' holds +inf at [0] (element 0); "
                          "weights must be finite");
    bf16[0] = 0x7F7F;  /* the largest finite bfloat16 */
    bf16[1] = 0xFFC1;
    expect_non_finite(&t, "model.safetensors: tensor 't' holds NaN at [1] (element 1); "
                          "weights must be finite");
}

/* The check counts blocks of 1024 elements first: values on either side of
 * a block boundary, and the very last one, of an unaligned tensor. */
Test(safetensors, non_finite_found_anywhere_in_a_large_unaligned_tensor)
{
    enum { rows = 3, cols = 1000 };
    unsigned char *bytes = calloc(1 + 4 * rows * cols, 1);
    cr_assert_not_null(bytes);
    ted_st_tensor t = tensor_over(bytes + 1, TED_DTYPE_F32, 2, (int64_t[]){rows, cols});
    expect_finite(&t);
    const size_t at[] = {1023, 1024, rows * cols - 1, 0};
    const char *expected[] = {"[1, 23] (element 1023)", "[1, 24] (element 1024)",
                              "[2, 999] (element 2999)", "[0, 0] (element 0)"};
    for (int i = 0; i < 4; i++) {
        const uint32_t nan = 0x7FC00000;
        memcpy(bytes + 1 + 4 * at[i], &nan, 4);
        ted_error err = {0};
        cr_assert_eq(ted_safetensors_check_finite(&t, FILE_NAME, &err), TED_ERR_WEIGHTS);
        cr_assert(strstr(err.message, expected[i]), "%s", err.message);
        memset(bytes + 1 + 4 * at[i], 0, 4);
    }
    expect_finite(&t);
    free(bytes);
}

/* A header of a million tiny values (metadata or a shape) would make cJSON
 * build a tree ~30 times its size: refused before parsing. */
Test(safetensors, header_with_too_many_values)
{
    enum { values = 1000001 };
    char *header = malloc(16 + 2 * (size_t)values + 4);
    cr_assert_not_null(header);
    size_t n = (size_t)sprintf(header, "{\"a\":[");
    for (int i = 0; i < values; i++) {
        header[n++] = '0';
        header[n++] = ',';
    }
    strcpy(header + n - 1, "]}");
    expect_format_error(header, 0, "more than 1000000 JSON values", "");
    free(header);
}

/* Strings holding brackets, commas and escaped quotes are not counted as
 * structure: a header within the bounds parses. */
Test(safetensors, header_size_count_skips_strings)
{
    const char *header = "{\"__metadata__\":{\"k\":\"[[[[{{{{,,,\\\"]]]]\"},"
                         "\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    ted_safetensors st;
    ted_error err = {0};
    cr_assert_eq(parse_header(header, 4, &st, &err), TED_OK, "%s", err.message);
    cr_assert_eq(st.count, 1);
    ted_safetensors_close(&st);
}
