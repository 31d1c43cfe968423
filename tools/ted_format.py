"""What the exporters share: the safetensors file (written F32, or with int8
matrices; read F32, F16 or BF16 with NumPy only), config.yaml's scalars and
sections, vocabulary files, and the error every export raises.

tools/export_torch.py (PyTorch's translation tutorial model) and
tools/export_hf.py (Hugging Face MarianMTModel) both write through it.
"""
import itertools
import json
import os
import struct
import sys
import tempfile

import numpy as np

ALIGN = 64  # byte alignment of the data section

# The largest safetensors header ted reads (src/io/safetensors.c).
MAX_HEADER_BYTES = 100 << 20

_DTYPES = {"F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
           "BF16": np.dtype("<u2")}


class ExportError(Exception):
    """An export that cannot be done; the message names what is at fault."""


def run_export(program, out_dir, export):
    """An exporter's command: export() writes `out_dir` and returns the
    model section written. Prints what was written, or the ExportError on
    one line of standard error; returns the exit status."""
    try:
        m = export()
    except ExportError as e:
        print(f"{program}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out_dir}: d_model {m['d_model']}, {m['heads']} heads, "
          f"{m['encoder_layers']}+{m['decoder_layers']} layers, d_ff {m['d_ff']}, "
          f"vocab {m['src_vocab_size']}/{m['tgt_vocab_size']}")
    return 0


QUANTIZATIONS = ("int8",)


def quantize_int8(name, matrix):
    """(q, scale) of a float matrix (rows, cols), symmetric per row: scale =
    max |row| / 127 (float32), q = row / scale rounded to the nearest
    integer, ties to even (int8 in [-127, 127]); a row of zeros gives scale 0
    and q 0. What `ted quantize` computes (src/model/quantize.c), bit for bit."""
    w = np.ascontiguousarray(matrix, dtype=np.float32)
    if not np.all(np.isfinite(w)):
        raise ExportError(f"tensor {name}: holds a NaN or an infinity; weights must be finite")
    scale = (np.max(np.abs(w), axis=1) / np.float32(127)).astype(np.float32)
    divisor = np.where(scale > 0, scale, np.float32(1))[:, None]
    q = np.clip(np.rint(w / divisor), -127, 127)
    q = np.where(scale[:, None] > 0, q, 0).astype(np.int8)
    return q, scale


def quantized_tensors(tensors):
    """(name, array) pairs with every matrix replaced by its int8 values and
    a "NAME.scale" F32 vector; F32 tensors first, then the I8 ones, each
    sorted by name, so every F32 tensor stays 4-byte aligned in a mapping."""
    floats, ints = [], []
    for name, array in tensors:
        array = np.asarray(array)
        if array.ndim == 2:
            q, scale = quantize_int8(name, array)
            ints.append((name, q))
            floats.append((name + ".scale", scale))
        else:
            floats.append((name, np.asarray(array, dtype=np.float32)))
    return sorted(floats, key=lambda t: t[0]) + sorted(ints, key=lambda t: t[0])


