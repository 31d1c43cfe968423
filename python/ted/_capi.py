"""The C API of libted (include/ted/ted.h) through ctypes.

The structs below mirror the header's field for field; tests/python checks
their sizes against the C compiler's. ctypes releases the GIL during every
foreign call, so C code runs while other Python threads do.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import (POINTER, Structure, c_bool, c_char, c_char_p, c_double, c_float, c_int,
                    c_size_t, c_uint, c_uint64, c_void_p)

ERROR_MESSAGE_SIZE = 1024
WORD_PIECES_MAX = 32  # TED_WORD_PIECES_MAX

# ted_status
OK, ERR_IO, ERR_FORMAT, ERR_CONFIG, ERR_WEIGHTS, ERR_VOCAB, ERR_INPUT, ERR_NOMEM, \
    ERR_ARGUMENT, ERR_CANCELLED = range(10)
# ted_decoding_strategy
DECODE_GREEDY, DECODE_BEAM, DECODE_SAMPLE = range(3)
# ted_length_normalization
LENGTH_GNMT, LENGTH_POWER = range(2)
# ted_side
SIDE_SOURCE, SIDE_TARGET = range(2)
# ted_early_stopping
EARLY_STOPPING_FALSE, EARLY_STOPPING_TRUE, EARLY_STOPPING_NEVER, EARLY_STOPPING_MARIAN = range(4)
# ted_attention_kind
ENCODER_SELF_ATTENTION, DECODER_SELF_ATTENTION, CROSS_ATTENTION = range(3)


# ted_option: the rows of the library's option table
(OPTION_NONE, OPTION_BEAM_SIZE, OPTION_SAMPLE, OPTION_N_BEST, OPTION_LENGTH_PENALTY,
 OPTION_LENGTH_NORMALIZATION, OPTION_EARLY_STOPPING, OPTION_TEMPERATURE, OPTION_TOP_K,
 OPTION_TOP_P, OPTION_SEED, OPTION_MAX_LENGTH, OPTION_REPETITION_PENALTY,
 OPTION_NO_REPEAT_NGRAM_SIZE, OPTION_MIN_LENGTH, OPTION_MIN_NEW_TOKENS, OPTION_BAD_WORDS_IDS,
 OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE, OPTION_COUNT) = range(19)
BAD_WORDS_MAX = 256  # TED_BAD_WORDS_MAX


class Error_(Structure):
    _fields_ = [("status", c_int), ("message", c_char * ERROR_MESSAGE_SIZE),
                ("option", c_int)]


class BeamParams(Structure):
    _fields_ = [("beam_size", c_int), ("length_penalty", c_float),
                ("length_normalization", c_int), ("early_stopping", c_int)]


class SamplingParams(Structure):
    _fields_ = [("temperature", c_float), ("top_k", c_int), ("top_p", c_float),
                ("seed", c_uint64)]


class LogitsRules(Structure):
    _fields_ = [("repetition_penalty", c_float), ("no_repeat_ngram_size", c_int),
                ("encoder_no_repeat_ngram_size", c_int), ("min_length", c_int),
                ("min_new_tokens", c_int),
                ("bad_words", c_int * BAD_WORDS_MAX), ("bad_words_length", c_int)]


class DecodeOptions(Structure):
    _fields_ = [("strategy", c_int), ("beam", BeamParams), ("sampling", SamplingParams),
                ("n_best", c_int), ("tokens_only", c_bool), ("rules", LogitsRules)]


class Languages(Structure):
    _fields_ = [("source", c_char_p), ("target", c_char_p)]


class TranslateOptions(Structure):
    _fields_ = [("decode", DecodeOptions), ("batch_size", c_int), ("max_batch_tokens", c_int),
                ("workers", c_int), ("max_length", c_int),
                ("first_index", c_uint64), ("progress", c_void_p), ("progress_data", c_void_p),
                ("languages", Languages)]


class TranslateCall(Structure):
    _fields_ = [("options", POINTER(TranslateOptions)), ("cancel", c_void_p)]


class Hypothesis(Structure):
    _fields_ = [("ids", POINTER(c_int)), ("log_probs", POINTER(c_float)), ("length", c_int),
                ("log_prob", c_double), ("score", c_double)]


class Translation(Structure):
    _fields_ = [("text", c_void_p), ("hypothesis", Hypothesis)]


class Source(Structure):
    _fields_ = [("ids", POINTER(c_int)), ("count", c_int), ("unknown", c_int),
                ("blank", c_bool), ("prefix_ids", POINTER(c_int)), ("prefix_count", c_int)]


class AttentionView(Structure):
    _fields_ = [("weights", POINTER(c_float)), ("heads", c_int), ("queries", c_int),
                ("keys", c_int), ("stride", c_int)]


class LearnCandidate(Structure):  # ted_learn_candidate (ted/learn.h)
    _fields_ = [("id", c_int), ("p", c_float), ("logit", c_float)]


class LearnChange(Structure):  # ted_learn_change
    _fields_ = [("rule", c_int), ("at", c_int), ("score", c_float)]


# ted_learn_rule: what changed a candidate's score
LEARN_RULE_NONE, LEARN_RULE_REPETITION = 0, 2
LEARN_RULE_FORCED_BOS = 8  # from here on: the rules that force a token


class LearnStep(Structure):  # ted_learn_step
    _fields_ = [("input", c_int), ("chosen", c_int), ("forced", c_bool),
                ("best", LearnCandidate), ("taken", LearnCandidate),
                ("top", POINTER(LearnCandidate)), ("self", POINTER(c_float)),
                ("cross", POINTER(c_float)), ("changes", POINTER(LearnChange)),
                ("taken_change", LearnChange)]


class LearnTrace(Structure):  # ted_learn_trace
    _fields_ = [("model", c_void_p), ("config", c_void_p), ("session", c_void_p),
                ("source", POINTER(c_int)), ("source_len", c_int),
                ("prefix", POINTER(c_int)), ("prefix_len", c_int), ("max_steps", c_int),
                ("top_k", c_int), ("encoder", POINTER(c_float)), ("encoder_kept", c_bool),
                ("steps", POINTER(LearnStep)), ("count", c_int), ("finished", c_bool),
                ("probs", POINTER(c_float)), ("allowed", POINTER(c_float)),
                ("top_ids", POINTER(c_int)), ("rules", LogitsRules),
                ("history", POINTER(c_int)), ("marks", POINTER(LearnChange))]


def _find_library() -> str:
    """libted.so: $TED_LIBRARY, else the one shipped in the package, else
    the repository's build/ (a checkout used without installing)."""
    explicit = os.environ.get("TED_LIBRARY")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    shipped = os.path.join(here, "libted.so")
    if os.path.exists(shipped):
        return shipped
    built = os.path.join(os.path.dirname(os.path.dirname(here)), "build", "libted.so")
    if os.path.exists(built):
        return built
    raise OSError("ted: libted.so not found in %s (build it with `make python`, or set "
                  "TED_LIBRARY)" % here)


