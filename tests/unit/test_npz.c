/* NumPy .npz archives built byte by byte (tests/unit/marian_files.h, after
 * Marian's cnpy npz_save): what the reader gives of a valid archive, and
 * each malformation of the zip or the .npy refused with a message naming
 * the file and the member. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "io/marian_file.h"
#include "marian_files.h"

#define FILE_NAME "model.npz"
#define F32_DICT "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

static const float FLOATS[6] = {1.0f, -2.0f, 0.5f, 3.25f, 0.0f, -0.125f};
static const char YML[] = "type: transformer\n";

/* Three members: a float matrix, int8 bytes, the config. */
static int valid_members(npz_member m[3])
{
    char yml_dict[96];
    snprintf(yml_dict, sizeof yml_dict,
             "{'descr': '|i1', 'fortran_order': False, 'shape': (%zu,), }", sizeof YML);
    static const signed char bytes[4] = {-1, 2, -3, 4};
    m[0] = (npz_member){"decoder_W.npy", build_npy(F32_DICT, FLOATS, sizeof FLOATS), 0, 0};
    m[1] = (npz_member){"special:model.yml.npy", build_npy(yml_dict, YML, sizeof YML), 0, 0};
    m[2] = (npz_member){"a_bytes.npy",
                        build_npy("{'shape': (4,), 'descr': '<i1', 'fortran_order': False}",
                                  bytes, sizeof bytes),
                        0, 0};
    return 3;
}

static void free_members(npz_member *m, int count)
{
    for (int i = 0; i < count; i++)
        free(m[i].npy.bytes);
}

/* Builds the archive of `m` (freeing the members) in a buffer of its exact
 * size and parses it. */
static ted_status parse_members(npz_member *m, int count, ted_marian_file *file,
                                ted_error *err)
{
    byte_buffer b = build_npz(m, count);
    free_members(m, count);
    ted_status status = parse_exact(&b, FILE_NAME, file, err);
    free(b.bytes);
    return status;
}

static void expect_refusal(npz_member *m, int count, const char *part1, const char *part2)
{
    byte_buffer b = build_npz(m, count);
    free_members(m, count);
    expect_buffer_refused(&b, FILE_NAME, part1, part2);
    free(b.bytes);
}

/* A valid archive with member 0's .npy header `dict`. */
static void expect_dict_refused(const char *dict, const char *part)
{
    npz_member m[3];
    valid_members(m);
    free(m[0].npy.bytes);
    m[0].npy = build_npy(dict, FLOATS, sizeof FLOATS);
    expect_refusal(m, 3, "'decoder_W.npy'", part);
}

Test(npz, reads_members_sorted_with_config)
{
    npz_member m[3];
    int count = valid_members(m);
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(parse_members(m, count, &file, &err), TED_OK, "%s", err.message);
    cr_assert_eq(file.container, TED_MARIAN_NPZ);
    cr_assert_eq(file.count, 3);
    cr_assert_str_eq(file.tensors[0].st.name, "a_bytes");
    cr_assert_str_eq(file.tensors[1].st.name, "decoder_W");
    const ted_marian_tensor *w = ted_marian_find(&file, "decoder_W");
    cr_assert_eq(w->st.dtype, TED_DTYPE_F32);
    cr_assert_eq(w->type, TED_MARIAN_FLOAT32);
    cr_assert_eq(w->st.ndim, 2);
    cr_assert_eq(w->st.shape[0], 2);
    cr_assert_eq(w->st.shape[1], 3);
    cr_assert_eq(w->st.bytes, sizeof FLOATS);
    cr_assert_eq(memcmp(w->st.data, FLOATS, sizeof FLOATS), 0);
    cr_assert_not(w->transposed);
    const ted_marian_tensor *a = ted_marian_find(&file, "a_bytes");
    cr_assert_eq(a->st.dtype, TED_DTYPE_I8);
    cr_assert_eq(((const signed char *)a->st.data)[2], -3);
    cr_assert_str_eq(ted_marian_yml(&file, NULL), YML);
    free_parsed(&file);
}

Test(npz, refuses_what_ted_does_not_read_of_a_zip)
{
    npz_member m[3];
    valid_members(m);
    m[0].method = 8;
    expect_refusal(m, 3, "'decoder_W.npy'", "compressed (deflate)");
    valid_members(m);
    m[0].method = 12;
    expect_refusal(m, 3, "'decoder_W.npy'", "method 12");
    valid_members(m);
    m[0].crc = 0x12345678;
    expect_refusal(m, 3, "'decoder_W.npy'", "CRC-32");
    valid_members(m);
    m[2].name = "notes.txt";
    expect_refusal(m, 3, "'notes.txt'", "NAME.npy");
    valid_members(m);
    m[2].name = "decoder_W.npy";
    expect_refusal(m, 3, "'decoder_W'", "twice");
}

Test(npz, refuses_bad_npy_headers)
{
    expect_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", "'<f8'");
    expect_dict_refused("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", "'>f4'");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }",
                        "Fortran");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }",
                        "needs 32");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 2, 3), }",
                        "more than 4 dimensions");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': False}", "not the dict");
    expect_dict_refused("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                        "'shape': (2, 3), }",
                        "not the dict");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }",
                        "not the dict");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}",
                        "not the dict");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x",
                        "not the dict");
    expect_dict_refused("{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (99999999999999999999, 3), }",
                        "not the dict");
}

