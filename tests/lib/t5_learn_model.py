"""A small random-init T5 (gated-gelu, untied output, heads × d_kv = 40 wider
than d_model = 32, 8 relative position buckets reaching 20 positions) built with transformers and exported with
tools/export_hf.py, for the learning tools' tests (tests/cli/learning.sh,
tests/browser/test_explorer.py). Run with the test virtualenv's Python:

    .venv/bin/python tests/lib/t5_learn_model.py OUT_DIR

writes OUT_DIR/hf (transformers' directory) and OUT_DIR/ted (ted's); exit
status 1 with the reason on stderr when it cannot.
"""
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))

from test_t5 import export, randomize, read_sentences, train_spm  # noqa: E402

CONFIG = dict(d_model=32, d_kv=10, num_heads=4, d_ff=48, num_layers=2, num_decoder_layers=2,
              feed_forward_proj="gated-gelu", tie_word_embeddings=False,
              relative_attention_num_buckets=8, relative_attention_max_distance=20,
              dropout_rate=0.0, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)


def main(out):
    import transformers
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    tok = transformers.T5Tokenizer(train_spm(out, read_sentences()[:200]), legacy=True)
    config = transformers.T5Config(vocab_size=len(tok) + 28, **CONFIG)
    model = randomize(transformers.T5ForConditionalGeneration(config), 7)
    hf_dir, ted_dir = os.path.join(out, "hf"), os.path.join(out, "ted")
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    problem = export(hf_dir, ted_dir)
    if problem:
        sys.exit(f"tools/export_hf.py: {problem}")


if __name__ == "__main__":
    main(sys.argv[1])
