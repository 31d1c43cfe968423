#!/usr/bin/python3
"""tools/export_hf.py against hostile inputs and outputs: every attack is
refused with one line ("export_hf: ..."), exit status 1, no traceback, and
nothing written where it should not be.

    TED=build/ted .venv/bin/python tests/parity/test_export_refusals.py

A random MarianMTModel (tests/lib/reference_models.py's first config) is
saved by save_pretrained and exported once (a good ted model), then copies
of the checkpoint are corrupted:
  out/*     --out an existing ted model, the input directory, a directory
            with planted symbolic links (config.yaml -> VICTIM,
            model.safetensors.tmp -> VICTIM2), a symbolic link to an empty
            directory: refused, nothing changed; an empty directory: written;
            a failure while writing (a full 128 KiB tmpfs, where root may
            mount one) and SIGTERM/SIGINT while writing (the exporter run
            with a pause after its first file): nothing left, the directory
            it created removed, the rerun succeeds
  in/*      config.json, model.safetensors, pytorch_model.bin, vocab.json,
            source.spm, tokenizer_config.json and generation_config.json as a
            FIFO and as a link to /dev/zero, and config.json as a sparse
            file past its size bound: refused, naming the file, at once
  value/*   values ted's config reader refuses (max_position_embeddings 10^8,
            length_penalty NaN, decoder_start_token_id 10^9, heads 2.0, ...)
            and tensors ted's loader refuses (a NaN weight, shape [2^32,
            2^32], 40 dimensions): refused, and the words after "->" (or
            after the file name, for a tensor) are those `ted info [--check]`
            prints for a ted model holding the same value
  garbage/* inputs that gave Python tracebacks (activation_function a list,
            architectures a number): one line
  rules/*   tools/ted_config_rules.py's table of keys is src/io/config.c's
  guide/*   what a user gets wrong: a Hub name for HF_DIR (told how to
            download it), NumPy or PyTorch missing (told the one apt-get
            command), a vocab.json without the id of its <pad> (the refusal
            alone, no warning before it; a warning still follows a success)
EXPORTER=PATH runs another exporter (the tools directory it sits in).
TED_PARITY_KEEP=1 keeps the temporary directories (printed on stderr).
"""
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

import ted_config_rules  # noqa: E402
from ted_test import TED, failures, ok, report, run, scratch_directory  # noqa: E402

EXPORTER = os.environ.get("EXPORTER", os.path.join(ROOT, "tools", "export_hf.py"))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")  # the exporter's Python
LIMIT = 30          # seconds an export may take: a hang is a failure
MEMORY = 3 << 30    # address space of an export reading a device


# ---- running the exporter -------------------------------------------------------

