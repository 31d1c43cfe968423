// SentencePiece through its C++ library, for C callers (io/sentencepiece.h).
// Nothing here throws across the C boundary: every call catches what the
// library or the standard library may throw and turns it into a status.
#include "io/sentencepiece.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>

extern "C" {
#include "core/error.h"
#include "core/file.h"
}

struct ted_spm {
    sentencepiece::SentencePieceProcessor processor;
};

static const size_t SPM_MAX_BYTES = 64u << 20;

// Why the library refused a model, in a few words: its message without the
// source location, or what a failed parse means.
static std::string load_problem(const sentencepiece::util::Status &status)
{
    std::string message = status.message();
    if (message.find("ParseFromArray") != std::string::npos)
        return "the file does not parse as one: truncated, or another kind of file";
    while (!message.empty() && (message.back() == '.' || message.back() == ' '))
        message.pop_back();
    return message;
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
    if (length == 0) {
        free(bytes);
        return ted_fail(err, TED_ERR_VOCAB, "%s: empty file, not a SentencePiece model", path);
    }
    ted_spm *model = new (std::nothrow) ted_spm;
    if (!model) {
        free(bytes);
        return ted_fail(err, TED_ERR_NOMEM, "%s: out of memory", path);
    }
    try {
        auto status = model->processor.LoadFromSerializedProto(std::string(bytes, length));
        free(bytes);
        if (!status.ok()) {
            delete model;
            return ted_fail(err, TED_ERR_VOCAB, "%s: not a SentencePiece model (%s)", path,
                            load_problem(status).c_str());
        }
    } catch (const std::exception &e) {
        free(bytes);
        delete model;
        return ted_fail(err, TED_ERR_VOCAB, "%s: cannot load the SentencePiece model (%s)", path,
                        e.what());
    }
    *spm = model;
    return TED_OK;
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
