// SentencePiece through its C++ library, for C callers (io/sentencepiece.h).
// Nothing here throws across the C boundary: every call catches what the
// library or the standard library may throw and turns it into a status.
#include "io/sentencepiece.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>

extern "C" {
#include "core/error.h"
#include "core/file.h"
#include "core/limits.h"
}

struct ted_spm {
    sentencepiece::SentencePieceProcessor processor;
};

// ---- What the library indexes without checking -----------------------------
//
// The library trusts a model's normalization tables (normalizer_spec and
// denormalizer_spec's precompiled_charsmap): normalizer.cc reads the table as
// a uint32 trie size, the trie's darts-clone double-array units, then the
// replacement strings, each NUL-terminated. It checks only that the size is
// below the table's length, and then:
//   - commonPrefixSearch reads unit 0 (the root), then for each input byte c
//     the unit (node ^ offset(node)) ^ c, and, at a node whose has_leaf bit
//     is set, the unit node ^ offset(node), whose low 31 bits are the value;
//   - NormalizePrefix takes &normalized[value] as a C string.
// So a trie size past the table, a node whose children lie past the units, a
// value past the last NUL of the strings, each reads outside the file's bytes
// (a segfault at the first sentence, or at load when the file holds
// self-test samples). This walks the protobuf wire format (only what it needs:
// ModelProto fields 3 and 5, NormalizerSpec field 2) and checks every table
// before the library sees the file.

