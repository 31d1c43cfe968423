#!/usr/bin/python3
"""Times greedy decoding in PyTorch on a Hugging Face MarianMTModel directory
(bench/make_marian_model.py), in float32 or dynamically quantized to int8,
for one batch of source ids and one thread count.

    .venv/bin/python bench/torch_bench.py --hf-dir DIR --sources FILE
        [--threads T] [--int8] [--new-tokens 64] [--repeat 3] [--check-steps 4]

The loop is a tuned one, not model.generate(): an incremental decoder written
here from the model's own modules caches each decoder layer's self-attention
keys/values step by step and computes the encoder-decoder keys/values once;
with one row, its float32 products go to torch.addmv (BLAS gemv), several
times faster than F.linear's sgemm on a single row. Before timing, its float32
logits are checked against the model's own forward pass over the whole prefix
for --check-steps steps; a difference above 1e-4 stops the program (exit 1).
--int8 then applies torch.ao.quantization.quantize_dynamic to every
nn.Linear of the model (encoder, decoder and output layer; int8 weights,
activations quantized per call) and the same loop runs on the quantized
modules.

FILE: a JSON list of sentences, each a list of source ids. Exactly
--new-tokens greedy steps (EOS ignored): one warm-up, then R timed runs;
the figures are medians. Threads: torch.set_num_threads(T), and
openblas_set_num_threads(T) when an OpenBLAS is loaded (PyTorch's
set_num_threads does not set the threads of the BLAS it calls); run it with
OMP_WAIT_POLICY=PASSIVE (bench/run.py does). Prints one JSON object on
standard output (startup_rss_mib: the peak resident memory once torch and
transformers are imported, before the model is loaded); progress goes to
standard error.
"""
import argparse
import ctypes
import json
import os
import resource
import statistics
import sys
import time

import torch

TOLERANCE = 1e-4


