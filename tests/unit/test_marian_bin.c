/* Marian .bin files built byte by byte (tests/unit/marian_files.h, after
 * marian-dev's src/common/binary.cpp): what the reader gives of a valid
 * file, and each malformation refused with a message naming the file and
 * the item. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/marian_file.h"
#include "marian_files.h"
#include "temp_file.h"

#define FILE_NAME "model.bin"

static const float FLOATS[6] = {1.0f, -2.0f, 0.5f, 3.25f, 0.0f, -0.125f};
static const char YML[] = "type: transformer\ndim-emb: 2\n";

/* int8 (2, 3) matrix stored transposed ([3][2]), then its multiplier. */
static unsigned char quantized[6 + 4];
static unsigned char embeddings[6 + 4];

static void make_quantized(float mult)
{
    const signed char t[6] = {1, -1, 2, -2, 127, -127};
    memcpy(quantized, t, 6);
    memcpy(quantized + 6, &mult, 4);
    const signed char e[6] = {10, 20, 30, 40, 50, 60};
    memcpy(embeddings, e, 6);
    float emb_mult = 2.0f;
    memcpy(embeddings + 6, &emb_mult, 4);
}

/* Unsorted on purpose, the config last as Marian appends it. */
static int valid_items(bin_item items[5])
{
    make_quantized(0.25f);
    bin_item all[5] = {
        {"encoder_l1_self_Wq", 0x10001, 2, {2, 3}, quantized, sizeof quantized, 0},
        {"decoder_b", 0x404, 2, {2, 3}, FLOATS, sizeof FLOATS, 0},
        {"Wemb", 0x4101, 2, {2, 3}, embeddings, sizeof embeddings, 0},
        {"decoder_b_QuantMultA", 0x404, 1, {1}, FLOATS, 4, 0},
        {"special:model.yml", 0x101, 1, {(int32_t)sizeof YML}, YML, sizeof YML, sizeof YML},
    };
    memcpy(items, all, sizeof all);
    return 5;
}

static ted_status parse_items(const bin_item *items, int count, ted_marian_file *file,
                              ted_error *err)
{
    byte_buffer b = build_bin(items, count);
    ted_status status = parse_exact(&b, FILE_NAME, file, err);
    free(b.bytes);
    return status;
}

/* Parsing fails naming the file and every part; the struct is zeroed. */
static void expect_refusal(const bin_item *items, int count, const char *part1,
                           const char *part2)
{
    byte_buffer b = build_bin(items, count);
    expect_buffer_refused(&b, FILE_NAME, part1, part2);
    free(b.bytes);
}

Test(marian_bin, reads_items_sorted_with_layout_and_config)
{
    bin_item items[5];
    int count = valid_items(items);
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(parse_items(items, count, &file, &err), TED_OK, "%s", err.message);
    cr_assert_eq(file.container, TED_MARIAN_BIN);
    cr_assert_eq(file.count, 5);
    for (int i = 1; i < file.count; i++)
        cr_assert_lt(strcmp(file.tensors[i - 1].st.name, file.tensors[i].st.name), 0);

    const ted_marian_tensor *b = ted_marian_find(&file, "decoder_b");
    cr_assert_not_null(b);
    cr_assert_eq(b->st.dtype, TED_DTYPE_F32);
    cr_assert_eq(b->st.ndim, 2);
    cr_assert_eq(b->st.shape[1], 3);
    cr_assert_eq(b->st.bytes, sizeof FLOATS);
    cr_assert_eq(memcmp(b->st.data, FLOATS, sizeof FLOATS), 0);
    cr_assert_eq(((const unsigned char *)b->st.data - file.bytes) % 256, 0);
    cr_assert_not(b->transposed);
    cr_assert_eq(b->quant_mult, 0.0f);

    const ted_marian_tensor *w = ted_marian_find(&file, "encoder_l1_self_Wq");
    cr_assert_eq(w->type, TED_MARIAN_INTGEMM8);
    cr_assert_eq(w->st.dtype, TED_DTYPE_I8);
    cr_assert_eq(w->st.bytes, 6);
    cr_assert(w->transposed);
    cr_assert_eq(w->quant_mult, 0.25f);
    cr_assert_eq(memcmp(w->st.data, quantized, 6), 0);

    const ted_marian_tensor *e = ted_marian_find(&file, "Wemb");
    cr_assert_eq(e->type, TED_MARIAN_INTGEMM8_BROWSERMT);
    cr_assert_not(e->transposed, "embeddings are stored in the shape's order");
    cr_assert_eq(e->quant_mult, 2.0f);

    size_t length;
    cr_assert_str_eq(ted_marian_yml(&file, &length), YML);
    cr_assert_eq(length, strlen(YML));
    cr_assert_null(ted_marian_find(&file, "missing"));
    free_parsed(&file);
}

Test(marian_bin, config_padded_with_nuls_and_no_config)
{
    char padded[256] = {0};
    memcpy(padded, YML, strlen(YML));
    bin_item items[1] = {{"special:model.yml", 0x101, 1, {256}, padded, 256, 0}};
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(parse_items(items, 1, &file, &err), TED_OK, "%s", err.message);
    cr_assert_str_eq(file.yml, YML);
    free_parsed(&file);

    bin_item plain[1] = {{"x", 0x404, 1, {6}, FLOATS, sizeof FLOATS, 0}};
    cr_assert_eq(parse_items(plain, 1, &file, &err), TED_OK, "%s", err.message);
    cr_assert_null(ted_marian_yml(&file, NULL));
    free_parsed(&file);
}