def _declare(lib: ctypes.CDLL) -> dict:
    status = c_int
    err = POINTER(Error_)
    model = c_void_p
    session = c_void_p
    table = {
        "ted_version": (c_char_p, []),
        "ted_status_name": (c_char_p, [c_int]),
        "ted_free": (None, [c_void_p]),
        "ted_model_load": (status, [c_char_p, POINTER(c_void_p), err]),
        "ted_model_free": (None, [model]),
        "ted_model_config": (c_void_p, [model]),
        "ted_config_json": (c_void_p, [c_void_p]),
        "ted_prepare_source": (status, [model, c_char_p, POINTER(Languages), POINTER(Source),
                                        err]),
        "ted_model_languages": (c_int, [model, c_int, POINTER(POINTER(c_char_p))]),
        "ted_model_find_language": (status, [model, c_int, c_char_p, POINTER(c_char_p), err]),
        "ted_source_free": (None, [POINTER(Source)]),
        "ted_encode_target": (status, [model, c_char_p, POINTER(POINTER(c_int)),
                                       POINTER(c_int), POINTER(c_int), err]),
        "ted_decode_target": (c_void_p, [model, POINTER(c_int), c_int]),
        "ted_target_token": (c_char_p, [model, c_int]),
        "ted_source_token": (c_char_p, [model, c_int]),
        "ted_target_id": (c_int, [model, c_char_p]),
        "ted_target_word": (status, [model, c_char_p, POINTER(c_int), c_int, POINTER(c_int),
                                     err]),
        "ted_session_new": (status, [model, POINTER(c_void_p), err]),
        "ted_session_free": (None, [session]),
        "ted_session_encode": (status, [session, POINTER(POINTER(c_int)), POINTER(c_int),
                                        c_int, c_int, err]),
        "ted_session_step": (status, [session, POINTER(c_int), POINTER(POINTER(c_float)),
                                      err]),
        "ted_session_keep_attention": (None, [session, c_bool]),
        "ted_session_attention": (status, [session, c_int, c_int, c_int,
                                           POINTER(AttentionView), err]),
        "ted_ban_tokens": (None, [model, POINTER(c_float)]),
        "ted_top_k": (c_int, [POINTER(c_float), c_int, c_int, POINTER(c_int),
                              POINTER(c_float)]),
        "ted_max_target_length": (c_int, [model, c_int, c_int]),
        "ted_translate_model_options": (TranslateOptions, [model]),
        "ted_translate_options_check": (status, [model, POINTER(TranslateOptions), err]),
        "ted_translate_options_check_given": (status, [model, POINTER(TranslateOptions),
                                                       c_uint, err]),
        "ted_option_key": (c_char_p, [c_int]),
        "ted_option_bounds": (c_bool, [c_int, POINTER(c_double), POINTER(c_double),
                                       POINTER(c_bool)]),
        "ted_option_word": (c_char_p, [c_int, c_int]),
        "ted_error_spell_options": (None, [err, POINTER(c_char_p)]),
        "ted_translate_n_best": (status, [model, POINTER(c_char_p), c_int,
                                          POINTER(TranslateOptions), POINTER(Translation),
                                          POINTER(c_int), err]),
        "ted_translations_free": (None, [POINTER(Translation), c_int]),
        "ted_cancel_new": (status, [POINTER(c_void_p), err]),
        "ted_cancel_free": (None, [c_void_p]),
        "ted_cancel_request": (None, [c_void_p]),
        "ted_cancel_requested": (c_bool, [c_void_p]),
        "ted_session_watch": (None, [session, c_void_p]),
        "ted_translate_n_best_cancellable": (status, [model, POINTER(c_char_p), c_int,
                                                      POINTER(TranslateCall),
                                                      POINTER(Translation), POINTER(c_int),
                                                      err]),
        "ted_learn_start": (status, [POINTER(LearnTrace), model, POINTER(Source), c_int, c_int,
                                     err]),
        "ted_learn_advance": (status, [POINTER(LearnTrace), c_int, err]),
        "ted_learn_end": (None, [POINTER(LearnTrace)]),
        "ted_learn_use_rules": (None, [POINTER(LearnTrace), POINTER(LogitsRules)]),
        "ted_learn_change_words": (c_char_p, [POINTER(LearnTrace), c_int, c_int,
                                              POINTER(LearnChange), c_char_p, c_size_t]),
        "ted_set_threads": (c_int, [c_int]),
        "ted_translate_workers": (c_int, [model, c_int]),
        "ted_threads_new": (status, [c_int, POINTER(c_void_p), err]),
        "ted_threads_free": (None, [c_void_p]),
        "ted_threads_count": (c_int, [c_void_p]),
        "ted_threads_use": (c_void_p, [c_void_p]),
        "ted_cpu_kernels": (c_char_p, []),
    }
    for name, (restype, argtypes) in table.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return table


lib = ctypes.CDLL(_find_library())
# name -> (restype, argtypes): the functions of include/ted/ted.h the package
# calls, each exported by libted.so (tests/python checks both)
functions = _declare(lib)
library_path: str = lib._name
# ted_version(): the TED_VERSION of the library loaded
library_version: str = lib.ted_version().decode()
sizes = {"ted_error": ctypes.sizeof(Error_), "ted_translate_options":
         ctypes.sizeof(TranslateOptions), "ted_translation": ctypes.sizeof(Translation),
         "ted_source": ctypes.sizeof(Source), "ted_attention_view":
         ctypes.sizeof(AttentionView), "ted_decode_options": ctypes.sizeof(DecodeOptions),
         "ted_languages": ctypes.sizeof(Languages),
         "ted_translate_call": ctypes.sizeof(TranslateCall),
         "ted_learn_candidate": ctypes.sizeof(LearnCandidate),
         "ted_learn_change": ctypes.sizeof(LearnChange),
         "ted_learn_step": ctypes.sizeof(LearnStep), "ted_learn_trace": ctypes.sizeof(LearnTrace)}
