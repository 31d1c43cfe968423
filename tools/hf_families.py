"""The Hugging Face model families tools/export_hf.py converts besides
MarianMTModel: M2M100ForConditionalGeneration (M2M-100 and NLLB-200
checkpoints), MBartForConditionalGeneration (mBART-50),
T5ForConditionalGeneration / MT5ForConditionalGeneration (T5, Flan-T5,
mT5, MADLAD-400), PegasusForConditionalGeneration and
BartForConditionalGeneration, and the vocabularies of their tokenizers
(NllbTokenizer, M2M100Tokenizer, MBart50Tokenizer, T5Tokenizer,
PegasusTokenizer, BartTokenizer) as ted reads them: one token per line, the
line number the id the Hugging Face tokenizer gives it.

Each family is the Transformer of the paper with pre-norm layers and a
final LayerNorm on both stacks; what differs becomes config.yaml keys
(docs/model-format.md, "Hugging Face M2M-100, NLLB and mBART-50 models"):

  m2m_100  sinusoidal positions with fairseq's frequencies
           (positional_encoding: fairseq), the first token at position
           pad_token_id + 1 (position_offset), ReLU, embeddings x sqrt(d)
  mbart    learned positional tables (positional_encoding: learned) whose
           first token takes row 2 (position_offset), a LayerNorm after the
           embeddings (embedding_norm), GELU
  t5, mt5  RMSNorm (norm: rms), pre-norm, no biases (linear_bias), no
           1/sqrt(d) in attention (scale_attention), a relative position
           bias per stack (positional_encoding: relative), heads * d_kv
           wide attention (head_size), relu or a gated network
           (feed_forward: gated, gelu_tanh), the output scaled by
           d_model^-0.5 when tied (scale_output); T5_TENSORS renames
           the tensors into ted's marian naming
  pegasus  Marian's sinusoidal positions (sines, then cosines, from
           position 0: positional_encoding: concatenated), embeddings x
           sqrt(d) with scale_embedding, final_logits_bias; PegasusTokenizer
           puts its added tokens (<pad> </s> <mask_1> <mask_2> <unk_2> ..
           <unk_102>) at ids 0-104 and SentencePiece piece i at i + offset
           (103)
  bart     mbart's learned positions and embedding LayerNorm, but post-norm
           layers and no final LayerNorm; GPT-2's byte-level BPE
           (vocab.json, merges.txt), the decoder started from </s> and <s>
           forced after it (forced_bos_token_id)

Language codes are tokens of the vocabulary: the tokenizer's
additional_special_tokens ("eng_Latn", "en_XX"), or for M2M100Tokenizer
those of the table its language_codes names ("__fr__").
"""
import json
import os

import numpy as np

from ted_format import ExportError, values

# What each configuration class (transformers 4.40) takes when config.json
# leaves a key out.
M2M100_DEFAULTS = {
    "vocab_size": 128112, "max_position_embeddings": 1024, "encoder_layers": 12,
    "encoder_ffn_dim": 4096, "encoder_attention_heads": 16, "decoder_layers": 12,
    "decoder_ffn_dim": 4096, "decoder_attention_heads": 16, "activation_function": "relu",
    "d_model": 1024, "decoder_start_token_id": 2, "scale_embedding": True, "pad_token_id": 1,
    "bos_token_id": 0, "eos_token_id": 2, "forced_eos_token_id": None,
    "tie_word_embeddings": True,
}
MBART_DEFAULTS = {
    "vocab_size": 50265, "max_position_embeddings": 1024, "encoder_layers": 12,
    "encoder_ffn_dim": 4096, "encoder_attention_heads": 16, "decoder_layers": 12,
    "decoder_ffn_dim": 4096, "decoder_attention_heads": 16, "activation_function": "gelu",
    "d_model": 1024, "decoder_start_token_id": None, "scale_embedding": False,
    "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "forced_eos_token_id": 2,
    "tie_word_embeddings": True,
}

