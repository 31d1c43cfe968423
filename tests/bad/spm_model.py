"""SentencePiece model files, written by hand: the protobuf wire format of a
ModelProto (only what the tests and the fuzz seeds change) and the
normalization table that libsentencepiece reads from
normalizer_spec.precompiled_charsmap: a uint32 trie size, darts-clone
double-array units, then NUL-terminated replacement strings
(docs/model-format.md, "What ted refuses")."""
import struct


def read_varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def fields(data):
    """A message's bytes -> [(field, wire type, value)]: ints for varints,
    bytes for the rest."""
    at, out = 0, []
    while at < len(data):
        tag, at = read_varint(data, at)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = read_varint(data, at)
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, at = data[at:at + width], at + width
        elif wire == 2:
            length, at = read_varint(data, at)
            value, at = data[at:at + length], at + length
        else:
            raise ValueError(f"wire type {wire}")
        out.append((field, wire, value))
    return out


def varint(value):
    out = b""
    while True:
        low, value = value & 0x7f, value >> 7
        if not value:
            return out + bytes([low])
        out += bytes([low | 0x80])


def message(items):
    """[(field, wire type, value)] -> bytes."""
    out = b""
    for field, wire, value in items:
        out += varint(field << 3 | wire)
        if wire == 0:
            out += varint(value)
        elif wire == 2:
            out += varint(len(value)) + value
        else:
            out += value
    return out


def offset(unit):
    """darts-clone's DoubleArrayUnit::offset()."""
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


def double_array(values):
    """{key bytes: value} -> the darts-clone double array (a list of uint32
    units) that commonPrefixSearch walks: a node's children at
    (node ^ offset) ^ byte, its value in the unit at node ^ offset."""
    trie = {}
    for key, value in values.items():
        node = trie
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = value
    units, used = [0] * 256, {0}

    def place(node, index):
        labels = sorted(c for c in node if c is not None)
        need = labels + ([0] if None in node else [])
        base = 256
        while base == index or any(base ^ c in used for c in need):
            base += 1
        while len(units) <= base | 0xff:
            units.extend([0] * 256)
        units[index] |= (index ^ base) << 10 | ((1 << 8) if None in node else 0)
        used.update(base ^ c for c in need)
        if None in node:
            units[base] = 0x80000000 | node[None]
        for c in labels:
            units[base ^ c] = c
        for c in labels:
            place(node[c], base ^ c)

    place(trie, 0)
    return units


def charsmap(rules):
    """{input bytes: replacement bytes} -> a precompiled_charsmap."""
    strings, values = b"", {}
    for key, replacement in sorted(rules.items()):
        values[key] = len(strings)
        strings += replacement + b"\0"
    return join_charsmap(double_array(values), strings)


def join_charsmap(units, strings, trie_bytes=None):
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie) if trie_bytes is None else trie_bytes) + trie + strings


def split_charsmap(blob):
    """A precompiled_charsmap -> (units, strings)."""
    size = struct.unpack("<I", blob[:4])[0]
    return list(struct.unpack(f"<{size // 4}I", blob[4:4 + size])), blob[4 + size:]


def node_of(units, key):
    """The index of the unit that `key` leads to from the root."""
    index = 0
    for byte in key:
        index = index ^ offset(units[index]) ^ byte
    return index


def with_charsmap(model, blob, field=3):
    """A ModelProto's bytes with the precompiled_charsmap of its
    normalizer_spec (field 3) or denormalizer_spec (field 5) set to `blob`."""
    out, done = [], False
    for f, wire, value in fields(model):
        if f == field and wire == 2:
            spec = [(g, w, v) for g, w, v in fields(value) if g != 2]
            value, done = message(spec + [(2, 2, blob)]), True
        out.append((f, wire, value))
    if not done:
        out.append((field, 2, message([(1, 2, b"hostile"), (2, 2, blob)])))
    return message(out)


# Rules of a small table: what the tests' texts ("s1 s2", "the cat") meet.
RULES = {b"A": b"a", b"s": b"s", b"ss": b"\xc3\x9f", b"\xef\xac\x81": b"fi",
         b"t": b"t", b"  ": b" "}


def hostile_charsmaps():
    """(name, blob, what the refusal says) for each way a table can point
    outside itself; each one is met by any text with an 's' or a 't'."""
    def corrupt(change):
        units, strings = split_charsmap(charsmap(RULES))
        return change(units, strings)

    def set_unit(key, unit):
        def change(units, strings):
            units[node_of(units, key)] = unit(units[node_of(units, key)])
            return join_charsmap(units, strings)
        return change

    def set_value(key, value):
        def change(units, strings):
            node = node_of(units, key)
            units[node ^ offset(units[node])] = 0x80000000 | value(strings)
            return join_charsmap(units, strings)
        return change

    far = 0x1fffff << 10
    yield ("root-out-of-range", corrupt(set_unit(b"", lambda u: (u & 0x3ff) | far)),
           "has a trie root that points outside its [0-9]+ units")
    yield ("unit-out-of-range", corrupt(set_unit(b"s", lambda u: (u & 0x3ff) | far)),
           "has trie unit [0-9]+ pointing to unit [0-9]+, outside its [0-9]+ units")
    yield ("units-cut-short", corrupt(lambda u, s: join_charsmap(u[:300], s)),
           "has a trie root that points outside its 300 units")
    yield ("no-units", corrupt(lambda u, s: join_charsmap([], s)),
           "has a trie root that points outside its 0 units")
    yield ("trie-size-past-end", corrupt(lambda u, s: join_charsmap(u, s, 4 * len(u) + len(s) + 3)),
           "claims a trie of [0-9]+ bytes where only [0-9]+ follow its size")
    yield ("string-offset-past-end", corrupt(set_value(b"s", lambda s: 0x7fffff00)),
           "has trie unit [0-9]+ pointing to byte 2147483392 of its [0-9]+ bytes of strings")
    yield ("string-offset-at-end", corrupt(set_value(b"s", len)),
           "has trie unit [0-9]+ pointing to byte [0-9]+ of its [0-9]+ bytes of strings, past "
           "the last NUL-terminated one")
    yield ("strings-without-nul", corrupt(lambda u, s: join_charsmap(u, s.replace(b"\0", b"x"))),
           "has trie unit [0-9]+ pointing to byte [0-9]+ of its [0-9]+ bytes of strings, "
           "past the last NUL-terminated one")
