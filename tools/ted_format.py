"""What the exporters share: the safetensors file (written F32, or with int8
matrices; read F32, F16 or BF16 with NumPy only), config.yaml's scalars and
sections, vocabulary files, and the error every export raises.

tools/export_torch.py (PyTorch's translation tutorial model) and
tools/export_hf.py (Hugging Face MarianMTModel) both write through it.
"""
import itertools
import json
import mmap
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


class LazyTensor:
    """A float tensor whose values are made when they are needed: its shape
    now, its float32 values from load() (a new array each call, dropped by
    the caller once used), so an export holds one tensor's values at a time,
    not the model's."""

    def __init__(self, shape, load):
        self.shape = tuple(int(n) for n in shape)
        self.ndim = len(self.shape)
        self.dtype = np.dtype(np.float32)
        self._load = load

    def load(self):
        return self._load()


def values(tensor):
    """The values of a LazyTensor (loaded) or of an array (as it is)."""
    return tensor.load() if isinstance(tensor, LazyTensor) else np.asarray(tensor)


QUANTIZE_BLOCK = 1 << 16  # elements per block of rows quantized at once


def quantize_scale(name, matrix):
    """The F32 row scales of quantize_int8(name, matrix), alone."""
    w = np.asarray(matrix)
    scale = np.empty(w.shape[0], dtype=np.float32)
    for rows in _row_blocks(w):
        block = np.asarray(w[rows], dtype=np.float32)
        if not np.all(np.isfinite(block)):
            raise ExportError(f"tensor {name}: holds a NaN or an infinity; weights must be "
                              "finite")
        scale[rows] = np.max(np.abs(block), axis=1) / np.float32(127)
    return scale


def quantize_int8(name, matrix):
    """(q, scale) of a float matrix (rows, cols), symmetric per row: scale =
    max |row| / 127 (float32), q = row / scale rounded to the nearest
    integer, ties to even (int8 in [-127, 127]); a row of zeros gives scale 0
    and q 0. What `ted quantize` computes (src/model/quantize.c), bit for
    bit. Works through blocks of rows, so its temporaries stay small next to
    a large matrix."""
    w = np.asarray(matrix)
    scale = quantize_scale(name, w)
    q = np.empty(w.shape, dtype=np.int8)
    for rows in _row_blocks(w):
        block_scale = scale[rows, None]
        divisor = np.where(block_scale > 0, block_scale, np.float32(1))
        block = np.clip(np.rint(np.asarray(w[rows], dtype=np.float32) / divisor), -127, 127)
        q[rows] = np.where(block_scale > 0, block, 0)
    return q, scale


def _row_blocks(w):
    """Slices of the rows of matrix `w`, about QUANTIZE_BLOCK elements each."""
    step = max(1, QUANTIZE_BLOCK // max(1, w.shape[1]))
    return [slice(start, start + step) for start in range(0, w.shape[0], step)]


def quantized_tensors(tensors):
    """(name, array) pairs with every matrix replaced by its int8 values and
    a "NAME.scale" F32 vector; F32 tensors first, then the I8 ones, each
    sorted by name, so every F32 tensor stays 4-byte aligned in a mapping."""
    return [(name, _entry_bytes(name, kind, tensor).view(_FILE_TYPES[kind]).reshape(shape))
            for name, kind, shape, tensor in _file_entries(tensors, "int8")]


# What a file entry's kind is stored as: "scale" is a matrix's F32 row scales.
_FILE_TYPES = {"F32": np.dtype("<f4"), "I8": np.dtype("i1"), "Q8": np.dtype("i1"),
               "scale": np.dtype("<f4")}


def _file_entries(tensors, quantize):
    """[(name, kind, shape, tensor)] in the file's order. kind: "F32", "I8"
    (an int8 array written as it is), "Q8" (a matrix quantized to int8) or
    "scale" (that matrix's row scales). With quantize "int8": the F32
    entries first, then the int8 ones, each sorted by name, so every F32
    tensor stays 4-byte aligned in a mapping."""
    tensors = [(name, t if hasattr(t, "shape") else np.asarray(t)) for name, t in tensors]
    if quantize != "int8":
        return [(name, "I8" if t.dtype == np.int8 else "F32", tuple(t.shape), t)
                for name, t in tensors]
    floats, ints = [], []
    for name, t in tensors:
        shape = tuple(int(n) for n in t.shape)
        if len(shape) == 2:
            ints.append((name, "Q8", shape, t))
            floats.append((name + ".scale", "scale", shape[:1], t))
        else:
            floats.append((name, "F32", shape, t))
    return sorted(floats, key=lambda e: e[0]) + sorted(ints, key=lambda e: e[0])


def _entry_bytes(name, kind, tensor):
    """One file entry's data, as a flat uint8 array (a view of the values
    when they are already contiguous in the file's type)."""
    if kind == "Q8":
        array = quantize_int8(name, values(tensor))[0]
    elif kind == "scale":
        array = quantize_scale(name, values(tensor))
    else:
        array = np.ascontiguousarray(values(tensor), dtype=_FILE_TYPES[kind])
    return array.reshape(-1).view(np.uint8)


def safetensors_chunks(tensors, align=ALIGN, quantize=None):
    """The bytes of a safetensors file of (name, array or LazyTensor) pairs,
    as chunks to write in order: F32, or with quantize "int8" every matrix
    (Linear and embedding weights) as I8 with its scales
    (quantized_tensors). The header is padded with spaces so the data
    section starts at a multiple of `align` bytes; the tensors follow each
    other with no gap, as the safetensors format requires. The header comes
    from the shapes alone; the chunks are an iterator, and each tensor's
    bytes are made (a LazyTensor loaded, a matrix quantized) when the writer
    reaches them and dropped before the next, so writing holds one tensor's
    values at a time, not the whole file's."""
    if quantize not in (None,) + QUANTIZATIONS:
        raise ExportError(f"quantize {quantize!r}: expected one of {', '.join(QUANTIZATIONS)}")
    entries = _file_entries(tensors, quantize)
    header = {}
    offset = 0
    for name, kind, shape, _ in entries:
        size = _FILE_TYPES[kind].itemsize * int(np.prod(shape, dtype=np.int64))
        header[name] = {"dtype": "F32" if _FILE_TYPES[kind].kind == "f" else "I8",
                        "shape": [int(n) for n in shape],
                        "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % align)

    def data():
        for index in range(len(entries)):
            name, kind, _, tensor = entries[index]
            chunk = _entry_bytes(name, kind, tensor)
            yield chunk
            del chunk  # the caller drops its reference once written (safe_files.write)
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
                del chunk  # one tensor's bytes alive at a time
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
    data): the file mapped, not read into memory, each array a copy.
    Raises ExportError naming the file and tensor at fault."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            raw = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) if size else b""
    except (OSError, ValueError) as e:
        raise ExportError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
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
