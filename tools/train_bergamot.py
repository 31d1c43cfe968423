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

With --ship SHIP (and --pair, e.g. enfr) it then lays the model out as
Firefox Translations ships a language pair, files named by the pair:
SHIP/model.enfr.npz, vocab.enfr.spm, decoder.yml; and SHIP/intgemm8/ with
pymarian convert's int8 model (model.enfr.intgemm8.bin, --gemm-type
intgemm8), the vocabulary, decoder.yml and a binary lexical shortlist
(lex.FIRST.BEST.enfr.s2t.bin, pymarian convert --shortlist of a lexical
table of the training text, lexical_table()).

models/bergamot-en-fr was made so (about 35 minutes on one busy core):

    /usr/bin/python3 tools/toy/generate.py --out build/toy/natural/tokenized \\
        --test-out build/toy/natural/tokenized
    /usr/bin/python3 tools/toy/naturalize.py --test-out build/toy/natural
    /work/main/.venv/bin/python tools/train_bergamot.py --out build/bergamot/enfr \\
        --src build/toy/natural/train.en --tgt build/toy/natural/train.fr \\
        --emb 128 --ffn 256 --enc 3 --dec 2 --vocab-size 1000 --updates 5000 \\
        --batch 64 --lr 0.002 --ship models/bergamot-en-fr --pair enfr
"""
import argparse
import glob
import os
import shutil
import subprocess
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


def lexical_table(spm_path, src, tgt, out):
    """Marian's lexical table ("target source probability" lines) of the
    training text: for each source piece a and target piece b, Dice's
    coefficient 2 n(a, b) / (n(a) + n(b)) of the sentence pairs holding
    them, which ranks a piece's own translations above the pieces of every
    sentence (those the shortlist's most frequent ids keep anyway). A piece
    no source holds translates as itself, so that every source id has a
    list (Marian's check of a binary shortlist refuses empty lists at the
    end of the vocabulary)."""
    import collections
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    pairs, seen, seen_target = collections.Counter(), collections.Counter(), collections.Counter()
    with open(src, encoding="utf-8") as s, open(tgt, encoding="utf-8") as t:
        for source, target in zip(s, t):
            targets = set(sp.encode(target.rstrip("\n"), out_type=str))
            seen_target.update(targets)
            for a in set(sp.encode(source.rstrip("\n"), out_type=str)):
                seen[a] += 1
                for b in targets:
                    pairs[a, b] += 1
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        if piece not in seen and not (sp.is_control(i) or sp.is_unknown(i)):
            pairs[piece, piece] = seen[piece] = seen_target[piece] = 1
    with open(out, "w", encoding="utf-8") as f:
        f.write("".join(f"{b} {a} {2 * n / (seen[a] + seen_target[b]):.6f}\n"
                        for (a, b), n in pairs.items()))


def convert(*args):
    subprocess.run([sys.executable, "-m", "pymarian", "convert"] + list(args), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ship(args):
    """The trained model laid out as Firefox Translations ships a pair."""
    pair, out = args.pair, args.ship
    spm = os.path.join(args.out, "vocab.spm")
    int8 = os.path.join(out, "intgemm8")
    os.makedirs(int8, exist_ok=True)
    decoder = "beam-size: 4\nnormalize: 1.0\n"
    for d in (out, int8):
        shutil.copy(spm, os.path.join(d, f"vocab.{pair}.spm"))
        with open(os.path.join(d, "decoder.yml"), "w", encoding="utf-8") as f:
            f.write(decoder)
    shutil.copy(os.path.join(args.out, "model.npz"), os.path.join(out, f"model.{pair}.npz"))
    convert("-f", os.path.join(args.out, "model.npz"), "-t",
            os.path.join(int8, f"model.{pair}.intgemm8.bin"), "--gemm-type", "intgemm8")
    table = os.path.join(args.out, "lex.s2t")
    lexical_table(spm, args.src, args.tgt, table)
    first, best = args.shortlist
    convert("--shortlist", table, str(first), str(best), "0", "--dump-shortlist",
            os.path.join(int8, f"lex.{first}.{best}.{pair}.s2t.bin"), "--vocabs", spm, spm)


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
    p.add_argument("--ship", help="lay the model out as Firefox ships a pair, here")
    p.add_argument("--pair", default="enfr")
    p.add_argument("--shortlist", type=int, nargs=2, default=[50, 50], metavar=("FIRST", "BEST"))
    p.add_argument("--skip-training", action="store_true",
                   help="--ship the model already in --out")
    args = p.parse_args()
    if not args.skip_training:
        seconds = train(args)
        print(f"trained {args.out} ({args.decoder} decoder) in {seconds:.1f} s",
              file=sys.stderr)
    if args.ship:
        ship(args)


if __name__ == "__main__":
    main()
