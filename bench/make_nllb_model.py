#!/usr/bin/python3
"""Builds a Hugging Face M2M100ForConditionalGeneration of
NLLB-200-distilled-600M's shape with random weights from a fixed seed, saved
with save_pretrained as a hub download has it (config.json,
generation_config.json, model.safetensors, NllbTokenizer's files), and
exports it to a ted model directory with tools/export_hf.py: make bench's
real-size check (bench/run.py).

    .venv/bin/python bench/make_nllb_model.py [--out DIR] [--force]

(transformers: the test virtualenv, `make venv`.) The model: d_model 1024,
16 heads, 12 encoder + 12 decoder layers, ffn 4096, ReLU, pre-norm, 256 206
embedding rows shared by both stacks and the output layer, as
facebook/nllb-200-distilled-600M's config.json. Every parameter is drawn
from N(0, 0.02^2), LayerNorm gains from 1 + N(0, 0.02^2).

The tokenizer is NllbTokenizer over a SentencePiece model of 256 000 pieces,
as NLLB's: a small BPE model trained on generated words (<unk> <s> </s>
first, as NLLB's), its piece list filled up with made-up pieces of lower
score (SentencePiece's ModelProto: a repeated field may be appended to a
serialized message). NllbTokenizer then gives 256 204 ids (<s> <pad> </s>
<unk>, the pieces from SentencePiece id 3 on, 202 language codes, <mask>);
the exporter names the last two embedding rows as it names any row no token
names, as for the published model. ted bench feeds random ids, so the
pieces' text plays no part in the timings; the file's size and the piece
count, which loading reads, are the published model's.

DIR (default build/bench/nllb) receives the ted model, DIR-hf the Hugging
Face directory (both replaced: 2.3 GiB each; about a minute, with a peak of
2.7 GiB of memory while building and 2.4 GiB while exporting). The build runs in a child process (torch
and the model never enter this one), and so does the export, whose time and
peak resident memory (wait4) go to DIR/conversion.json. When DIR/stamp.json
already names this script's version, seed and sizes, nothing is done
(--force: rebuild).
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import common  # noqa: E402

VERSION = 1  # bump when the model or its files change
SEED = 20241126
STD = 0.02
SPM_PIECES = 256000  # facebook/nllb-200-distilled-600M's sentencepiece.bpe.model
TRAINED_PIECES = 4000
# facebook/nllb-200-distilled-600M's config.json (transformers 4.40 names)
NLLB_600M = dict(vocab_size=256206, d_model=1024, encoder_layers=12, decoder_layers=12,
                 encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=4096,
                 decoder_ffn_dim=4096, activation_function="relu", max_position_embeddings=1024,
                 scale_embedding=True)
GENERATION = dict(pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                  max_length=200)
DEFAULT_OUT = os.path.join(ROOT, "build", "bench", "nllb")
EXPORTER = os.path.join(ROOT, "tools", "export_hf.py")


def log(message):
    print(f"make_nllb_model: {message}", file=sys.stderr, flush=True)


# ---- the SentencePiece model -----------------------------------------------------------

def write_spm(path):
    """A BPE SentencePiece model with NLLB's layout and piece count."""
    common.write_filled_spm(path, SEED, TRAINED_PIECES, SPM_PIECES, "make_nllb_model",
                            model_type="bpe", unk_id=0, bos_id=1, eos_id=2, pad_id=-1)


# ---- the Hugging Face directory (a child process: torch) -------------------------------

