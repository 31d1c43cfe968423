#!/usr/bin/python3
"""Weights mapped from the file (`ted quantize --layout mapped`).

    TED=build/ted /usr/bin/python3 tests/cli/mmap_check.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  layout/MODEL/DTYPE  the mapped file holds every int8 Linear weight in the
                      products' groups, unpacked here in NumPy from the
                      documented layout (docs/model-format.md#the-mapped-layout):
                      equal to the portable file's I8 rows, every other
                      tensor byte for byte the same; its header names the
                      layout; `ted info` says "layout: mapped" / "portable"
  bytes/MODEL/DTYPE    the mapped file is byte for byte the portable file's
                      tensors written here in the mapped layout (NumPy: the
                      I8 matrices in groups, first, the metadata last)
  same/MODEL/DTYPE/SET the translations of the test set (its first lines) by
                      the mapped model equal the portable model's, line for
                      line, with each kernel set the CPU offers (the sets
                      without VNNI read the groups in plain C)
  same/shortlist/DTYPE the same for en-fr under a vocabulary shortlist (the
                      output layer's rows gathered from the groups)
  pytorch/toy         `ted logits` of the mapped int8 toy model against
                      PyTorch's tutorial model on the dequantized int8
                      weights (float64): within test_int8.py's bound
  share               two `ted serve` processes on one mapped int8 model
                      (models/en-fr widened to d_ff WIDE_FF and WIDE_LAYERS
                      layers, its weights most of a process's memory), each
                      having translated:
                      each maps the whole file resident (Rss of the mapping
                      >= 90 % of the file) and shares it (Pss of the
                      mapping <= 55 % of its Rss: half each, plus slack for
                      pages of one alone); /proc/PID/smaps_rollup's Pss is
                      well below Rss (<= 75 %)
  peak-rss/DTYPE      the peak RSS of `ted translate` of one sentence on the
                      widened mapped int8 and int4 models is at most 1.1 x
                      the file plus what the same command takes beyond the
                      file on the small model (the program, its libraries,
                      the activations: measured here)
  refuses/WHY         a mapped file cut short, with a packing parameter this
                      build does not read, with an unknown layout, with a
                      group tensor but no layout named, with a group tensor
                      of the wrong shape: exit 1 and one line naming the file
                      and the problem; `ted quantize --layout mapped` of a
                      model whose packed Q/K/V thirds do not start groups
                      (d_model 8): exit 1 and one line; the same model's int8
                      matrices put in groups here (NumPy): ted refuses to load it
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import urllib.request

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tests", "parity"))

import ted_format  # noqa: E402
from ted_test import TED, failures, report, run, scratch_directory, ted_problem  # noqa: E402

MODELS = [("toy", os.path.join(ROOT, "models", "toy-en-fr")),
          ("en-fr", os.path.join(ROOT, "models", "en-fr"))]
LINES = 60           # of each test set, per kernel set
WIDE_FF, WIDE_LAYERS = 8192, 12  # the widened en-fr: 52 MB of int8 weights, 27 MB of int4
GROUP_ROWS = 16
# The matrices that are looked up, not multiplied (an embedding of its own,
# learned positions): the mapped layout keeps their rows.
TABLES = ("tok_emb.embedding.weight", "embed_tokens.weight", "embed_positions.weight")


def read(path):
    """(header, {name: raw bytes}) of a safetensors file."""
    header, start, data = ted_format.read_safetensors(path)
    raw = {}
    for name, entry in header.items():
        if name != "__metadata__":
            begin, end = entry["data_offsets"]
            raw[name] = data[start + begin:start + end]
    return header, raw


def ungroup(raw, shape, rows, cols):
    """The int8 rows (rows, cols) of a U8 group tensor (groups, ceil(cols / 4), 64):
    group g, step s holds W[16g + j][4s + e] + 128 at byte 4j + e."""
    groups, steps, width = shape
    a = np.frombuffer(raw, np.uint8).reshape(groups, steps, GROUP_ROWS, 4)
    w = (a.astype(np.int16) - 128).astype(np.int8)
    w = w.transpose(0, 2, 1, 3).reshape(groups * GROUP_ROWS, steps * 4)
    return w[:rows, :cols]


def group(w):
    """The U8 groups (groups, ceil(cols / 4), 64) of int8 rows w (rows, cols),
    ungroup's inverse."""
    rows, cols = w.shape
    groups, steps = -(-rows // GROUP_ROWS), -(-cols // 4)
    padded = np.zeros((groups * GROUP_ROWS, steps * 4), np.int16)
    padded[:rows, :cols] = w
    a = padded.reshape(groups, GROUP_ROWS, steps, 4).transpose(0, 2, 1, 3) + 128
    return a.astype(np.uint8).reshape(groups, steps, 64)


def write_grouped(portable, out):
    """A copy of the portable int8 model with every I8 matrix in groups, written
    here (no ted quantize): the groups first, the header naming the layout."""
    shutil.copytree(portable, out)
    header, raw = read(os.path.join(portable, "model.safetensors"))
    tensors = []
    for name in sorted(raw):
        e = header[name]
        if e["dtype"] == "I8" and not name.endswith(TABLES):
            w = np.frombuffer(raw[name], np.int8).reshape(e["shape"])
            tensors.append((0, name, "U8", group(w).tobytes()))
        else:
            tensors.append((1 if e["dtype"] == "F32" else 2, name, e["dtype"], raw[name],
                            e["shape"]))
    meta = {"format": "pt", "ted_i8_group_rows": "16", "ted_i8_group_k": "4",
            "ted_i4_group": "32", "ted_layout": "mapped"}
    head, data = {}, b""
    for t in sorted(tensors):
        shape = t[4] if len(t) == 5 else list(group(np.frombuffer(raw[t[1]], np.int8).reshape(
            header[t[1]]["shape"])).shape)
        head[t[1]] = {"dtype": t[2], "shape": shape,
                      "data_offsets": [len(data), len(data) + len(t[3])]}
        data += t[3]
    head["__metadata__"] = meta
    text = json.dumps(head, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 64)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def check_bytes(name, dtype, portable, mapped, tmp):
    """ted quantize --layout mapped's file against the portable file's tensors
    put in groups here, in NumPy (write_grouped): byte for byte."""
    grouped = os.path.join(tmp, f"{name}-{dtype}-grouped")
    write_grouped(portable, grouped)
    with open(os.path.join(mapped, "model.safetensors"), "rb") as f:
        a = f.read()
    with open(os.path.join(grouped, "model.safetensors"), "rb") as f:
        b = f.read()
    first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
    report(f"bytes/{name}/{dtype}", None if a == b else
           f"{len(a)} and {len(b)} bytes, first difference at {first}",
           f"{len(a)} bytes identical")


def check_layout(name, dtype, portable, mapped):
    ph, praw = read(os.path.join(portable, "model.safetensors"))
    mh, mraw = read(os.path.join(mapped, "model.safetensors"))
    meta = mh.get("__metadata__", {})
    problems = []
    if meta.get("ted_layout") != "mapped" or meta.get("ted_i8_group_rows") != "16":
        problems.append(f"metadata {meta}")
    if set(ph) - {"__metadata__"} != set(mh) - {"__metadata__"}:
        problems.append("not the same tensor names")
    grouped = 0
    for t in sorted(set(praw) & set(mraw)):
        p, m = ph[t], mh[t]
        if m["dtype"] == "U8" and len(m["shape"]) == 3:
            grouped += 1
            rows, cols = p["shape"]
            want = np.frombuffer(praw[t], np.int8).reshape(rows, cols)
            if p["dtype"] != "I8" or not np.array_equal(ungroup(mraw[t], m["shape"], rows, cols),
                                                       want):
                problems.append(f"{t}: its groups are not the portable file's rows")
            if (mh[t]["data_offsets"][0]) % 64:
                problems.append(f"{t}: not 64-byte aligned in the data")
        elif praw[t] != mraw[t] or p["shape"] != m["shape"]:
            problems.append(f"{t}: differs")
    if not grouped:
        problems.append("no tensor in groups")
    info = {}
    for which, d in (("mapped", mapped), ("portable", portable)):
        out, problem = ted_problem(["info", "-m", d])
        info[which] = re.search(r"^layout: (\w+)", out or "", re.M)
        if problem or not info[which] or info[which].group(1) != which:
            problems.append(f"ted info -m {which}: {problem or 'no layout: ' + which}")
    report(f"layout/{name}/{dtype}", "; ".join(problems[:3]) or None,
           f"{grouped} matrices in groups")


def kernel_sets():
    """The kernel sets this CPU runs (TED_CPU=NAME of one it lacks is refused)."""
    found = []
    for name in ("portable", "avx2", "avx512"):
        env = dict(os.environ, TED_CPU=name)
        r = subprocess.run([TED, "translate", "-m", MODELS[0][1], "x"], env=env,
                           capture_output=True, text=True)
        if r.returncode == 0:
            found.append(name)
    return found


def translate(model_dir, lines, cpu=None, extra=()):
    env = dict(os.environ, **({"TED_CPU": cpu} if cpu else {}))
    r = subprocess.run([TED, "translate", "-m", model_dir, *extra], input="".join(
        x + "\n" for x in lines), env=env, capture_output=True, text=True, timeout=300)
    return r.stdout.split("\n")[:-1] if r.returncode == 0 else f"exit {r.returncode}: {r.stderr}"


def check_same(name, dtype, model_dir, portable, mapped, sets):
    with open(os.path.join(model_dir, "test.en"), encoding="utf-8") as f:
        lines = f.read().split("\n")[:LINES]
    for cpu in sets:
        want, got = translate(portable, lines, cpu), translate(mapped, lines, cpu)
        problem = None
        if isinstance(want, str) or isinstance(got, str):
            problem = f"portable: {want if isinstance(want, str) else 'ok'}; mapped: " \
                      f"{got if isinstance(got, str) else 'ok'}"
        elif want != got:
            i = next(i for i in range(min(len(want), len(got))) if want[i] != got[i])
            problem = f"line {i + 1}: portable {want[i]!r}, mapped {got[i]!r}"
        report(f"same/{name}/{dtype}/{cpu}", problem, f"{len(lines)} lines identical")


def check_same_shortlist(dtype, model_dir, portable, mapped, tmp):
    """The same under a vocabulary shortlist: the output layer's rows
    gathered from the groups."""
    shortlist = os.path.join(tmp, f"shortlist-{dtype}.txt")
    _, problem = ted_problem(["shortlist", "-m", model_dir, "--source",
                              os.path.join(model_dir, "test.en"), "--target",
                              os.path.join(model_dir, "test.fr"), "-o", shortlist, "--top", "20",
                              "--frequent", "50"])
    if problem:
        return report(f"same/shortlist/{dtype}", problem)
    with open(os.path.join(model_dir, "test.en"), encoding="utf-8") as f:
        lines = f.read().split("\n")[:LINES]
    want = translate(portable, lines, extra=("--shortlist", shortlist))
    got = translate(mapped, lines, extra=("--shortlist", shortlist))
    report(f"same/shortlist/{dtype}", None if want == got and not isinstance(got, str) else
           f"portable {str(want)[:200]}, mapped {str(got)[:200]}", f"{len(lines)} lines identical")


def check_pytorch(model_dir, portable, mapped):
    """test_int8.py's PyTorch reference (the tutorial model on the int8 weights
    dequantized, the portable file's rows: layout/ shows they are the groups')
    against `ted logits` of the mapped model."""
    import test_int8  # noqa: E402 (torch; the parity tests' reference)
    import reference_models
    try:
        model = reference_models.toy_model(test_int8.dequantized_state(portable))
    except ValueError as e:
        return report("pytorch/toy", str(e))
    try:
        worst, = reference_models.worst_vs_toy(model, model_dir, 6,
                                               lambda s, t: test_int8.ted_logits(mapped, s, t))
    except ValueError as e:
        return report("pytorch/toy", str(e))
    bound = test_int8.LOGITS_VS_DEQUANTIZED
    detail = f"max abs diff {worst:.3g} (bound {bound})"
    report("pytorch/toy", None if worst <= bound else detail, detail)


def widen(src, dst, d_ff, layers):
    """models/en-fr with its feed-forward layers widened to d_ff (zero rows
    and columns) and `layers` layers a stack (its own repeated): weights
    most of a process's memory, activations a small part of it."""
    shutil.copytree(src, dst)
    t = ted_format.read_tensors(os.path.join(src, "model.safetensors"))
    for name in list(t):
        w = t[name]
        if name.endswith("fc1.weight") or name.endswith("fc1.bias"):
            t[name] = np.pad(w, [(0, d_ff - w.shape[0])] + [(0, 0)] * (w.ndim - 1))
        elif name.endswith("fc2.weight"):
            t[name] = np.pad(w, [(0, 0), (0, d_ff - w.shape[1])])
    path = os.path.join(dst, "config.yaml")
    with open(path) as f:
        text = f.read()
    old = int(re.search(r"encoder_layers: (\d+)", text).group(1))
    for name in list(t):
        m = re.match(r"(model\.(?:en|de)coder\.layers\.)(\d+)(\..*)", name)
        for i in range(old, layers):
            if m and int(m.group(2)) == i % old:
                t[f"{m.group(1)}{i}{m.group(3)}"] = t[name]
    ted_format.write_safetensors(os.path.join(dst, "model.safetensors"), sorted(t.items()))
    text = re.sub(r"d_ff: \d+", f"d_ff: {d_ff}", text)
    text = re.sub(r"(en|de)coder_layers: \d+", rf"\1coder_layers: {layers}", text)
    with open(path, "w") as f:
        f.write(text)


def mapping_kib(pid, path):
    """(Rss, Pss) in KiB of the mapping of `path` in process pid's smaps."""
    rss = pss = 0
    inside = False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                inside = line.rstrip("\n").endswith(path)
            elif inside and line.startswith("Rss:"):
                rss += int(line.split()[1])
            elif inside and line.startswith("Pss:"):
                pss += int(line.split()[1])
    return rss, pss


def rollup_kib(pid):
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] in ("Rss:", "Pss:"):
                values[parts[0][:-1]] = int(parts[1])
    return values["Rss"], values["Pss"]


