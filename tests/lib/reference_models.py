"""The reference models the parity scripts (tests/parity/) hold ted against:
PyTorch's tutorial Transformer (tools/tutorial_model.py), a shipped model's
float32 logits for its quantized copies (int8, int4, bf16), and random-init
Hugging Face MarianMTModels with SentencePiece tokenizers trained here on
generated text. transformers and sentencepiece are imported when a Marian
function is called (the test virtualenv has them: make venv).
"""
import json
import os
import random
import shutil
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import ted_format  # noqa: E402
from ted_test import report, ted_logits  # noqa: E402
from tutorial_model import (BOS_IDX, EOS_IDX, UNK_IDX,  # noqa: E402
                            PositionalEncoding, Seq2SeqTransformer,
                            generate_square_subsequent_mask)


# ---- the tutorial model -------------------------------------------------------

def toy_model(state):
    """The tutorial Transformer of the toy models (4 heads) holding `state`,
    float64, in eval mode. ValueError when the state does not fit it (only
    pos_embedding, which the model computes, may be missing)."""
    import export_torch  # tools/: its sizes of a tutorial state
    sizes, _ = export_torch.analyze(state)
    model = Seq2SeqTransformer(sizes["encoder_layers"], sizes["decoder_layers"],
                               sizes["d_model"], 4, sizes["src_vocab_size"],
                               sizes["tgt_vocab_size"], dim_feedforward=sizes["d_ff"],
                               dropout=0.0)
    model.positional_encoding = PositionalEncoding(sizes["d_model"], 0.0, 5000)
    missing = model.load_state_dict(state, strict=False)
    if missing.unexpected_keys or any("pos_embedding" not in k for k in missing.missing_keys):
        raise ValueError(f"state_dict mismatch: {missing}")
    return model.eval().double()


def source_ids(words, vocab):
    index = {t: i for i, t in enumerate(vocab)}
    return [BOS_IDX] + [index.get(w, UNK_IDX) for w in words] + [EOS_IDX]


def reference_logits(model, src_ids, tgt_ids):
    """PyTorch's teacher-forced logits, float64: (len(tgt_ids) + 1, vocab)."""
    src = torch.tensor([src_ids]).t()
    tgt_in = torch.tensor([[BOS_IDX] + tgt_ids]).t()
    src_mask = torch.zeros(src.shape[0], src.shape[0], dtype=torch.bool)
    tgt_mask = generate_square_subsequent_mask(tgt_in.shape[0]).type(torch.bool)
    with torch.no_grad():
        out = model(src, tgt_in, src_mask, tgt_mask, None, None, None)
    return out[:, 0, :].numpy()


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def toy_logits(model_dir):
    """logits(model, source, target): reference_logits of a toy model's
    sentence pair (lowercase, whitespace tokens, model_dir's vocab.src and
    vocab.tgt)."""
    src_vocab = read_lines(os.path.join(model_dir, "vocab.src"))
    tgt_index = {t: i for i, t in enumerate(read_lines(os.path.join(model_dir, "vocab.tgt")))}

    def logits(model, source, target):
        return reference_logits(model, source_ids(source.lower().split(), src_vocab),
                                [tgt_index.get(w, 0) for w in target.lower().split()])
    return logits


def test_pairs(model_dir, count):
    """The first `count` sentence pairs of a shipped model's test.en and
    test.fr."""
    return list(zip(read_lines(os.path.join(model_dir, "test.en"))[:count],
                    read_lines(os.path.join(model_dir, "test.fr"))[:count]))


def worst_vs_toy(model, model_dir, count, *ted_logits):
    """For each ted_logits(source, target), its largest absolute difference
    from `model`'s logits over the first `count` sentence pairs of
    model_dir's test.en and test.fr."""
    logits = toy_logits(model_dir)
    worst = [0.0] * len(ted_logits)
    for source, target in test_pairs(model_dir, count):
        want = logits(model, source, target)
        for i, ted in enumerate(ted_logits):
            worst[i] = max(worst[i], float(np.abs(ted(source, target) - want).max()))
    return worst


# ---- a shipped model against its quantized copy -------------------------------

