#!/usr/bin/python3
"""Times greedy decoding in PyTorch on a Seq2SeqTransformer state_dict
(tools/tutorial_model.py), two ways, for every (batch, threads) asked:

  tutorial  the tutorial's loop (tools/tutorial_model.greedy_decode), batched:
            every step re-runs the decoder over the whole prefix and keeps the
            last position's logits;
  cached    an incremental decoder written here from the layers' own weights:
            each decoder layer's self-attention keys/values are cached step by
            step, the encoder-decoder keys/values are computed once; with
            one row, its products use torch.addmv (BLAS gemv).

    /usr/bin/python3 bench/torch_bench.py [--state-dict FILE] [--batch 1,16]
        [--threads 1,2] [--source-len 32] [--new-tokens 64] [--repeat 3]
        [--tutorial-repeat B:R,...] [--warmup-tokens K] [--budget SECONDS]

Both run exactly N greedy steps (EOS ignored) on random source ids, under
torch.no_grad() and model.eval(): one warm-up, then R timed runs (fewer once
a loop's runs took --budget seconds); the figures are medians. The tutorial
loop's warm-up decodes only K tokens (default 8), enough to touch every code
path and buffer, since its full runs are slow. Before timing, the cached
decoder's logits are checked against the full-prefix decoder's for a few
steps, at batch 3 and 1; a difference above 1e-4 stops the program (exit 1).

Threads: torch.set_num_threads(T) sets PyTorch's OpenMP pool, but not the
threads of the BLAS it calls (Debian's torch uses OpenBLAS, whose default is
every core), so openblas_set_num_threads(T) is also called when found. With
2 threads on 2 cores, run it with OMP_WAIT_POLICY=PASSIVE (bench/run.py does):
libgomp's default spin-waiting makes it several times slower.
Prints one JSON object on standard output; progress goes to standard error.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from tutorial_model import (BOS_IDX, Seq2SeqTransformer,  # noqa: E402
                            generate_square_subsequent_mask)

TOLERANCE = 1e-4


def log(message):
    print(f"torch_bench: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

def load_model(path, heads, activation="relu", norm_first=False, layer_norm_eps=1e-5):
    """The Seq2SeqTransformer of a state_dict, its sizes read from the shapes."""
    state_dict = torch.load(path, map_location="cpu")
    src_vocab, d_model = state_dict["src_tok_emb.embedding.weight"].shape
    tgt_vocab = state_dict["tgt_tok_emb.embedding.weight"].shape[0]
    d_ff = state_dict["transformer.encoder.layers.0.linear1.weight"].shape[0]

    def count(prefix):
        return len({k[len(prefix):].split(".", 1)[0] for k in state_dict if k.startswith(prefix)})

    model = Seq2SeqTransformer(count("transformer.encoder.layers."),
                               count("transformer.decoder.layers."), d_model, heads, src_vocab,
                               tgt_vocab, d_ff, dropout=0.0, activation=activation,
                               norm_first=norm_first, layer_norm_eps=layer_norm_eps)
    model.load_state_dict(state_dict)
    return model.eval()


def encode(model, src):
    """Encoder output (S, B, d) for source ids (S, B), as the tutorial does."""
    s = src.shape[0]
    return model.encode(src, torch.zeros(s, s).type(torch.bool))


# --------------------------------------------------------------------------
# The tutorial's loop, batched, exactly `steps` steps
# --------------------------------------------------------------------------

def tutorial_decode(model, memory, steps):
    """Re-runs the decoder over the whole prefix at each step (the tutorial's
    greedy_decode for a batch, EOS ignored). Returns the ids (steps, B)."""
    batch = memory.shape[1]
    ys = torch.full((1, batch), BOS_IDX, dtype=torch.long)
    for _ in range(steps):
        tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask)
        prob = model.generator(out[-1])
        next_word = torch.argmax(prob, dim=1)
        ys = torch.cat([ys, next_word.unsqueeze(0)], dim=0)
    return ys[1:]


def full_prefix_logits(model, memory, ys):
    """Logits (B, V) predicting the token after the prefix ys (T, B)."""
    tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(torch.bool)
    return model.generator(model.decode(ys, memory, tgt_mask)[-1])


# --------------------------------------------------------------------------
# KV-cached incremental decoder
# --------------------------------------------------------------------------

def linear(x, weight, bias):
    """x (B, in) W^T + b. One row goes to torch.addmv (BLAS gemv): OpenBLAS's
    sgemm, which F.linear calls, is several times slower on a single row."""
    if x.shape[0] == 1:
        return torch.addmv(bias, weight, x[0]).unsqueeze(0)
    return F.linear(x, weight, bias)


class CachedDecoder:
    """Greedy decoding one token at a time with the model's own weights:
    post-norm or pre-norm nn.TransformerDecoderLayer (sequence-first), final
    LayerNorm, generator. start() computes the encoder-decoder keys/values
    once; step() feeds one token per row and returns the logits (B, V)."""

    def __init__(self, model):
        decoder = model.transformer.decoder
        first = decoder.layers[0]
        self.d = model.tgt_tok_emb.emb_size
        self.heads = first.self_attn.num_heads
        self.head_dim = self.d // self.heads
        self.norm_first = first.norm_first
        self.eps = first.norm1.eps
        self.activation = first.activation
        if isinstance(self.activation, str):
            self.activation = {"relu": F.relu, "gelu": F.gelu}[self.activation]
        self.embedding = model.tgt_tok_emb.embedding.weight
        self.scale = math.sqrt(self.d)
        self.positions = model.positional_encoding.pos_embedding[:, 0, :]
        d = self.d
        self.layers = []
        for layer in decoder.layers:
            sa, ca = layer.self_attn, layer.multihead_attn
            self.layers.append(dict(
                sa_w=sa.in_proj_weight, sa_b=sa.in_proj_bias,
                sa_out_w=sa.out_proj.weight, sa_out_b=sa.out_proj.bias,
                ca_q_w=ca.in_proj_weight[:d], ca_q_b=ca.in_proj_bias[:d],
                ca_kv_w=ca.in_proj_weight[d:], ca_kv_b=ca.in_proj_bias[d:],
                ca_out_w=ca.out_proj.weight, ca_out_b=ca.out_proj.bias,
                ff1_w=layer.linear1.weight, ff1_b=layer.linear1.bias,
                ff2_w=layer.linear2.weight, ff2_b=layer.linear2.bias,
                norm1=(layer.norm1.weight, layer.norm1.bias),
                norm2=(layer.norm2.weight, layer.norm2.bias),
                norm3=(layer.norm3.weight, layer.norm3.bias)))
        self.final_norm = (decoder.norm.weight, decoder.norm.bias) if decoder.norm is not None \
            else None
        self.generator_w = model.generator.weight
        self.generator_b = model.generator.bias

    def start(self, memory, max_steps):
        """memory: encoder output (S, B, d). Sizes the self-attention cache."""
        s, b, d = memory.shape
        h, hd = self.heads, self.head_dim
        self.batch = b
        self.cross = []
        for p in self.layers:
            kv = F.linear(memory, p["ca_kv_w"], p["ca_kv_b"])  # (S, B, 2d)
            k, v = kv.split(d, dim=2)
            # (B, H, hd, S) keys (pre-transposed) and (B, H, S, hd) values
            self.cross.append((k.reshape(s, b, h, hd).permute(1, 2, 3, 0).contiguous(),
                               v.reshape(s, b, h, hd).permute(1, 2, 0, 3).contiguous()))
        n = len(self.layers)
        self.keys = torch.empty(n, b, h, max_steps, hd)
        self.values = torch.empty(n, b, h, max_steps, hd)
        self.max_steps = max_steps
        self.position = 0

    def _norm(self, x, weights):
        return F.layer_norm(x, (self.d,), weights[0], weights[1], self.eps)

    def _attend(self, q, keys_t, values):
        """q (B, d) against keys_t (B, H, hd, T), values (B, H, T, hd) -> (B, d)."""
        b = q.shape[0]
        q = q.reshape(b, self.heads, 1, self.head_dim) / math.sqrt(self.head_dim)
        weights = torch.softmax(torch.matmul(q, keys_t), dim=-1)  # (B, H, 1, T)
        return torch.matmul(weights, values).reshape(b, self.d)

    def _self_attention(self, i, p, x):
        t = self.position
        q, k, v = linear(x, p["sa_w"], p["sa_b"]).split(self.d, dim=1)
        b = x.shape[0]
        self.keys[i, :, :, t] = k.reshape(b, self.heads, self.head_dim)
        self.values[i, :, :, t] = v.reshape(b, self.heads, self.head_dim)
        out = self._attend(q, self.keys[i, :, :, : t + 1].transpose(2, 3),
                           self.values[i, :, :, : t + 1])
        return linear(out, p["sa_out_w"], p["sa_out_b"])

    def _cross_attention(self, i, p, x):
        q = linear(x, p["ca_q_w"], p["ca_q_b"])
        keys_t, values = self.cross[i]
        return linear(self._attend(q, keys_t, values), p["ca_out_w"], p["ca_out_b"])

    def _feed_forward(self, p, x):
        return linear(self.activation(linear(x, p["ff1_w"], p["ff1_b"])), p["ff2_w"],
                        p["ff2_b"])

    def step(self, tokens):
        """tokens: (B,) ids at the current position -> logits (B, V)."""
        if self.position >= self.max_steps:
            raise RuntimeError("CachedDecoder: more steps than start() allowed")
        x = self.embedding[tokens] * self.scale + self.positions[self.position]
        for i, p in enumerate(self.layers):
            if self.norm_first:
                x = x + self._self_attention(i, p, self._norm(x, p["norm1"]))
                x = x + self._cross_attention(i, p, self._norm(x, p["norm2"]))
                x = x + self._feed_forward(p, self._norm(x, p["norm3"]))
            else:
                x = self._norm(x + self._self_attention(i, p, x), p["norm1"])
                x = self._norm(x + self._cross_attention(i, p, x), p["norm2"])
                x = self._norm(x + self._feed_forward(p, x), p["norm3"])
        if self.final_norm is not None:
            x = self._norm(x, self.final_norm)
        self.position += 1
        return linear(x, self.generator_w, self.generator_b)


def cached_decode(decoder, memory, steps):
    """Greedy decoding with the cache, exactly `steps` steps -> ids (steps, B)."""
    decoder.start(memory, steps)
    tokens = torch.full((memory.shape[1],), BOS_IDX, dtype=torch.long)
    out = []
    for _ in range(steps):
        tokens = torch.argmax(decoder.step(tokens), dim=1)
        out.append(tokens)
    return torch.stack(out)


def check_cached(model, decoder, src, steps):
    """Compares the cached decoder's logits with the full-prefix decoder's for
    `steps` steps on the same tokens; exits the program when they differ."""
    memory = encode(model, src)
    decoder.start(memory, steps)
    ys = torch.full((1, src.shape[1]), BOS_IDX, dtype=torch.long)
    worst = 0.0
    spread = []
    for t in range(steps):
        cached = decoder.step(ys[-1])
        full = full_prefix_logits(model, memory, ys)
        diff = (cached - full).abs().max().item()
        worst = max(worst, diff)
        spread.append(full.std().item())
        if not diff <= TOLERANCE:
            sys.exit(f"torch_bench: FAILED: the KV-cached decoder's logits differ from the "
                     f"full-prefix decoder's by {diff:.3g} at step {t} (tolerance {TOLERANCE:g})")
        ys = torch.cat([ys, torch.argmax(full, dim=1).unsqueeze(0)], dim=0)
    # the greedy paths must agree as well
    if not torch.equal(cached_decode(decoder, memory, steps), ys[1:]):
        sys.exit("torch_bench: FAILED: the KV-cached greedy tokens differ from the full-prefix "
                 "decoder's")
    return {"steps": steps, "batch": int(src.shape[1]), "max_abs_diff": worst,
            "tolerance": TOLERANCE, "logit_std": statistics.mean(spread),
            "tokens": ys[1:, 0].tolist()}


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------

def openblas():
    """(set_num_threads, get_num_threads, config) of the loaded OpenBLAS, or Nones."""
    for name in ("libopenblas.so.0", "libopenblas.so", "libblas.so.3"):
        try:
            lib = ctypes.CDLL(name)
            setter, getter = lib.openblas_set_num_threads, lib.openblas_get_num_threads
        except (OSError, AttributeError):
            continue
        setter.argtypes = [ctypes.c_int]
        config = None
        if hasattr(lib, "openblas_get_config"):
            lib.openblas_get_config.restype = ctypes.c_char_p
            config = lib.openblas_get_config().decode()
        return setter, getter, config
    return None, None, None


def set_threads(threads, blas_set, blas_get):
    torch.set_num_threads(threads)
    if blas_set:
        blas_set(threads)
    return {"threads": threads, "torch_threads": torch.get_num_threads(),
            "openblas_threads": blas_get() if blas_get else None}


def time_loop(model, decode, src, steps, repeat, warmup_steps, budget_s):
    """One warm-up of `warmup_steps` steps, then `repeat` timed runs (fewer
    when they add up to more than `budget_s` seconds, at least one); medians."""
    with torch.no_grad():
        decode(encode(model, src), warmup_steps)
        encode_ms, decode_ms = [], []
        spent = 0.0
        for _ in range(repeat):
            if decode_ms and spent >= budget_s:
                break
            start = time.perf_counter()
            memory = encode(model, src)
            encoded = time.perf_counter()
            decode(memory, steps)
            done = time.perf_counter()
            encode_ms.append((encoded - start) * 1e3)
            decode_ms.append((done - encoded) * 1e3)
            spent += done - start
    batch = src.shape[1]
    per_token = statistics.median(decode_ms) / steps
    return {"encode_ms": round(statistics.median(encode_ms), 3),
            "per_token_ms": round(per_token, 3),
            "tokens_per_s": round(statistics.median(batch * steps / (ms / 1e3)
                                                    for ms in decode_ms), 1),
            "decode_ms_runs": [round(ms, 1) for ms in decode_ms],
            "repeat": len(decode_ms), "repeat_asked": repeat, "warmup_tokens": warmup_steps}


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def repeat_map(text):
    out = {}
    for item in text.split(","):
        if item:
            b, r = item.split(":")
            out[int(b)] = int(r)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dict", default=os.path.join(ROOT, "build", "bench", "base",
                                                             "state_dict.pt"))
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--batch", type=int_list, default=[1, 16])
    parser.add_argument("--threads", type=int_list, default=[1, 2])
    parser.add_argument("--source-len", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (default 3)")
    parser.add_argument("--tutorial-repeat", type=repeat_map, default={},
                        help="timed runs of the tutorial loop per batch, e.g. 1:3,16:1 "
                             "(default: --repeat)")
    parser.add_argument("--warmup-tokens", type=int, default=8,
                        help="tokens decoded by the tutorial loop's warm-up (default 8)")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="no further timed runs of a loop once its runs took this many "
                             "seconds (default 60)")
    parser.add_argument("--check-steps", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip", choices=("tutorial", "cached"), action="append", default=[],
                        help="leave a loop out")
    args = parser.parse_args(argv)

    blas_set, blas_get, blas_config = openblas()
    torch.set_grad_enabled(False)
    start = time.perf_counter()
    model = load_model(args.state_dict, args.heads)
    log(f"loaded {args.state_dict} in {time.perf_counter() - start:.1f} s")
    vocab = model.src_tok_emb.embedding.num_embeddings
    generator = torch.Generator().manual_seed(args.seed)
    decoder = CachedDecoder(model)

    set_threads(max(args.threads), blas_set, blas_get)
    check = []
    for batch in (3, 1):  # several rows (F.linear) and one (addmv)
        check_src = torch.randint(4, vocab, (min(args.source_len, 12), batch),
                                  generator=generator)
        check.append(check_cached(model, decoder, check_src, args.check_steps))
        log(f"cached decoder matches the full-prefix decoder at batch {batch} over "
            f"{args.check_steps} steps (max |diff| {check[-1]['max_abs_diff']:.2g}, "
            f"logit std {check[-1]['logit_std']:.3f})")

    loops = {
        "cached": lambda memory, steps: cached_decode(decoder, memory, steps),
        "tutorial": lambda memory, steps: tutorial_decode(model, memory, steps),
    }
    results = []
    for batch in args.batch:
        src = torch.randint(4, vocab, (args.source_len, batch), generator=generator)
        for threads in args.threads:
            entry = {"batch": batch, "source_len": args.source_len,
                     "new_tokens": args.new_tokens,
                     **set_threads(threads, blas_set, blas_get)}
            for name, decode in loops.items():
                if name in args.skip:
                    continue
                if name == "tutorial":
                    repeat = args.tutorial_repeat.get(batch, args.repeat)
                    warmup = min(args.warmup_tokens, args.new_tokens)
                else:
                    repeat, warmup = args.repeat, args.new_tokens
                t0 = time.perf_counter()
                entry[name] = time_loop(model, decode, src, args.new_tokens, repeat, warmup,
                                        args.budget)
                log(f"batch {batch}, {threads} thread(s), {name}: "
                    f"{entry[name]['tokens_per_s']} tokens/s "
                    f"({time.perf_counter() - t0:.0f} s)")
            results.append(entry)

    json.dump({"torch_version": torch.__version__, "openblas": blas_config,
               "openblas_threads_set": blas_set is not None,
               "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "check": check,
               "results": results}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