def start_server(model_dir):
    p = subprocess.Popen([TED, "serve", "-m", model_dir, "--port", "0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        p.wait()
        raise RuntimeError(f"ted serve did not start: {line.strip()}")
    return p, int(m.group(1))


def ask(port, text, **fields):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate",
                                     data=json.dumps({"text": [text], **fields}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.load(r)


def check_share(mapped):
    weights = os.path.realpath(os.path.join(mapped, "model.safetensors"))
    size_kib = os.path.getsize(weights) / 1024
    servers = []
    try:
        for _ in range(2):
            servers.append(start_server(mapped))
        for _, port in servers:
            ask(port, "The little cat sleeps under the big table.")
        figures = [(mapping_kib(p.pid, weights), rollup_kib(p.pid)) for p, _ in servers]
    except (RuntimeError, OSError) as e:
        return report("share", str(e))
    finally:
        for p, _ in servers:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    problems, detail = [], []
    for i, ((rss, pss), (all_rss, all_pss)) in enumerate(figures):
        detail.append(f"process {i + 1}: weights Rss {rss} KiB Pss {pss} KiB of a "
                      f"{size_kib:.0f} KiB file; smaps_rollup Rss {all_rss} KiB Pss {all_pss} KiB")
        if rss < 0.9 * size_kib:
            problems.append(f"process {i + 1}: only {rss} KiB of the file resident")
        if pss > 0.55 * rss:
            problems.append(f"process {i + 1}: the mapping's Pss {pss} KiB > 55 % of Rss {rss}")
        if all_pss > 0.75 * all_rss:
            problems.append(f"process {i + 1}: Pss {all_pss} KiB > 75 % of Rss {all_rss}")
    report("share", "; ".join(problems) or None, "; ".join(detail))


def peak_rss_kib(model_dir, line, tmp):
    """The peak RSS (KiB) of `ted translate` of one line, by /usr/bin/time (a
    child of this Python would start with its high-water mark), or None."""
    out = os.path.join(tmp, "time")
    r = subprocess.run(["/usr/bin/time", "-o", out, "-f", "%M", TED, "translate", "-m",
                        model_dir], input=line + "\n", capture_output=True, text=True)
    with open(out) as f:
        return int(f.read().split()[-1]) if r.returncode == 0 else None


def check_peak(dtype, small, wide, tmp):
    if not os.access("/usr/bin/time", os.X_OK):
        return print(f"skip peak-rss/{dtype}: /usr/bin/time is not installed")
    line = "The little cat sleeps under the big table."
    sizes = [os.path.getsize(os.path.join(d, "model.safetensors")) / 1024 for d in (small, wide)]
    peaks = [peak_rss_kib(d, line, tmp) for d in (small, wide)]
    if None in peaks:
        return report(f"peak-rss/{dtype}", "ted translate failed")
    rest = peaks[0] - sizes[0]
    bound = 1.1 * sizes[1] + rest
    detail = (f"peak {peaks[1]} KiB for a {sizes[1]:.0f} KiB file ({peaks[1] / sizes[1]:.2f} x); "
              f"bound 1.1 x file + {rest:.0f} KiB (the small model's peak beyond its file)")
    report(f"peak-rss/{dtype}", None if peaks[1] <= bound else detail, detail)


def rewrite(src_dir, dst_dir, edit_header=None, cut=None):
    """A copy of the model whose weights' header went through edit_header
    (the data kept where it was: the header padded back to its length), or
    cut to `cut` bytes."""
    shutil.copytree(src_dir, dst_dir)
    path = os.path.join(dst_dir, "model.safetensors")
    with open(path, "rb") as f:
        raw = f.read()
    if cut is not None:
        raw = raw[:cut]
    if edit_header:
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + n])
        edit_header(header)
        text = json.dumps(header, separators=(",", ":")).encode()
        assert len(text) <= n, "the edited header must not grow"
        raw = raw[:8] + text + b" " * (n - len(text)) + raw[8 + n:]
    with open(path, "wb") as f:
        f.write(raw)
    return dst_dir


def check_refusals(mapped, tmp):
    header, _ = read(os.path.join(mapped, "model.safetensors"))
    grouped = sorted(t for t, e in header.items()
                     if t != "__metadata__" and e["dtype"] == "U8" and len(e["shape"]) == 3)[0]
    size = os.path.getsize(os.path.join(mapped, "model.safetensors"))

    def set_meta(key, value):
        def edit(h):
            if value is None:
                del h["__metadata__"][key]
            else:
                h["__metadata__"][key] = value
        return edit

    def reshape(h):
        g, s, w = h[grouped]["shape"]
        h[grouped]["shape"] = [g * 2, s // 2, w] if s % 2 == 0 else [g, s, w // 2]
        if s % 2:
            h[grouped]["data_offsets"][1] -= g * s * w // 2
    cases = [
        ("cut-short", dict(cut=size - 4096), r"past the end|runs past|ends|short"),
        ("group-rows", dict(edit_header=set_meta("ted_i8_group_rows", "8")),
         r"ted_i8_group_rows is '8'.*read 16"),
        ("unknown-layout", dict(edit_header=set_meta("ted_layout", "tiles")),
         r"ted_layout is 'tiles'"),
        ("no-layout", dict(edit_header=set_meta("ted_layout", None)),
         r"U8 of 3 dimensions.*no ted_layout"),
        ("group-shape", dict(edit_header=reshape), r"mapped layout; the config needs shape"),
    ]
    for name, how, pattern in cases:
        d = rewrite(mapped, os.path.join(tmp, f"refuse-{name}"), **how)
        status, out, err = run([TED, "translate", "-m", d, "x"])
        lines = [x for x in err.split("\n") if x]
        problem = None
        if status != 1 or len(lines) != 1:
            problem = f"exit {status}, stderr {err!r}"
        elif "model.safetensors" not in lines[0] or not re.search(pattern, lines[0]):
            problem = f"the message does not say it: {lines[0]!r}"
        report(f"refuses/{name}", problem, lines[0] if lines else "")


def narrowed(src, dst, d):
    """tests/data/tiny-model (tutorial layout: packed Q/K/V projections) cut to
    d_model d: every dimension of 16 and in_proj's 48 rows taken to d and 3d."""
    shutil.copytree(src, dst)
    t = ted_format.read_tensors(os.path.join(src, "model.safetensors"))
    for name, w in list(t.items()):
        t[name] = w[tuple(slice(0, 3 * d if n == 48 else d if n == 16 else n) for n in w.shape)]
    ted_format.write_safetensors(os.path.join(dst, "model.safetensors"), sorted(t.items()))
    path = os.path.join(dst, "config.yaml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("d_model: 16", f"d_model: {d}"))


def check_packed_projection(tmp):
    """A packed Q/K/V projection whose thirds do not start groups (d_model 8):
    ted quantize --layout mapped refuses it with one line, the portable
    layout is written."""
    model = os.path.join(tmp, "narrow")
    narrowed(os.path.join(ROOT, "tests", "data", "tiny-model"), model, 8)
    _, problem = ted_problem(["quantize", model, os.path.join(tmp, "narrow-portable")])
    status, _, err = run([TED, "quantize", "--layout", "mapped", model,
                          os.path.join(tmp, "narrow-mapped")])
    lines = [x for x in err.split("\n") if x]
    if not problem and (status != 1 or len(lines) != 1 or
                        not re.search(r"d_model \(8\) a multiple of 16", lines[0])):
        problem = f"exit {status}, stderr {err!r}"
    report("refuses/packed-projection", problem, lines[0] if lines else "")
    mapped = os.path.join(tmp, "narrow-grouped")
    write_grouped(os.path.join(tmp, "narrow-portable"), mapped)
    status, _, err = run([TED, "translate", "-m", mapped, "5 6 7"])
    lines = [x for x in err.split("\n") if x]
    report("refuses/packed-projection-file",
           None if status == 1 and len(lines) == 1 and "must each start a group" in lines[0]
           else f"exit {status}, stderr {err!r}", lines[0] if lines else "")


def quantize(src, dst, dtype, layout):
    _, problem = ted_problem(["quantize", "--dtype", dtype, "--layout", layout, src, dst])
    if problem:
        report(f"quantize/{os.path.basename(dst)}", problem)
    return not problem


def main():
    sets = kernel_sets()
    with scratch_directory("ted-mmap-") as tmp:
        dirs = {}
        for name, model_dir in MODELS:
            for dtype in ("int8", "int4"):
                for layout in ("portable", "mapped"):
                    d = dirs[name, dtype, layout] = os.path.join(tmp, f"{name}-{dtype}-{layout}")
                    if not quantize(model_dir, d, dtype, layout):
                        return 1
                check_layout(name, dtype, dirs[name, dtype, "portable"],
                             dirs[name, dtype, "mapped"])
                check_bytes(name, dtype, dirs[name, dtype, "portable"],
                            dirs[name, dtype, "mapped"], tmp)
                check_same(name, dtype, model_dir, dirs[name, dtype, "portable"],
                           dirs[name, dtype, "mapped"], sets)
        for dtype in ("int8", "int4"):
            check_same_shortlist(dtype, MODELS[1][1], dirs["en-fr", dtype, "portable"],
                                 dirs["en-fr", dtype, "mapped"], tmp)
        check_pytorch(MODELS[0][1], dirs["toy", "int8", "portable"],
                      dirs["toy", "int8", "mapped"])
        check_refusals(dirs["en-fr", "int8", "mapped"], tmp)
        check_packed_projection(tmp)
        wide = os.path.join(tmp, "wide")
        widen(MODELS[1][1], wide, WIDE_FF, WIDE_LAYERS)
        for dtype in ("int8", "int4"):
            d = os.path.join(tmp, f"wide-{dtype}")
            if not quantize(wide, d, dtype, "mapped"):
                return 1
            if dtype == "int8":
                check_share(d)
            check_peak(dtype, dirs["en-fr", dtype, "mapped"], d, tmp)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