T5_DEFAULTS = {
    "vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
    "num_decoder_layers": None, "num_heads": 8, "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128, "layer_norm_epsilon": 1e-6,
    "feed_forward_proj": "relu", "tie_word_embeddings": True, "pad_token_id": 0,
    "eos_token_id": 1, "decoder_start_token_id": 0, "forced_eos_token_id": None,
}
PEGASUS_DEFAULTS = {
    "vocab_size": 50265, "max_position_embeddings": 1024, "encoder_layers": 12,
    "encoder_ffn_dim": 4096, "encoder_attention_heads": 16, "decoder_layers": 12,
    "decoder_ffn_dim": 4096, "decoder_attention_heads": 16, "activation_function": "gelu",
    "d_model": 1024, "decoder_start_token_id": 0, "scale_embedding": False, "pad_token_id": 0,
    "bos_token_id": None, "eos_token_id": 1, "forced_eos_token_id": 1,
    "tie_word_embeddings": True,
}
BART_DEFAULTS = dict(MBART_DEFAULTS, decoder_start_token_id=2)
MT5_DEFAULTS = dict(T5_DEFAULTS, vocab_size=250112, d_ff=1024, num_layers=8, num_heads=6,
                    feed_forward_proj="gated-gelu", tie_word_embeddings=False)

# model_type -> (the class that runs it, its defaults, the tokenizers it
# comes with)
FAMILIES = {
    "m2m_100": ("M2M100ForConditionalGeneration", M2M100_DEFAULTS,
                ("NllbTokenizer", "NllbTokenizerFast", "M2M100Tokenizer")),
    "mbart": ("MBartForConditionalGeneration", MBART_DEFAULTS,
              ("MBart50Tokenizer", "MBart50TokenizerFast")),
    "t5": ("T5ForConditionalGeneration", T5_DEFAULTS, ("T5Tokenizer", "T5TokenizerFast")),
    "mt5": ("MT5ForConditionalGeneration", MT5_DEFAULTS, ("T5Tokenizer", "T5TokenizerFast")),
    "pegasus": ("PegasusForConditionalGeneration", PEGASUS_DEFAULTS,
                ("PegasusTokenizer", "PegasusTokenizerFast")),
    "bart": ("BartForConditionalGeneration", BART_DEFAULTS,
             ("BartTokenizer", "BartTokenizerFast")),
}
T5_FAMILIES = ("t5", "mt5")
# T5Config's feed_forward_proj -> ted's feed_forward and activation
# (configuration_t5.py: "gated-gelu" runs gelu_new, the tanh approximation)
T5_FEED_FORWARD = {"relu": ("plain", "relu"), "gelu": ("plain", "gelu"),
                   "silu": ("plain", "silu"), "gated-relu": ("gated", "relu"),
                   "gated-gelu": ("gated", "gelu_tanh"), "gated-silu": ("gated", "silu")}
T5_MAX_POSITIONS = 4096  # relative positions reach any length: ted's bound on a source
# M2M100Tokenizer's language codes by the name tokenizer_config.json's
# language_codes gives (tokenization_m2m_100.py, FAIRSEQ_LANGUAGE_CODES): the
# tokenizer spells code xx as the token __xx__, of id len(vocab.json) + its
# index here.
M2M100_LANGUAGE_CODES = {
    "m2m100": ["af", "am", "ar", "ast", "az", "ba", "be", "bg", "bn", "br", "bs", "ca", "ceb",
               "cs", "cy", "da", "de", "el", "en", "es", "et", "fa", "ff", "fi", "fr", "fy",
               "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr", "ht", "hu", "hy", "id", "ig",
               "ilo", "is", "it", "ja", "jv", "ka", "kk", "km", "kn", "ko", "lb", "lg", "ln",
               "lo", "lt", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl", "no",
               "ns", "oc", "or", "pa", "pl", "ps", "pt", "ro", "ru", "sd", "si", "sk", "sl",
               "so", "sq", "sr", "ss", "su", "sv", "sw", "ta", "th", "tl", "tn", "tr", "uk",
               "ur", "uz", "vi", "wo", "xh", "yi", "yo", "zh", "zu"],
    "wmt21": ["en", "ha", "is", "ja", "cs", "ru", "zh", "de"],
}
MBART_POSITION_OFFSET = 2  # MBartLearnedPositionalEmbedding.offset
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # ids 0-3 of the fairseq dictionaries
FILLER = "<madeupword{}>"  # the rows of the embedding no token of the tokenizer names


