#!/usr/bin/python3
"""Exports a Hugging Face MarianMTModel, M2M100ForConditionalGeneration
(M2M-100, NLLB-200), MBartForConditionalGeneration (mBART-50),
T5ForConditionalGeneration / MT5ForConditionalGeneration (T5, Flan-T5,
mT5, MADLAD-400), PegasusForConditionalGeneration or
BartForConditionalGeneration directory (what save_pretrained writes; a hub
download such as Helsinki-NLP/opus-mt-en-de or
facebook/nllb-200-distilled-600M) to a ted model directory.

    /usr/bin/python3 tools/export_hf.py HF_DIR --out DIR

HF_DIR holds config.json, model.safetensors or pytorch_model.bin, the
tokenizer's files, and optionally generation_config.json. For Marian:
source.spm, target.spm, vocab.json (and target_vocab.json when
tokenizer_config.json says separate_vocabs), tokenizer_config.json
optional; DIR receives config.yaml, model.safetensors (F32, every tied
tensor once, half-precision weights upcast), the vocabulary (vocab.txt, or
vocab.src and vocab.tgt when separate), source.spm and target.spm. For the
multilingual families (tools/hf_families.py): sentencepiece.bpe.model, with
vocab.json for M2M100Tokenizer, and tokenizer_config.json naming the
language codes; DIR receives config.yaml (with the model's languages),
model.safetensors, vocab.txt and sentencepiece.bpe.model. For T5 and mT5:
spiece.model (T5Tokenizer's), tokenizer_config.json optional; DIR
receives config.yaml, model.safetensors (tensors renamed into ted's marian
naming), vocab.txt (the pieces, then the <extra_id_N> tokens) and
spiece.model. For Pegasus: spiece.model (PegasusTokenizer's),
tokenizer_config.json optional; DIR receives config.yaml,
model.safetensors, vocab.txt (the added tokens at ids 0-104, then the
pieces from id `offset` on) and spiece.model. For BART: vocab.json and
merges.txt (BartTokenizer's byte-level BPE), tokenizer_config.json
optional; DIR receives config.yaml, model.safetensors, vocab.txt and
merges.txt (the merges in rank order).

    /usr/bin/python3 tools/export_hf.py HF_DIR --out DIR \
        --languages "eng_Latn>fra_Latn,fra_Latn>eng_Latn,deu_Latn"

--languages writes config.yaml's top-level `languages`: what a multilingual
checkpoint was trained to translate, when that is less than every code its
tokenizer names (docs/model-format.md#languages-top-level): codes, each translated
from and into the others, and directions SOURCE>TARGET, spelled as the
tokenizer spells them.

model.safetensors is read with NumPy alone; pytorch_model.bin needs
PyTorch. A checkpoint split into several files (model.safetensors.index.json
or pytorch_model.bin.index.json) is read file by file. A safetensors input is
mapped, and each tensor is read from it (widened to float32, quantized) when
the writer reaches it and dropped once written: the export holds about its
largest tensor, not the model. A model ted would not run the way transformers runs it is refused
with one message naming the key, tensor or file at fault
(docs/model-format.md, "Hugging Face Marian models").

DIR must be new or empty (not HF_DIR, not a symbolic link): as `ted
quantize`, the exporter writes each file under a unique temporary name in
DIR (created with O_EXCL | O_NOFOLLOW: no link is followed, nothing
replaced) and renames them into place once all are whole; after a failure,
or SIGINT, SIGTERM or SIGHUP, nothing of them is left, nor DIR when the
exporter created it. Every input must be a regular file (a FIFO or a device
is refused, never read) of a bounded size (INPUT_LIMITS). A value ted's
config reader (src/io/config.c) refuses is refused before anything is
written, in its words (tools/ted_config_rules.py), and so is a weight that
is not finite. Every failure is one line, "export_hf: ...", and exit status
1; no traceback.

From Python: export(hf_dir, out_dir) returns the model section written, as
a dict; errors raise ExportError.
"""
import argparse
import json
import mmap
import os
import re
import struct
import sys

# What the exporter needs beyond Python (PyTorch: for pytorch_model.bin only).
INSTALL = "apt-get install python3-numpy python3-torch"
try:
    import numpy as np
except ImportError:
    sys.exit(f"export_hf: NumPy is missing; install what the exporter needs: {INSTALL}")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safe_files  # noqa: E402
import hf_families  # noqa: E402
import ted_config_rules as rules  # noqa: E402
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
    "early_stopping": False, "bad_words_ids": None, "forced_eos_token_id": None,
    "forced_bos_token_id": None, "min_length": 0, "min_new_tokens": None,
    "no_repeat_ngram_size": 0, "repetition_penalty": 1.0, "suppress_tokens": None,
    "encoder_no_repeat_ngram_size": 0,
}

# generate()'s early_stopping -> ted's decoding.early_stopping.
EARLY_STOPPING = ((True, "true"), (False, "false"), ("never", "never"))

# config.json keys ted has no setting for: each must keep the value the
# model runs with. (key, that value, what another value means)
FIXED_ARCHITECTURE = (
    ("is_encoder_decoder", True, "a decoder-only model"),
    ("tie_encoder_decoder", False, "encoder and decoder layers sharing their weights"),
)

# config.json keys of BART-style configs that MarianMTModel reads nowhere:
# whatever they say, it runs post-norm layers, sinusoidal positions and no
# extra LayerNorm, and so does the export, with a warning. (key, the value
# that says what MarianMTModel does, what it does)
IGNORED_BY_MARIAN = (
    ("normalize_before", False, "post-norm layers"),
    ("normalize_embedding", False, "no LayerNorm on the embeddings"),
    ("static_position_embeddings", True, "sinusoidal positions"),
    ("add_final_layer_norm", False, "no LayerNorm after the last layer"),
)

# Generation settings ted's decoding does not have: refused unless they keep
# GenerationConfig's default, since generate() would give other output.
UNSUPPORTED_GENERATION = {
    "do_sample": False, "encoder_repetition_penalty": 1.0, "num_beam_groups": 1, "diversity_penalty": 0.0,
    "begin_suppress_tokens": None,
    "exponential_decay_length_penalty": None, "sequence_bias": None, "force_words_ids": None,
}

ACTIVATIONS = {"swish": "silu", "silu": "silu", "relu": "relu", "gelu": "gelu"}

# Tensors of BART-style variants, named in their refusal.
BART_TENSORS = {"layernorm_embedding": "normalize_embedding (an embedding LayerNorm)",
                "encoder.layer_norm.": "add_final_layer_norm (a final encoder LayerNorm)",
                "decoder.layer_norm.": "add_final_layer_norm (a final decoder LayerNorm)"}

LAYER_NORM_EPS = 1e-5  # MarianMTModel's nn.LayerNorm(d_model) keeps the default
POSITIONS_TOLERANCE = 1e-3  # an F16 copy of the table is this close

# The largest input of each kind read (a larger file is refused before it is
# read): JSON settings, the vocabularies, the SentencePiece models (ted's
# own bounds: src/io/vocab.c, src/io/sentencepiece.cc), the weights.
INPUT_LIMITS = {"settings": (16 << 20, "a JSON settings file"),
                "vocab": (256 << 20, "a vocabulary"),
                "spm": (64 << 20, "a SentencePiece model"),
                "weights": (64 << 30, "a weights file")}
JSON_FILES = {"vocab.json": "vocab", "target_vocab.json": "vocab"}

MAX_DIMS = 4  # TED_TENSOR_MAX_DIMS, src/io/safetensors.h
WHOLE_MAX = 2 ** 53  # a JSON number ted takes as a whole count
SIZE_MAX = 2 ** 64 - 1


def refuse(origin, problem):
    """ExportError for what ted's config reader says (a ConfigProblem) of
    the value `origin` names: "ORIGIN -> KEY: WHAT", ted's words after the
    arrow."""
    return ExportError(f"{origin} -> {problem}")


def ted_value(origin, key, value):
    """`value` for config.yaml's `key`, refused in ted's words (refuse) when
    ted's reader would refuse it."""
    try:
        rules.check_value(key, value)
    except rules.ConfigProblem as problem:
        raise refuse(origin, problem) from None
    return value


