"""What ted's config reader (src/io/config.c) refuses in a config.yaml, in
its words, for the exporters to refuse a model before they write it.

KEYS mirrors config.c's table of keys (type, bounds, choices, list
capacity, default); the checks mirror its readers (read_int, read_float,
read_bool, read_choice, read_int_list, read_code, read_code_list) and the
checks that involve two keys (check_shape, check_special_ids,
check_decoding, check_model_variant, check_languages).
tests/parity/test_export_refusals.py holds the two together: it compares
KEYS with config.c's table, and each refusal's words with what `ted info`
says about a config.yaml holding the value.

A value is a Python value as tools/ted_format.py's config_yaml writes it
(ints, floats, bools, words, language codes, lists of ints or of codes);
anything else (a string where
a number is needed, a list, a dict, None: what a JSON file may hold) is
refused as ted refuses a value of the wrong type.
"""
import math

import numpy as np

INT_MAX = 2 ** 31 - 1
SHOWN = 47  # ted shows up to 47 bytes of a scalar (config.c: shown_text)

ACTIVATION = ("relu", "gelu", "silu", "gelu_tanh")
FEED_FORWARD = ("plain", "gated")
NORM = ("layer", "rms")
TENSOR_NAMES = ("tutorial", "marian")
PROJECTION = ("packed", "separate")
POSITIONAL = ("interleaved", "concatenated", "fairseq", "learned", "relative", "marian")
TOKENIZER = ("whitespace", "char", "sentencepiece", "bpe")
NORMALIZER = ("none", "moses")
LANGUAGE = ("none", "en", "de", "es", "fr", "cs", "cz")
LENGTH_NORMALIZATION = ("gnmt", "power")
SOURCE_LANGUAGE_TOKEN = ("none", "first", "last")
TARGET_LANGUAGE_TOKEN = ("none", "forced", "source")
CODE_SIZE = 64         # TED_LANGUAGE_CODE_SIZE: the longest code, NUL included
LANGUAGES_SIZE = 16384  # TED_LANGUAGES_SIZE: every code of languages, NULs included
EARLY_STOPPING = ("false", "true", "never", "marian")
DECODER_LAYER = ("self-attention", "ssru")


def _int(low, high, default=None):
    return {"type": "int", "min": low, "max": high, "default": default}


def _float(low, high, default):
    return {"type": "float", "min": low, "max": high, "default": default}


def _word(choices, default):
    return {"type": "word", "choices": choices, "default": default}


def _bool(default):
    return {"type": "bool", "default": default}


def _path(required=True):
    return {"type": "path", "default": None, "required": required}