def ted_model_keys(family, config, setting):
    """The model section keys the family fixes or config.json sets:
    (key, value, comment) rows, after the sizes."""
    if family == "m2m_100":
        pad = setting(config, "pad_token_id")
        if not isinstance(pad, int) or isinstance(pad, bool) or pad < 0:
            raise ExportError(f"config.json: pad_token_id {json.dumps(pad)} is not a token id "
                              "(M2M-100's positions start at pad_token_id + 1)")
        positions = [("positional_encoding", "fairseq",
                      "sines, then cosines of pos / 10000^(i / (d_model/2 - 1))"),
                     ("position_offset", pad + 1, "the first token's position: pad_token_id + 1"),
                     ("embedding_norm", False)]
    elif family == "pegasus":
        positions = [("positional_encoding", "concatenated",
                      "PegasusSinusoidalPositionalEmbedding: sines, then cosines"),
                     ("position_offset", 0), ("embedding_norm", False)]
    else:
        positions = [("positional_encoding", "learned", "embed_positions.weight of each stack"),
                     ("position_offset", MBART_POSITION_OFFSET, "the first token takes row 2"),
                     ("embedding_norm", True, "layernorm_embedding")]
    if family == "bart":  # post-norm layers, no final LayerNorm
        return positions + [("norm_first", False), ("encoder_final_norm", False),
                            ("decoder_final_norm", False)]
    return positions + [("norm_first", True), ("encoder_final_norm", True),
                        ("decoder_final_norm", True)]