def logits_vs_fp32(model_dir, other_dir, count):
    """`ted logits` of the float32 model and of other_dir (its quantized
    copy) over the first `count` test pairs: [(float32's, other's)].
    ValueError (why) when ted fails."""
    return [(ted_logits(model_dir, s, t), ted_logits(other_dir, s, t))
            for s, t in test_pairs(model_dir, count)]


def check_logits_vs_fp32(name, kind, model_dir, other_dir, count, bound):
    """NAME: the `kind` (int8, bf16) copy's logits within `bound` (max abs
    diff) of the float32 model's over the first `count` test pairs."""
    try:
        logits = logits_vs_fp32(model_dir, other_dir, count)
    except ValueError as e:
        return report(name, str(e))
    worst = float(np.max([np.abs(got - want).max() for want, got in logits]))
    largest = float(np.max([np.abs(want).max() for want, _ in logits]))
    detail = (f"{kind} vs fp32 max abs diff {worst:.3g} over {len(logits)} sentences "
              f"(|logits| up to {largest:.1f}; bound {bound})")
    report(name, None if worst <= bound else detail, detail if worst <= bound else "")


def stored_arrays(model_dir):
    """model.safetensors of a ted model directory as stored: ({name: NumPy
    array of the stored values (BF16 as their uint16 bits)}, {name: dtype})."""
    header, start, data = ted_format.read_safetensors(os.path.join(model_dir,
                                                                   "model.safetensors"))
    kinds = {"U8": np.uint8, "I8": np.int8, "BF16": np.uint16, "F32": np.float32}
    arrays, dtypes = {}, {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        arrays[name] = np.frombuffer(data[start + begin:start + end],
                                     dtype=kinds[entry["dtype"]]).reshape(entry["shape"])
        dtypes[name] = entry["dtype"]
    return arrays, dtypes


# ---- random Marian models -----------------------------------------------------

MAX_LENGTH = 16         # generation_config.json max_length (start token counted)
MAX_POSITIONS = 64
SPM_VOCAB = 180

# (name, heads, d_model, encoder layers, decoder layers, d_ff, activation,
#  vocabulary, scale_embedding, tie_word_embeddings)
CONFIGS = [
    ("h8-2+2-swish", 8, 32, 2, 2, 64, "swish", "shared", True, True),
    ("h1-1+3-relu", 1, 16, 1, 3, 40, "relu", "shared", False, True),
    ("h4-3+1-gelu-separate", 4, 24, 3, 1, 48, "gelu", "separate", True, True),
    ("h2-2+3-swish-multilingual", 2, 20, 2, 3, 36, "swish", "multilingual", True, True),
    ("h4-2+2-relu-untied", 4, 32, 2, 2, 56, "relu", "shared", True, False),
]
LANGUAGE_CODES = [">>fr<<", ">>de<<", ">>zh_Hant<<"]

# the words of generated text
WORDS = ("the cat dog bird eats sleeps sees small black green house garden river city "
         "she he they we not never always today tomorrow because and or but with without "
         "café naïve über señor façade déjà Ærø Øresund piñata coöperate élève "
         "東京 日本語 中文 한국어 北京 こんにちは 😀 🐱 👍🏽 🇫🇷 ❤️ "
         "1 2 42 1999 3.14 , . ! ? ' \" « » ( ) : ; - n't 's").split()


def sentence(rng, words=WORDS, low=1, high=12):
    return " ".join(rng.choice(words) for _ in range(rng.randint(low, high)))


# ---- tokenizers ---------------------------------------------------------------

def train_spm(tmp, name, rng):
    """A SentencePiece unigram model trained on generated text; its pieces."""
    import sentencepiece as spm

    corpus = os.path.join(tmp, name + ".txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("".join(sentence(rng) + "\n" for _ in range(3000)))
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=os.path.join(tmp, name), vocab_size=SPM_VOCAB,
        model_type="unigram", character_coverage=0.995, bos_id=-1, eos_id=-1, unk_id=0,
        pad_id=-1, hard_vocab_limit=False, minloglevel=2, num_threads=1)
    os.rename(os.path.join(tmp, name + ".model"), os.path.join(tmp, name + ".spm"))
    processor = spm.SentencePieceProcessor(model_file=os.path.join(tmp, name + ".spm"))
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def marian_vocab(pieces, rng, codes=(), size=None):
    """vocab.json as Marian's converter writes it: </s> 0, <unk> 1, the
    pieces (in an order of their own, a few left out: they become <unk>),
    language codes, then <pad> last; filler tokens up to `size`."""
    pieces = [p for p in pieces if p != "<unk>"]
    rng.shuffle(pieces)
    tokens = ["</s>", "<unk>"] + pieces[4:] + list(codes)
    while size and len(tokens) < size - 1:
        tokens.append(f"▁filler{len(tokens)}")
    return {token: i for i, token in enumerate(tokens + ["<pad>"])}


def write_tokenizer(tok_dir, tmp, kind, rng):
    """source.spm, target.spm, vocab.json (target_vocab.json) and
    tokenizer_config.json; returns the MarianTokenizer."""
    from transformers import MarianTokenizer

    os.makedirs(tok_dir)
    source, target = train_spm(tmp, kind + "-source", rng), train_spm(tmp, kind + "-target", rng)
    for name in ("source", "target"):
        shutil.copy(os.path.join(tmp, f"{kind}-{name}.spm"), os.path.join(tok_dir, name + ".spm"))
    separate = kind == "separate"
    codes = LANGUAGE_CODES if kind == "multilingual" else ()
    if separate:
        size = max(len(source), len(target)) + 2
        vocabs = {"vocab.json": marian_vocab(source, rng, size=size),
                  "target_vocab.json": marian_vocab(target, rng, size=size)}
    else:
        vocabs = {"vocab.json": marian_vocab(sorted(set(source) | set(target)), rng, codes)}
    vocabs["tokenizer_config.json"] = {"source_lang": "en", "target_lang": "fr",
                                       "separate_vocabs": separate}
    for name, value in vocabs.items():
        with open(os.path.join(tok_dir, name), "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False)
    return MarianTokenizer.from_pretrained(tok_dir)


# ---- models -------------------------------------------------------------------

def randomize(model, seed):
    """Parameters scaled so that the logits are O(1-10) and attention is far
    from uniform."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            if "embed_positions" in name:
                continue
            if "layer_norm" in name:
                p.copy_(1.0 + 0.2 * noise if name.endswith("weight") else 0.2 * noise)
            elif "embed_tokens" in name or "shared" in name or "lm_head" in name:
                p.copy_(noise)
            elif p.dim() == 2:
                p.copy_(noise / p.shape[1] ** 0.5)
            else:
                p.copy_(0.3 * noise)
        model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape,
                                                  generator=generator))
    return model.eval()


def favour_eos(model, tok, rng):
    """Raises EOS's bias until it is the most likely token at about one
    greedy step in twenty, so that translations end at various lengths."""
    batch = tok([sentence(rng) for _ in range(16)], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = model.generate(**batch, num_beams=1, do_sample=False, output_scores=True,
                             return_dict_in_generate=True)
        scores = torch.stack(out.scores[:-1], 1)  # the last step's EOS is forced
        eos = tok.eos_token_id
        gap = (scores.max(-1).values - scores[..., eos]).flatten()
        model.final_logits_bias[0, eos] += torch.quantile(gap, 0.05)
    return model


def build_model(spec, tok, seed):
    from transformers import MarianConfig, MarianMTModel

    name, heads, d, enc, dec, ff, activation, kind, scale, tied = spec
    vocab, pad, eos = len(tok.encoder), tok.pad_token_id, tok.eos_token_id
    config = MarianConfig(
        vocab_size=vocab, d_model=d, encoder_layers=enc, decoder_layers=dec,
        encoder_attention_heads=heads, decoder_attention_heads=heads, encoder_ffn_dim=ff,
        decoder_ffn_dim=ff, activation_function=activation,
        max_position_embeddings=MAX_POSITIONS, pad_token_id=pad, eos_token_id=eos,
        decoder_start_token_id=pad, forced_eos_token_id=eos, bad_words_ids=[[pad]],
        max_length=MAX_LENGTH, num_beams=4, scale_embedding=scale, dropout=0.0,
        share_encoder_decoder_embeddings=kind != "separate", tie_word_embeddings=tied)
    return favour_eos(randomize(MarianMTModel(config), seed), tok, random.Random(seed))
