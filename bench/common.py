"""What the bench scripts share: SentencePiece model files written field by
field, and the host's CPU as /proc/cpuinfo names it."""
import os
import platform
import random
import struct
import tempfile


# ---- SentencePiece model files -----------------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def piece_field(piece, score):
    """ModelProto field 1 (pieces): a SentencePiece message of piece
    (field 1, string) and score (field 2, float); its type is NORMAL."""
    text = piece.encode("utf-8")
    body = b"\x0a" + varint(len(text)) + text + b"\x15" + struct.pack("<f", score)
    return b"\x0a" + varint(len(body)) + body


def made_up_pieces(taken, count):
    """`count` pieces not in `taken`: letter strings, every other one a
    word start (▁)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    out, n = [], 26
    while len(out) < count:
        word, i = "", n
        while i:
            i, r = divmod(i, 26)
            word += letters[r]
        piece = ("\u2581" if n % 2 else "") + word
        if piece not in taken:
            out.append(piece)
        n += 1
    return out


def made_up_corpus(seed, words, sentences):
    """`sentences` sentences of 12 words, each drawn from `words` made-up
    words of 2 to 9 letters, all from random.Random(seed)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
                  for _ in range(words)]
    return [" ".join(rng.choice(vocabulary) for _ in range(12)) for _ in range(sentences)]


def write_filled_spm(path, seed, trained, pieces, who, **options):
    """A SentencePiece model trained on made-up words drawn from `seed`
    (`trained` pieces; `options`: the trainer's model_type and special ids),
    then filled up to `pieces` pieces with made-up ones scored below every
    trained piece, written to path. `who` names the script in errors."""
    import sentencepiece

    corpus = made_up_corpus(seed, 6000, 8000)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "spm")
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(corpus), model_prefix=prefix, vocab_size=trained,
            **options, minloglevel=2, num_threads=1)
        with open(prefix + ".model", "rb") as f:
            data = f.read()
    processor = sentencepiece.SentencePieceProcessor(model_proto=data)
    taken = [processor.id_to_piece(i) for i in range(len(processor))]
    lowest = min(processor.get_score(i) for i in range(3, len(processor)))
    extra = made_up_pieces(set(taken), pieces - len(taken))
    data += b"".join(piece_field(p, lowest - 1 - i) for i, p in enumerate(extra))
    if len(sentencepiece.SentencePieceProcessor(model_proto=data)) != pieces:
        raise SystemExit(f"{who}: the filled SentencePiece model has the wrong size")
    with open(path, "wb") as f:
        f.write(data)


# ---- the host -------------------------------------------------------------------------

def cpu_name_and_flags(unknown="unknown CPU"):
    """(the first CPU's model name, its flags) from /proc/cpuinfo; `unknown`
    (or platform.processor()) and no flags where it cannot be read."""
    name, flags = platform.processor() or unknown, []
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    name = value.strip()
                elif key.strip() == "flags":
                    flags = value.split()
                    break
    except OSError:
        pass
    return name, flags