# Every key of config.c's table, dotted, with what it reads.
KEYS = {
    "model.d_model": _int(2, 65536),
    "model.heads": _int(1, 1024),
    "model.head_size": _int(0, 65536, 0),
    "model.encoder_layers": _int(1, 256),
    "model.decoder_layers": _int(1, 256),
    "model.d_ff": _int(1, 1048576),
    "model.src_vocab_size": _int(4, 16777216),
    "model.tgt_vocab_size": _int(4, 16777216),
    "model.activation": _word(ACTIVATION, "relu"),
    "model.feed_forward": _word(FEED_FORWARD, "plain"),
    "model.linear_bias": _bool(True),
    "model.scale_attention": _bool(True),
    "model.norm": _word(NORM, "layer"),
    "model.norm_first": _bool(False),
    "model.layer_norm_eps": _float(1, 0, 1e-5),
    "model.max_positions": _int(1, 1048576, 5000),
    "model.scale_embedding": _bool(True),
    "model.positional_encoding": _word(POSITIONAL, "interleaved"),
    "model.position_offset": _int(0, 1024, 0),
    "model.relative_buckets": _int(4, 1024, 32),
    "model.relative_max_distance": _int(1, 1048576, 128),
    "model.embedding_norm": _bool(False),
    "model.encoder_final_norm": _bool(True),
    "model.decoder_final_norm": _bool(True),
    "model.tensor_names": _word(TENSOR_NAMES, "tutorial"),
    "model.attention_projection": _word(PROJECTION, "packed"),
    "model.decoder_layer": _word(DECODER_LAYER, "self-attention"),
    "model.zero_start_embedding": _bool(False),
    "model.shared_embeddings": _bool(False),
    "model.tied_output": _bool(False),
    "model.output_bias": _bool(True),
    "model.scale_output": _bool(False),
    "weights": _path(),
    "tokenizer.type": _word(TOKENIZER, "whitespace"),
    "tokenizer.lowercase": _bool(False),
    "tokenizer.normalize": _word(NORMALIZER, "none"),
    "tokenizer.source_language": _word(LANGUAGE, "none"),
    "tokenizer.src_vocab": _path(),
    "tokenizer.tgt_vocab": _path(),
    "tokenizer.src_spm": _path(False),
    "tokenizer.tgt_spm": _path(False),
    "tokenizer.merges": _path(False),
    "tokenizer.add_prefix_space": _bool(False),
    "tokenizer.clean_up_text": _bool(True),
    "tokenizer.unk_id": _int(0, INT_MAX, 0),
    "tokenizer.pad_id": _int(0, INT_MAX, 1),
    "tokenizer.bos_id": _int(0, INT_MAX, 2),
    "tokenizer.eos_id": _int(0, INT_MAX, 3),
    "tokenizer.source_bos": _bool(True),
    "tokenizer.source_eos": _bool(True),
    "tokenizer.languages": {"type": "code_list", "capacity": LANGUAGES_SIZE, "default": []},
    "tokenizer.source_language_token": _word(SOURCE_LANGUAGE_TOKEN, "none"),
    "tokenizer.target_language_token": _word(TARGET_LANGUAGE_TOKEN, "none"),
    # default: bos_id
    "tokenizer.decoder_start_id": {"type": "int", "min": 0, "max": INT_MAX, "default": None,
                                   "required": False},
    "tokenizer.forced_bos_id": _int(-1, INT_MAX, -1),
    "tokenizer.source_lang": {"type": "code", "capacity": CODE_SIZE, "default": None,
                              "required": False},
    "tokenizer.target_lang": {"type": "code", "capacity": CODE_SIZE, "default": None,
                              "required": False},
    "tokenizer.default_target_lang": {"type": "code", "capacity": CODE_SIZE, "default": None,
                                      "required": False},
    "decoding.max_length": _int(0, 1048576, 0),
    "decoding.max_length_factor": _float(0, 0, 0),
    "decoding.max_length_offset": _int(0, 1048576, 0),
    "decoding.beam_size": _int(1, 1024, 1),
    "decoding.length_penalty": _float(0, 0, 0.6),
    "decoding.length_normalization": _word(LENGTH_NORMALIZATION, "gnmt"),
    "decoding.early_stopping": _word(EARLY_STOPPING, "false"),
    "decoding.forced_eos": _bool(False),
    "decoding.banned_ids": {"type": "int_list", "min": 0, "max": INT_MAX, "capacity": 16,
                            "default": []},
    "decoding.shortlist": _path(False),
    "decoding.sample": _bool(False),
    "decoding.temperature": _float(1, 0, 1.0),
    "decoding.top_k": _int(0, 16777216, 0),
    "decoding.top_p": _float(1, 1, 1.0),
    "decoding.repetition_penalty": _float(0, 0, 1.0),
    "decoding.no_repeat_ngram_size": _int(0, 1048576, 0),
    "decoding.encoder_no_repeat_ngram_size": _int(0, 1048576, 0),
    "decoding.min_length": _int(0, 1048576, 0),
    # the top-level languages: codes and directions "SOURCE > TARGET"
    "languages": {"type": "served_list", "capacity": LANGUAGES_SIZE, "default": []},
}


class ConfigProblem(Exception):
    """What ted's reader says of one key: `key` (dotted) and `what`; str()
    is ted's words after the file and line, "KEY: WHAT"."""

    def __init__(self, key, what):
        super().__init__(f"{key}: {what}")
        self.key, self.what = key, what