# ---- files ------------------------------------------------------------------

def no_directory(hf_dir):
    """ExportError for an HF_DIR that is no directory: a name of the Hugging
    Face Hub ("Helsinki-NLP/opus-mt-en-de") is told how to download it."""
    if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", hf_dir) and not os.path.lexists(hf_dir):
        return ExportError(f"{hf_dir}: no such directory; if it names a Hugging Face Hub model, "
                           f"download it first (huggingface-cli download {hf_dir} --local-dir "
                           f"DIR, or git clone https://huggingface.co/{hf_dir} DIR) and export "
                           "DIR: the export reads only that folder, offline")
    return ExportError(f"{hf_dir}: not a directory (HF_DIR is the folder save_pretrained "
                       "wrote)")


def read_json(hf_dir, name, required=True):
    """A JSON object file of the model directory; {} when absent and not required."""
    path = os.path.join(hf_dir, name)
    if not os.path.isdir(hf_dir):
        raise no_directory(hf_dir)
    if not os.path.lexists(path):
        if required:
            raise ExportError(f"{path}: missing: the model directory holds {name}")
        return {}
    data = safe_files.read_regular(path, *INPUT_LIMITS[JSON_FILES.get(name, "settings")])
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ExportError(f"{path}: not valid JSON ({e})".splitlines()[0]) from None
    except RecursionError:
        raise ExportError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise ExportError(f"{path}: not a JSON object")
    return value