namespace {

struct wire {
    const unsigned char *at;
    size_t left;
};

bool read_varint(wire *w, uint64_t *value)
{
    *value = 0;
    for (int shift = 0; shift < 64 && w->left; shift += 7) {
        unsigned char byte = *w->at++;
        w->left--;
        *value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

// One field: its number, its wire type and, for a length-delimited one, its
// bytes. A group (wire types 3 and 4) comes back whole to the caller as
// wire type 3 with nothing in `payload`. False when the bytes are not a
// protobuf message.
bool next_field(wire *w, uint32_t *field, int *type, wire *payload, int depth);

bool skip_group(wire *w, uint32_t field, int depth)
{
    if (depth > 64)
        return false;
    while (w->left) {
        uint64_t tag;
        const wire before = *w;
        if (!read_varint(w, &tag))
            return false;
        if ((tag & 7) == 4)
            return (tag >> 3) == field;
        *w = before;
        uint32_t inner;
        int type;
        wire payload;
        if (!next_field(w, &inner, &type, &payload, depth + 1))
            return false;
    }
    return false;
}

bool next_field(wire *w, uint32_t *field, int *type, wire *payload, int depth)
{
    uint64_t tag, value;
    if (!read_varint(w, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
        return false;
    *field = (uint32_t)(tag >> 3);
    *type = (int)(tag & 7);
    *payload = {w->at, 0};
    size_t skip = 0;
    switch (*type) {
    case 0:
        return read_varint(w, &value);
    case 1:
        skip = 8;
        break;
    case 5:
        skip = 4;
        break;
    case 2:
        if (!read_varint(w, &value) || value > w->left)
            return false;
        skip = (size_t)value;
        *payload = {w->at, skip};
        break;
    case 3:
        return skip_group(w, *field, depth);
    default:
        return false;
    }
    if (skip > w->left)
        return false;
    w->at += skip;
    w->left -= skip;
    return true;
}

uint32_t read_u32(const unsigned char *at)
{
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

// darts-clone's DoubleArrayUnit: the offset to a node's children, and its flags.
uint32_t unit_offset(uint32_t unit)
{
    return (unit >> 10) << ((unit & (1u << 9)) >> 6);
}

bool unit_is_node(uint32_t unit)
{
    return !(unit & 0x80000000u);
}

bool unit_has_leaf(uint32_t unit)
{
    return (unit >> 8) & 1;
}

// Whether every child of a node whose units start at `base` (base ^ c for
// each byte c) is one of the `count` units.
bool children_inside(size_t base, size_t count)
{
    return (base | 0xff) < count;
}

// What is wrong with one precompiled_charsmap, or "" when it is usable (what
// the library reads: above).
std::string charsmap_problem(const unsigned char *blob, size_t size)
{
    if (size < 4)
        return "is " + std::to_string(size) + " bytes, shorter than its 4-byte trie size";
    const size_t trie_bytes = read_u32(blob);
    if (trie_bytes > size - 4)
        return "claims a trie of " + std::to_string(trie_bytes) + " bytes where only " +
               std::to_string(size - 4) + " follow its size";
    const unsigned char *units = blob + 4;
    const size_t count = trie_bytes / 4;
    const unsigned char *strings = units + trie_bytes;
    const size_t string_bytes = size - 4 - trie_bytes;
    size_t usable = 0;  // the values that have a NUL at or after them
    for (size_t i = string_bytes; i > 0; i--)
        if (strings[i - 1] == 0) {
            usable = i;
            break;
        }
    if (count == 0 || !children_inside(unit_offset(read_u32(units)), count))
        return "has a trie root that points outside its " + std::to_string(count) + " units";
    for (size_t i = 0; i < count; i++) {
        const uint32_t unit = read_u32(units + 4 * i);
        if (!unit_is_node(unit))
            continue;
        const size_t base = i ^ unit_offset(unit);
        if (!children_inside(base, count))
            return "has trie unit " + std::to_string(i) + " pointing to unit " +
                   std::to_string(base) + ", outside its " + std::to_string(count) + " units";
        if (!unit_has_leaf(unit))
            continue;
        const size_t value = read_u32(units + 4 * base) & 0x7fffffffu;
        if (value >= usable)
            return "has trie unit " + std::to_string(i) + " pointing to byte " +
                   std::to_string(value) + " of its " + std::to_string(string_bytes) +
                   " bytes of strings, past the last NUL-terminated one";
    }
    return "";
}

// The problem of the first unusable precompiled_charsmap of one
// NormalizerSpec message, or "".
std::string spec_problem(wire spec, bool *parses)
{
    while (spec.left) {
        uint32_t field;
        int type;
        wire payload;
        if (!next_field(&spec, &field, &type, &payload, 0)) {
            *parses = false;
            return "";
        }
        if (field == 2 && type == 2 && payload.left) {
            std::string problem = charsmap_problem(payload.at, payload.left);
            if (!problem.empty())
                return problem;
        }
    }
    return "";
}

// Why the normalization tables of a serialized ModelProto are not usable
// ("the normalization table ..."), or "" when they are (or when there are
// none). `*parses` becomes false when the bytes are not a protobuf message.
std::string tables_problem(const char *bytes, size_t length, bool *parses)
{
    wire model = {reinterpret_cast<const unsigned char *>(bytes), length};
    *parses = true;
    while (model.left) {
        uint32_t field;
        int type;
        wire payload;
        if (!next_field(&model, &field, &type, &payload, 0)) {
            *parses = false;
            return "";
        }
        if ((field != 3 && field != 5) || type != 2)
            continue;
        std::string problem = spec_problem(payload, parses);
        if (!*parses)
            return "";
        if (!problem.empty())
            return (field == 3 ? "the normalization table " : "the denormalization table ") +
                   problem;
    }
    return "";
}

}  // namespace

// Why the library refused a model, in a few words: its message without the
// source location, or what a failed parse means.
static const char NOT_A_MESSAGE[] =
    "the file does not parse as one: truncated, or another kind of file";

static std::string load_problem(const sentencepiece::util::Status &status)
{
    std::string message = status.message();
    if (message.find("ParseFromArray") != std::string::npos)
        return NOT_A_MESSAGE;
    while (!message.empty() && (message.back() == '.' || message.back() == ' '))
        message.pop_back();
    return message;
}

// Checks the tables, then hands the bytes to the library.
static ted_status load_checked(const char *name, const char *bytes, size_t length, ted_spm *model,
                               ted_error *err)
{
    bool parses = true;
    std::string problem = tables_problem(bytes, length, &parses);
    if (!parses)
        return ted_fail(err, TED_ERR_VOCAB, "%s: not a SentencePiece model (%s)", name,
                        NOT_A_MESSAGE);
    if (!problem.empty())
        return ted_fail(err, TED_ERR_VOCAB, "%s: not a usable SentencePiece model (%s)", name,
                        problem.c_str());
    auto status = model->processor.LoadFromSerializedProto(std::string(bytes, length));
    if (!status.ok())
        return ted_fail(err, TED_ERR_VOCAB, "%s: not a SentencePiece model (%s)", name,
                        load_problem(status).c_str());
    return TED_OK;
}

extern "C" ted_status ted_spm_load_bytes(const char *name, const char *bytes, size_t length,
                                         ted_spm **spm, ted_error *err)
{
    *spm = nullptr;
    if (length == 0)
        return ted_fail(err, TED_ERR_VOCAB, "%s: empty file, not a SentencePiece model", name);
    ted_spm *model = new (std::nothrow) ted_spm;
    if (!model)
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", name);
    ted_status s;
    try {
        s = load_checked(name, bytes, length, model, err);
    } catch (const std::exception &e) {
        s = ted_fail(err, TED_ERR_VOCAB, "%s: cannot load the SentencePiece model (%s)", name,
                     e.what());
    }
    if (s) {
        delete model;
        return s;
    }
    *spm = model;
    return TED_OK;
}

extern "C" ted_status ted_spm_load(const char *path, ted_spm **spm, ted_error *err)
{
    *spm = nullptr;
    char *bytes = nullptr;
    size_t length = 0;
    ted_status s = ted_read_file(path, SPM_MAX_BYTES, TED_ERR_VOCAB, "a SentencePiece model",
                                 &bytes, &length, err);
    if (s)
        return s;
    s = ted_spm_load_bytes(path, bytes, length, spm, err);
    free(bytes);
    return s;
}

extern "C" void ted_spm_free(ted_spm *spm)
{
    delete spm;
}

// The pieces back to back, each NUL-terminated, in one malloc'ed block.
static char *pack(const std::vector<std::string> &pieces)
{
    size_t bytes = 0;
    for (const auto &piece : pieces)
        bytes += piece.size() + 1;
    char *block = static_cast<char *>(malloc(bytes ? bytes : 1));
    char *at = block;
    for (size_t i = 0; block && i < pieces.size(); i++) {
        memcpy(at, pieces[i].c_str(), pieces[i].size() + 1);
        at += pieces[i].size() + 1;
    }
    return block;
}

extern "C" ted_status ted_spm_encode(const ted_spm *spm, const char *text, size_t length,
                                     char **pieces, int *count, ted_error *err)
{
    *pieces = nullptr;
    *count = 0;
    try {
        std::vector<std::string> out;
        auto status = spm->processor.Encode(std::string(text, length), &out);
        if (!status.ok())
            return ted_fail(err, TED_ERR_INPUT, "SentencePiece: %s", status.ToString().c_str());
        if (out.size() > (size_t)(1 << 30))
            return ted_fail(err, TED_ERR_INPUT, "SentencePiece: too many pieces");
        if (!(*pieces = pack(out)))
            return ted_fail(err, TED_ERR_NOMEM, "SentencePiece: out of memory");
        *count = (int)out.size();
        return TED_OK;
    } catch (const std::exception &e) {
        return ted_fail(err, TED_ERR_NOMEM, "SentencePiece: %s", e.what());
    }
}

extern "C" char *ted_spm_decode(const ted_spm *spm, const char *const *pieces, int count)
{
    try {
        std::vector<std::string> in(pieces, pieces + count);
        std::string text;
        if (!spm->processor.Decode(in, &text).ok())
            return nullptr;
        char *out = static_cast<char *>(malloc(text.size() + 1));
        if (out)
            memcpy(out, text.c_str(), text.size() + 1);
        return out;
    } catch (const std::exception &) {
        return nullptr;
    }
}

extern "C" ted_status ted_spm_vocab_text(const ted_spm *spm, const char *name, char **text,
                                         size_t *length, ted_error *err)
{
    *text = nullptr;
    *length = 0;
    try {
        std::string all;
        int size = spm->processor.GetPieceSize();
        for (int id = 0; id < size; id++) {
            const std::string &piece = spm->processor.IdToPiece(id);
            if (piece.empty() || piece.find('\n') != std::string::npos ||
                piece.find('\0') != std::string::npos)
                return ted_fail(err, TED_ERR_VOCAB, "%s: piece %d is no vocabulary line", name,
                                id);
            all += piece;
            all += '\n';
        }
        if (!(*text = static_cast<char *>(malloc(all.size() + 1))))
            return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", name);
        memcpy(*text, all.c_str(), all.size() + 1);
        *length = all.size();
        return TED_OK;
    } catch (const std::exception &e) {
        return ted_fail(err, TED_ERR_NOMEM, "%s: %s", name, e.what());
    }
}