def shown(value):
    """A value as config.yaml holds it (tools/ted_format.py's yaml_scalar;
    a float that is not finite as "nan", "inf"), cut as ted cuts it."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and not math.isfinite(value):
        text = repr(value)
    elif isinstance(value, float):
        text = repr(value)
        mantissa, e, exponent = text.partition("e")
        text = (mantissa if "." in mantissa else mantissa + ".0") + (e + exponent if e else "")
    else:
        text = str(value)
    return text[:SHOWN]


def _kind(value):
    return "a mapping" if isinstance(value, dict) else "a list"


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _int_problem(spec, value):
    if not _is_int(value):
        return f'expected an integer, got "{shown(value)}"'
    if not spec["min"] <= value <= spec["max"]:
        if spec["max"] == INT_MAX:
            return f"{shown(value)} is out of range (must be >= {spec['min']})"
        return f"{shown(value)} is out of range (must be {spec['min']} to {spec['max']})"
    return None


def _float_problem(spec, value):
    text = shown(value)
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        return f'expected a number, got "{text}"'
    with np.errstate(over="ignore"):
        single = float(np.float32(value))
    if spec["min"] == 0 and not (single >= 0 and math.isfinite(single)):
        return f"{text} must be a finite float >= 0"
    if spec["min"] != 0 and not (single > 0 and math.isfinite(single)):
        return f"{text} must be a positive finite float"
    if spec["max"] > 0 and single > spec["max"]:
        return f"{text} is out of range (must be at most {spec['max']})"
    return None


def _list_problem(spec, value):
    if value is None:
        return None
    if isinstance(value, dict):
        return "expected a list of integers, got a mapping"
    if not isinstance(value, (list, tuple)):
        return f'expected a list of integers, got "{shown(value)}"'
    if len(value) > spec["capacity"]:
        return f"at most {spec['capacity']} values are allowed, got {len(value)}"
    for item in value:
        problem = (f"expected an integer, got {_kind(item)}"
                   if isinstance(item, (list, tuple, dict)) else _int_problem(spec, item))
        if problem:
            return problem
    return None


def _code_problem(value):
    text = value.encode("utf-8")
    if not text:
        return f'"{shown(value)}": a language code must not be empty'
    if len(text) >= CODE_SIZE:
        return f'"{shown(value)}": the language code is too long'
    if any(b <= 0x20 or b == 0x7F for b in text):
        return f'"{shown(value)}": a language code holds no spaces or control characters'
    return None


def _code_list_problem(spec, value):
    if value is None:
        return None
    if isinstance(value, dict):
        return "expected a list of language codes, got a mapping"
    if not isinstance(value, (list, tuple)):
        return f'expected a list of language codes, got "{shown(value)}"'
    used, seen = 0, set()
    for item in value:
        if isinstance(item, (list, tuple, dict)):
            return f"expected a language code, got {_kind(item)}"
        problem = _code_problem(str(item))
        if problem:
            return problem
        if item in seen:
            return f'"{shown(item)}" is listed twice'
        seen.add(item)
        used += len(str(item).encode("utf-8")) + 1
        if used > spec["capacity"]:
            return f"the codes take more than {spec['capacity']} bytes"
    return None


def served_item(value):
    """(the item as ted keeps it, "a" or "a > b", None) or (None, ted's words)
    for one item of the top-level languages (config.c: served_item)."""
    words = str(value).replace("\t", " ").split(" ")
    words = [w for w in words if w]
    if len(words) == 1 or (len(words) == 3 and words[1] == ">"):
        for code in words[::2]:
            problem = _code_problem(code)
            if problem:
                return None, problem.split(": ", 1)[1]
        if len(words) == 3 and words[0] == words[2]:
            return None, "a direction goes from one language into another"
        return " > ".join(words[::2]), None
    return None, 'expected a language code or a direction, "SOURCE > TARGET"'


def _served_list_problem(spec, value):
    if not isinstance(value, (list, tuple)) or isinstance(value, dict):
        return _code_list_problem(spec, value)
    used, seen = 0, set()
    for item in value:
        if isinstance(item, (list, tuple, dict)):
            return f"expected a language code, got {_kind(item)}"
        text, problem = served_item(item)
        if problem:
            return f'"{shown(str(item))}": {problem}'
        if text in seen:
            return f'"{shown(text)}" is listed twice'
        seen.add(text)
        used += len(text.encode("utf-8")) + 1
        if used > spec["capacity"]:
            return f"the codes take more than {spec['capacity']} bytes"
    return None


def value_problem(key, value):
    """ted's words for `value` of the dotted `key`, or None when it reads it."""
    spec = KEYS[key]
    if spec["type"] == "int_list":
        return _list_problem(spec, value)
    if spec["type"] == "code_list":
        return _code_list_problem(spec, value)
    if spec["type"] == "served_list":
        return _served_list_problem(spec, value)
    if isinstance(value, (list, tuple, dict)):
        return f"expected a single value, got {_kind(value)}"
    if spec["type"] == "int":
        return _int_problem(spec, value)
    if spec["type"] == "float":
        return _float_problem(spec, value)
    if spec["type"] == "bool" and not isinstance(value, bool):
        return f'expected true or false, got "{shown(value)}"'
    if spec["type"] == "word" and value not in spec["choices"]:
        return f'"{shown(value)}" is not one of {", ".join(spec["choices"])}'
    if spec["type"] == "code":
        return _code_problem(str(value))
    return None


def check_value(key, value):
    """Raises ConfigProblem when ted's reader refuses `value` for `key`."""
    problem = value_problem(key, value)
    if problem:
        raise ConfigProblem(key, problem)


def _shape(c):
    if c["model.d_model"] % 2:
        raise ConfigProblem("model.d_model", f"{c['model.d_model']} is odd; the sinusoidal "
                            "positional encoding pairs each sine with a cosine")
    if not c.get("model.head_size") and c["model.d_model"] % c["model.heads"]:
        raise ConfigProblem("model.heads", f"{c['model.heads']} does not divide d_model "
                            f"{c['model.d_model']}")


def check_shape(d_model, heads):
    """config.c's check_shape: d_model even, heads dividing it."""
    _shape({"model.d_model": d_model, "model.heads": heads})


def _special_ids(c, given):
    names = ("unk_id", "pad_id", "bos_id", "eos_id")
    ids = [c["tokenizer." + n] for n in names]
    for i in range(4):
        for j in range(i):
            if ids[i] != ids[j] or (i == 2 and j == 1):
                continue
            named, other = (i, j) if "tokenizer." + names[i] in given else (j, i)
            raise ConfigProblem("tokenizer." + names[named], f"{ids[i]} is also "
                                f"{names[other]}; the special ids must differ")
        for side in ("src", "tgt"):
            size = c[f"model.{side}_vocab_size"]
            if ids[i] >= size:
                raise ConfigProblem("tokenizer." + names[i], f"{ids[i]} is not below "
                                    f"{side}_vocab_size {size}")


def _decoding(c):
    tgt = c["model.tgt_vocab_size"]
    if c["decoding.sample"] and c["decoding.beam_size"] > 1:
        raise ConfigProblem("decoding.sample", f"true with beam_size {c['decoding.beam_size']}; "
                            "sampling and beam search exclude each other")
    if c["decoding.beam_size"] >= tgt:
        raise ConfigProblem("decoding.beam_size", f"{c['decoding.beam_size']} is not below "
                            f"tgt_vocab_size {tgt}")
    for banned in c["decoding.banned_ids"] or []:
        if banned >= tgt:
            raise ConfigProblem("decoding.banned_ids", f"{banned} is not below "
                                f"tgt_vocab_size {tgt}")


def _model_variant(c, given):
    if c["tokenizer.type"] == "sentencepiece":
        for key in ("tokenizer.src_spm", "tokenizer.tgt_spm"):
            if key not in given:
                raise ConfigProblem(key, "missing; the sentencepiece tokenizer needs its "
                                    "model file")
    if c["tokenizer.type"] == "bpe" and "tokenizer.merges" not in given:
        raise ConfigProblem("tokenizer.merges", "missing; the bpe tokenizer needs its merges "
                            "file")
    src, tgt = c["model.src_vocab_size"], c["model.tgt_vocab_size"]
    if c["model.shared_embeddings"] and src != tgt:
        raise ConfigProblem("model.shared_embeddings", f"true, but src_vocab_size {src} and "
                            f"tgt_vocab_size {tgt} differ")
    if c["model.shared_embeddings"] and c["model.tensor_names"] == "tutorial":
        raise ConfigProblem("model.shared_embeddings", "true, but tensor_names tutorial has no "
                            "shared embedding tensor")


def _positions(c):
    if c["model.positional_encoding"] == "fairseq" and c["model.d_model"] < 4:
        raise ConfigProblem("model.positional_encoding", "fairseq needs d_model >= 4 (its "
                            "frequencies divide by d_model/2 - 1)")
    if c["model.positional_encoding"] == "relative" and \
            c["model.relative_max_distance"] <= c["model.relative_buckets"] // 2:
        half = c["model.relative_buckets"] // 2
        raise ConfigProblem("model.relative_max_distance", f"{c['model.relative_max_distance']} "
                            f"is not above relative_buckets / 2 ({half}), where the buckets of "
                            "exact distances end")
    if c["model.tensor_names"] != "tutorial":
        return
    if c["model.positional_encoding"] == "learned":
        raise ConfigProblem("model.positional_encoding", "learned, but tensor_names tutorial "
                            "has no positional tables")
    if c["model.embedding_norm"]:
        raise ConfigProblem("model.embedding_norm", "true, but tensor_names tutorial has no "
                            "embedding LayerNorm")
    if c["model.positional_encoding"] == "relative":
        raise ConfigProblem("model.positional_encoding", "relative, but tensor_names tutorial "
                            "has no relative bias tables")
    if c["model.feed_forward"] == "gated":
        raise ConfigProblem("model.feed_forward", "gated, but tensor_names tutorial has no "
                            "second input Linear")


def _languages(c):
    source = c["tokenizer.source_language_token"] != "none"
    target = c["tokenizer.target_language_token"] != "none"
    codes = c["tokenizer.languages"] or []
    if (source or target) and not codes:
        key = "source_language_token" if source else "target_language_token"
        raise ConfigProblem("tokenizer." + key, f"{c['tokenizer.' + key]}, but "
                            "tokenizer.languages names no codes")
    if codes and not source and not target:
        raise ConfigProblem("tokenizer.languages", f"{len(codes)} codes, but "
                            "source_language_token and target_language_token are none: no "
                            "token of the text names a language")
    default = c["tokenizer.default_target_lang"]
    if default and c["tokenizer.target_language_token"] != "forced":
        raise ConfigProblem("tokenizer.default_target_lang", f'"{default}", but '
                            "target_language_token is not forced")
    if default and default not in codes:
        raise ConfigProblem("tokenizer.default_target_lang", f'"{default}" is not a code of '
                            "tokenizer.languages")
    start, tgt = c["tokenizer.decoder_start_id"], c["model.tgt_vocab_size"]
    if start is not None and start >= tgt:
        raise ConfigProblem("tokenizer.decoder_start_id", f"{start} is not below "
                            f"tgt_vocab_size {tgt}")
    forced = c["tokenizer.forced_bos_id"]
    if forced >= tgt:
        raise ConfigProblem("tokenizer.forced_bos_id", f"{forced} is not below "
                            f"tgt_vocab_size {tgt}")
    if forced >= 0 and c["tokenizer.target_language_token"] == "forced":
        raise ConfigProblem("tokenizer.forced_bos_id", f"{forced}, but target_language_token "
                            "forces the target's code there")


def _served(c, given):
    """The top-level languages name the model's languages (config.c:
    check_served)."""
    if "languages" not in given:
        return
    items = [served_item(item)[0] for item in c["languages"] or []]
    if not items:
        raise ConfigProblem("languages", "names no language; without the key the model "
                            "translates between every code of tokenizer.languages")
    known = set(c["tokenizer.languages"] or []) | {c["tokenizer.source_lang"],
                                                    c["tokenizer.target_lang"]}
    targets = set()
    for item in items:
        codes = item.split(" > ")
        for code in codes:
            if code not in known:
                raise ConfigProblem("languages", f'"{shown(code)}" is no code of '
                                    "tokenizer.languages, nor source_lang or target_lang")
        targets.add(codes[-1])
    default = c["tokenizer.default_target_lang"]
    if default and default not in targets:
        raise ConfigProblem("tokenizer.default_target_lang", f'"{default}" is no target of '
                            "the top-level languages")


def check_config(values):
    """Raises ConfigProblem for the first key of `values` ({dotted key:
    value}; keys left out take ted's defaults) that ted's reader refuses,
    in the order it reads them, then the checks of several keys."""
    for key, value in values.items():
        if key not in KEYS:
            raise ConfigProblem(key, "unknown key")
    for key in KEYS:
        if key in values:
            check_value(key, values[key])
        elif KEYS[key]["default"] is None and KEYS[key].get("required", True) \
                and KEYS[key]["type"] != "path":
            raise ConfigProblem(key, "missing required key")
    c = {key: values.get(key, spec["default"]) for key, spec in KEYS.items()}
    _shape(c)
    _special_ids(c, values)
    _decoding(c)
    _model_variant(c, values)
    _positions(c)
    _languages(c)
    _served(c, values)