def log(message):
    print(f"torch_bench: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# KV-cached incremental decoder over a MarianMTModel's modules
# --------------------------------------------------------------------------

def project(module, x):
    """module(x) for x (B, in); one float32 row goes to torch.addmv (gemv)."""
    if isinstance(module, torch.nn.Linear) and x.shape[0] == 1:
        if module.bias is None:
            return torch.mv(module.weight, x[0]).unsqueeze(0)
        return torch.addmv(module.bias, module.weight, x[0]).unsqueeze(0)
    return module(x)


class CachedDecoder:
    """Greedy decoding one token at a time with a MarianMTModel's decoder
    (post-norm layers, scaled embeddings plus sinusoidal positions, output
    layer plus final_logits_bias). The modules are looked up at every step,
    so the loop runs whatever quantize_dynamic put in their place."""

    def __init__(self, model):
        self.model = model
        self.decoder = model.model.decoder
        first = self.decoder.layers[0].self_attn
        self.heads, self.head_dim = first.num_heads, first.head_dim
        self.d = self.heads * self.head_dim

    def start(self, memory, max_steps):
        """memory: encoder output (batch, source, d). Computes the
        encoder-decoder keys (batch, heads, head_size, source) and values
        (batch, heads, source, head_size) once; sizes the self-attention cache."""
        b, s, _ = memory.shape
        h, hd = self.heads, self.head_dim
        self.cross = []
        for layer in self.decoder.layers:
            k = layer.encoder_attn.k_proj(memory).reshape(b, s, h, hd)
            v = layer.encoder_attn.v_proj(memory).reshape(b, s, h, hd)
            self.cross.append((k.permute(0, 2, 3, 1).contiguous(),
                               v.permute(0, 2, 1, 3).contiguous()))
        n = len(self.decoder.layers)
        self.keys = torch.empty(n, b, h, max_steps, hd)
        self.values = torch.empty(n, b, h, max_steps, hd)
        self.max_steps = max_steps
        self.position = 0

    def _attend(self, q, keys_t, values):
        """q (batch, d) against keys_t (batch, heads, head_size, T) and values
        (batch, heads, T, head_size) -> (batch, d)."""
        b = q.shape[0]
        q = q.reshape(b, self.heads, 1, self.head_dim)
        weights = torch.softmax(torch.matmul(q, keys_t), dim=-1)  # (batch, heads, 1, T)
        return torch.matmul(weights, values).reshape(b, self.d)

    def _self_attention(self, i, attn, x):
        t, b = self.position, x.shape[0]
        q = project(attn.q_proj, x) * attn.scaling
        self.keys[i, :, :, t] = project(attn.k_proj, x).reshape(b, self.heads, self.head_dim)
        self.values[i, :, :, t] = project(attn.v_proj, x).reshape(b, self.heads, self.head_dim)
        out = self._attend(q, self.keys[i, :, :, : t + 1].transpose(2, 3),
                           self.values[i, :, :, : t + 1])
        return project(attn.out_proj, out)

    def _cross_attention(self, i, attn, x):
        q = project(attn.q_proj, x) * attn.scaling
        return project(attn.out_proj, self._attend(q, *self.cross[i]))

    def step(self, tokens):
        """tokens: (batch,) ids at the current position -> logits (batch, vocab)."""
        if self.position >= self.max_steps:
            raise RuntimeError("CachedDecoder: more steps than start() allowed")
        dec = self.decoder
        x = dec.embed_tokens(tokens) * dec.embed_scale \
            + dec.embed_positions.weight[self.position]
        for i, layer in enumerate(dec.layers):
            x = layer.self_attn_layer_norm(x + self._self_attention(i, layer.self_attn, x))
            x = layer.encoder_attn_layer_norm(x + self._cross_attention(i, layer.encoder_attn, x))
            ff = project(layer.fc2, layer.activation_fn(project(layer.fc1, x)))
            x = layer.final_layer_norm(x + ff)
        self.position += 1
        return project(self.model.lm_head, x) + self.model.final_logits_bias


def encode(model, src):
    """Encoder output (batch, source, d) for source ids (batch, source)."""
    return model.model.encoder(input_ids=src).last_hidden_state


def encode_for_decoding(model, decoder, src, steps):
    """The encode phase: the encoder, then the encoder-decoder keys and
    values of every layer (as ted and CTranslate2 time it); returns the
    encoder output."""
    memory = encode(model, src)
    decoder.start(memory, steps)
    return memory


def cached_decode(model, decoder, memory, steps):
    """Exactly `steps` greedy steps with the cache (started) -> ids (batch, steps)."""
    start_id = model.config.decoder_start_token_id
    tokens = torch.full((memory.shape[0],), start_id, dtype=torch.long)
    out = []
    for _ in range(steps):
        tokens = torch.argmax(decoder.step(tokens), dim=1)
        out.append(tokens)
    return torch.stack(out, dim=1)


def check_cached(model, decoder, src, steps):
    """Compares the cached decoder's logits with the model's forward pass
    over the whole prefix for `steps` steps; exits when they differ."""
    memory = encode(model, src)
    decoder.start(memory, steps)
    ys = torch.full((src.shape[0], 1), model.config.decoder_start_token_id, dtype=torch.long)
    worst = 0.0
    for t in range(steps):
        cached = decoder.step(ys[:, -1])
        full = model(input_ids=src, decoder_input_ids=ys).logits[:, -1]
        diff = (cached - full).abs().max().item()
        worst = max(worst, diff)
        if not diff <= TOLERANCE:
            sys.exit(f"torch_bench: FAILED: the KV-cached decoder's logits differ from the "
                     f"model's forward pass by {diff:.3g} at step {t} (tolerance {TOLERANCE:g})")
        ys = torch.cat([ys, torch.argmax(full, dim=1, keepdim=True)], dim=1)
    return {"steps": steps, "batch": int(src.shape[0]), "max_abs_diff": worst,
            "tolerance": TOLERANCE}


# --------------------------------------------------------------------------
# Threads and timing
# --------------------------------------------------------------------------

def openblas():
    """(set_num_threads, config) of the loaded OpenBLAS, or (None, None)."""
    for name in ("libopenblas.so.0", "libopenblas.so", "libblas.so.3"):
        try:
            lib = ctypes.CDLL(name)
            setter = lib.openblas_set_num_threads
        except (OSError, AttributeError):
            continue
        setter.argtypes = [ctypes.c_int]
        config = None
        if hasattr(lib, "openblas_get_config"):
            lib.openblas_get_config.restype = ctypes.c_char_p
            config = lib.openblas_get_config().decode()
        return setter, config
    return None, None


def time_decoding(model, decoder, src, steps, repeat):
    """One warm-up, then `repeat` timed runs; medians."""
    cached_decode(model, decoder, encode_for_decoding(model, decoder, src, steps), steps)
    encode_ms, decode_ms = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        memory = encode_for_decoding(model, decoder, src, steps)
        encoded = time.perf_counter()
        cached_decode(model, decoder, memory, steps)
        done = time.perf_counter()
        encode_ms.append((encoded - start) * 1e3)
        decode_ms.append((done - encoded) * 1e3)
    batch = src.shape[0]
    decode = statistics.median(decode_ms)
    return {"encode_ms": round(statistics.median(encode_ms), 3),
            "per_token_ms": round(decode / steps, 3),
            "tokens_per_s": round(batch * steps / (decode / 1e3), 1),
            "decode_ms_runs": [round(ms, 1) for ms in decode_ms], "repeat": repeat}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf-dir", required=True, help="MarianMTModel directory")
    parser.add_argument("--sources", required=True, help="JSON list of lists of source ids")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--int8", action="store_true", help="quantize_dynamic to int8 first")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (default 3)")
    parser.add_argument("--check-steps", type=int, default=4)
    args = parser.parse_args(argv)

    from transformers import MarianMTModel

    startup_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    blas_set, blas_config = openblas()
    torch.set_grad_enabled(False)
    torch.set_num_threads(args.threads)
    if blas_set:
        blas_set(args.threads)
    with open(args.sources, encoding="utf-8") as f:
        src = torch.tensor(json.load(f), dtype=torch.long)
    start = time.perf_counter()
    model = MarianMTModel.from_pretrained(args.hf_dir).eval()
    decoder = CachedDecoder(model)
    check = check_cached(model, decoder, src[:2, :12], args.check_steps)
    log(f"cached decoder matches the forward pass over {args.check_steps} steps "
        f"(max |diff| {check['max_abs_diff']:.2g})")
    if args.int8:
        torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8,
                                               inplace=True)
    load_s = time.perf_counter() - start
    result = time_decoding(model, decoder, src, args.new_tokens, args.repeat)
    log(f"batch {src.shape[0]}, {args.threads} thread(s), "
        f"{'int8' if args.int8 else 'float32'}: {result['tokens_per_s']} tokens/s")
    json.dump({"runtime": "pytorch", "dtype": "int8" if args.int8 else "float32",
               "torch_version": torch.__version__, "openblas": blas_config,
               "quantized_engine": torch.backends.quantized.engine if args.int8 else None,
               "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
               "batch": int(src.shape[0]), "source_len": int(src.shape[1]),
               "threads": args.threads, "new_tokens": args.new_tokens,
               "load_and_check_s": round(load_s, 2), "startup_rss_mib": round(startup_rss, 1),
               "check": check, **result},
              sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
