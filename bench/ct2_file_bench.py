#!/usr/bin/python3
"""Times CTranslate2 translating a text file end to end, as `ted translate`
does: SentencePiece tokenization (the model's source.spm, with Marian's
</s>), one translate_batch over every line with max_batch_size=B and
batch_type="tokens" (CTranslate2 sorts the sentences by length and cuts a
batch where its sentences times the longest would pass B tokens, ted's
--max-batch-tokens rule), greedy, at most N tokens a sentence, and
detokenization with target.spm.

    .venv/bin/python bench/ct2_file_bench.py --model CT2_DIR --hf-dir HF_DIR
        --input FILE [--output FILE] [--compute-type float32|int8]
        [--intra-threads T] [--inter-threads W] [--max-batch-tokens B]
        [--max-length N]

Translator(device="cpu", compute_type, intra_threads=T, inter_threads=W):
W batches at once, T threads each. Prints one JSON object: seconds (the
tokenization, translation and detokenization of the file, the model
already loaded), load_s, sentences, sentences_per_s, output_tokens.
"""
import argparse
import json
import os
import sys
import time

import ctranslate2
import sentencepiece


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="CTranslate2 model directory")
    parser.add_argument("--hf-dir", required=True, help="the Hugging Face directory "
                        "(source.spm, target.spm)")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output")
    parser.add_argument("--compute-type", default="float32")
    parser.add_argument("--intra-threads", type=int, default=1)
    parser.add_argument("--inter-threads", type=int, default=1)
    parser.add_argument("--max-batch-tokens", type=int, default=1024)
    parser.add_argument("--max-length", type=int, default=32)
    args = parser.parse_args(argv)

    source = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(args.hf_dir, "source.spm"))
    target = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(args.hf_dir, "target.spm"))
    with open(args.input, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    start = time.perf_counter()
    translator = ctranslate2.Translator(args.model, device="cpu",
                                        compute_type=args.compute_type,
                                        intra_threads=args.intra_threads,
                                        inter_threads=args.inter_threads)
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    tokens = [source.encode(line, out_type=str) + ["</s>"] for line in lines]
    results = translator.translate_batch(tokens, max_batch_size=args.max_batch_tokens,
                                         batch_type="tokens", beam_size=1,
                                         max_decoding_length=args.max_length)
    outputs = [target.decode(r.hypotheses[0]) for r in results]
    seconds = time.perf_counter() - start

    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in outputs))
    json.dump({"runtime": "ctranslate2", "version": ctranslate2.__version__,
               "compute_type": args.compute_type, "intra_threads": args.intra_threads,
               "inter_threads": args.inter_threads,
               "max_batch_tokens": args.max_batch_tokens, "max_length": args.max_length,
               "sentences": len(lines), "seconds": round(seconds, 3),
               "sentences_per_s": round(len(lines) / seconds, 1),
               "output_tokens": sum(len(r.hypotheses[0]) for r in results),
               "load_s": round(load_s, 3)}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