def safetensors_chunks(tensors, align=ALIGN, quantize=None):
    """The bytes of a safetensors file of (name, array) pairs, as chunks to
    write in order: F32, or with quantize "int8" every matrix
    (Linear and embedding weights) as I8 with its scales
    (quantized_tensors). The header is padded with spaces so the data
    section starts at a multiple of `align` bytes; the tensors follow each
    other with no gap, as the safetensors format requires. The chunks are
    an iterator: each tensor's bytes are made when the writer reaches them
    (a byte view of the array itself when it is already contiguous in the
    file's type), so writing holds at most one tensor's copy at a time, not
    the whole file's."""
    if quantize not in (None,) + QUANTIZATIONS:
        raise ExportError(f"quantize {quantize!r}: expected one of {', '.join(QUANTIZATIONS)}")
    tensors = quantized_tensors(tensors) if quantize == "int8" else \
        [(name, np.asarray(array)) for name, array in tensors]
    header = {}
    offset = 0
    for name, array in tensors:
        dtype = np.dtype("i1" if array.dtype == np.int8 else "<f4")
        size = dtype.itemsize * int(np.prod(array.shape, dtype=np.int64))
        header[name] = {"dtype": "I8" if dtype.kind == "i" else "F32",
                        "shape": [int(n) for n in array.shape],
                        "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % align)

    def data():
        for _, array in tensors:
            dtype = "i1" if array.dtype == np.int8 else "<f4"
            yield np.ascontiguousarray(array, dtype=dtype).reshape(-1).view(np.uint8)
    return itertools.chain([struct.pack("<Q", len(text)), text], data())


def write_safetensors(path, tensors, align=ALIGN, quantize=None):
    """Writes (name, array) pairs as safetensors (safetensors_chunks) to a
    new temporary file next to `path` (a unique name, created exclusively),
    renamed over `path` once whole; removed if writing fails."""
    chunks = safetensors_chunks(tensors, align, quantize)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".",
                               prefix=os.path.basename(path) + ".")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_safetensors(path):
    """(header dict, data offset, file bytes) of a safetensors file, for checks."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    return header, 8 + length, data


def _tensor_from_entry(path, name, entry, data):
    """One header entry -> a float32 array (F16 and BF16 widened, F64 rounded)."""
    if not isinstance(entry, dict):
        raise ExportError(f"{path}: tensor {name}: entry is not an object")
    dtype = _DTYPES.get(entry.get("dtype"))
    if dtype is None:
        raise ExportError(f"{path}: tensor {name}: dtype {entry.get('dtype')!r} is not a "
                          "float type (F64, F32, F16 or BF16)")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if (not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape)
            or not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(n, int) for n in offsets)):
        raise ExportError(f"{path}: tensor {name}: bad shape or data_offsets")
    begin, end = offsets
    count = int(np.prod(shape, dtype=np.int64))
    if not 0 <= begin <= end <= len(data) or end - begin != count * dtype.itemsize:
        raise ExportError(f"{path}: tensor {name}: data_offsets {offsets} do not hold shape "
                          f"{shape} of {entry['dtype']} (file truncated?)")
    array = np.frombuffer(data, dtype=dtype, count=count, offset=begin).reshape(shape)
    if entry["dtype"] == "BF16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def read_tensors(path):
    """Every float tensor of a safetensors file as a float32 NumPy array, by name
    (the format: an 8-byte little-endian header length, a JSON header, the
    data). Raises ExportError naming the file and tensor at fault."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ExportError(f"{path}: {e.strerror}") from None
    if len(raw) < 8:
        raise ExportError(f"{path}: {len(raw)} bytes is too short for a safetensors file")
    (length,) = struct.unpack("<Q", raw[:8])
    if length > min(MAX_HEADER_BYTES, len(raw) - 8):
        raise ExportError(f"{path}: header length {length} runs past the end of the file")
    try:
        header = json.loads(raw[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ExportError(f"{path}: the header is not JSON: not a safetensors file") from None
    if not isinstance(header, dict):
        raise ExportError(f"{path}: the header is not a JSON object")
    data = memoryview(raw)[8 + length:]
    return {name: _tensor_from_entry(path, name, entry, data)
            for name, entry in header.items() if name != "__metadata__"}


# The one token a vocabulary file may repeat: its later lines are rows
# without a token (src/io/vocab.h, TED_VOCAB_NO_TOKEN).
NO_TOKEN = "<unk>"


def vocab_problem(tokens):
    """What keeps `tokens` from being a vocabulary file ted reads back the
    same (one token per line, the line number the id), or None: a token
    empty, with a NUL or a line end inside, ending in CR, or given twice
    (but NO_TOKEN)."""
    seen = {}
    for index, token in enumerate(tokens):
        problem = ("is empty" if not token else "holds a NUL byte" if "\0" in token
                   else "holds a line end" if "\n" in token or token.endswith("\r")
                   else f"is also id {seen[token]}" if token in seen and token != NO_TOKEN
                   else None)
        if problem:
            return (f"token {token!r} (id {index}) {problem}: it cannot be one line of a "
                    "vocabulary file")
        seen.setdefault(token, index)
    return None


def write_vocab(path, tokens):
    """A vocabulary file: one token per line, the line number (from 0) the id."""
    problem = vocab_problem(tokens)
    if problem:
        raise ExportError(f"{path}: {problem}")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(tokens) + "\n")


def yaml_float(value):
    """A float as YAML text that reads back to the same value (repr) and that
    YAML 1.1 parsers also take for a float (a dot in the mantissa)."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (e + exponent if e else "")


def yaml_bool(value):
    return "true" if value else "false"


def yaml_scalar(value):
    """A config value as YAML: bools, ints, floats, words, lists of ints and
    lists of strings (language codes, each double-quoted as JSON spells it,
    which YAML reads back: ">>fra<<" cannot be a plain scalar)."""
    if isinstance(value, bool):
        return yaml_bool(value)
    if isinstance(value, float):
        return yaml_float(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(json.dumps(v) if isinstance(v, str) else str(int(v))
                               for v in value) + "]"
    return str(value)


def config_yaml(header, sections):
    """config.yaml text: `header` lines as comments, then each (name, body)
    of `sections` in order. A body is a scalar (a top-level key such as
    weights) or a list of rows: (key, value) or (key, value, comment), or
    a string, written as a comment line of its own."""
    lines = ["# " + line.replace("\n", " ").replace("\r", " ") for line in header]
    for name, body in sections:
        if not isinstance(body, list):
            lines.append(f"{name}: {yaml_scalar(body)}")
            continue
        lines.append(f"{name}:")
        for row in body:
            if isinstance(row, str):
                lines.append(f"  # {row}")
                continue
            key, value, *comment = row
            lines.append(f"  {key}: {yaml_scalar(value)}" + (f"  # {comment[0]}" if comment else ""))
    return "\n".join(lines) + "\n"