Test(npz, refuses_every_cut_and_a_flipped_byte_in_each_structure)
{
    npz_member m[3];
    byte_buffer b = build_npz(m, valid_members(m));
    free_members(m, 3);
    expect_every_cut_refused(&b, FILE_NAME);
    ted_marian_file file;
    ted_error err = {0};
    /* every byte but those of the zip's unchecked fields (versions, times,
     * attributes, the local header's sizes and CRC) breaks the archive */
    size_t refused = 0;
    for (size_t at = 0; at < b.size; at++) {
        b.bytes[at] ^= 0x40;
        if (ted_marian_parse(b.bytes, b.size, FILE_NAME, &file, &err) == TED_OK)
            ted_marian_close(&file);
        else
            refused++;
        b.bytes[at] ^= 0x40;
    }
    cr_assert_gt(refused, b.size * 8 / 10, "only %zu of %zu flips refused", refused, b.size);
    free(b.bytes);
}

Test(npz, an_empty_archive_is_an_empty_table)
{
    byte_buffer b = build_npz(NULL, 0);
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(ted_marian_parse(b.bytes, b.size, FILE_NAME, &file, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(file.count, 0);
    cr_assert_null(ted_marian_yml(&file, NULL));
    ted_marian_close(&file);
    free(b.bytes);
}

/* The archive's end record moved into its zip64 form (the record, its
 * locator, then an end record whose fields hold all ones), as a writer
 * does past 65 535 members or 4 GiB. */
static byte_buffer to_zip64(const byte_buffer *b)
{
    size_t eocd = b->size - 22;
    uint64_t entries = b->bytes[eocd + 10] | b->bytes[eocd + 11] << 8;
    uint64_t dir_size = 0, dir_at = 0;
    for (int i = 3; i >= 0; i--) {
        dir_size = dir_size << 8 | b->bytes[eocd + 12 + i];
        dir_at = dir_at << 8 | b->bytes[eocd + 16 + i];
    }
    byte_buffer z = {0};
    buf_put(&z, b->bytes, eocd);
    buf_put(&z, "PK\6\6", 4);
    buf_le(&z, 44, 8);
    buf_le(&z, 45, 2);
    buf_le(&z, 45, 2);
    buf_le(&z, 0, 4);
    buf_le(&z, 0, 4);
    buf_le(&z, entries, 8);
    buf_le(&z, entries, 8);
    buf_le(&z, dir_size, 8);
    buf_le(&z, dir_at, 8);
    buf_put(&z, "PK\6\7", 4);
    buf_le(&z, 0, 4);
    buf_le(&z, eocd, 8);
    buf_le(&z, 1, 4);
    buf_put(&z, "PK\5\6", 4);
    buf_zeros(&z, 4);
    buf_le(&z, 0xFFFF, 2);
    buf_le(&z, 0xFFFF, 2);
    buf_le(&z, 0xFFFFFFFF, 4);
    buf_le(&z, 0xFFFFFFFF, 4);
    buf_le(&z, 0, 2);
    return z;
}

Test(npz, reads_zip64_end_records)
{
    npz_member m[3];
    byte_buffer b = build_npz(m, valid_members(m));
    free_members(m, 3);
    byte_buffer z = to_zip64(&b);
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(ted_marian_parse(z.bytes, z.size, FILE_NAME, &file, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(file.count, 3);
    cr_assert_str_eq(ted_marian_yml(&file, NULL), YML);
    ted_marian_close(&file);
    /* the locator pointing one byte off */
    z.bytes[z.size - 22 - 20 + 8] ^= 1;
    cr_assert_eq(ted_marian_parse(z.bytes, z.size, FILE_NAME, &file, &err), TED_ERR_FORMAT);
    cr_assert(strstr(err.message, "zip64 locator points to no zip64 end record"),
              "message: %s", err.message);
    free(z.bytes);
    free(b.bytes);
}

/* A central entry whose sizes and offset hold all ones, the real values
 * in its zip64 extra field, as numpy.savez writes large members. */
Test(npz, reads_zip64_extra_fields)
{
    npz_member m[1];
    m[0] = (npz_member){"decoder_W.npy", build_npy(F32_DICT, FLOATS, sizeof FLOATS), 0, 0};
    byte_buffer b = build_npz(m, 1);
    free_members(m, 1);
    size_t central = b.size - 22 - (46 + strlen("decoder_W.npy"));
    byte_buffer z = {0};
    buf_put(&z, b.bytes, central);
    buf_put(&z, b.bytes + central, 20);
    buf_le(&z, 0xFFFFFFFF, 4);
    buf_le(&z, 0xFFFFFFFF, 4);
    buf_put(&z, b.bytes + central + 28, 2);
    buf_le(&z, 28, 2);  /* the extra field's length */
    buf_put(&z, b.bytes + central + 32, 10);
    buf_le(&z, 0xFFFFFFFF, 4);
    buf_put(&z, b.bytes + central + 46, strlen("decoder_W.npy"));
    buf_le(&z, 1, 2);
    buf_le(&z, 24, 2);
    uint64_t size = b.bytes[central + 24] | b.bytes[central + 25] << 8;
    buf_le(&z, size, 8);
    buf_le(&z, size, 8);
    buf_le(&z, 0, 8);
    buf_put(&z, "PK\5\6", 4);
    buf_zeros(&z, 4);
    buf_le(&z, 1, 2);
    buf_le(&z, 1, 2);
    buf_le(&z, z.size - 4 - 4 - 4 - central, 4);
    buf_le(&z, central, 4);
    buf_le(&z, 0, 2);
    ted_marian_file file;
    ted_error err = {0};
    cr_assert_eq(ted_marian_parse(z.bytes, z.size, FILE_NAME, &file, &err), TED_OK, "%s",
                 err.message);
    cr_assert_eq(memcmp(ted_marian_find(&file, "decoder_W")->st.data, FLOATS, sizeof FLOATS),
                 0);
    ted_marian_close(&file);
    free(z.bytes);
    free(b.bytes);
}