Test(marian_bin, refuses_types_ted_does_not_read)
{
    bin_item items[5];
    valid_items(items);
    items[1].type = 0x408;  /* float64 */
    expect_refusal(items, 5, "'decoder_b'", "0x408");
    items[1].type = 0x11001;  /* intgemm8avx2 */
    expect_refusal(items, 5, "'decoder_b'", "instruction set");
    items[1].type = 0x4102;  /* browsermt's intgemm16 */
    expect_refusal(items, 5, "'decoder_b'", "intgemm16");
    items[1].type = 0x1801;  /* packed8avx2 */
    expect_refusal(items, 5, "'decoder_b'", "FBGEMM");
}

Test(marian_bin, refuses_bad_names_and_shapes)
{
    bin_item items[5];
    valid_items(items);
    items[2].name = "encoder_l1_self_Wq";
    expect_refusal(items, 5, "'encoder_l1_self_Wq'", "twice");
    valid_items(items);
    items[1].rank = 0;
    expect_refusal(items, 5, "item 1", "rank 0");
    items[1].rank = 5;
    expect_refusal(items, 5, "item 1", "rank 5");
    valid_items(items);
    items[1].shape[1] = -3;
    expect_refusal(items, 5, "'decoder_b'", "negative");
    valid_items(items);
    items[1].shape[1] = 4;  /* 32 bytes of values, 24 written */
    items[1].length = 24;
    expect_refusal(items, 5, "'decoder_b'", "needs 32");
    valid_items(items);
    items[1].length = 512;  /* beyond Marian's rounding of 24 bytes */
    expect_refusal(items, 5, "'decoder_b'", "512 data bytes");
    valid_items(items);
    items[0].length = items[0].data_bytes = 6;  /* no room for the multiplier */
    expect_refusal(items, 5, "'encoder_l1_self_Wq'", "needs 10");
}

Test(marian_bin, refuses_bad_multipliers_and_config)
{
    bin_item items[5];
    valid_items(items);
    make_quantized(0.0f);
    expect_refusal(items, 5, "'encoder_l1_self_Wq'", "multiplier is 0");
    make_quantized(NAN);
    expect_refusal(items, 5, "'encoder_l1_self_Wq'", "not a positive finite");
    valid_items(items);
    static const char inner_nul[] = "type: x\0dim-emb: 2";
    items[4] = (bin_item){"special:model.yml", 0x101, 1, {sizeof inner_nul}, inner_nul,
                          sizeof inner_nul, sizeof inner_nul};
    expect_refusal(items, 5, "'special:model.yml'", "NUL byte inside");
    items[4].type = 0x404;
    items[4].shape[0] = 1;
    items[4].data_bytes = items[4].length = 4;
    expect_refusal(items, 5, "'special:model.yml'", "YAML");
}

/* Edits one byte of a valid file and expects a refusal naming `part`. */
static void expect_edit_refused(size_t at, unsigned char value, const char *part)
{
    bin_item items[5];
    byte_buffer b = build_bin(items, valid_items(items));
    b.bytes[at] = value;
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(ted_marian_parse(b.bytes, b.size, FILE_NAME, &file, &err), TED_ERR_FORMAT,
                 "byte %zu = %u parsed", at, value);
    cr_assert(strstr(err.message, FILE_NAME) && strstr(err.message, part), "message: %s",
              err.message);
    free(b.bytes);
}

Test(marian_bin, refuses_bad_headers_and_padding)
{
    expect_edit_refused(0, 2, "version 2");
    expect_edit_refused(15, 1, "more headers than the file");
    /* the first name's NUL (the names start after 16 + 5 * 32 bytes) */
    expect_edit_refused(176 + 18, 'x', "no terminating NUL");
    expect_edit_refused(176 + 3, 0, "holds a NUL before its end");
    /* the last byte of the padding before the data (at 512) */
    expect_edit_refused(511, 7, "padding");
    /* the padding length (after the shapes, at 281) */
    expect_edit_refused(281, 0x10, "not a multiple of 256");
}

Test(marian_bin, refuses_trailing_bytes_and_every_cut)
{
    bin_item items[5];
    byte_buffer b = build_bin(items, valid_items(items));
    buf_put(&b, "x", 1);
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(ted_marian_parse(b.bytes, b.size, FILE_NAME, &file, &err), TED_ERR_FORMAT);
    cr_assert(strstr(err.message, "1 bytes follow the last item"), "message: %s",
              err.message);
    b.size--;
    expect_every_cut_refused(&b, FILE_NAME);
    free(b.bytes);
}

Test(marian_bin, opens_a_file_and_refuses_other_content)
{
    bin_item items[5];
    byte_buffer b = build_bin(items, valid_items(items));
    char *path = write_scratch_file("marian", b.bytes, b.size);
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(ted_marian_open(path, &file, &err), TED_OK, "%s", err.message);
    cr_assert(file.mapped);
    cr_assert_eq(file.count, 5);
    cr_assert_str_eq(ted_marian_yml(&file, NULL), YML);
    ted_marian_close(&file);
    ted_marian_close(&file);

    write_file(path, "{\"not\": 1}", 10);
    cr_assert_eq(ted_marian_open(path, &file, &err), TED_ERR_FORMAT);
    cr_assert(strstr(err.message, path) && strstr(err.message, "neither a NumPy .npz"),
              "message: %s", err.message);
    unlink(path);
    cr_assert_eq(ted_marian_open(path, &file, &err), TED_ERR_IO);
    cr_assert(strstr(err.message, path), "message: %s", err.message);
    free(path);
    free(b.bytes);
}
