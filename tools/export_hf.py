#!/usr/bin/python3
"""Exports a Hugging Face MarianMTModel directory (what save_pretrained
writes; an OPUS-MT download such as Helsinki-NLP/opus-mt-en-de) to a ted
model directory.

    /usr/bin/python3 tools/export_hf.py HF_DIR --out DIR

HF_DIR holds config.json, model.safetensors or pytorch_model.bin, source.spm,
target.spm, vocab.json (and target_vocab.json when tokenizer_config.json
says separate_vocabs), and optionally tokenizer_config.json and
generation_config.json. DIR receives config.yaml, model.safetensors (F32,
every tied tensor once), the vocabulary (vocab.txt, or vocab.src and
vocab.tgt when separate), source.spm and target.spm.

model.safetensors is read with NumPy alone; pytorch_model.bin needs
PyTorch. A model ted would not run the way transformers runs it is refused
with one message naming the key, tensor or file at fault
(docs/model-format.md, "Hugging Face Marian models").

From Python: export(hf_dir, out_dir) returns the model section written, as
a dict; errors raise ExportError.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ted_format  # noqa: E402
from ted_format import ExportError  # noqa: E402

# What MarianConfig (transformers 4.40) takes when config.json leaves a key out.
MARIAN_DEFAULTS = {
    "vocab_size": 58101, "decoder_vocab_size": None, "max_position_embeddings": 1024,
    "encoder_layers": 12, "encoder_ffn_dim": 4096, "encoder_attention_heads": 16,
    "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
    "activation_function": "gelu", "d_model": 1024, "decoder_start_token_id": 58100,
    "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0,
    "forced_eos_token_id": 0, "share_encoder_decoder_embeddings": True,
    "tie_word_embeddings": True,
}

# What GenerationConfig (and PretrainedConfig) take when generation_config.json
# (config.json) leaves a key out.
GENERATION_DEFAULTS = {
    "max_length": 20, "max_new_tokens": None, "num_beams": 1, "length_penalty": 1.0,
    "bad_words_ids": None, "forced_eos_token_id": None,
}

# config.json keys ted has no setting for: each must keep the value
# MarianMTModel runs with. (key, that value, what another value means)
FIXED_ARCHITECTURE = (
    ("model_type", "marian", "another model family"),
    ("is_encoder_decoder", True, "a decoder-only model"),
    ("normalize_before", False, "pre-norm layers"),
    ("normalize_embedding", False, "a LayerNorm on the embeddings (BART's layernorm_embedding)"),
    ("static_position_embeddings", True, "learned positional embeddings"),
    ("add_final_layer_norm", False, "a LayerNorm after the last layer"),
    ("tie_encoder_decoder", False, "encoder and decoder layers sharing their weights"),
)

# Generation settings ted's decoding does not have: refused unless they keep
# GenerationConfig's default, since generate() would give other output.
UNSUPPORTED_GENERATION = {
    "do_sample": False, "min_length": 0, "min_new_tokens": None, "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0, "repetition_penalty": 1.0,
    "encoder_repetition_penalty": 1.0, "num_beam_groups": 1, "diversity_penalty": 0.0,
    "forced_bos_token_id": None, "suppress_tokens": None, "begin_suppress_tokens": None,
    "exponential_decay_length_penalty": None, "sequence_bias": None, "force_words_ids": None,
}

ACTIVATIONS = {"swish": "silu", "silu": "silu", "relu": "relu", "gelu": "gelu"}

# Tensors of BART-style variants, named in their refusal.
BART_TENSORS = {"layernorm_embedding": "normalize_embedding (an embedding LayerNorm)",
                "encoder.layer_norm.": "add_final_layer_norm (a final encoder LayerNorm)",
                "decoder.layer_norm.": "add_final_layer_norm (a final decoder LayerNorm)"}

MAX_BANNED_IDS = 16  # TED_MAX_BANNED_IDS, include/ted/config.h
LAYER_NORM_EPS = 1e-5  # MarianMTModel's nn.LayerNorm(d_model) keeps the default
POSITIONS_TOLERANCE = 1e-3  # an F16 copy of the table is this close


# ---- files ------------------------------------------------------------------

def read_json(hf_dir, name, required=True):
    """A JSON object file of the model directory; {} when absent and not required."""
    path = os.path.join(hf_dir, name)
    if not os.path.exists(path):
        if required:
            raise ExportError(f"{path}: missing: a MarianMTModel directory holds {name}")
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except OSError as e:
        raise ExportError(f"{path}: {e.strerror}") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise ExportError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise ExportError(f"{path}: not a JSON object")
    return value


def load_pytorch_bin(path):
    try:
        import torch
    except ImportError:
        raise ExportError(f"{path}: reading pytorch_model.bin needs PyTorch "
                          "(python3-torch); model.safetensors needs only NumPy") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many kinds for unreadable files
        raise ExportError(f"{path}: cannot load: {e}".splitlines()[0]) from None
    if not isinstance(state, dict):
        raise ExportError(f"{path}: not a state_dict")
    tensors = {}
    for name, tensor in state.items():
        if not hasattr(tensor, "is_floating_point") or not tensor.is_floating_point():
            raise ExportError(f"{path}: tensor {name} is not a float tensor")
        tensors[name] = tensor.detach().float().numpy()
    return tensors


def load_weights(hf_dir):
    """(file name, {tensor name: float32 array}): model.safetensors when
    there is one (as from_pretrained prefers it), else pytorch_model.bin."""
    for name, load in (("model.safetensors", ted_format.read_tensors),
                       ("pytorch_model.bin", load_pytorch_bin)):
        path = os.path.join(hf_dir, name)
        if os.path.exists(path):
            return path, load(path)
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if os.path.exists(os.path.join(hf_dir, index)):
            raise ExportError(f"{os.path.join(hf_dir, index)}: checkpoints split into several "
                              "files are not supported")
    raise ExportError(f"{hf_dir}: no model.safetensors or pytorch_model.bin")


# ---- config.json -------------------------------------------------------------

def setting(config, key):
    return config.get(key, MARIAN_DEFAULTS.get(key))


def check_fixed_architecture(config):
    for key, value, meaning in FIXED_ARCHITECTURE:
        if config.get(key, value) != value:
            raise ExportError(f"config.json: {key} {json.dumps(config[key])} asks for {meaning}, "
                              f"which ted does not run (MarianMTModel: {key} "
                              f"{json.dumps(value)})")
    architectures = config.get("architectures") or ["MarianMTModel"]
    if "MarianMTModel" not in architectures:
        raise ExportError(f"config.json: architectures {architectures}: ted runs "
                          "MarianMTModel (an encoder-decoder with its language-model head)")


def same_for_both_stacks(config, key):
    """A size config.json gives the encoder and the decoder, which ted shares."""
    encoder, decoder = setting(config, "encoder_" + key), setting(config, "decoder_" + key)
    if encoder != decoder:
        raise ExportError(f"config.json: encoder_{key} {encoder} and decoder_{key} {decoder} "
                          "differ; ted's model.heads and model.d_ff hold one value for both")
    return encoder


def positive_int(config, key):
    value = setting(config, key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ExportError(f"config.json: {key} {json.dumps(value)} is not a positive integer")
    return value


def architecture(config):
    """ted's model section from config.json."""
    check_fixed_architecture(config)
    activation = setting(config, "activation_function")
    if activation not in ACTIVATIONS:
        raise ExportError(f"config.json: activation_function {json.dumps(activation)} is not "
                          f"supported (one of {', '.join(ACTIVATIONS)})")
    for key in ("d_model", "encoder_layers", "decoder_layers", "max_position_embeddings",
                "vocab_size"):
        positive_int(config, key)
    d_model, heads = setting(config, "d_model"), same_for_both_stacks(config, "attention_heads")
    if d_model % 2 or heads < 1 or d_model % heads:
        raise ExportError(f"config.json: d_model {d_model} must be even and divisible by "
                          f"the {heads} attention heads")
    vocab = setting(config, "vocab_size")
    if setting(config, "decoder_vocab_size") not in (None, vocab):
        raise ExportError(f"config.json: decoder_vocab_size {config['decoder_vocab_size']} "
                          f"differs from vocab_size {vocab}: MarianMTModel's decoder embedding "
                          "keeps vocab_size rows, which its output layer then disagrees with")
    return dict(
        d_model=d_model, heads=heads, encoder_layers=setting(config, "encoder_layers"),
        decoder_layers=setting(config, "decoder_layers"),
        d_ff=same_for_both_stacks(config, "ffn_dim"), src_vocab_size=vocab,
        tgt_vocab_size=vocab, activation=ACTIVATIONS[activation],
        max_positions=setting(config, "max_position_embeddings"),
        scale_embedding=bool(setting(config, "scale_embedding")),
        shared_embeddings=bool(setting(config, "share_encoder_decoder_embeddings")),
        tied_output=bool(setting(config, "tie_word_embeddings")))