def export(hf_dir, out_dir, memory=None):
    """(exit status, stderr) of the exporter; None when it timed out."""
    def limit():
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    try:
        p = subprocess.run([PYTHON, EXPORTER, hf_dir, "--out", out_dir], capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=LIMIT, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {LIMIT} s"
    return p.returncode, p.stderr.decode("utf-8", "replace")


def one_line_problem(status, err, pattern):
    """None when the export failed as it must: exit 1, one line on stderr
    starting "export_hf: " and matching `pattern`, no traceback."""
    lines = err.strip().splitlines()
    if status is None:
        return err
    if "Traceback" in err:
        return f"a Python traceback: {lines[-1][:200] if lines else ''}"
    if status != 1:
        return f"exit status {status}, expected 1: {err.strip()[:300]!r}"
    if len(lines) != 1 or not lines[0].startswith("export_hf: "):
        return f"{len(lines)} lines on stderr, expected one 'export_hf: ...': {err[:300]!r}"
    if not re.search(pattern, lines[0]):
        return f"stderr does not match {pattern!r}: {lines[0][:300]!r}"
    return None


def refused(name, hf_dir, out_dir, pattern, memory=None):
    """Reports the refusal; returns its line (or None)."""
    status, err = export(hf_dir, out_dir, memory)
    problem = one_line_problem(status, err, pattern)
    report(name, problem, err.strip()[:200] if not problem else "")
    return None if problem else err.strip()


def digest(directory):
    """{name: sha256} of a directory's files (links not followed)."""
    out = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.islink(path):
            out[name] = "-> " + os.readlink(path)
        elif os.path.isfile(path):
            with open(path, "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
        else:
            out[name] = "?"
    return out


# ---- the checkpoint ------------------------------------------------------------------

def make_checkpoint(tmp):
    import transformers

    from reference_models import CONFIGS, build_model, write_tokenizer
    transformers.logging.set_verbosity_error()
    rng = random.Random(27)
    tok = write_tokenizer(os.path.join(tmp, "tok"), tmp, "shared", rng)
    model = build_model(CONFIGS[0], tok, 27)
    hf_dir = os.path.join(tmp, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    tok.save_pretrained(hf_dir)
    return hf_dir


def copy_of(hf_dir, tmp, name):
    path = os.path.join(tmp, "case-" + name)
    shutil.copytree(hf_dir, path)
    return path


def edit_json(hf_dir, name, **changes):
    path = os.path.join(hf_dir, name)
    with open(path, encoding="utf-8") as f:
        value = json.load(f)
    value.update(changes)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)  # NaN written as NaN, as Python's json reads it back


def edit_header(path, change):
    """change(header dict) on a safetensors file's header, data kept."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    change(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data[8 + length:])


def set_nan(path, tensor, index):
    """A NaN at element `index` of F32 `tensor` in the safetensors file."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    (length,) = struct.unpack("<Q", data[:8])
    begin = json.loads(data[8:8 + length])[tensor]["data_offsets"][0]
    at = 8 + length + begin + 4 * index
    data[at:at + 4] = struct.pack("<f", float("nan"))
    with open(path, "wb") as f:
        f.write(data)


# ---- out/* ------------------------------------------------------------------------

def check_outputs(hf_dir, good, tmp):
    before = digest(good)
    refused("out/existing-model", hf_dir, good,
            r"the output directory exists and is not empty")
    report("out/existing-model-unchanged", None if digest(good) == before else
           "the ted model was changed")

    case = copy_of(hf_dir, tmp, "same-dir")
    before = digest(case)
    refused("out/input-dir", case, case, r"the output directory is the input directory")
    report("out/input-dir-unchanged", None if digest(case) == before else
           "the checkpoint was changed")

    planted = os.path.join(tmp, "planted")
    os.mkdir(planted)
    victims = [os.path.join(tmp, "victim1"), os.path.join(tmp, "victim2")]
    for victim in victims:
        with open(victim, "w") as f:
            f.write("victim\n")
    os.symlink(victims[0], os.path.join(planted, "config.yaml"))
    os.symlink(victims[1], os.path.join(planted, "model.safetensors.tmp"))
    refused("out/planted-links", hf_dir, planted, r"exists and is not empty")
    report("out/planted-links-victims-unchanged",
           None if all(open(v).read() == "victim\n" for v in victims) else
           "a link's target was written")

    empty = os.path.join(tmp, "empty-target")
    os.mkdir(empty)
    link = os.path.join(tmp, "link-out")
    os.symlink(empty, link)
    refused("out/symbolic-link", hf_dir, link, r"is a symbolic link")
    report("out/symbolic-link-target-untouched",
           None if not os.listdir(empty) else f"written into {empty}: {os.listdir(empty)}")

    status, err = export(hf_dir, empty)
    report("out/empty-dir-written", None if status == 0 and digest(empty) == digest(good) else
           f"exit {status}: {err.strip()[:200]}; or files differ from the first export")

    check_full_disk(hf_dir, tmp)
    for sig in (signal.SIGTERM, signal.SIGINT):
        check_stopped(hf_dir, tmp, sig)


def check_full_disk(hf_dir, tmp):
    full = os.path.join(tmp, "full")
    os.mkdir(full)
    status = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", full],
                            capture_output=True).returncode
    if status != 0:
        return print("skip out/full-disk: cannot mount a 128 KiB tmpfs here (needs root)")
    try:
        out = os.path.join(full, "out")
        refused("out/full-disk", hf_dir, out, r"cannot write .*: No space left on device")
        report("out/full-disk-nothing-left", None if not os.listdir(full) else
               f"left on the full disk: {os.listdir(full)}")
    finally:
        subprocess.run(["umount", full])


# The exporter with a pause after each file it writes, so that a signal
# arrives while it writes; a --out directory, then the exporter's arguments.
PAUSED = r"""
import os, sys, time
tools = os.path.dirname(sys.argv[1])
sys.path.insert(0, tools)
import safe_files
write = safe_files.OutputDirectory.write
def slow(self, name, data):
    write(self, name, data)
    time.sleep(60)
safe_files.OutputDirectory.write = slow
import export_hf
sys.exit(export_hf.main(sys.argv[2:]))
"""


def check_stopped(hf_dir, tmp, sig):
    name = f"out/{signal.Signals(sig).name.lower()}-while-writing"
    if not os.path.exists(os.path.join(os.path.dirname(EXPORTER), "safe_files.py")):
        return report(name, "the exporter has no safe_files.OutputDirectory to pause in "
                            "(a signal while it writes is not handled)")
    out = os.path.join(tmp, "stopped-" + signal.Signals(sig).name)
    p = subprocess.Popen([PYTHON, "-c", PAUSED, EXPORTER, hf_dir, "--out", out],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + LIMIT
    while time.time() < deadline and p.poll() is None and not (
            os.path.isdir(out) and os.listdir(out)):
        time.sleep(0.01)
    seen = os.listdir(out) if os.path.isdir(out) else []
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        p.kill()
        return report(name, "still running after the signal")
    err = err.decode("utf-8", "replace")
    if not seen:
        problem = f"no file appeared in {out} (exit {p.returncode}: {err.strip()[:200]})"
    elif "Traceback" in err:
        problem = f"a Python traceback: {err.strip().splitlines()[-1][:200]}"
    elif p.returncode != -sig:
        problem = f"exit status {p.returncode}, expected death by the signal"
    elif os.path.exists(out):
        problem = f"{out}, created by the export, is still there: {os.listdir(out)}"
    else:
        problem = None
    report(name, problem, f"{seen} removed")
    status, err = export(hf_dir, out)
    report(name + "-rerun", None if status == 0 else f"exit {status}: {err.strip()[:200]}")


# ---- in/* ---------------------------------------------------------------------------

INPUTS = ["config.json", "model.safetensors", "pytorch_model.bin", "vocab.json", "source.spm",
          "tokenizer_config.json", "generation_config.json"]


def check_inputs(hf_dir, tmp):
    for name in INPUTS:
        for kind in ("fifo", "dev-zero"):
            case = copy_of(hf_dir, tmp, f"{kind}-{name}")
            if name == "pytorch_model.bin":  # read when there is no model.safetensors
                os.remove(os.path.join(case, "model.safetensors"))
            path = os.path.join(case, name)
            if os.path.exists(path):
                os.remove(path)
            if kind == "fifo":
                os.mkfifo(path)
            else:
                os.symlink("/dev/zero", path)
            refused(f"in/{name}-{kind}", case, os.path.join(tmp, f"out-{kind}-{name}"),
                    re.escape(name) + r": not a regular file", memory=MEMORY)
    case = copy_of(hf_dir, tmp, "huge-config")
    with open(os.path.join(case, "config.json"), "r+b") as f:
        f.truncate(17 << 20)  # sparse: no disk used
    refused("in/config.json-huge", case, os.path.join(tmp, "out-huge"),
            r"config\.json: [0-9]+ bytes is larger than 16 MiB", memory=MEMORY)


# ---- value/* ---------------------------------------------------------------------------

FC1 = "model.encoder.layers.0.fc1.weight"


def ted_words(good, tmp, name, edit, check=False):
    """What `ted info -m DIR` (--check) says of a copy of the good ted
    model edited by edit(dir): its message after "FILE:LINE: " or
    "FILE: "."""
    model = os.path.join(tmp, "ted-" + name)
    shutil.copytree(good, model)
    edit(model)
    status, _, err = run([TED, "info", "-m", model] + (["--check"] if check else []))
    line = err.strip().splitlines()[-1] if err.strip() else ""
    if status != 1:
        return None, f"ted info exited {status}: {line[:200]}"
    match = re.match(r"ted: .*?(config\.yaml:[0-9]+|model\.safetensors): (.*)$", line)
    if not match:
        return None, f"ted info: {line[:200]}"
    return match.group(2), None


def yaml_value(key, text):
    """An edit of config.yaml: `key` (section.key) holding `text`."""
    section, name = key.split(".")

    def edit(model):
        path = os.path.join(model, "config.yaml")
        with open(path) as f:
            lines = f.read().split("\n")
        at = lines.index(section + ":")
        for i in range(at + 1, len(lines)):
            if lines[i].startswith(f"  {name}:"):
                lines[i] = f"  {name}: {text}"
                break
        with open(path, "w") as f:
            f.write("\n".join(lines))
    return edit


def config_json(**changes):
    return lambda d: edit_json(d, "config.json", **changes)


def generation_json(**changes):
    return lambda d: edit_json(d, "generation_config.json", **changes)


def tensor_header(change):
    return lambda d: edit_header(os.path.join(d, "model.safetensors"), change)


def set_shape(tensor, shape):
    return lambda header: header[tensor].update(shape=shape)


# (name, edit of the checkpoint, edit of the good ted model or None,
#  `ted info --check` needed)
VALUES = [
    ("max-positions-1e8", config_json(max_position_embeddings=10 ** 8),
     yaml_value("model.max_positions", "100000000"), False),
    ("length-penalty-nan", generation_json(length_penalty=float("nan")),
     yaml_value("decoding.length_penalty", "nan"), False),
    ("length-penalty-1e39", generation_json(length_penalty=1e39),
     yaml_value("decoding.length_penalty", "1.0e+39"), False),
    ("length-penalty-negative", generation_json(length_penalty=-1),
     yaml_value("decoding.length_penalty", "-1.0"), False),
    ("decoder-start-1e9", generation_json(decoder_start_token_id=10 ** 9),
     yaml_value("tokenizer.bos_id", "1000000000"), False),
    ("eos-1e10", generation_json(eos_token_id=10 ** 10),
     yaml_value("tokenizer.eos_id", "10000000000"), False),
    ("heads-2.0", config_json(encoder_attention_heads=2.0, decoder_attention_heads=2.0),
     yaml_value("model.heads", "2.0"), False),
    ("d-model-string", config_json(d_model="32"),
     yaml_value("model.d_model", '"32"'), False),
    ("d-model-odd", config_json(d_model=33), yaml_value("model.d_model", "33"), False),
    ("heads-do-not-divide", config_json(encoder_attention_heads=5, decoder_attention_heads=5),
     yaml_value("model.heads", "5"), False),
    ("encoder-layers-300", config_json(encoder_layers=300),
     yaml_value("model.encoder_layers", "300"), False),
    ("vocab-size-3", config_json(vocab_size=3), yaml_value("model.src_vocab_size", "3"), False),
    ("num-beams-2000", generation_json(num_beams=2000),
     yaml_value("decoding.beam_size", "2000"), False),
    ("num-beams-vocab", generation_json(num_beams=1000),
     yaml_value("decoding.beam_size", "1000"), False),
    ("max-length-5e6", generation_json(max_length=5 * 10 ** 6),
     yaml_value("decoding.max_length", "4999998"), False),
    ("bad-words-17", generation_json(bad_words_ids=[[i] for i in range(2, 19)]),
     yaml_value("decoding.banned_ids", "[" + ", ".join(map(str, range(2, 19))) + "]"), False),
    ("bad-words-past-vocab", generation_json(bad_words_ids=[[100000]]),
     yaml_value("decoding.banned_ids", "[100000]"), False),
    ("decoder-start-is-unk", generation_json(decoder_start_token_id=1),
     yaml_value("tokenizer.bos_id", "1"), False),
    ("nan-weight", lambda d: set_nan(os.path.join(d, "model.safetensors"), FC1, 1),
     lambda m: set_nan(os.path.join(m, "model.safetensors"), FC1, 1), True),
    ("shape-2^32x2^32", tensor_header(set_shape(FC1, [2 ** 32, 2 ** 32])),
     tensor_header(set_shape(FC1, [2 ** 32, 2 ** 32])), False),
    ("shape-40-dimensions", tensor_header(set_shape(FC1, [1] * 40)),
     tensor_header(set_shape(FC1, [1] * 40)), False),
]


def check_values(hf_dir, good, tmp):
    for name, edit, ted_edit, check in VALUES:
        case = copy_of(hf_dir, tmp, "value-" + name)
        edit(case)
        line = refused("value/" + name, case, os.path.join(tmp, "out-value-" + name), "")
        if line is None:
            continue
        words, problem = ted_words(good, tmp, name, ted_edit, check)
        if problem is None and not (line.endswith("-> " + words) or
                                    line.endswith(": " + words)):
            problem = f"ted says {words!r}, the exporter {line!r}"
        report(f"value/{name}-ted-words", problem, words)
        if os.path.exists(os.path.join(tmp, "out-value-" + name)):
            report(f"value/{name}-nothing-written", "the --out directory was created")


GARBAGE = [
    ("activation-list", config_json(activation_function=["gelu"]),
     r"activation_function \[\"gelu\"\] is not supported"),
    ("architectures-number", config_json(architectures=5), r"architectures 5"),
    ("added-tokens-list", lambda d: edit_json(d, "tokenizer_config.json",
                                              added_tokens_decoder=[1, 2]),
     r"added_tokens_decoder is not a JSON object"),
    ("config-deeply-nested", lambda d: open(os.path.join(d, "config.json"), "w").write(
        "[" * 100000 + "]" * 100000), r"config\.json: not valid JSON"),
    ("header-not-utf8", lambda d: open(os.path.join(d, "model.safetensors"), "wb").write(
        struct.pack("<Q", 4) + b"\xff\xfe{}"), r"the header is not JSON"),
]


def check_garbage(hf_dir, tmp):
    for name, edit, pattern in GARBAGE:
        case = copy_of(hf_dir, tmp, "garbage-" + name)
        edit(case)
        refused("garbage/" + name, case, os.path.join(tmp, "out-garbage-" + name), pattern)


# ---- rules/* ---------------------------------------------------------------------------

def config_c_table():
    """{dotted key: (type, low, high, capacity or choices)} of
    src/io/config.c's table of keys."""
    with open(os.path.join(ROOT, "src", "io", "config.c"), encoding="utf-8") as f:
        text = f.read()
    lists = {m.group(1): tuple(re.findall(r'"([^"]+)"', m.group(2))) for m in re.finditer(
        r"static const char \*const (\w+)\[\] = \{([^}]*)\};", text)}
    body = text[text.index("static const key_spec keys[] = {"):]
    body = body[:body.index("};")]
    table = {}
    for m in re.finditer(r"\b(REQUIRED_INT|INT|FLOAT_IN|FLOAT|BOOL|CHOICE|INT_LIST|PATH|"
                         r"OPTIONAL_PATH|CODE|CODE_LIST|SERVED_LIST)\(([^;]*?)\),\n", body):
        args = [a.strip() for a in re.split(r",\s*", m.group(2).replace("\n", " "))]
        kind, key = m.group(1), f"{args[0].strip(chr(34))}.{args[1].strip(chr(34))}"
        key = key[5:] if key.startswith("NULL.") else key
        number = lambda a: 2 ** 31 - 1 if a == "INT_MAX" else float(a) if "." in a or "e" in \
            a else int(a)  # noqa: E731
        if kind in ("REQUIRED_INT", "INT"):
            table[key] = ("int", number(args[3]), number(args[4]), None)
        elif kind == "FLOAT_IN":
            table[key] = ("float", number(args[3]), number(args[4]), None)
        elif kind == "FLOAT":
            table[key] = ("float", 1, 0, None)
        elif kind == "BOOL":
            table[key] = ("bool", None, None, None)
        elif kind == "CHOICE":
            table[key] = ("word", None, None, lists[args[3]])
        elif kind == "INT_LIST":
            table[key] = ("int_list", number(args[4]), number(args[5]), 16)
        elif kind == "CODE":
            table[key] = ("code", None, None, 64)  # TED_LANGUAGE_CODE_SIZE
        elif kind == "CODE_LIST":
            table[key] = ("code_list", None, None, 16384)  # TED_LANGUAGES_SIZE
        elif kind == "SERVED_LIST":
            table[key] = ("served_list", None, None, 16384)
        else:
            table[key] = ("path", None, None, None)
    return table


def check_rules():
    want = config_c_table()
    got = {}
    for key, spec in ted_config_rules.KEYS.items():
        got[key] = (spec["type"], spec.get("min"), spec.get("max"),
                    spec.get("choices") or spec.get("capacity"))
    differ = [key for key in sorted(set(want) | set(got)) if want.get(key) != got.get(key)]
    problem = "differ: " + ", ".join(f"{k}: config.c {want.get(k)}, rules {got.get(k)}"
                                     for k in differ[:4]) if differ else None
    if len(want) < 40:
        problem = f"read {len(want)} keys of src/io/config.c's table, expected them all"
    report("rules/keys-as-config.c", problem, f"{len(want)} keys")


def guided(name, args, pattern, cwd=None, env=None):
    """Runs the exporter with `args` and reports a refusal of one line
    matching `pattern`."""
    try:
        p = subprocess.run([PYTHON, EXPORTER] + args, capture_output=True, cwd=cwd,
                           env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL,
                           timeout=LIMIT)
        status, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        status, err = None, f"no answer within {LIMIT} s"
    problem = one_line_problem(status, err, pattern)
    report(name, problem, err.strip()[:200] if not problem else "")


def missing_module(tmp, name):
    """A directory for PYTHONPATH where `import name` fails as it does when
    the package is not installed."""
    path = os.path.join(tmp, "without-" + name)
    os.makedirs(os.path.join(path, name))
    with open(os.path.join(path, name, "__init__.py"), "w") as f:
        f.write(f"raise ModuleNotFoundError(\"No module named '{name}'\")\n")
    return path


def check_guidance(hf_dir, tmp):
    hub = "Helsinki-NLP/opus-mt-en-de"
    guided("guide/hub-name", [hub, "--out", "out"],
           re.escape(f"huggingface-cli download {hub} --local-dir DIR") + ".*" +
           re.escape(f"git clone https://huggingface.co/{hub}") + ".*offline", cwd=tmp)
    install = re.escape("apt-get install python3-numpy python3-torch")
    guided("guide/no-numpy", [hf_dir, "--out", os.path.join(tmp, "guide-numpy")],
           "NumPy.*" + install, env={"PYTHONPATH": missing_module(tmp, "numpy")})
    case = copy_of(hf_dir, tmp, "pytorch-bin")
    os.rename(os.path.join(case, "model.safetensors"), os.path.join(case, "pytorch_model.bin"))
    guided("guide/no-torch", [case, "--out", os.path.join(tmp, "guide-torch")],
           "pytorch_model.bin.*PyTorch.*" + install,
           env={"PYTHONPATH": missing_module(tmp, "torch")})
    for name, pad_kept in (("no-pad-id", False), ("missing-id", True)):
        case = copy_of(hf_dir, tmp, name)
        path = os.path.join(case, "vocab.json")
        with open(path, encoding="utf-8") as f:
            vocab = json.load(f)
        gone = vocab["<pad>"] if not pad_kept else vocab["<pad>"] - 1
        with open(path, "w", encoding="utf-8") as f:
            json.dump({t: i for t, i in vocab.items() if i != gone}, f, ensure_ascii=False)
        out = os.path.join(tmp, "guide-" + name)
        if not pad_kept:
            refused("guide/vocab-json-without-pad-id", case, out, 'no pad_token "<pad>"')
            continue
        status, err = export(case, out)
        lines = err.strip().splitlines()
        report("guide/vocab-json-missing-id-warns-after-success",
               None if status == 0 and len(lines) == 1 and
               lines[0].startswith(f"export_hf: warning: {path}: 1 of the vocab_size") else
               f"exit {status}: {err.strip()[:300]!r}")


def main():
    check_rules()
    with scratch_directory("ted-export-refusals-") as tmp:
        hf_dir = make_checkpoint(tmp)
        good = os.path.join(tmp, "good")
        status, err = export(hf_dir, good)
        if status != 0:
            report("export/good", f"exit {status}: {err.strip()[:300]}")
            return
        ok("export/good")
        check_outputs(hf_dir, good, tmp)
        check_inputs(hf_dir, tmp)
        check_values(hf_dir, good, tmp)
        check_garbage(hf_dir, tmp)
        check_guidance(hf_dir, tmp)


if __name__ == "__main__":
    main()
    sys.exit(1 if failures() else 0)