def load_pytorch_bin(path):
    try:
        import torch
    except ImportError:
        raise ExportError(f"{path}: reading pytorch_model.bin needs PyTorch: {INSTALL} "
                          "(model.safetensors needs only NumPy)") from None
    fd, _ = safe_files.open_regular(path, *INPUT_LIMITS["weights"])
    try:
        with os.fdopen(fd, "rb") as f:
            state = torch.load(f, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many kinds for unreadable files
        raise ExportError(f"{path}: cannot load: {e}".splitlines()[0] if str(e) else
                          f"{path}: cannot load: {type(e).__name__}") from None
    if not isinstance(state, dict):
        raise ExportError(f"{path}: not a state_dict")
    tensors = {}
    for name, tensor in state.items():
        if not isinstance(name, str):
            raise ExportError(f"{path}: a tensor name is not a string")
        if not hasattr(tensor, "is_floating_point") or not tensor.is_floating_point():
            raise ExportError(f"{path}: tensor {name} is not a float tensor")
        # kept in its own type; widened to float32 one tensor at a time
        tensors[name] = ted_format.LazyTensor(tensor.shape,
                                              lambda t=tensor: t.detach().float().numpy())
    return tensors


def with_model_prefix(tensors):
    """A MarianModel checkpoint (save_pretrained of the model without its
    language-model head) names its tensors without the "model." that
    MarianMTModel's base_model_prefix adds; from_pretrained adds it, and so
    does the export. Its output bias is then MarianMTModel's zeros: none."""
    bare = ("shared.", "encoder.", "decoder.")
    if any(name.startswith("model.") for name in tensors) or \
            not any(name.startswith(bare) for name in tensors):
        return tensors
    return {("model." + name if name.startswith(bare) else name): array
            for name, array in tensors.items()}


# What from_pretrained loads, in the order it prefers: (file, whether it is
# the index of a checkpoint split into several files).
WEIGHT_FILES = (("model.safetensors", False), ("model.safetensors.index.json", True),
                ("pytorch_model.bin", False), ("pytorch_model.bin.index.json", True))


def load_weights(hf_dir, marian=True):
    """(file name, {tensor name: LazyTensor}): model.safetensors when there
    is one (as from_pretrained prefers it), else the safetensors files its
    index names, else pytorch_model.bin, else the files of its index; with
    `marian`, a MarianModel's tensors named as MarianMTModel's."""
    for name, split in WEIGHT_FILES:
        path = os.path.join(hf_dir, name)
        if os.path.lexists(path):
            load = read_safetensors if name.startswith("model.") else load_pytorch_bin
            tensors = load_sharded(hf_dir, name, load) if split else load(path)
            return path, with_model_prefix(tensors) if marian else tensors
    raise ExportError(f"{hf_dir}: no model.safetensors or pytorch_model.bin (nor an index of "
                      "the files of a split checkpoint)")


def load_sharded(hf_dir, index_name, load):
    """{tensor name: LazyTensor} of a checkpoint split into the files that
    `index_name`'s weight_map names, each file read by `load` (a
    safetensors file mapped; a pytorch_model.bin loaded whole, in its own
    type); every tensor must be in the file the map names."""
    index_path = os.path.join(hf_dir, index_name)
    weight_map = read_json(hf_dir, index_name).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ExportError(f"{index_path}: weight_map is not an object naming each tensor's "
                          "file")
    files = []
    for name, file in weight_map.items():
        if not isinstance(file, str) or os.path.basename(file) != file or \
                file in ("", ".", ".."):
            raise ExportError(f"{index_path}: weight_map: tensor {name}: "
                              f"{json.dumps(file)[:80]} is not a file of the model directory")
        if file not in files:
            files.append(file)
    tensors = {}
    for file in files:
        path = os.path.join(hf_dir, file)
        if not os.path.lexists(path):
            raise ExportError(f"{path}: missing: {index_name} names it")
        for name, tensor in load(path).items():
            if weight_map.get(name) != file:
                raise ExportError(f"{path}: tensor {name}: {index_name} places it in "
                                  f"{json.dumps(weight_map.get(name))[:80]}")
            tensors[name] = tensor
    for name, file in weight_map.items():
        if name not in tensors:
            raise ExportError(f"{os.path.join(hf_dir, file)}: missing tensor {name} "
                              f"({index_name} places it there)")
    return tensors


def shape_text(shape):
    return "[" + ", ".join(str(n) for n in shape) + "]"


def is_count(value):
    """A whole number in [0, 2^53], as ted reads a safetensors size."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= WHOLE_MAX


def entry_layout(path, name, entry, data_size):
    """(dtype, shape, begin) of one header entry, checked as ted's
    safetensors reader checks it (src/io/safetensors.c), in its words."""
    where = f"{path}: tensor '{name}'"
    if not isinstance(entry, dict):
        raise ExportError(f"{where}: entry is not an object")
    dtype = ted_format._DTYPES.get(entry.get("dtype")) if isinstance(entry.get("dtype"),
                                                                       str) else None
    if dtype is None:
        raise ExportError(f"{where}: dtype {json.dumps(entry.get('dtype'))[:40]} is not a "
                          "float type (F64, F32, F16 or BF16)")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(shape, list):
        raise ExportError(f'{where}: "shape" is not an array')
    if len(shape) > MAX_DIMS:
        raise ExportError(f"{where}: shape has {len(shape)} dimensions, more than the "
                          f"{MAX_DIMS} supported")
    for i, n in enumerate(shape):
        if not is_count(n):
            raise ExportError(f"{where}: shape[{i}] is not a whole number in [0, 2^53]")
    if not isinstance(offsets, list) or len(offsets) != 2:
        raise ExportError(f'{where}: "data_offsets" is not an array of 2 numbers')
    if not all(is_count(n) for n in offsets):
        raise ExportError(f"{where}: data_offsets are not whole numbers in [0, 2^53]")
    begin, end = offsets
    if begin > end:
        raise ExportError(f"{where}: data_offsets [{begin}, {end}] are reversed")
    if end > data_size:
        raise ExportError(f"{where}: data_offsets [{begin}, {end}] end past the "
                          f"{data_size}-byte data section (file truncated?)")
    needed = dtype.itemsize
    for n in shape:
        needed *= n
    if 0 not in shape and needed > SIZE_MAX:
        raise ExportError(f"{where}: shape {shape_text(shape)} of {entry['dtype']} overflows "
                          "size_t")
    if end - begin != needed:
        raise ExportError(f"{where}: data_offsets [{begin}, {end}] span {end - begin} bytes "
                          f"but shape {shape_text(shape)} of {entry['dtype']} needs {needed}")
    return entry["dtype"], dtype, shape, begin


def read_safetensors(path):
    """Every float tensor of a safetensors file as a ted_format.LazyTensor,
    by name: the file mapped, not read, and its header checked as ted checks
    its own (refused in its words). A tensor's values are read from the
    mapping when it is loaded, and its pages then given back (MADV_DONTNEED),
    so the export's memory follows the largest tensor, not the file."""
    fd, size = safe_files.open_regular(path, *INPUT_LIMITS["weights"])
    try:
        if size < 8:
            raise ExportError(f"{path}: {size} bytes is too short for the 8-byte header length")
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    (length,) = struct.unpack("<Q", mapped[:8])
    if length > ted_format.MAX_HEADER_BYTES:
        raise ExportError(f"{path}: header length {length} is over the "
                          f"{ted_format.MAX_HEADER_BYTES}-byte limit")
    if length > size - 8:
        raise ExportError(f"{path}: header length {length} runs past the end of the "
                          f"{size}-byte file")
    try:
        header = json.loads(mapped[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ExportError(f"{path}: the header is not JSON: not a safetensors file") from None
    if not isinstance(header, dict):
        raise ExportError(f"{path}: the header is not a JSON object")
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        kind, dtype, shape, begin = entry_layout(path, name, entry, size - 8 - length)
        tensors[name] = ted_format.LazyTensor(
            shape, lambda s=(kind, dtype, shape, 8 + length + begin): mapped_tensor(mapped, *s))
    return tensors


def mapped_tensor(mapped, kind, dtype, shape, offset):
    """A float32 copy of the tensor at `offset` of the mapping (BF16 and
    F16 widened, F64 rounded); the mapping's pages under it are given back."""
    count = 1
    for n in shape:
        count *= n
    raw = np.frombuffer(mapped, dtype=dtype, count=count, offset=offset)
    if kind == "BF16":
        array = (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)
    else:
        with np.errstate(over="ignore"):  # F64 beyond float32: infinite, refused later
            array = raw.astype(np.float32).reshape(shape)
    del raw
    first = offset - offset % mmap.PAGESIZE
    end = offset + count * dtype.itemsize
    if end > first and hasattr(mapped, "madvise"):
        mapped.madvise(mmap.MADV_DONTNEED, first, end - first)
    return array


def check_finite(path, tensors):
    """Every weight written must be finite, as ted's loader (ted info
    --check, ted quantize) requires: refused in its words."""
    for name, tensor in tensors:
        array = ted_format.values(tensor)
        finite = np.isfinite(array)
        if finite.all():
            del array, finite  # one tensor's values at a time
            continue
        at = int(np.argmin(finite.ravel()))
        value = array.ravel()[at]
        kind = "NaN" if np.isnan(value) else "-inf" if value < 0 else "+inf"
        where = shape_text(int(i) for i in np.unravel_index(at, array.shape))
        raise ExportError(f"{path}: tensor '{name}' holds {kind} at {where} (element {at}); "
                          "weights must be finite")


# ---- config.json -------------------------------------------------------------

def family(config):
    """config.json's model_type: marian (also when left out), m2m_100 or
    mbart (check_fixed_architecture refuses any other)."""
    return config.get("model_type", "marian")


def model_class(config):
    name = family(config)
    return "MarianMTModel" if name == "marian" else hf_families.FAMILIES[name][0]


def setting(config, key):
    name = family(config)
    defaults = MARIAN_DEFAULTS if name == "marian" else hf_families.FAMILIES[name][1]
    return config.get(key, defaults.get(key))


WARNINGS = []  # printed once the model is written: a refusal is its one line alone


def warn(message):
    """A setting the export leaves aside as transformers does: one line on
    standard error, once the export succeeds."""
    WARNINGS.append(f"export_hf: warning: {message}")


def check_fixed_architecture(config):
    name = family(config)
    if name != "marian" and name not in hf_families.FAMILIES:
        raise ExportError(f"config.json: model_type {json.dumps(name)[:60]} asks for another "
                          "model family, which ted does not run (ted converts marian, "
                          f"{', '.join(hf_families.FAMILIES)})")
    for key, value, meaning in IGNORED_BY_MARIAN if name == "marian" else ():
        if key in config and config[key] != value:
            warn(f"config.json: {key} {json.dumps(config[key])[:60]} is ignored, as "
                 f"MarianMTModel ignores it (it runs {meaning})")
    for key, value, meaning in FIXED_ARCHITECTURE:
        if config.get(key, value) != value:
            raise ExportError(f"config.json: {key} {json.dumps(config[key])} asks for {meaning}, "
                              f"which ted does not run ({model_class(config)}: {key} "
                              f"{json.dumps(value)})")
    expected = model_class(config)
    architectures = config.get("architectures") or [expected]
    # MarianMTModel.from_pretrained loads a MarianModel's checkpoint too,
    # T5ForConditionalGeneration the original t5-* checkpoints' name
    accepted = {expected, {"marian": "MarianModel", "t5": "T5WithLMHeadModel"}.get(name)}
    if not isinstance(architectures, list) or not accepted & set(map(str, architectures)):
        raise ExportError(f"config.json: architectures {architectures}: ted runs "
                          f"{expected} (an encoder-decoder with its language-model head)")


def same_for_both_stacks(config, key):
    """A size config.json gives the encoder and the decoder, which ted shares."""
    encoder, decoder = setting(config, "encoder_" + key), setting(config, "decoder_" + key)
    if encoder != decoder:
        raise ExportError(f"config.json: encoder_{key} {json.dumps(encoder)[:60]} and "
                          f"decoder_{key} {json.dumps(decoder)[:60]} "
                          "differ; ted's model.heads and model.d_ff hold one value for both")
    return encoder


# config.json's keys for ted's model section: (ted key, config.json key;
# None: the encoder_ and decoder_ keys, which must agree)
MODEL_KEYS = (("d_model", "d_model"), ("heads", None), ("encoder_layers", "encoder_layers"),
              ("decoder_layers", "decoder_layers"), ("d_ff", None),
              ("src_vocab_size", "vocab_size"), ("max_positions", "max_position_embeddings"))
STACK_KEYS = {"heads": "attention_heads", "d_ff": "ffn_dim"}


def architecture(config):
    """ted's model section from config.json; a size ted's config reader
    refuses is refused in its words."""
    check_fixed_architecture(config)
    if family(config) in hf_families.T5_FAMILIES:
        return t5_architecture(config)
    activation = setting(config, "activation_function")
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ExportError(f"config.json: activation_function {json.dumps(activation)[:60]} is "
                          f"not supported (one of {', '.join(ACTIVATIONS)})")
    sizes = {}
    for key, hf_key in MODEL_KEYS:
        value = (setting(config, hf_key) if hf_key else
                 same_for_both_stacks(config, STACK_KEYS[key]))
        origin = f"config.json: {hf_key or 'encoder_' + STACK_KEYS[key]}"
        sizes[key] = ted_value(origin, "model." + key, value)
    d_model, heads = sizes["d_model"], sizes["heads"]
    try:
        rules.check_shape(d_model, heads)
    except rules.ConfigProblem as problem:
        origin = ("d_model" if problem.key == "model.d_model"
                  else "encoder_attention_heads")
        raise refuse(f"config.json: {origin}", problem) from None
    vocab = sizes["src_vocab_size"]
    if family(config) != "marian":
        variant = hf_families.ted_model_keys(family(config), config, setting)
        origins = {"shared_embeddings": "model.shared.weight",
                   "normalize": "PegasusTokenizer's text is not normalized before "
                   "SentencePiece"} if family(config) == "pegasus" else {}
        return dict(origins=origins,
            d_model=d_model, heads=heads, encoder_layers=sizes["encoder_layers"],
            decoder_layers=sizes["decoder_layers"], d_ff=sizes["d_ff"], src_vocab_size=vocab,
            tgt_vocab_size=vocab, activation=ACTIVATIONS[activation],
            max_positions=sizes["max_positions"],
            scale_embedding=bool(setting(config, "scale_embedding")), shared_embeddings=True,
            tied_output=bool(setting(config, "tie_word_embeddings")), family=family(config),
            variant=variant, position_offset=dict((r[0], r[1]) for r in variant)[
                "position_offset"])
    if setting(config, "decoder_vocab_size") not in (None, vocab):
        raise ExportError(f"config.json: decoder_vocab_size "
                          f"{json.dumps(config['decoder_vocab_size'])[:60]} "
                          f"differs from vocab_size {vocab}: MarianMTModel's decoder embedding "
                          "keeps vocab_size rows, which its output layer then disagrees with")
    return dict(
        d_model=d_model, heads=heads, encoder_layers=sizes["encoder_layers"],
        decoder_layers=sizes["decoder_layers"], d_ff=sizes["d_ff"], src_vocab_size=vocab,
        tgt_vocab_size=vocab, activation=ACTIVATIONS[activation],
        max_positions=sizes["max_positions"],
        scale_embedding=bool(setting(config, "scale_embedding")),
        shared_embeddings=bool(setting(config, "share_encoder_decoder_embeddings")),
        tied_output=bool(setting(config, "tie_word_embeddings")), family="marian",
        variant=[("norm_first", False),
                 ("positional_encoding", "concatenated", "sines, then cosines"),
                 ("encoder_final_norm", False), ("decoder_final_norm", False)])


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
    for alias in present:
        check_shape(path, alias, tensors[alias], shape)
    if len(present) > 1:
        first = ted_format.values(tensors[present[0]])
        for alias in present[1:]:
            if not np.array_equal(ted_format.values(tensors[alias]), first):
                raise ExportError(f"{path}: tensors {present[0]} and {alias} differ, but "
                                  f"config.json {key} ties them")
    return tensors[present[0]], present


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
            diff = np.abs(ted_format.values(tensors[name]) - marian_positions(*shape)).max()
            if not diff <= POSITIONS_TOLERANCE:
                raise ExportError(f"{path}: tensor {name} is not the sinusoidal table (sines "
                                  f"then cosines) ted computes: max abs difference {diff:.3g}")


def unexpected_tensor(path, name, m):
    if m["family"] != "marian":
        return ExportError(f"{path}: tensor {name} is not part of a "
                           f"{hf_families.FAMILIES[m['family']][0]}")
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
    if m["family"] != "marian":
        out += stack_tensors(path, tensors, m)
        used.update(name for name, _ in out)
    m["output_bias"] = "final_logits_bias" in tensors
    if m["output_bias"]:
        check_shape(path, "final_logits_bias", tensors["final_logits_bias"],
                    (1, m["tgt_vocab_size"]))
        bias = tensors["final_logits_bias"]
        out.append(("final_logits_bias", ted_format.LazyTensor(
            (m["tgt_vocab_size"],), lambda: ted_format.values(bias)[0])))
        used.add("final_logits_bias")
    if m["family"] == "marian":
        check_positions(path, tensors, m)
        used.update(("model.encoder.embed_positions.weight",
                     "model.decoder.embed_positions.weight"))
    elif m["family"] == "m2m_100":
        used.update(hf_families.check_sinusoidal_tables(path, tensors, m, POSITIONS_TOLERANCE))
    elif m["family"] == "pegasus":  # PegasusSinusoidalPositionalEmbedding: Marian's table
        check_positions(path, tensors, m)
        used.update(("model.encoder.embed_positions.weight",
                     "model.decoder.embed_positions.weight"))
    for name in tensors:
        if name not in used:
            raise unexpected_tensor(path, name, m)
    return out


def stack_tensors(path, tensors, m):
    """[(name, array)] of what an M2M-100 or mBART stack has besides its
    layers (hf_families.stack_tensors), checked."""
    out = []
    for name, shape in hf_families.stack_tensors(m["family"], m).items():
        if name not in tensors:
            raise ExportError(f"{path}: missing tensor {name}")
        check_shape(path, name, tensors[name], shape)
        out.append((name, tensors[name]))
    return out


# ---- T5 and mT5 ------------------------------------------------------------------

# config.json's keys for ted's model section of a T5 (ted key, config.json key)
T5_KEYS = (("d_model", "d_model"), ("heads", "num_heads"), ("head_size", "d_kv"),
           ("encoder_layers", "num_layers"), ("decoder_layers", "num_decoder_layers"),
           ("d_ff", "d_ff"), ("src_vocab_size", "vocab_size"),
           ("relative_buckets", "relative_attention_num_buckets"),
           ("relative_max_distance", "relative_attention_max_distance"))


def t5_architecture(config):
    """ted's model section of a T5ForConditionalGeneration or
    MT5ForConditionalGeneration (hf_families: what maps to what)."""
    proj = setting(config, "feed_forward_proj")
    if not isinstance(proj, str) or proj not in hf_families.T5_FEED_FORWARD:
        raise ExportError(f"config.json: feed_forward_proj {json.dumps(proj)[:60]} is not "
                          f"supported (one of {', '.join(hf_families.T5_FEED_FORWARD)})")
    form, activation = hf_families.T5_FEED_FORWARD[proj]
    m = {}
    for key, hf_key in T5_KEYS:
        value = setting(config, hf_key)
        if hf_key == "num_decoder_layers" and value is None:  # T5Config: num_layers
            hf_key, value = "num_layers", setting(config, "num_layers")
        m[key] = ted_value(f"config.json: {hf_key}", "model." + key, value)
    eps = setting(config, "layer_norm_epsilon")
    eps = float(eps) if isinstance(eps, int) and not isinstance(eps, bool) else eps
    tied = bool(setting(config, "tie_word_embeddings"))
    m.update(tgt_vocab_size=m["src_vocab_size"], activation=activation, feed_forward=form,
             layer_norm_eps=ted_value("config.json: layer_norm_epsilon", "model.layer_norm_eps",
                                      eps),
             max_positions=hf_families.T5_MAX_POSITIONS, scale_embedding=False,
             shared_embeddings=True, tied_output=tied, output_bias=False, family=family(config))
    m["origins"] = {"activation": f"feed_forward_proj {proj}",
                    "max_positions": "relative positions reach any length: ted's bound",
                    "shared_embeddings": "shared.weight", "output_bias": "T5 has none",
                    "normalize": "T5Tokenizer's text is not normalized before SentencePiece"}
    m["variant"] = [
        ("head_size", m["head_size"], "d_kv"),
        ("feed_forward", form, f"feed_forward_proj {proj}"),
        ("linear_bias", False, "no Linear of T5 has a bias"),
        ("scale_attention", False, "T5Attention: no 1/sqrt(d_kv)"),
        ("norm", "rms", "T5LayerNorm"), ("norm_first", True),
        ("positional_encoding", "relative", "relative_attention_bias of each stack's block 0"),
        ("relative_buckets", m["relative_buckets"], "relative_attention_num_buckets"),
        ("relative_max_distance", m["relative_max_distance"],
         "relative_attention_max_distance"),
        ("encoder_final_norm", True), ("decoder_final_norm", True),
        ("scale_output", tied, "tie_word_embeddings: the output times d_model^-0.5")]
    return m


def t5_tensors(path, tensors, m):
    """[(name, array)] in ted's naming (tensor_names: marian), every tied
    tensor once; a tensor T5 does not have is refused by its name."""
    for stack in ("encoder", "decoder"):
        found = layer_count(tensors, f"{stack}.block.")
        if found != m[f"{stack}_layers"]:
            key = "num_layers" if stack == "encoder" else "num_decoder_layers"
            raise ExportError(f"{path}: {found} {stack} blocks, but config.json {key} gives "
                              f"{m[f'{stack}_layers']}")
    shape = (m["src_vocab_size"], m["d_model"])
    output = ["lm_head.weight"] if m["tied_output"] else []
    array, used = tied_tensor(path, tensors, "shared.weight", "tie_word_embeddings",
                              ["shared.weight", "encoder.embed_tokens.weight",
                               "decoder.embed_tokens.weight"] + output, shape)
    out, used = [("model.shared.weight", array)], set(used)
    names = {hf: ted for hf, ted in hf_families.t5_tensor_names(m).items()}
    if not m["tied_output"]:
        names["lm_head.weight"] = ("lm_head.weight", shape)
    for hf_name, (name, shape) in names.items():
        if hf_name not in tensors:
            raise ExportError(f"{path}: missing tensor {hf_name}")
        check_shape(path, hf_name, tensors[hf_name], shape)
        out.append((name, tensors[hf_name]))
        used.add(hf_name)
    for name in tensors:
        if name not in used:
            raise ExportError(f"{path}: tensor {name} is not part of a {m['class']} ted maps "
                              "(one relative_attention_bias per stack, in block 0)")
    return out


def t5_files(hf_dir, tokenizer_config, m):
    """tokenizer_files for T5Tokenizer: vocab.txt (the pieces of
    spiece.model, then the <extra_id_N> tokens) and spiece.model."""
    name = hf_families.tokenizer_class(m["family"], tokenizer_config, hf_dir)
    for key in ("sp_model_kwargs",):
        if tokenizer_config.get(key):
            raise ExportError(f"tokenizer_config.json: {key} is not supported (ted tokenizes "
                              "with the SentencePiece model's own settings)")
    if tokenizer_config.get("clean_up_tokenization_spaces", True) is not True:
        raise ExportError("tokenizer_config.json: clean_up_tokenization_spaces false is not "
                          "supported (ted removes the spaces before . , ! ? as transformers' "
                          "default does)")
    extra_ids = tokenizer_config.get("extra_ids", 100)
    if not isinstance(extra_ids, int) or isinstance(extra_ids, bool) or extra_ids < 0:
        raise ExportError(f"tokenizer_config.json: extra_ids {json.dumps(extra_ids)[:40]} is "
                          "not a count")
    path = os.path.join(hf_dir, "spiece.model")
    if not os.path.lexists(path):
        raise ExportError(f"{path}: missing: {name} needs it")
    data = safe_files.read_regular(path, *INPUT_LIMITS["spm"])
    pieces = hf_families.spm_pieces(path, data)
    tokens = hf_families.t5_tokens(pieces, hf_families.added_tokens(tokenizer_config),
                                   extra_ids, m["src_vocab_size"], path)
    problem = ted_format.vocab_problem(tokens)
    if problem:
        raise ExportError(f"{path}: {problem}")
    ids = special_ids(tokenizer_config, tokens, path)
    tok = {"ids": ids, "spm": ("spiece.model", "spiece.model"),
           "vocab": ("vocab.txt", "vocab.txt"), "languages": None, "class": name}
    return {"vocab.txt": tokens, "spiece.model": data}, tok


def pegasus_files(hf_dir, tokenizer_config, m):
    """tokenizer_files for PegasusTokenizer: vocab.txt (its added tokens,
    then the pieces of spiece.model shifted by `offset`) and spiece.model."""
    name = hf_families.tokenizer_class(m["family"], tokenizer_config, hf_dir)
    if tokenizer_config.get("sp_model_kwargs"):
        raise ExportError("tokenizer_config.json: sp_model_kwargs is not supported (ted "
                          "tokenizes with the SentencePiece model's own settings)")
    if tokenizer_config.get("clean_up_tokenization_spaces", True) is not True:
        raise ExportError("tokenizer_config.json: clean_up_tokenization_spaces false is not "
                          "supported (ted removes the spaces before . , ! ? as transformers' "
                          "default does)")
    path = os.path.join(hf_dir, "spiece.model")
    if not os.path.lexists(path):
        raise ExportError(f"{path}: missing: {name} needs it")
    data = safe_files.read_regular(path, *INPUT_LIMITS["spm"])
    processor = hf_families.spm_processor(path, data)
    spellings = {role: special_spelling(tokenizer_config, role + "_token", default)
                 for role, default in (("pad", "<pad>"), ("eos", "</s>"), ("mask", "<mask_2>"))}
    offset, added = hf_families.pegasus_added(
        tokenizer_config, hf_families.added_tokens(tokenizer_config), spellings)
    tokens = hf_families.pegasus_tokens(processor, offset, added, m["src_vocab_size"], path)
    problem = ted_format.vocab_problem(tokens)
    if problem:
        raise ExportError(f"{path}: {problem}")
    ids = special_ids(tokenizer_config, tokens, path)
    tok = {"ids": ids, "spm": ("spiece.model", "spiece.model"),
           "vocab": ("vocab.txt", "vocab.txt"), "languages": None, "class": name}
    return {"vocab.txt": tokens, "spiece.model": data}, tok


def bart_files(hf_dir, tokenizer_config, m):
    """tokenizer_files for BartTokenizer: vocab.txt (vocab.json's tokens and
    the added ones at their ids) and merges.txt, GPT-2's byte-level BPE."""
    name = hf_families.tokenizer_class(m["family"], tokenizer_config, hf_dir)
    if tokenizer_config.get("clean_up_tokenization_spaces", True) is not True:
        raise ExportError("tokenizer_config.json: clean_up_tokenization_spaces false is not "
                          "supported (ted removes the spaces before . , ! ? as transformers' "
                          "default does)")
    if tokenizer_config.get("errors", "replace") != "replace":
        raise ExportError(f"tokenizer_config.json: errors "
                          f"{json.dumps(tokenizer_config['errors'])[:60]} is not supported (ted "
                          "writes invalid UTF-8 as U+FFFD, errors \"replace\")")
    prefix = tokenizer_config.get("add_prefix_space", False)
    if not isinstance(prefix, bool):
        raise ExportError(f"tokenizer_config.json: add_prefix_space {json.dumps(prefix)[:60]} "
                          "is not true or false")
    path = os.path.join(hf_dir, "merges.txt")
    if not os.path.lexists(path):
        raise ExportError(f"{path}: missing: {name} needs it")
    data = safe_files.read_regular(path, *INPUT_LIMITS["vocab"])
    try:
        merges = hf_families.bart_merges(path, data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ExportError(f"{path}: not UTF-8 ({e})") from None
    vocab = read_json(hf_dir, "vocab.json")
    tokens = hf_families.bart_tokens(vocab, hf_families.added_tokens(tokenizer_config),
                                     m["src_vocab_size"], os.path.join(hf_dir, "vocab.json"))
    origin = os.path.join(hf_dir, "vocab.json")
    problem = ted_format.vocab_problem(tokens)
    if problem:
        raise ExportError(f"{origin}: {problem}")
    ids = special_ids(tokenizer_config, tokens, origin)
    bos = special_spelling(tokenizer_config, "bos_token", "<s>")
    if bos not in tokens:
        raise ExportError(f"{origin}: no bos_token {json.dumps(bos)}")
    ids["bos"] = tokens.index(bos)
    tok = {"ids": ids, "merges": "merges.txt", "add_prefix_space": prefix,
           "vocab": ("vocab.txt", "vocab.txt"), "languages": None, "class": name}
    return {"vocab.txt": tokens, "merges.txt": merges.encode("utf-8")}, tok


def bart_rows(tok, decode):
    """The tokenizer rows of a BART: <s> before the source, the decoder
    started from decoder_start_token_id, forced_bos_token_id after it."""
    forced = decode["forced_bos"]
    if forced not in (None, tok["ids"]["bos"]):
        raise ExportError(f"{decode['source']}: forced_bos_token_id {json.dumps(forced)[:60]} "
                          f"is not supported (only the bos_token, id {tok['ids']['bos']})")
    return [("bos_id", tok["ids"]["bos"], "bos_token"),
            ("decoder_start_id", decode["bos"], "decoder_start_token_id"),
            ("forced_bos_id", -1 if forced is None else forced, "forced_bos_token_id")]


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
    added = tokenizer_config.get("added_tokens_decoder") or {}
    if not isinstance(added, dict):
        raise ExportError("tokenizer_config.json: added_tokens_decoder is not a JSON object")
    for entry in added.values():
        content = entry.get("content") if isinstance(entry, dict) else entry
        if content not in specials:
            raise ExportError(f"tokenizer_config.json: added token {json.dumps(content)} is "
                              "not supported (only </s>, <unk> and <pad>)")


def read_vocab_json(hf_dir, name, size):
    """vocab.json (token -> id) as the list of tokens by id: each id one of
    0 .. size-1, size being the embedding's rows, once. An id the file
    lacks (a vocab.json shorter than vocab_size) is a row without a token,
    which MarianTokenizer decodes as its unk_token: it becomes a repeated
    "<unk>" line (ted_format.NO_TOKEN), which ted decodes the same way."""
    vocab = read_json(hf_dir, name)
    path = os.path.join(hf_dir, name)
    if len(vocab) > size:
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
    fill_missing_ids(tokens, path)
    problem = ted_format.vocab_problem(tokens)
    if problem:
        raise ExportError(f"{path}: {problem}")
    return tokens


def fill_missing_ids(tokens, path):
    """The ids vocab.json lacks become ted_format.NO_TOKEN lines, after its
    own "<unk>" (the token ted looks the spelling up as), with a warning."""
    missing = [i for i, token in enumerate(tokens) if token is None]
    if not missing:
        return
    unk = tokens.index(ted_format.NO_TOKEN) if ted_format.NO_TOKEN in tokens else None
    if unk is None or unk > missing[0]:
        raise ExportError(f"{path}: no token for id {missing[0]} (vocab_size {len(tokens)}), "
                          f"and no {json.dumps(ted_format.NO_TOKEN)} token before it: ted "
                          f"writes such an id as a {json.dumps(ted_format.NO_TOKEN)} line "
                          "after the vocabulary's own")
    for i in missing:
        tokens[i] = ted_format.NO_TOKEN
    shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
    warn(f"{path}: {len(missing)} of the vocab_size {len(tokens)} ids have no token ({shown}): "
         f"they decode as {ted_format.NO_TOKEN}, as MarianTokenizer decodes them")


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


def read_spm(path):
    """The SentencePiece model's bytes: it must exist, be a regular file and,
    when the Python module is there to tell, load."""
    if not os.path.lexists(path):
        raise ExportError(f"{path}: missing: MarianTokenizer needs both SentencePiece models")
    data = safe_files.read_regular(path, *INPUT_LIMITS["spm"])
    try:
        import sentencepiece
    except ImportError:
        return data
    try:
        sentencepiece.SentencePieceProcessor(model_proto=data)
    except (OSError, RuntimeError, TypeError, ValueError) as e:
        raise ExportError(f"{path}: not a SentencePiece model ({e})".splitlines()[0]) from None
    return data


def tokenizer_files(hf_dir, tokenizer_config, m):
    """The files to write ({name: token list, or the bytes of a
    SentencePiece model}) and what config.yaml's tokenizer section says of
    them: the vocabularies' and SentencePiece models' ted file names, the
    special ids, the language codes."""
    if m["family"] in hf_families.T5_FAMILIES:
        return t5_files(hf_dir, tokenizer_config, m)
    if m["family"] == "pegasus":
        return pegasus_files(hf_dir, tokenizer_config, m)
    if m["family"] == "bart":
        return bart_files(hf_dir, tokenizer_config, m)
    if m["family"] != "marian":
        return multilingual_files(hf_dir, tokenizer_config, m)
    check_tokenizer_config(tokenizer_config)
    files = {name: read_spm(os.path.join(hf_dir, name)) for name in ("source.spm", "target.spm")}
    source = read_vocab_json(hf_dir, "vocab.json", m["src_vocab_size"])
    ids = special_ids(tokenizer_config, source, os.path.join(hf_dir, "vocab.json"))
    tok = {"ids": ids, "spm": ("source.spm", "target.spm"), "languages": None}
    if not tokenizer_config.get("separate_vocabs", False):
        return dict(files, **{"vocab.txt": source}), dict(tok, vocab=("vocab.txt", "vocab.txt"))
    target = read_vocab_json(hf_dir, "target_vocab.json", m["tgt_vocab_size"])
    check_target_specials(target, source, ids, os.path.join(hf_dir, "target_vocab.json"))
    return (dict(files, **{"vocab.src": source, "vocab.tgt": target}),
            dict(tok, vocab=("vocab.src", "vocab.tgt")))


def multilingual_files(hf_dir, tokenizer_config, m):
    """tokenizer_files for NllbTokenizer, M2M100Tokenizer and
    MBart50Tokenizer (hf_families.vocabulary): one vocabulary, one
    SentencePiece model, the language codes."""
    name = hf_families.tokenizer_class(m["family"], tokenizer_config, hf_dir)
    if tokenizer_config.get("sp_model_kwargs"):
        raise ExportError("tokenizer_config.json: sp_model_kwargs is not supported (ted "
                          "tokenizes with the SentencePiece model's own settings)")
    if tokenizer_config.get("clean_up_tokenization_spaces", True) is not True:
        raise ExportError("tokenizer_config.json: clean_up_tokenization_spaces false is not "
                          "supported (ted removes the spaces before . , ! ? as transformers' "
                          "default does)")

    def read(file_name, kind):
        if kind == "vocab":
            return read_json(hf_dir, file_name)
        path = os.path.join(hf_dir, file_name)
        if not os.path.lexists(path):
            raise ExportError(f"{path}: missing: {name} needs it")
        return safe_files.read_regular(path, *INPUT_LIMITS["spm"])

    tokens, codes, spm_file, data = hf_families.vocabulary(name, hf_dir, tokenizer_config,
                                                          m["src_vocab_size"], read)
    path = os.path.join(hf_dir, spm_file)
    problem = ted_format.vocab_problem(tokens)
    if problem:
        raise ExportError(f"{path}: {problem}")
    ids = special_ids(tokenizer_config, tokens, path)
    legacy = name == "NllbTokenizer" and tokenizer_config.get("legacy_behaviour") is True
    bos = special_spelling(tokenizer_config, "bos_token", "<s>")
    if bos not in tokens:
        raise ExportError(f"{path}: no bos_token {json.dumps(bos)}")
    ids["bos"] = tokens.index(bos)
    tok = {"ids": ids, "spm": (spm_file, spm_file), "vocab": ("vocab.txt", "vocab.txt"),
           "languages": codes, "source_code": "last" if legacy else "first", "class": name}
    return {"vocab.txt": tokens, spm_file: data}, tok


def language_rows(config, tokenizer_config, source):
    """config.yaml's language keys: for a multi-target model, the >>xxx<<
    tokens of vocab.json (MarianTokenizer's supported_language_codes, which
    it keeps whole at the start of a text) or the <2xx> pieces of a T5
    model's SentencePiece model (MADLAD-400: "<2fr> text") as `languages`,
    put at the start of the source; source_lang and target_lang from
    tokenizer_config.json (else config.json) where they are plain codes,
    the target's only for a bilingual model."""
    codes = [t for t in source if t.startswith(">>") and t.endswith("<<")]
    origin = ("vocab.json's >>xxx<< tokens", "MarianTokenizer: >>fra<< text")
    if not codes:
        codes = [t for t in source if re.fullmatch(r"<2[A-Za-z0-9_-]{1,60}>", t)]
        origin = ("the SentencePiece model's <2xx> pieces", "T5Tokenizer: <2fr> text")
    rows = []
    if codes:
        rows += [("languages", codes, origin[0]),
                 ("target_language_token", "source", origin[1])]
    for key in ("source_lang", "target_lang"):
        code = tokenizer_config.get(key, config.get(key))
        if isinstance(code, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,63}", code) and \
                not (codes and key == "target_lang"):
            rows.append((key, code, "tokenizer_config.json " + key))
    return rows


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
    defaults["forced_eos_token_id"] = setting(config, "forced_eos_token_id")
    return {key: config.get(key, default) for key, default in defaults.items()}, "config.json", {}


def token_id(config, generation, key, ted_key):
    """A token id generate() uses: generation_config.json's, else
    config.json's; what ted's config reader refuses for `ted_key` is
    refused in its words."""
    value = generation.get(key)
    source = "config.json" if value is None else "generation_config.json"
    value = setting(config, key) if value is None else value
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return ted_value(f"{source}: {key}", ted_key, value)


def banned_ids(settings, source, vocab_size):
    """bad_words_ids [[a], [b]] -> [a, b], then suppress_tokens [c] (banned at
    every step as well); longer word sequences are refused."""
    suppressed = settings["suppress_tokens"] or []
    if not isinstance(suppressed, list):
        suppressed = [suppressed]
    words = settings["bad_words_ids"] or []
    if isinstance(words, list):
        words = words + [[token] for token in suppressed]
    if not isinstance(words, list) or not all(isinstance(w, list) and len(w) == 1
                                              for w in words):
        raise ExportError(f"{source}: bad_words_ids {json.dumps(words)[:80]}: only single "
                          f"tokens below vocab_size {vocab_size} are supported ([[id], [id], "
                          "...])")
    return ted_value(f"{source}: bad_words_ids", "decoding.banned_ids", [w[0] for w in words])


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
    return ted_value(f"{source}: {key}", "decoding.max_length", count)


def early_stopping(settings, source):
    """generate()'s early_stopping (True, False or "never") as ted spells it."""
    value = settings["early_stopping"]
    for setting, word in EARLY_STOPPING:
        if value is setting or (isinstance(value, str) and value == setting):
            return word
    raise ExportError(f"{source}: early_stopping {json.dumps(value)[:80]} is not true, false "
                      'or "never"')


def logits_rules(settings, source):
    """The decoding rows of the rules generate() applies to every step's
    scores, those set away from their defaults: min_new_tokens N bans EOS
    as ted's min_length N + 1 does."""
    least = settings["min_length"]
    if isinstance(settings["min_new_tokens"], int) and settings["min_new_tokens"] + 1 > least:
        least = settings["min_new_tokens"] + 1
    penalty = settings["repetition_penalty"]
    if isinstance(penalty, int) and not isinstance(penalty, bool):
        penalty = float(penalty)  # config.yaml holds a float
    rows = [("repetition_penalty", penalty, 1.0),
            ("no_repeat_ngram_size", settings["no_repeat_ngram_size"], 0),
            ("encoder_no_repeat_ngram_size", settings["encoder_no_repeat_ngram_size"], 0),
            ("min_length", least, 0)]
    return [(key, ted_value(f"{source}: {key}", "decoding." + key, value))
            for key, value, default in rows if value != default]


def decoding(hf_dir, config, m, ids):
    """ted's decoding section and the tokenizer's bos_id and eos_id."""
    settings, source, generation = generation_settings(hf_dir, config)
    for key, default in UNSUPPORTED_GENERATION.items():
        if settings[key] != default:
            raise ExportError(f"{source}: {key} {json.dumps(settings[key])} is not supported "
                              "(ted's decoding has no such setting)")
    eos = token_id(config, generation, "eos_token_id", "tokenizer.eos_id")
    if eos != ids["eos"]:
        raise ExportError(f"{source}: eos_token_id {eos} is not the tokenizer's eos_token, "
                          f"id {ids['eos']}: ted ends sources and translations with one id")
    forced = settings["forced_eos_token_id"]
    if forced not in (None, eos, [eos]):
        raise ExportError(f"{source}: forced_eos_token_id {json.dumps(forced)} is not "
                          f"eos_token_id {eos}")
    beams = ted_value(f"{source}: num_beams", "decoding.beam_size", settings["num_beams"])
    penalty = settings["length_penalty"]
    if isinstance(penalty, int) and not isinstance(penalty, bool):
        penalty = float(penalty)  # config.yaml holds a float
    penalty = ted_value(f"{source}: length_penalty", "decoding.length_penalty", penalty)
    start = generation.get("decoder_start_token_id", setting(config, "decoder_start_token_id"))
    if start is None and family(config) != "marian":  # generate() then starts from BOS
        start_key = "bos_token_id"
    else:
        start_key = "decoder_start_token_id"
    return {"bos": token_id(config, generation, start_key, "tokenizer.bos_id"),
            "forced_bos": settings["forced_bos_token_id"],
            "eos": eos,
            "max_length": max_new_tokens(settings, source, forced is not None),
            "forced_eos": forced is not None,
            "beam_size": beams, "length_penalty": float(penalty),
            "early_stopping": early_stopping(settings, source),
            "banned_ids": banned_ids(settings, source, m["tgt_vocab_size"]),
            "rules": logits_rules(settings, source),
            "source": source}


# ---- the ted model directory ----------------------------------------------------

def default_target(tokens, codes, decode):
    """The rows of a generation config's forced_bos_token_id: the default
    target language when it is a language code; anything else is refused."""
    forced = decode["forced_bos"]
    if forced is None:
        return []
    if isinstance(forced, int) and not isinstance(forced, bool) and \
            0 <= forced < len(tokens) and codes and tokens[forced] in codes:
        return [("default_target_lang", tokens[forced],
                 f"{decode['source']} forced_bos_token_id {forced}")]
    raise ExportError(f"{decode['source']}: forced_bos_token_id {json.dumps(forced)[:80]} is "
                      "not supported (not a language code of the tokenizer)")


def multilingual_rows(tok, decode, tokens):
    """The tokenizer rows of a multilingual model's languages: the codes,
    where they go, the decoder start, the default target
    (docs/model-format.md)."""
    return [("bos_id", tok["ids"]["bos"], "bos_token"),
            ("languages", tok["languages"], f"{tok['class']}'s additional_special_tokens"),
            ("source_language_token", tok["source_code"],
             "legacy_behaviour: after EOS" if tok["source_code"] == "last" else
             "the source language's code before the text"),
            ("target_language_token", "forced", "the target language's code, forced as the "
             "first token (forced_bos_token_id)"),
            ("decoder_start_id", decode["bos"], "decoder_start_token_id")] + \
        default_target(tokens, tok["languages"], decode)


def served_languages(spec, codes):
    """The items of --languages ("a,b>c"): codes of `codes` (the tokenizer's)
    and directions, as config.yaml's top-level languages spells them."""
    if not codes:
        raise ExportError("--languages: the model names no language codes (a bilingual "
                          "model translates its one pair)")
    items = []
    for item in spec.split(","):
        words = item.split()
        if len(words) == 1 and words[0].count(">") == 1 and not words[0].startswith(">>"):
            words = [words[0].split(">")[0], ">", words[0].split(">")[1]]
        for code in words[::2]:
            if code not in codes:
                raise ExportError(f"--languages: {json.dumps(code)[:80]} is not a language "
                                  f"code of the tokenizer (its: {', '.join(codes[:8])}"
                                  f"{', ...' if len(codes) > 8 else ''})")
        if len(words) not in (1, 3) or (len(words) == 3 and words[1] != ">"):
            raise ExportError(f"--languages: {json.dumps(item)[:80]}: expected a code or a "
                              "direction, SOURCE>TARGET")
        items.append(" > ".join(words[::2]))
    return items


def ted_config(m, tok, decode, source, served=None):
    """config.yaml's text; `served`: the top-level languages (None: none)."""
    (src_vocab, tgt_vocab), ids = tok["vocab"], tok["ids"]
    model = [(key, m[key]) for key in ("d_model", "heads", "encoder_layers", "decoder_layers",
                                       "d_ff", "src_vocab_size", "tgt_vocab_size")]
    origin = {"activation": "config.json activation_function",
              "max_positions": "max_position_embeddings",
              "shared_embeddings": "share_encoder_decoder_embeddings",
              "output_bias": "final_logits_bias",
              "normalize": "MarianTokenizer's text is not normalized before SentencePiece",
              **m.get("origins", {})}
    model += [("activation", m["activation"], origin["activation"]),
              ("layer_norm_eps", m.get("layer_norm_eps", LAYER_NORM_EPS)),
              ("max_positions", m["max_positions"], origin["max_positions"]),
              ("scale_embedding", m["scale_embedding"])] + m["variant"]
    model += [("tensor_names", "marian"), ("attention_projection", "separate"),
              ("shared_embeddings", m["shared_embeddings"], origin["shared_embeddings"]),
              ("tied_output", m["tied_output"], "tie_word_embeddings"),
              ("output_bias", m["output_bias"], origin["output_bias"])]
    bpe = "merges" in tok
    splitting = ([("type", "bpe", "GPT-2's byte-level BPE"), ("merges", tok["merges"]),
                  ("add_prefix_space", tok["add_prefix_space"])] if bpe else
                 [("type", "sentencepiece")])
    files = [] if bpe else [("src_spm", tok["spm"][0]), ("tgt_spm", tok["spm"][1])]
    tokenizer_rows = splitting + [
        ("lowercase", False), ("normalize", "none", origin["normalize"]),
        ("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)] + files + [
        ("unk_id", ids["unk"]), ("pad_id", ids["pad"]),
        ("bos_id", decode["bos"], decode.get("bos_origin", "decoder_start_token_id")),
        ("eos_id", decode["eos"]),
        ("source_bos", True, "<s> before the source") if bpe else ("source_bos", False),
        ("source_eos", True)]
    if tok["languages"] or bpe:  # BOS is <s>, and the decoder starts elsewhere
        tokenizer_rows = [row for row in tokenizer_rows if row[0] != "bos_id"]
    tokenizer_rows += tok["language_rows"]
    decoding_rows = [
        f"from {decode['source']}: max_length counts the start token, and the last",
        "token is EOS when forced_eos_token_id is set: ted stops before it (forced_eos)",
        ("max_length", decode["max_length"]), ("max_length_offset", 0),
        ("beam_size", decode["beam_size"], "num_beams"),
        ("length_penalty", decode["length_penalty"]),
        ("length_normalization", "power", "log-prob / length^length_penalty"),
        ("early_stopping", decode["early_stopping"]),
        ("forced_eos", decode["forced_eos"], "forced_eos_token_id"),
        ("banned_ids", decode["banned_ids"], "bad_words_ids")] + decode.get("rules", [])
    sections = [("model", model), ("weights", "model.safetensors"),
                ("tokenizer", tokenizer_rows), ("decoding", decoding_rows)]
    if served is not None:
        sections.append(("languages", tuple(served)))
    check_ted_config(sections, decode["source"])
    return ted_format.config_yaml(
        [f"ted model exported by tools/export_hf.py from {source} ({m['class']})"], sections)


def check_ted_config(sections, source):
    """The whole config as ted's config reader checks it (every key, then
    those that involve several): refused in its words, naming where the
    value comes from."""
    values = {}
    for name, body in sections:
        if not isinstance(body, list):
            values[name] = body
            continue
        for row in body:
            if not isinstance(row, str):
                values[f"{name}.{row[0]}"] = row[1]
    try:
        rules.check_config(values)
    except rules.ConfigProblem as problem:
        raise refuse(ORIGINS.get(problem.key, "config.yaml").format(source=source),
                     problem) from None


# Where the value of a key ted's reader checks against others comes from.
ORIGINS = {"model.d_model": "config.json: d_model",
           "languages": "--languages",
           "model.heads": "config.json: encoder_attention_heads",
           "model.src_vocab_size": "config.json: vocab_size",
           "model.tgt_vocab_size": "config.json: vocab_size",
           "tokenizer.unk_id": "tokenizer_config.json: unk_token",
           "tokenizer.pad_id": "tokenizer_config.json: pad_token",
           "tokenizer.bos_id": "decoder_start_token_id",
           "tokenizer.eos_id": "eos_token_id",
           "decoding.beam_size": "{source}: num_beams",
           "decoding.banned_ids": "{source}: bad_words_ids",
           "decoding.max_length": "{source}: max_length",
           "tokenizer.languages": "vocab.json",
           "tokenizer.source_lang": "tokenizer_config.json: source_lang",
           "tokenizer.target_lang": "tokenizer_config.json: target_lang"}


def vocab_bytes(path, tokens):
    """A vocabulary file: one token per line, the line number (from 0) the id."""
    problem = ted_format.vocab_problem(tokens)
    if problem:
        raise ExportError(f"{path}: {problem}")
    return ("\n".join(tokens) + "\n").encode("utf-8")


def write_model(out_dir, hf_dir, tensors, files, config_text, quantize=None):
    """The ted model directory (safe_files.OutputDirectory: new or empty,
    unique temporary names, renamed into place once whole, removed on
    failure or SIGINT/SIGTERM/SIGHUP)."""
    with safe_files.OutputDirectory(out_dir, hf_dir) as out:
        out.write("model.safetensors",
                  ted_format.safetensors_chunks(tensors, quantize=quantize))
        for name, content in files.items():
            out.write(name, content if isinstance(content, bytes)
                      else vocab_bytes(os.path.join(out_dir, name), content))
        out.write("config.yaml", config_text.encode("utf-8"))
    for line in WARNINGS:
        print(line, file=sys.stderr)


def export(hf_dir, out_dir, quantize=None, languages=None):
    """Writes the ted model directory `out_dir` for the model in
    `hf_dir`; quantize "int8" stores the matrices as int8
    (ted_format.write_safetensors). Returns the model section written (a
    dict). Raises ExportError."""
    config = read_json(hf_dir, "config.json")
    # from_pretrained lets special_tokens_map.json's tokens override these
    tokenizer_config = {**read_json(hf_dir, "tokenizer_config.json", required=False),
                        **read_json(hf_dir, "special_tokens_map.json", required=False)}
    m = architecture(config)
    m["class"] = model_class(config)
    vocabs, tok = tokenizer_files(hf_dir, tokenizer_config, m)
    decode = decoding(hf_dir, config, m, tok["ids"])
    t5 = m["family"] in hf_families.T5_FAMILIES
    path, tensors = load_weights(hf_dir, marian=not t5)
    written = t5_tensors(path, tensors, m) if t5 else model_tensors(path, tensors, m)
    check_finite(path, written)
    targets = vocabs[tok["vocab"][1]]
    if not tok["languages"] and m["family"] != "bart":
        default_target(targets, None, decode)  # refuses a forced_bos_token_id
    tok["language_rows"] = (multilingual_rows(tok, decode, targets) if tok["languages"] else
                            language_rows(config, tokenizer_config, vocabs[tok["vocab"][0]]))
    if m["family"] == "bart":
        tok["language_rows"] += bart_rows(tok, decode)
    if t5:  # no <s>: BOS is padding, and the decoder starts where config.json says
        tok["language_rows"].append(("decoder_start_id", decode["bos"],
                                     "decoder_start_token_id"))
        decode = dict(decode, bos=tok["ids"]["pad"], bos_origin="T5 has no <s>: pad_token")
    served = served_languages(languages, tok["languages"]) if languages is not None else None
    text = ted_config(m, tok, decode, hf_dir, served)
    write_model(out_dir, hf_dir, written, vocabs, text, quantize)
    return m


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Export a Hugging Face MarianMTModel, M2M100ForConditionalGeneration "
        "(M2M-100, NLLB-200), MBartForConditionalGeneration (mBART-50), "
        "T5ForConditionalGeneration, MT5ForConditionalGeneration or "
        "PegasusForConditionalGeneration directory to a ted model directory.",
        epilog="OUT must be a new or empty directory, not HF_DIR and not a symbolic link; "
        "each file is written under a unique temporary name there and renamed into place "
        "once all are whole, and a failure, SIGINT, SIGTERM or SIGHUP leaves none of them "
        "(nor OUT, when the exporter created it). Inputs must be regular files (no FIFO, "
        "no device) within a size bound per kind. A value ted's config reader refuses, or "
        "a weight that is not finite, is refused in ted's words before anything is written. "
        "Any failure: one line on stderr, exit status 1.")
    parser.add_argument("hf_dir", help="the directory save_pretrained wrote (config.json, "
                        "model.safetensors or pytorch_model.bin, source.spm, target.spm, "
                        "vocab.json, ...)")
    parser.add_argument("--out", required=True, help="the ted model directory to write: new "
                        "or empty")
    parser.add_argument("--quantize", choices=ted_format.QUANTIZATIONS,
                        help="store Linear and embedding weights as int8, one F32 scale per "
                        "row (what `ted quantize` writes)")
    parser.add_argument("--languages", metavar="LIST",
                        help="what the model was trained to translate, comma-separated: "
                        "codes of its tokenizer (each from and into the others) and "
                        "directions SOURCE>TARGET (config.yaml's top-level languages); "
                        "default: every code, in every direction")
    args = parser.parse_args(argv)
    safe_files.stop_signals()
    try:
        return ted_format.run_export("export_hf", args.out,
                                     lambda: export(args.hf_dir, args.out, args.quantize,
                                                    args.languages))
    except safe_files.Stopped as stop:
        print(f"export_hf: stopped by {stop}; nothing was left in {args.out}", file=sys.stderr)
        safe_files.die_of(stop.signum)
        return 1
    except MemoryError:
        print("export_hf: out of memory", file=sys.stderr)
        return 1
    except Exception as e:  # no traceback reaches the user: one line, exit 1
        text = " ".join(str(e).split())[:300]
        print(f"export_hf: unexpected {type(e).__name__}: {text}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
