#!/usr/bin/python3
"""Times CTranslate2's greedy decoding on a converted model
(ct2-transformers-converter), for one batch of source ids and one thread count.

    .venv/bin/python bench/ct2_bench.py --model DIR --vocab VOCAB_JSON --sources FILE
        [--compute-type float32|int8] [--threads T] [--new-tokens 64] [--repeat 3]

FILE: a JSON list of sentences, each a list of source ids of the vocabulary
VOCAB_JSON (a Hugging Face vocab.json, token -> id, or the converted model's
shared_vocabulary.json, a list of tokens in id order); they are given to
translate_batch as those tokens. Translator(device="cpu", compute_type,
intra_threads=T, inter_threads=1); translate_batch(beam_size=1,
min_decoding_length=N, max_decoding_length=N): exactly N greedy tokens for
every sentence (checked). translate_batch encodes and decodes in one call, so
each timed run also translates with N = 1 (the encoder and one step): the
decoder's time is the difference, over N - 1 steps; tokens/s = batch / the
time of a step, as for the other runtimes. One warm-up, then R timed runs;
medians. Prints one JSON object; startup_rss_mib is the peak resident memory
after `import ctranslate2` (which imports torch and transformers, for its
converters), before the model is loaded.
"""
import argparse
import json
import resource
import statistics
import sys
import time

import ctranslate2


def translate_ms(translator, tokens, length):
    """Milliseconds of one translate_batch of exactly `length` tokens a sentence."""
    start = time.perf_counter()
    results = translator.translate_batch(tokens, beam_size=1, min_decoding_length=length,
                                         max_decoding_length=length)
    elapsed = (time.perf_counter() - start) * 1e3
    lengths = {len(r.hypotheses[0]) for r in results}
    if lengths != {length}:
        sys.exit(f"ct2_bench: FAILED: asked for {length} tokens a sentence, "
                 f"got {sorted(lengths)}")
    return elapsed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="CTranslate2 model directory")
    parser.add_argument("--vocab", required=True,
                        help="vocab.json (token -> id) or shared_vocabulary.json (a list)")
    parser.add_argument("--sources", required=True, help="JSON list of lists of source ids")
    parser.add_argument("--compute-type", default="float32")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.new_tokens < 2:
        parser.error("--new-tokens must be at least 2")
    startup_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    with open(args.vocab, encoding="utf-8") as f:
        vocab = json.load(f)
    token_of = dict(enumerate(vocab)) if isinstance(vocab, list) else \
        {i: token for token, i in vocab.items()}
    with open(args.sources, encoding="utf-8") as f:
        tokens = [[token_of[i] for i in sentence] for sentence in json.load(f)]
    start = time.perf_counter()
    translator = ctranslate2.Translator(args.model, device="cpu",
                                        compute_type=args.compute_type,
                                        intra_threads=args.threads, inter_threads=1)
    load_ms = (time.perf_counter() - start) * 1e3
    n = args.new_tokens
    translate_ms(translator, tokens, n)  # warm-up
    full, first, per_token = [], [], []
    for _ in range(args.repeat):
        full.append(translate_ms(translator, tokens, n))
        first.append(translate_ms(translator, tokens, 1))
        per_token.append((full[-1] - first[-1]) / (n - 1))
    step = statistics.median(per_token)
    batch = len(tokens)
    json.dump({"runtime": "ctranslate2", "version": ctranslate2.__version__,
               "compute_type": args.compute_type, "batch": batch,
               "source_len": len(tokens[0]), "threads": args.threads, "new_tokens": n,
               "load_ms": round(load_ms, 1), "startup_rss_mib": round(startup_rss, 1),
               "translate_ms": round(statistics.median(full), 3),
               "first_token_ms": round(statistics.median(first), 3),
               "encode_ms": round(statistics.median(first) - step, 3),
               "per_token_ms": round(step, 3),
               "tokens_per_s": round(batch / (step / 1e3), 1),
               "translate_ms_runs": [round(ms, 1) for ms in full],
               "first_token_ms_runs": [round(ms, 1) for ms in first],
               "repeat": args.repeat}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