def build_model():
    """The M2M100ForConditionalGeneration with its seeded random weights."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration
    from transformers.modeling_utils import no_init_weights

    config = M2M100Config(**NLLB_600M, **GENERATION, dropout=0.1, attention_dropout=0.1,
                          tokenizer_class="NllbTokenizer")
    with no_init_weights():  # every parameter is drawn below
        model = M2M100ForConditionalGeneration(config)
    model.tie_weights()  # which no_init_weights skips with the initialization
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator) * STD
            p.copy_(1.0 + noise if "layer_norm.weight" in name else noise)
            del noise
    return model.eval()


def write_hf(hf_dir):
    """config.json, generation_config.json, model.safetensors and the
    tokenizer's files, as save_pretrained writes them."""
    from transformers import NllbTokenizer

    os.makedirs(hf_dir)
    with tempfile.TemporaryDirectory() as tmp:
        spm_path = os.path.join(tmp, "sentencepiece.bpe.model")
        write_spm(spm_path)
        tok = NllbTokenizer(vocab_file=spm_path)
        tok.save_pretrained(hf_dir)
    if len(tok) > NLLB_600M["vocab_size"]:
        raise SystemExit(f"make_nllb_model: NllbTokenizer has {len(tok)} ids, more than "
                         f"{NLLB_600M['vocab_size']}")
    build_model().save_pretrained(hf_dir)


# ---- the export (a measured child process) ---------------------------------------------

def measured(cmd):
    """Runs cmd; returns (exit status, seconds, its own peak RSS in MiB from
    wait4). This process imports no torch, so a child's peak is its own."""
    log("$ " + " ".join(cmd))
    start = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT)
    _, wait_status, usage = os.wait4(child.pid, 0)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rss = round(usage.ru_maxrss / 1024.0, 1) if usage.ru_maxrss > own else None
    return os.waitstatus_to_exitcode(wait_status), time.perf_counter() - start, rss


def stamp():
    return {"version": VERSION, "seed": SEED, "std": STD, "spm_pieces": SPM_PIECES,
            **NLLB_600M}


def up_to_date(out_dir):
    try:
        with open(os.path.join(out_dir, "stamp.json"), encoding="utf-8") as f:
            return json.load(f) == stamp() and all(
                os.path.isfile(os.path.join(d, name)) for d, name in (
                    (out_dir, "conversion.json"), (out_dir, "model.safetensors"),
                    (out_dir + "-hf", "model.safetensors")))
    except (OSError, ValueError):
        return False


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
        f.write("\n")


def make(out_dir, force=False, python=None):
    """Writes out_dir-hf (in a child process) and the ted model out_dir
    exported from it (another, measured), unless they are up to date;
    returns out_dir. python: the exporter's interpreter (this one's)."""
    if not force and up_to_date(out_dir):
        log(f"{out_dir} is up to date")
        return out_dir
    python = python or sys.executable
    hf_dir = out_dir + "-hf"
    for path in (out_dir, hf_dir):
        shutil.rmtree(path, ignore_errors=True)
    status, build_s, build_rss = measured([python, os.path.abspath(__file__), "--hf-only",
                                           "--out", hf_dir])
    if status != 0:
        raise SystemExit(f"make_nllb_model: building {hf_dir} failed (exit status {status})")
    status, export_s, export_rss = measured([python, EXPORTER, hf_dir, "--out", out_dir])
    if status != 0:
        raise SystemExit(f"make_nllb_model: tools/export_hf.py failed (exit status {status})")
    sizes = {name: round(os.path.getsize(os.path.join(d, "model.safetensors")) / 2**20, 1)
             for name, d in (("hf_file_mib", hf_dir), ("ted_file_mib", out_dir))}
    write_json(os.path.join(out_dir, "conversion.json"),
               {"build_s": round(build_s, 1), "build_peak_rss_mib": build_rss,
                "export_s": round(export_s, 1), "export_peak_rss_mib": export_rss,
                **sizes})
    write_json(os.path.join(out_dir, "stamp.json"), stamp())
    log(f"wrote {hf_dir} in {build_s:.1f} s and {out_dir} ({sizes['ted_file_mib']:,.1f} MiB "
        f"of weights) in {export_s:.1f} s, peak RSS {export_rss} MiB")
    return out_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="model directory (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("--hf-only", action="store_true",
                        help="write the Hugging Face directory OUT alone (the build's child)")
    args = parser.parse_args(argv)
    if args.hf_only:
        write_hf(args.out)
    else:
        make(args.out, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