# ---- tensors ----------------------------------------------------------------

def layer_shapes(prefix, d, f, cross_attention):
    """Name -> shape of one encoder (or, with cross_attention, decoder) layer."""
    shapes = {}
    for block in ("self_attn", "encoder_attn") if cross_attention else ("self_attn",):
        for projection in ("q_proj", "k_proj", "v_proj", "out_proj"):
            shapes[f"{prefix}.{block}.{projection}.weight"] = (d, d)
            shapes[f"{prefix}.{block}.{projection}.bias"] = (d,)
        shapes[f"{prefix}.{block}_layer_norm.weight"] = (d,)
        shapes[f"{prefix}.{block}_layer_norm.bias"] = (d,)
    shapes.update({f"{prefix}.fc1.weight": (f, d), f"{prefix}.fc1.bias": (f,),
                   f"{prefix}.fc2.weight": (d, f), f"{prefix}.fc2.bias": (d,),
                   f"{prefix}.final_layer_norm.weight": (d,),
                   f"{prefix}.final_layer_norm.bias": (d,)})
    return shapes


def embedding_roles(m):
    """[(name written, config key tying them, [names it may be stored as])]:
    save_pretrained keeps each tied tensor under one of its names
    (safetensors) or all of them (pytorch_model.bin)."""
    output = ["lm_head.weight"] if m["tied_output"] else []
    if m["shared_embeddings"]:
        roles = [("model.shared.weight", "share_encoder_decoder_embeddings",
                  ["model.shared.weight", "model.encoder.embed_tokens.weight",
                   "model.decoder.embed_tokens.weight"] + output)]
    else:
        roles = [("model.encoder.embed_tokens.weight", "share_encoder_decoder_embeddings",
                  ["model.encoder.embed_tokens.weight"]),
                 ("model.decoder.embed_tokens.weight", "tie_word_embeddings",
                  ["model.decoder.embed_tokens.weight"] + output)]
    if not m["tied_output"]:
        roles.append(("lm_head.weight", "tie_word_embeddings", ["lm_head.weight"]))
    return roles


