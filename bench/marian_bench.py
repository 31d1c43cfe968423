"""make bench-marian: ted against Marian itself (pymarian 1.12.42's
Translator) on Marian's own model files, words/s side by side.

    /work/main/.venv/bin/python bench/marian_bench.py [--quick] [--repeat 3] \\
        [--out BUILD/bench/marian-native] [--shapes tiny base]

Two Bergamot-shaped models with random weights, made here once and kept in
--out: `tiny` (dim-emb 256, transformer-dim-ffn 1536, 8 heads, 6 encoder
layers, 2 SSRU decoder layers) and `base` (dim-emb 512, ffn 2048, the same
depths), tied embeddings over one 32 000-piece SentencePiece vocabulary.
Marian initialises each (pymarian's Trainer, one update: its own names,
model.yml and initialisation), `pymarian convert --gemm-type intgemm8`
writes its int8 .bin, and `pymarian convert --shortlist` a binary lexical
shortlist (lex.50.50.s2t.bin) of a lexical table of the corpus
(tools/train_bergamot.py's lexical_table). The vocabulary is SentencePiece
trained on the corpus (models/en-fr's test.en and test.fr), its pieces
then padded to 32 000 with pieces no text holds (Marian's ids: </s> 0,
<unk> 1, no <s>).

Both runtimes translate the same sentences of models/en-fr/test.en, all
of one length in pieces (same_length), in one process, greedy (beam 1), at batch 1 and 32, with 1 and 2 threads,
for float32 and int8, with and without the shortlist. pymarian's
cpu_threads are workers, each translating whole batches; ted runs as
`ted translate` does by default for models this size: one worker of one
thread per CPU (two Translators of one thread here, on two Python
threads, each translating half the batches). Each cell: one warm-up of
each, then --repeat timed runs alternating ted and Marian; medians. The
outputs are compared first: random weights give junk, so the table says
how many sentences come out identical and the share of output pieces
before the first difference.

Writes --out/table.md and --out/results.json; prints the table with the
CPU's model and flags.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import common  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
VOCAB = 32000
SHAPES = {"tiny": dict(emb=256, ffn=1536), "base": dict(emb=512, ffn=2048)}
CORPUS = [os.path.join(ROOT, "models", "en-fr", "test.en"),
          os.path.join(ROOT, "models", "en-fr", "test.fr")]
SHORTLIST = (50, 50)


def log(message):
    print(f"bench-marian: {message}", file=sys.stderr, flush=True)


# ---- the vocabulary ----------------------------------------------------------

def make_vocab(path):
    """SentencePiece (unigram) on the corpus, then padded to VOCAB pieces:
    ModelProto's pieces are a repeated field, so entries appended to the
    file follow the trained ones in id order."""
    import sentencepiece
    prefix = path[:-len(".spm")]
    sentencepiece.SentencePieceTrainer.train(
        input=",".join(CORPUS), model_prefix=prefix, vocab_size=4000,
        hard_vocab_limit=False, model_type="unigram", character_coverage=1.0,
        eos_id=0, unk_id=1, bos_id=-1, pad_id=-1, minloglevel=2)
    os.rename(prefix + ".model", path)
    os.remove(prefix + ".vocab")
    sp = sentencepiece.SentencePieceProcessor(model_file=path)
    have = sp.get_piece_size()
    low = min(sp.get_score(i) for i in range(have)) - 1.0
    with open(path, "ab") as f:
        f.write(b"".join(common.piece_field(f"\u2581zzq{i:05d}", low) for i in range(VOCAB - have)))
    size = sentencepiece.SentencePieceProcessor(model_file=path).get_piece_size()
    if size != VOCAB:
        raise SystemExit(f"{path}: {size} pieces, not {VOCAB}")


# ---- the models ----------------------------------------------------------------

def convert(*args):
    p = subprocess.run([sys.executable, "-m", "pymarian", "convert"] + list(args),
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"pymarian convert {' '.join(args)}: {p.stderr[-500:]}")


def initialise(out, shape, vocab):
    """Marian's own initialisation of the shape: pymarian's Trainer, one
    update on the corpus (tools/train_bergamot.py's options)."""
    import train_bergamot
    import pymarian
    os.makedirs(out, exist_ok=True)
    shutil.copy(vocab, os.path.join(out, "vocab.spm"))
    args = argparse.Namespace(out=out, src=CORPUS[0], tgt=CORPUS[1], emb=shape["emb"],
                              ffn=shape["ffn"], heads=8, enc=6, dec=2, vocab_size=VOCAB,
                              updates=1, batch=16, lr=0.0003, threads=2, seed=1,
                              verbose=False, decoder="ssru")
    pymarian.Trainer(**train_bergamot.options(args)).train()
    for name in os.listdir(out):
        if name not in ("model.npz", "vocab.spm"):
            os.remove(os.path.join(out, name))


def link_dir(path, files):
    """A model directory of links (ted reads the directory, Marian the files)."""
    os.makedirs(path, exist_ok=True)
    for f in files:
        target = os.path.join(path, os.path.basename(f))
        if os.path.lexists(target):
            os.remove(target)
        os.symlink(os.path.relpath(f, path), target)
    return path


def build(out, name, shape, vocab, lex_table):
    """out/name/{model.npz, model.intgemm8.bin, lex.50.50.s2t.bin} and a
    directory for each (weights, shortlist) pair: {dir: (model, lex)}."""
    base = os.path.join(out, name)
    npz = os.path.join(base, "model.npz")
    if not os.path.exists(npz):
        log(f"initialising {name} (Marian, one update)")
        initialise(base, shape, vocab)
    int8 = os.path.join(base, "model.intgemm8.bin")
    if not os.path.exists(int8):
        convert("-f", npz, "-t", int8, "--gemm-type", "intgemm8")
    lex = os.path.join(base, "lex.%d.%d.s2t.bin" % SHORTLIST)
    if not os.path.exists(lex):
        spm = os.path.join(base, "vocab.spm")
        convert("--shortlist", lex_table, str(SHORTLIST[0]), str(SHORTLIST[1]), "0",
                "--dump-shortlist", lex, "--vocabs", spm, spm)
    dirs = {}
    for kind, model in (("float32", npz), ("int8", int8)):
        for listed in (False, True):
            files = [model, os.path.join(base, "vocab.spm")] + ([lex] if listed else [])
            d = link_dir(os.path.join(base, f"{kind}{'-shortlist' if listed else ''}"), files)
            dirs[kind, listed] = (d, model, lex if listed else None)
    return dirs


# ---- the runtimes ---------------------------------------------------------------

class Marian:
    def __init__(self, model, spm, lex, batch, threads):
        import pymarian
        options = dict(models=model, vocabs=[spm, spm], beam_size=1, cpu_threads=threads,
                       mini_batch=batch, maxi_batch=1, quiet="", workspace=512)
        if lex:
            options["shortlist"] = [lex]
        self.translator = pymarian.Translator(**options)

    def __call__(self, sentences):
        return self.translator.translate(sentences)


class Ted:
    """ted's default for models this size: a worker of one thread per CPU."""

    def __init__(self, model_dir, batch, threads):
        import ted
        self.workers = [ted.Translator(model_dir, threads=1) for _ in range(threads)]
        self.batch = batch
        self.pool = concurrent.futures.ThreadPoolExecutor(threads) if threads > 1 else None

    def __call__(self, sentences):
        b = self.batch
        batches = [sentences[i:i + b] for i in range(0, len(sentences), b)]
        if self.pool is None:
            return [t for chunk in batches
                    for t in self.workers[0].translate(chunk, beam_size=1, batch_size=b)]
        n = len(self.workers)
        parts = [batches[i::n] for i in range(n)]

        def work(i):
            return [self.workers[i].translate(c, beam_size=1, batch_size=b) for c in parts[i]]
        done = list(self.pool.map(work, range(n)))
        order = [None] * len(batches)
        for i in range(n):
            for k, chunk in enumerate(done[i]):
                order[i + k * n] = chunk
        return [t for chunk in order for t in chunk]

    def close(self):
        if self.pool:
            self.pool.shutdown()
        for w in self.workers:
            w.close()


# ---- one cell --------------------------------------------------------------------

def agreement(sp, ted_out, marian_out):
    """(identical sentences, share of output pieces before the first
    difference): pieces of SentencePiece's segmentation of each output."""
    same, prefix, total = 0, 0, 0
    for a, b in zip(ted_out, marian_out):
        same += a == b
        x, y = sp.encode(a, out_type=str), sp.encode(b, out_type=str)
        k = 0
        while k < min(len(x), len(y)) and x[k] == y[k]:
            k += 1
        prefix += k
        total += max(len(x), len(y))
    return same / len(ted_out), prefix / max(1, total)


def cell(dirs, key, batch, threads, sentences, repeat, sp):
    d, model, lex = dirs[key]
    marian = Marian(model, os.path.join(d, "vocab.spm"), lex, batch, threads)
    ted = Ted(d, batch, threads)
    ted_out, marian_out = ted(sentences), marian(sentences)
    same, prefix = agreement(sp, ted_out, marian_out)
    times = {"ted": [], "marian": []}
    for _ in range(repeat):
        for name, run in (("ted", ted), ("marian", marian)):
            start = time.perf_counter()
            run(sentences)
            times[name].append(time.perf_counter() - start)
    ted.close()
    words = sum(len(s.split()) for s in sentences)
    out_pieces = sum(len(sp.encode(t)) for t in marian_out)
    row = {"identical": same, "prefix": prefix, "words": words,
           "marian_out_pieces": out_pieces, "sentences": len(sentences)}
    for name in times:
        row[f"{name}_s"] = times[name]
        row[f"{name}_wps"] = words / statistics.median(times[name])
    row["ratio"] = row["ted_wps"] / row["marian_wps"]
    return row


def same_length(sp):
    """The corpus's source sentences of its most frequent length in pieces,
    repeated up to 256: Marian limits a batch's outputs to 3 x its longest
    source (`</s>` counted), ted each sentence to 3 x its own, and random
    weights run every output to the limit, so only sentences of one length
    give both runtimes the same work at batch 32."""
    import collections
    with open(CORPUS[0], encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    by_length = collections.defaultdict(list)
    for line in lines:
        by_length[len(sp.encode(line))].append(line)
    chosen = max(by_length.values(), key=len)
    return (chosen * (256 // len(chosen) + 1))[:256]


# ---- the machine and the table ----------------------------------------------------

def cpu():
    model, flags = common.cpu_name_and_flags("?")
    wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8",
              "avx512_bf16")
    return model, " ".join(f for f in wanted if f in flags), os.cpu_count()


def table(rows, machine, repeat):
    model, flags, cpus = machine
    lines = [f"CPU: {model} ({cpus} CPUs; {flags}); load average "
             f"{os.getloadavg()[0]:.1f} at the end; medians of {repeat}", "",
             "| model | weights | shortlist | batch | threads | sentences | ted words/s "
             "| Marian words/s | ted ÷ Marian | identical | pieces agreeing |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['weights']} | {'yes' if r['shortlist'] else 'no'} "
                     f"| {r['batch']} | {r['threads']} | {r['sentences']} "
                     f"| {r['ted_wps']:.0f} | {r['marian_wps']:.0f} | {r['ratio']:.2f} "
                     f"| {r['identical']:.0%} | {r['prefix']:.0%} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(BUILD, "bench", "marian-native"))
    p.add_argument("--quick", action="store_true",
                   help="16 sentences at batch 1 and 64 at batch 32 (else 64 and 256)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs a cell")
    p.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    args = p.parse_args()
    repeat = args.repeat
    import sentencepiece
    os.makedirs(args.out, exist_ok=True)
    vocab = os.path.join(args.out, "vocab.spm")
    if not os.path.exists(vocab):
        make_vocab(vocab)
    lex_table = os.path.join(args.out, "lex.s2t")
    if not os.path.exists(lex_table):
        from train_bergamot import lexical_table
        lexical_table(vocab, CORPUS[0], CORPUS[1], lex_table)
    sp = sentencepiece.SentencePieceProcessor(model_file=vocab)
    lines = same_length(sp)
    counts = {1: 16, 32: 64} if args.quick else {1: 64, 32: 256}
    rows = []
    for name in args.shapes:
        dirs = build(args.out, name, SHAPES[name], vocab, lex_table)
        for key in dirs:
            for batch in args.batches:
                for threads in args.threads:
                    sentences = lines[:counts.get(batch, 64)]
                    row = cell(dirs, key, batch, threads, sentences, repeat, sp)
                    row.update(shape=name, weights=key[0], shortlist=key[1], batch=batch,
                               threads=threads)
                    log(f"{name} {key[0]} shortlist={key[1]} batch {batch} threads "
                        f"{threads}: ted {row['ted_wps']:.0f} words/s, Marian "
                        f"{row['marian_wps']:.0f} ({row['ratio']:.2f}x), identical "
                        f"{row['identical']:.0%}")
                    rows.append(row)
    text = table(rows, cpu(), repeat)
    with open(os.path.join(args.out, "table.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"cpu": cpu(), "rows": rows}, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