def fairseq_positions(count, d_model):
    """M2M100SinusoidalPositionalEmbedding.get_embedding's table (the
    padding row left as the formula gives it)."""
    half = d_model // 2
    frequencies = np.exp(np.arange(half, dtype=np.float64) * -(np.log(10000.0) / (half - 1)))
    angles = np.arange(count, dtype=np.float64)[:, None] * frequencies[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def stack_tensors(family, m):
    """Name -> shape of the tensors the family adds to a MarianMTModel's
    (besides final_logits_bias): the final norms (not BART's), mBART's and
    BART's embedding norms and positional tables."""
    d = m["d_model"]
    shapes = {}
    learned = family in ("mbart", "bart")
    for stack in ("encoder", "decoder"):
        norms = {"mbart": ("layer_norm", "layernorm_embedding"),
                 "bart": ("layernorm_embedding",)}.get(family, ("layer_norm",))
        for norm in norms:
            shapes[f"model.{stack}.{norm}.weight"] = (d,)
            shapes[f"model.{stack}.{norm}.bias"] = (d,)
        if learned:
            shapes[f"model.{stack}.embed_positions.weight"] = (
                m["max_positions"] + MBART_POSITION_OFFSET, d)
    return shapes


def check_sinusoidal_tables(path, tensors, m, tolerance):
    """M2M-100 keeps its table out of the state_dict; a checkpoint that has
    it (model.*.embed_positions.weights) must hold fairseq's table.
    Returns the names checked."""
    names = [f"model.{stack}.embed_positions.weights" for stack in ("encoder", "decoder")]
    present = [name for name in names if name in tensors]
    for name in present:
        table = values(tensors[name])
        rows = min(table.shape[0], m["max_positions"] + m["position_offset"])
        if table.ndim != 2 or table.shape[1] != m["d_model"]:
            raise ExportError(f"{path}: tensor {name} has shape {list(table.shape)}, not "
                              f"[rows, {m['d_model']}]")
        want = fairseq_positions(rows, m["d_model"])
        pad = m["position_offset"] - 1
        keep = np.arange(rows) != pad  # the padding row is zeroed
        diff = float(np.abs(table[:rows][keep] - want[keep]).max()) if rows > 1 else 0.0
        if not diff <= tolerance:
            raise ExportError(f"{path}: tensor {name} is not the sinusoidal table (fairseq's "
                              f"frequencies) ted computes: max abs difference {diff:.3g}")
    return present


# ---- tokenizers -------------------------------------------------------------------

def tokenizer_class(family, tokenizer_config, hf_dir):
    """The tokenizer's class: tokenizer_config.json's, else what the files
    say (vocab.json: M2M100Tokenizer)."""
    name = tokenizer_config.get("tokenizer_class")
    if name is None:
        if family in T5_FAMILIES:
            name = "T5Tokenizer"
        elif family == "pegasus":
            name = "PegasusTokenizer"
        elif family == "mbart":
            name = "MBart50Tokenizer"
        elif family == "bart":
            name = "BartTokenizer"
        else:
            has_vocab = os.path.lexists(os.path.join(hf_dir, "vocab.json"))
            name = "M2M100Tokenizer" if has_vocab else "NllbTokenizer"
    allowed = FAMILIES[family][2]
    if name not in allowed:
        why = (" (mBART-25's MBartTokenizer puts the language code after the source and "
               "starts the decoder from it, which ted does not do)" if name.startswith("MBart")
               else "")
        raise ExportError(f"tokenizer_config.json: tokenizer_class {name}: a {FAMILIES[family][0]}"
                          f" is converted with {' or '.join(allowed)}{why}")
    return name.replace("Fast", "")


def added_tokens(tokenizer_config):
    """{id: spelling} of tokenizer_config.json's added_tokens_decoder."""
    added = tokenizer_config.get("added_tokens_decoder") or {}
    if not isinstance(added, dict):
        raise ExportError("tokenizer_config.json: added_tokens_decoder is not a JSON object")
    out = {}
    for key, entry in added.items():
        content = entry.get("content") if isinstance(entry, dict) else entry
        if not str(key).isdigit() or not isinstance(content, str):
            raise ExportError(f"tokenizer_config.json: added_tokens_decoder {key!r} is not "
                              "an id with a token")
        out[int(key)] = content
    return out


def language_codes(tokenizer_config):
    """additional_special_tokens: the language codes, in the tokenizer's order."""
    codes = tokenizer_config.get("additional_special_tokens")
    if not isinstance(codes, list) or not codes:
        raise ExportError("tokenizer_config.json: additional_special_tokens: missing; the "
                          "language codes of a multilingual tokenizer are listed there")
    out = []
    for code in codes:
        code = code.get("content") if isinstance(code, dict) else code
        if not isinstance(code, str) or not code:
            raise ExportError(f"tokenizer_config.json: additional_special_tokens holds "
                              f"{json.dumps(code)[:40]}, not a token")
        out.append(code)
    return out


def spm_pieces(path, data):
    try:
        import sentencepiece
    except ImportError:
        raise ExportError(f"{path}: reading this tokenizer needs the sentencepiece module "
                          "(python3-sentencepiece)") from None
    try:
        processor = sentencepiece.SentencePieceProcessor(model_proto=data)
    except (OSError, RuntimeError, TypeError, ValueError) as e:
        raise ExportError(f"{path}: not a SentencePiece model ({e})".splitlines()[0]) from None
    return [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]


def place(tokens, index, token, origin, size):
    if not 0 <= index < size:
        raise ExportError(f"{origin}: token {json.dumps(token)} has id {index}, not below "
                          f"config.json vocab_size {size}")
    tokens[index] = token


def fairseq_tokens(pieces, added, codes, size, origin):
    """NLLB and mBART-50: <s> <pad> </s> <unk>, SentencePiece's pieces
    from id 3 on at their id + 1, then the language codes and <mask>
    (added_tokens_decoder's ids; without it, in the tokenizer's order)."""
    tokens = [None] * size
    for index, piece in enumerate(pieces[3:], start=4):
        place(tokens, index, piece, origin, size)
    for index, special in enumerate(SPECIALS):
        tokens[index] = special
    if not added:
        after = len(pieces) + 1
        added = {after + i: code for i, code in enumerate(codes + ["<mask>"])}
    for index, token in sorted(added.items()):
        place(tokens, index, token, "tokenizer_config.json: added_tokens_decoder", size)
    return tokens


def m2m100_codes(tokenizer_config):
    """The language tokens (__fr__) of tokenizer_config.json's
    language_codes, in M2M100Tokenizer's order."""
    name = tokenizer_config.get("language_codes", "m2m100")
    if name not in M2M100_LANGUAGE_CODES:
        raise ExportError(f"tokenizer_config.json: language_codes {json.dumps(name)[:40]}: "
                          f"M2M100Tokenizer knows {', '.join(M2M100_LANGUAGE_CODES)}")
    return [f"__{code}__" for code in M2M100_LANGUAGE_CODES[name]]


def m2m100_tokens(vocab, added, codes, size, origin):
    """M2M-100: vocab.json's ids, then the language tokens (__fr__) after
    them; added_tokens_decoder's ids where it names a token."""
    tokens = [None] * size
    for token, index in vocab.items():
        if not isinstance(index, int) or isinstance(index, bool):
            raise ExportError(f"{origin}: token {json.dumps(token)} has id "
                              f"{json.dumps(index)}, not an integer")
        place(tokens, index, token, origin, size)
    given = {token: index for index, token in added.items()}
    for i, code in enumerate(codes):
        place(tokens, given.get(code, len(vocab) + i), code, "M2M100Tokenizer", size)
    for index, token in sorted(added.items()):
        place(tokens, index, token, "tokenizer_config.json: added_tokens_decoder", size)
    return tokens


def fill_rows(tokens):
    """The embedding rows no token names get a spelling of their own."""
    taken = set(tokens)
    n = 0
    for index, token in enumerate(tokens):
        if token is None:
            while FILLER.format(n) in taken:
                n += 1
            tokens[index] = FILLER.format(n)
            n += 1
    return tokens


def vocabulary(name, hf_dir, tokenizer_config, size, read):
    """(tokens by id, the language codes, the SentencePiece model's file
    name and bytes) of tokenizer `name`; read(file name, kind) reads one
    input file ("vocab": vocab.json as a dict, "spm": bytes)."""
    added = added_tokens(tokenizer_config)
    if name == "M2M100Tokenizer":
        codes = m2m100_codes(tokenizer_config)
        spm_file = "sentencepiece.bpe.model"
        data = read(spm_file, "spm")
        spm_pieces(os.path.join(hf_dir, spm_file), data)  # it must load
        tokens = m2m100_tokens(read("vocab.json", "vocab"), added, codes, size,
                               os.path.join(hf_dir, "vocab.json"))
    else:
        codes = language_codes(tokenizer_config)
        spm_file = "sentencepiece.bpe.model"
        data = read(spm_file, "spm")
        pieces = spm_pieces(os.path.join(hf_dir, spm_file), data)
        tokens = fairseq_tokens(pieces, added, codes, size, os.path.join(hf_dir, spm_file))
    known = set(tokens)
    missing = [code for code in codes if code not in known]
    if missing:
        raise ExportError(f"tokenizer_config.json: language code {json.dumps(missing[0])} is "
                          "no token of the vocabulary")
    order = {token: index for index, token in enumerate(tokens)}
    return fill_rows(tokens), sorted(codes, key=order.get), spm_file, data


# ---- T5 ------------------------------------------------------------------------------

def t5_tensor_names(m):
    """{Hugging Face name: (ted name, shape)} of a T5 or mT5 checkpoint,
    the tied embeddings and output aside."""
    d, f, inner = m["d_model"], m["d_ff"], m["heads"] * m["head_size"]
    gated = m["feed_forward"] == "gated"
    names = {}
    for stack in ("encoder", "decoder"):
        names[f"{stack}.final_layer_norm.weight"] = (f"model.{stack}.layer_norm.weight", (d,))
        names[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = (
            f"model.{stack}.relative_attention_bias.weight",
            (m["relative_buckets"], m["heads"]))
        blocks = ["self_attn"] + (["encoder_attn"] if stack == "decoder" else [])
        for i in range(m[f"{stack}_layers"]):
            hf, ted = f"{stack}.block.{i}.layer", f"model.{stack}.layers.{i}"
            for n, block in enumerate(blocks):
                part = "SelfAttention" if block == "self_attn" else "EncDecAttention"
                for x, proj in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj")):
                    names[f"{hf}.{n}.{part}.{x}.weight"] = (f"{ted}.{block}.{proj}.weight",
                                                          (inner, d))
                names[f"{hf}.{n}.{part}.o.weight"] = (f"{ted}.{block}.out_proj.weight", (d, inner))
                names[f"{hf}.{n}.layer_norm.weight"] = (f"{ted}.{block}_layer_norm.weight", (d,))
            n = len(blocks)
            inputs = (("wi_0", "fc1"), ("wi_1", "up_proj")) if gated else (("wi", "fc1"),)
            for hf_name, ted_name in inputs:
                names[f"{hf}.{n}.DenseReluDense.{hf_name}.weight"] = (f"{ted}.{ted_name}.weight",
                                                                     (f, d))
            names[f"{hf}.{n}.DenseReluDense.wo.weight"] = (f"{ted}.fc2.weight", (d, f))
            names[f"{hf}.{n}.layer_norm.weight"] = (f"{ted}.final_layer_norm.weight", (d,))
    return names


def t5_tokens(pieces, added, extra_ids, size, origin):
    """T5Tokenizer's vocabulary: the SentencePiece model's pieces at their
    ids, then the added tokens (<extra_id_N>) at added_tokens_decoder's ids
    (without it, as T5Tokenizer places its extra_ids: <extra_id_0> last,
    counting down); filler spellings for the embedding rows no token names."""
    tokens = [None] * size
    for index, piece in enumerate(pieces):
        place(tokens, index, piece, origin, size)
    if not added:
        last = len(pieces) - 1 + extra_ids
        added = {last - i: f"<extra_id_{i}>" for i in range(extra_ids)}
    for index, token in sorted(added.items()):
        if index < len(pieces) and tokens[index] == token:
            continue  # </s>, <unk>, <pad>: the model's own pieces
        place(tokens, index, token, "tokenizer_config.json: added_tokens_decoder", size)
    return fill_rows(tokens)


# ---- Pegasus ---------------------------------------------------------------------------

PEGASUS_OFFSET = 103  # PegasusTokenizer's offset: ids 2-104 are pretraining's


def pegasus_added(tokenizer_config, added, spellings):
    """{id: spelling} of PegasusTokenizer's added tokens: added_tokens_decoder,
    then, over it, what PegasusTokenizer.__init__ puts at ids 0 up:
    pad_token, eos_token, mask_token_sent and mask_token (when
    mask_token_sent is not null), <unk_2> .. <unk_{offset - 1}>.
    `spellings`: {"pad": .., "eos": .., "mask": ..}."""
    offset = tokenizer_config.get("offset", PEGASUS_OFFSET)
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= 1 << 20:
        raise ExportError(f"tokenizer_config.json: offset {json.dumps(offset)[:40]} is not a "
                          "count of ids")
    sentence_mask = tokenizer_config.get("mask_token_sent", "<mask_1>")
    if isinstance(sentence_mask, dict):
        sentence_mask = sentence_mask.get("content")
    if sentence_mask is not None and (not isinstance(sentence_mask, str) or not sentence_mask):
        raise ExportError(f"tokenizer_config.json: mask_token_sent "
                          f"{json.dumps(sentence_mask)[:40]} is not a token")
    fixed = {0: spellings["pad"], 1: spellings["eos"]}
    if sentence_mask is not None:
        fixed.update({2: sentence_mask, 3: spellings["mask"]})
    for i in range(2, offset):
        fixed[len(fixed)] = f"<unk_{i}>"
    return offset, {**added, **fixed}


def pegasus_tokens(processor, offset, added, size, origin):
    """PegasusTokenizer's vocabulary: piece i of the SentencePiece model at
    i + offset, the added tokens at their ids (over the pieces they hide,
    which must be control pieces: a piece of text the tokenizer would give
    the added token's id, which ted cannot), filler spellings for the rows
    no token names and for control pieces spelled as an added token."""
    tokens = [None] * size
    spelled = set(added.values())
    for i in range(processor.GetPieceSize()):
        index, piece = i + offset, processor.IdToPiece(i)
        if piece in spelled and added.get(index) != piece and processor.IsControl(i):
            continue  # <pad> past the added tokens: no text gives it, it gets a filler
        if index in added and added[index] != piece:
            if not (processor.IsControl(i) or processor.IsUnused(i)):
                raise ExportError(f"{origin}: piece {json.dumps(piece)} (id {i}) takes id "
                                  f"{index}, which added token {json.dumps(added[index])} "
                                  "holds: PegasusTokenizer gives that piece of text the "
                                  "added token's id, which ted cannot")
            continue
        place(tokens, index, piece, origin, size)
    for index, token in sorted(added.items()):
        place(tokens, index, token, "tokenizer_config.json: added_tokens_decoder", size)
    return fill_rows(tokens)


def spm_processor(path, data):
    """The SentencePiece model `data` loaded (spm_pieces' checks)."""
    spm_pieces(path, data)
    import sentencepiece
    return sentencepiece.SentencePieceProcessor(model_proto=data)


# ---- BartTokenizer --------------------------------------------------------------

def bart_merges(path, text):
    """merges.txt as GPT2Tokenizer reads it (its first line, "#version",
    and what follows the last newline left out; a line is the pair its
    split() gives; a pair given twice takes its last rank): the "LEFT
    RIGHT" lines of ted's merges file, in rank order."""
    ranks = {}
    for rank, line in enumerate(text.split("\n")[1:-1]):
        pair = tuple(line.split())
        if len(pair) == 2:
            ranks[pair] = rank
    if not ranks:
        raise ExportError(f"{path}: no merges (expected \"#version\" and then lines "
                          "\"LEFT RIGHT\")")
    return "".join(f"{a} {b}\n" for (a, b), _ in sorted(ranks.items(), key=lambda r: r[1]))


def bart_tokens(vocab, added, size, origin):
    """vocab.json's tokens at their ids, the added tokens (added_tokens_decoder)
    at theirs, FILLER rows for the ids no token names."""
    tokens = [None] * size
    for token, index in list(vocab.items()) + [(t, i) for i, t in added.items()]:
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < size:
            raise ExportError(f"{origin}: token {json.dumps(token)[:60]} has id "
                              f"{json.dumps(index)}, not one of 0 to {size - 1} (vocab_size)")
        if tokens[index] not in (None, token):
            raise ExportError(f"{origin}: tokens {json.dumps(tokens[index])[:60]} and "
                              f"{json.dumps(token)[:60]} both have id {index}")
        tokens[index] = token
    return fill_rows(tokens)