def check_shape(path, name, tensor, shape):
    if tuple(tensor.shape) != tuple(shape):
        raise ExportError(f"{path}: tensor {name} has shape {list(tensor.shape)}, config.json "
                          f"implies {list(shape)}")


def tied_tensor(path, tensors, name, key, aliases, shape):
    """The one tensor stored under any of `aliases`, every copy the same."""
    present = [alias for alias in aliases if alias in tensors]
    if not present:
        raise ExportError(f"{path}: missing tensor {name} (or a tied copy: "
                          f"{', '.join(aliases[1:]) or 'none'})")
    first = tensors[present[0]]
    for alias in present:
        check_shape(path, alias, tensors[alias], shape)
        if not np.array_equal(tensors[alias], first):
            raise ExportError(f"{path}: tensors {present[0]} and {alias} differ, but "
                              f"config.json {key} ties them")
    return first, present


def marian_positions(count, d_model):
    """MarianSinusoidalPositionalEmbedding's table: row pos holds
    sin(pos / 10000^(2i/d)) for i < d/2, then the cosines."""
    i = np.arange(d_model // 2, dtype=np.float64)
    angles = np.arange(count, dtype=np.float64)[:, None] / np.power(10000.0, 2 * i / d_model)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def check_positions(path, tensors, m):
    """The stored positional tables (pytorch_model.bin keeps them) must be
    the sinusoidal one ted computes."""
    shape = (m["max_positions"], m["d_model"])
    for name in ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"):
        if name in tensors:
            check_shape(path, name, tensors[name], shape)
            diff = np.abs(tensors[name] - marian_positions(*shape)).max()
            if not diff <= POSITIONS_TOLERANCE:
                raise ExportError(f"{path}: tensor {name} is not the sinusoidal table (sines "
                                  f"then cosines) ted computes: max abs difference {diff:.3g}")


def unexpected_tensor(path, name):
    for part, variant in BART_TENSORS.items():
        if part in name:
            return ExportError(f"{path}: tensor {name}: {variant} is not supported")
    return ExportError(f"{path}: tensor {name} is not part of a MarianMTModel")


def layer_count(tensors, prefix):
    indices = {name[len(prefix):].split(".", 1)[0] for name in tensors if name.startswith(prefix)}
    return max((int(i) + 1 for i in indices if i.isdigit()), default=0)


def model_tensors(path, tensors, m):
    """[(name, array)] in ted's naming (tensor_names: marian), every tied
    tensor once; sets m["output_bias"]."""
    for stack in ("encoder", "decoder"):
        found = layer_count(tensors, f"model.{stack}.layers.")
        if found != m[f"{stack}_layers"]:
            raise ExportError(f"{path}: {found} {stack} layers, but config.json "
                              f"{stack}_layers is {m[f'{stack}_layers']}")
    out, used = [], set()
    for name, key, aliases in embedding_roles(m):
        array, present = tied_tensor(path, tensors, name, key, aliases,
                                     (m["src_vocab_size"], m["d_model"]))
        out.append((name, array))
        used.update(present)
    shapes = {}
    for stack, count in (("encoder", m["encoder_layers"]), ("decoder", m["decoder_layers"])):
        for i in range(count):
            shapes.update(layer_shapes(f"model.{stack}.layers.{i}", m["d_model"], m["d_ff"],
                                       stack == "decoder"))
    for name, shape in shapes.items():
        if name not in tensors:
            raise ExportError(f"{path}: missing tensor {name}")
        check_shape(path, name, tensors[name], shape)
        out.append((name, tensors[name]))
    used.update(shapes)
    m["output_bias"] = "final_logits_bias" in tensors
    if m["output_bias"]:
        check_shape(path, "final_logits_bias", tensors["final_logits_bias"],
                    (1, m["tgt_vocab_size"]))
        out.append(("final_logits_bias", tensors["final_logits_bias"][0]))
        used.add("final_logits_bias")
    check_positions(path, tensors, m)
    used.update(("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"))
    for name in tensors:
        if name not in used:
            raise unexpected_tensor(path, name)
    return out


# ---- the tokenizer -------------------------------------------------------------

def special_spelling(tokenizer_config, key, default):
    """A special token of tokenizer_config.json: a string or an AddedToken
    object ({"content": ...})."""
    value = tokenizer_config.get(key, default)
    if isinstance(value, dict):
        value = value.get("content")
    if not isinstance(value, str) or not value:
        raise ExportError(f"tokenizer_config.json: {key} {json.dumps(value)} is not a token")
    return value


def check_tokenizer_config(tokenizer_config):
    """Refuses tokenizer settings MarianTokenizer would apply and ted does not."""
    name = tokenizer_config.get("tokenizer_class", "MarianTokenizer")
    if name != "MarianTokenizer":
        raise ExportError(f"tokenizer_config.json: tokenizer_class {name}: ted tokenizes as "
                          "MarianTokenizer does")
    if tokenizer_config.get("clean_up_tokenization_spaces", True) is not True:
        raise ExportError("tokenizer_config.json: clean_up_tokenization_spaces false is not "
                          "supported (ted removes the spaces before . , ! ? as transformers' "
                          "default does)")
    for key in ("sp_model_kwargs", "additional_special_tokens"):
        if tokenizer_config.get(key):
            raise ExportError(f"tokenizer_config.json: {key} is not supported")
    specials = {special_spelling(tokenizer_config, key, default)
                for key, default in (("unk_token", "<unk>"), ("eos_token", "</s>"),
                                     ("pad_token", "<pad>"))}
    for entry in (tokenizer_config.get("added_tokens_decoder") or {}).values():
        content = entry.get("content") if isinstance(entry, dict) else entry
        if content not in specials:
            raise ExportError(f"tokenizer_config.json: added token {json.dumps(content)} is "
                              "not supported (only </s>, <unk> and <pad>)")


def read_vocab_json(hf_dir, name, size):
    """vocab.json (token -> id) as the list of tokens by id: the ids must run
    0 .. size-1, each once, size being the embedding's rows."""
    vocab = read_json(hf_dir, name)
    path = os.path.join(hf_dir, name)
    if len(vocab) != size:
        raise ExportError(f"{path}: {len(vocab)} tokens, but config.json vocab_size is {size}")
    tokens = [None] * size
    for token, index in vocab.items():
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size:
            raise ExportError(f"{path}: token {json.dumps(token)} has id {json.dumps(index)}, "
                              f"not one of 0 to {size - 1}")
        if tokens[index] is not None:
            raise ExportError(f"{path}: tokens {json.dumps(tokens[index])} and "
                              f"{json.dumps(token)} both have id {index}")
        tokens[index] = token
    problem = ted_format.vocab_problem(tokens)
    if problem:
        raise ExportError(f"{path}: {problem}")
    return tokens


def special_ids(tokenizer_config, tokens, path):
    """unk, eos and pad ids: where the vocabulary holds their spellings."""
    ids = {}
    for role, default in (("unk", "<unk>"), ("eos", "</s>"), ("pad", "<pad>")):
        spelling = special_spelling(tokenizer_config, role + "_token", default)
        if spelling not in tokens:
            raise ExportError(f"{path}: no {role}_token {json.dumps(spelling)}")
        ids[role] = tokens.index(spelling)
    return ids


def check_target_specials(target, source, ids, path):
    """The target vocabulary must spell the special tokens as the source one
    at the same ids: ted has one unk_id, eos_id and pad_id for both."""
    for role, index in ids.items():
        if target[index] != source[index]:
            raise ExportError(f"{path}: id {index} is {json.dumps(target[index])}, but "
                              f"{role} {json.dumps(source[index])} in vocab.json")


def check_spm(path):
    """The SentencePiece model must exist and, when the Python module is
    there to tell, load."""
    if not os.path.isfile(path):
        raise ExportError(f"{path}: missing: MarianTokenizer needs both SentencePiece models")
    try:
        import sentencepiece
    except ImportError:
        return
    try:
        sentencepiece.SentencePieceProcessor(model_file=path)
    except (OSError, RuntimeError) as e:
        raise ExportError(f"{path}: not a SentencePiece model ({e})".splitlines()[0]) from None


def tokenizer_files(hf_dir, tokenizer_config, m):
    """The vocabularies (token lists), their ted file names and the special ids."""
    check_tokenizer_config(tokenizer_config)
    for name in ("source.spm", "target.spm"):
        check_spm(os.path.join(hf_dir, name))
    source = read_vocab_json(hf_dir, "vocab.json", m["src_vocab_size"])
    ids = special_ids(tokenizer_config, source, os.path.join(hf_dir, "vocab.json"))
    if not tokenizer_config.get("separate_vocabs", False):
        return {"vocab.txt": source}, "vocab.txt", "vocab.txt", ids
    target = read_vocab_json(hf_dir, "target_vocab.json", m["tgt_vocab_size"])
    check_target_specials(target, source, ids, os.path.join(hf_dir, "target_vocab.json"))
    return {"vocab.src": source, "vocab.tgt": target}, "vocab.src", "vocab.tgt", ids


# ---- generation ----------------------------------------------------------------

def generation_settings(hf_dir, config):
    """(settings, file name, generation_config.json): what generate() runs
    with. generation_config.json replaces config.json's generation keys
    when there is one."""
    generation = read_json(hf_dir, "generation_config.json", required=False)
    defaults = {**GENERATION_DEFAULTS, **UNSUPPORTED_GENERATION}
    if generation:
        return ({key: generation.get(key, default) for key, default in defaults.items()},
                "generation_config.json", generation)
    defaults["forced_eos_token_id"] = MARIAN_DEFAULTS["forced_eos_token_id"]
    return {key: config.get(key, default) for key, default in defaults.items()}, "config.json", {}


def token_id(config, generation, key):
    """A token id generate() uses: generation_config.json's, else config.json's."""
    value = generation.get(key)
    value = setting(config, key) if value is None else value
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ExportError(f"{key} {json.dumps(value)}: expected one token id")
    return value


def banned_ids(settings, source, vocab_size):
    """bad_words_ids [[a], [b]] -> [a, b]; longer word sequences are refused."""
    words = settings["bad_words_ids"] or []
    if not isinstance(words, list) or not all(
            isinstance(w, list) and len(w) == 1 and isinstance(w[0], int)
            and 0 <= w[0] < vocab_size for w in words):
        raise ExportError(f"{source}: bad_words_ids {json.dumps(words)}: only single tokens "
                          f"below vocab_size {vocab_size} are supported ([[id], [id], ...])")
    if len(words) > MAX_BANNED_IDS:
        raise ExportError(f"{source}: bad_words_ids: {len(words)} tokens, more than the "
                          f"{MAX_BANNED_IDS} decoding.banned_ids holds")
    return [w[0] for w in words]


def max_new_tokens(settings, source, forced_eos):
    """The most tokens generate() puts in a translation's text, EOS counted:
    max_length counts the decoder's start token, and with
    forced_eos_token_id the last of them can only be EOS, so ted stops one
    token earlier (same text)."""
    if settings["max_new_tokens"] is not None:
        count, key = settings["max_new_tokens"], "max_new_tokens"
    else:
        count, key = settings["max_length"], "max_length"
        count = count - 1 if isinstance(count, int) else count
    if not isinstance(count, int) or isinstance(count, bool):
        raise ExportError(f"{source}: {key} {json.dumps(count)} is not an integer")
    count -= 1 if forced_eos else 0
    if count < 1:
        raise ExportError(f"{source}: {key} {settings[key]} leaves no token to generate")
    return count


def decoding(hf_dir, config, m, ids):
    """ted's decoding section and the tokenizer's bos_id and eos_id."""
    settings, source, generation = generation_settings(hf_dir, config)
    for key, default in UNSUPPORTED_GENERATION.items():
        if settings[key] != default:
            raise ExportError(f"{source}: {key} {json.dumps(settings[key])} is not supported "
                              "(ted's decoding has no such setting)")
    eos = token_id(config, generation, "eos_token_id")
    if eos != ids["eos"]:
        raise ExportError(f"{source}: eos_token_id {eos} is not the tokenizer's eos_token, "
                          f"id {ids['eos']}: ted ends sources and translations with one id")
    forced = settings["forced_eos_token_id"]
    if forced not in (None, eos, [eos]):
        raise ExportError(f"{source}: forced_eos_token_id {json.dumps(forced)} is not "
                          f"eos_token_id {eos}")
    beams, penalty = settings["num_beams"], settings["length_penalty"]
    if not isinstance(beams, int) or not 1 <= beams < m["tgt_vocab_size"]:
        raise ExportError(f"{source}: num_beams {json.dumps(beams)} is not supported")
    if not isinstance(penalty, (int, float)) or isinstance(penalty, bool) or penalty < 0:
        raise ExportError(f"{source}: length_penalty {json.dumps(penalty)} is not supported "
                          "(ted's length penalty is a number >= 0)")
    return {"bos": token_id(config, generation, "decoder_start_token_id"), "eos": eos,
            "max_length": max_new_tokens(settings, source, forced is not None),
            "beam_size": beams, "length_penalty": float(penalty),
            "banned_ids": banned_ids(settings, source, m["tgt_vocab_size"]),
            "source": source}


# ---- the ted model directory ----------------------------------------------------

def check_special_ids(ids, bos):
    """ted's special ids must differ, but for the start token, which may be pad."""
    roles = {"unk_token": ids["unk"], "eos_token": ids["eos"], "pad_token": ids["pad"]}
    if len(set(roles.values())) < 3:
        raise ExportError(f"tokenizer_config.json: the special tokens share ids {roles}")
    for role, index in roles.items():
        if index == bos and role != "pad_token":
            raise ExportError(f"decoder_start_token_id {bos} is the {role}: ted starts "
                              "decoding from a token of its own or from pad")


def ted_config(m, tokenizer, decode, source):
    """config.yaml's text."""
    (src_vocab, tgt_vocab, ids) = tokenizer
    model = [(key, m[key]) for key in ("d_model", "heads", "encoder_layers", "decoder_layers",
                                       "d_ff", "src_vocab_size", "tgt_vocab_size")]
    model += [("activation", m["activation"], "config.json activation_function"),
              ("norm_first", False), ("layer_norm_eps", LAYER_NORM_EPS),
              ("max_positions", m["max_positions"], "max_position_embeddings"),
              ("scale_embedding", m["scale_embedding"]),
              ("positional_encoding", "concatenated", "sines, then cosines"),
              ("encoder_final_norm", False), ("decoder_final_norm", False),
              ("tensor_names", "marian"), ("attention_projection", "separate"),
              ("shared_embeddings", m["shared_embeddings"],
               "share_encoder_decoder_embeddings"),
              ("tied_output", m["tied_output"], "tie_word_embeddings"),
              ("output_bias", m["output_bias"], "final_logits_bias")]
    tokenizer_rows = [
        ("type", "sentencepiece"), ("lowercase", False),
        ("normalize", "none", "MarianTokenizer's text is not normalized before SentencePiece"),
        ("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab), ("src_spm", "source.spm"),
        ("tgt_spm", "target.spm"), ("unk_id", ids["unk"]), ("pad_id", ids["pad"]),
        ("bos_id", decode["bos"], "decoder_start_token_id"), ("eos_id", decode["eos"]),
        ("source_bos", False), ("source_eos", True)]
    decoding_rows = [
        f"from {decode['source']}: max_length counts the start token, and the last",
        "token is EOS when forced_eos_token_id is set: ted stops before it",
        ("max_length", decode["max_length"]), ("max_length_offset", 0),
        ("beam_size", decode["beam_size"], "num_beams"),
        ("length_penalty", decode["length_penalty"]),
        ("length_normalization", "power", "log-prob / length^length_penalty"),
        ("banned_ids", decode["banned_ids"], "bad_words_ids")]
    return ted_format.config_yaml(
        [f"ted model exported by tools/export_hf.py from {source} (MarianMTModel)"],
        [("model", model), ("weights", "model.safetensors"), ("tokenizer", tokenizer_rows),
         ("decoding", decoding_rows)])


def write_model(out_dir, hf_dir, tensors, vocabs, config_text, quantize=None):
    try:
        os.makedirs(out_dir, exist_ok=True)
        ted_format.write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors,
                                     quantize=quantize)
        for name, tokens in vocabs.items():
            ted_format.write_vocab(os.path.join(out_dir, name), tokens)
        for name in ("source.spm", "target.spm"):
            target = os.path.join(out_dir, name)
            if not (os.path.exists(target) and os.path.samefile(os.path.join(hf_dir, name),
                                                                target)):
                shutil.copyfile(os.path.join(hf_dir, name), target)
        with open(os.path.join(out_dir, "config.yaml"), "w", encoding="utf-8") as f:
            f.write(config_text)
    except OSError as e:
        raise ExportError(f"{e.filename or out_dir}: {e.strerror}") from None


def export(hf_dir, out_dir, quantize=None):
    """Writes the ted model directory `out_dir` for the MarianMTModel in
    `hf_dir`; quantize "int8" stores the matrices as int8
    (ted_format.write_safetensors). Returns the model section written (a
    dict). Raises ExportError."""
    config = read_json(hf_dir, "config.json")
    # from_pretrained lets special_tokens_map.json's tokens override these
    tokenizer_config = {**read_json(hf_dir, "tokenizer_config.json", required=False),
                        **read_json(hf_dir, "special_tokens_map.json", required=False)}
    m = architecture(config)
    vocabs, src_vocab, tgt_vocab, ids = tokenizer_files(hf_dir, tokenizer_config, m)
    decode = decoding(hf_dir, config, m, ids)
    check_special_ids(ids, decode["bos"])
    path, tensors = load_weights(hf_dir)
    written = model_tensors(path, tensors, m)
    text = ted_config(m, (src_vocab, tgt_vocab, ids), decode, hf_dir)
    write_model(out_dir, hf_dir, written, vocabs, text, quantize)
    return m


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Export a Hugging Face MarianMTModel directory to a ted model directory.")
    parser.add_argument("hf_dir", help="the directory save_pretrained wrote (config.json, "
                        "model.safetensors or pytorch_model.bin, source.spm, target.spm, "
                        "vocab.json, ...)")
    parser.add_argument("--out", required=True, help="the ted model directory to write")
    parser.add_argument("--quantize", choices=ted_format.QUANTIZATIONS,
                        help="store Linear and embedding weights as int8, one F32 scale per "
                        "row (what `ted quantize` writes)")
    args = parser.parse_args(argv)
    return ted_format.run_export("export_hf", args.out,
                                 lambda: export(args.hf_dir, args.out, args.quantize))


if __name__ == "__main__":
    sys.exit(main())
