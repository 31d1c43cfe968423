"""Trains a Bergamot-style English -> French model with Marian itself
(pymarian 1.12.42's Trainer: Marian's own training, saved as Marian saves
it), on the synthetic English -> French text of models/en-fr.

The architecture is that of Firefox Translations' student models, in
miniature: `type: transformer`, post-norm (`transformer-postprocess: dan`),
ReLU feed-forward, sinusoidal positions, tied embeddings
(`tied-embeddings-all`) over one joint SentencePiece vocabulary that Marian
trains itself (`vocab.spm`: </s> 0, <unk> 1, no <s>), and a decoder of
SSRU layers (`transformer-decoder-autoreg: rnn`, `dec-cell: ssru`); with
--decoder transformer, Transformer decoder layers (self-attention) instead.

    /work/main/.venv/bin/python tools/train_bergamot.py --out DIR \\
        [--decoder ssru|transformer] [--emb 64] [--ffn 128] [--enc 2] [--dec 2] \\
        [--updates 300] [--vocab-size 500] [--src models/en-fr/test.en] \\
        [--tgt models/en-fr/test.fr] [--seed 1]

writes DIR/model.npz (the weights, and Marian's model.yml as the item
special:model.yml), DIR/model.npz.decoder.yml (beam size and normalize, as
Marian writes it), DIR/vocab.spm; the optimizer state and the training
progress files are removed. The defaults train in seconds on one core:
the parity tests (tests/parity/test_marian_native.py) run it with them.
"""
import argparse
import glob
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def options(args):
    """Marian's training options, as pymarian's keyword arguments."""
    out = os.path.abspath(args.out)
    spm = os.path.join(out, "vocab.spm")
    opts = dict(
        type="transformer", model=os.path.join(out, "model.npz"),
        train_sets=[os.path.abspath(args.src), os.path.abspath(args.tgt)],
        vocabs=[spm, spm], dim_vocabs=[args.vocab_size, args.vocab_size],
        sentencepiece_max_lines=100000,
        dim_emb=args.emb, transformer_dim_ffn=args.ffn, transformer_heads=args.heads,
        enc_depth=args.enc, dec_depth=args.dec,
        transformer_ffn_activation="relu", transformer_postprocess="dan",
        transformer_postprocess_emb="d",
        tied_embeddings_all=True,
        transformer_dropout=0.0, label_smoothing=0.1,
        after=f"{args.updates}u", save_freq=f"{10 * args.updates}u", disp_freq="100u",
        mini_batch=args.batch, maxi_batch=100, max_length=100,
        learn_rate=args.lr, lr_warmup=min(200, args.updates // 4 + 1),
        lr_decay_inv_sqrt=[min(200, args.updates // 4 + 1)],
        optimizer_params=[0.9, 0.98, 1e-09], clip_norm=1.0,
        cpu_threads=args.threads, workspace=512, seed=args.seed,
        beam_size=4, normalize=1.0, quiet=None if args.verbose else "",
    )
    if args.decoder == "ssru":
        opts.update(transformer_decoder_autoreg="rnn", dec_cell="ssru")
    return opts


def train(args):
    import pymarian
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    pymarian.Trainer(**options(args)).train()
    for leftover in glob.glob(os.path.join(args.out, "model.npz.optimizer.npz")) + \
            glob.glob(os.path.join(args.out, "model.npz.progress.yml")) + \
            glob.glob(os.path.join(args.out, "model.npz.yml")) + \
            glob.glob(os.path.join(args.out, "model.iter*")):
        os.remove(leftover)
    return time.time() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--decoder", choices=["ssru", "transformer"], default="ssru")
    p.add_argument("--src", default=os.path.join(ROOT, "models", "en-fr", "test.en"))
    p.add_argument("--tgt", default=os.path.join(ROOT, "models", "en-fr", "test.fr"))
    p.add_argument("--emb", type=int, default=64)
    p.add_argument("--ffn", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--enc", type=int, default=2)
    p.add_argument("--dec", type=int, default=2)
    p.add_argument("--vocab-size", type=int, default=500)
    p.add_argument("--updates", type=int, default=300)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    seconds = train(args)
    print(f"trained {args.out} ({args.decoder} decoder) in {seconds:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
