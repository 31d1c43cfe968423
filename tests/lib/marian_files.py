"""Marian model files built byte by byte, for the tests and the fuzz seeds
(fuzz/make_seeds.py): the Python side of tests/unit/marian_files.h."""
import struct


def marian_bin(items):
    """Marian's .bin (marian-dev src/common/binary.cpp saveItems): items as
    (name, type, shape, data bytes), each padded to 256."""
    pad = [(-len(d)) % 256 for _, _, _, d in items]
    out = struct.pack("<QQ", 1, len(items))
    for (name, kind, shape, data), p in zip(items, pad):
        out += struct.pack("<QQQQ", len(name) + 1, kind, len(shape), len(data) + p)
    out += b"".join(n.encode() + b"\0" for n, _, _, _ in items)
    out += b"".join(struct.pack(f"<{len(s)}i", *s) for _, _, s, _ in items)
    nextpos = ((len(out) + 8) // 256 + 1) * 256
    out += struct.pack("<Q", nextpos - len(out) - 8)
    out += b"\0" * (nextpos - len(out))
    return out + b"".join(d + b"\0" * p for (_, _, _, d), p in zip(items, pad))
