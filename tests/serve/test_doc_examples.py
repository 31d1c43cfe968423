#!/usr/bin/python3
"""The examples of README.md and docs/serving.md, run as a reader runs them,
against the output the documents show; the documents' links followed.

    TED=build/ted /usr/bin/python3 tests/serve/test_doc_examples.py

The documents' fenced `sh` blocks are read in order:
  - `build/ted serve -m ...` starts that server (on a free port); it serves
    every `curl` that follows, until the next such line;
  - `curl ... localhost:8080/...` is run against it; its documented output is
    the `# ...` lines under it, or the fenced block right after the `sh` block
    when the command ends that block;
  - `$ build/ted ...` is run; its documented output is the lines up to the
    next `$`.
The output is compared with the documented one: as JSON where that parses
(numbers within 1e-4 relative, as printed figures differ in their last
digits between kernel sets), as events for a stream of Server-Sent Events
(each sentence's tokens in order, however they are grouped into events),
else line by line; a document's `...` stands for lines (or, inside a line,
text) left out, so what it shows around the `...` must appear in that
order.

An example the document marks with `<!-- example not run: why -->` on the
line before its block is skipped, with that reason printed (a figure of a
server under load, a model the repository does not ship).

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  links FILE  every relative link of README.md, CONTRIBUTING.md, docs/*.md and
              models/*/README.md leads to a file, and a heading, that exist
  FILE:LINE   the example starting at that line of that document
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import SLOW, TED, check, failures, fail  # noqa: E402

DOCUMENTS = ["README.md", os.path.join("docs", "serving.md")]
TIMEOUT = 120 * SLOW
RELATIVE = 1e-4
NOT_RUN = re.compile(r"<!-- example not run: (.*?) -->")


# ---- reading a document ----------------------------------------------------------

def fenced_blocks(path):
    """[(first line number, language, [lines], why not run or None)]"""
    blocks, inside, skip = [], None, None
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if inside is not None:
                if line.startswith("```"):
                    blocks.append(inside)
                    inside = None
                else:
                    inside[2].append(line)
            elif line.startswith("```"):
                inside = (number + 1, line[3:].strip(), [], skip)
                skip = None
            else:
                marked = NOT_RUN.search(line)
                skip = marked.group(1) if marked else (skip if not line.strip() else None)
    return blocks


def commands(lines):
    """The block's lines as [(command, [comment lines after it])]: a command
    goes on over lines while a quote is open or a line ends in a backslash."""
    out, pending, joined = [], "", "\n"
    for line in lines:
        if not pending and line.lstrip().startswith("#"):
            if out:
                out[-1][1].append(line.lstrip()[1:].strip())
            continue
        pending = pending + joined + line if pending else line
        joined = "\n"
        if pending.endswith("\\"):
            pending, joined = pending[:-1].rstrip(), " "
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:
            continue
        out.append((pending, []))
        pending = ""
    return out


def prompt_runs(lines):
    """A block of `$ command` lines, each followed by its output: [(command,
    [output lines])]; a command's lines go on while they end in a backslash."""
    out, continued = [], False
    for line in lines:
        if line.startswith("$ ") or continued:
            text = line[2:] if line.startswith("$ ") and not continued else line.strip()
            if continued:
                out[-1] = (out[-1][0] + " " + text.rstrip("\\").strip(), out[-1][1])
            else:
                out.append((text.rstrip("\\").strip(), []))
            continued = line.endswith("\\")
        elif out:
            out[-1][1].append(line)
    return out


# ---- comparing ---------------------------------------------------------------------

def same_json(got, want):
    if isinstance(want, float) or isinstance(got, float):
        if not isinstance(got, (int, float)) or not isinstance(want, (int, float)):
            return False
        return abs(got - want) <= RELATIVE * max(abs(want), 1e-12) + 1e-12
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and \
            all(same_json(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and \
            all(same_json(g, w) for g, w in zip(got, want))
    return type(got) is type(want) and got == want


def with_gaps(got, want):
    """want's pieces around each `...`, found in got in order (white space
    between JSON tokens ignored)."""
    squeeze = (lambda s: re.sub(r"\s+", "", s)) if want.lstrip()[:1] in "[{" else (lambda s: s)
    place = 0
    for piece in want.split("..."):
        for part in piece.split("\n"):
            part = squeeze(part.strip())
            if not part:
                continue
            found = squeeze(got).find(part, place)
            if found < 0:
                return f"{part!r} is not in the output (after byte {place})"
            place = found + len(part)
    return None


def events(text):
    """A Server-Sent Events stream: ({index: tokens appended, in order},
    the done event's data or None); lines that are not an event's are left
    out (the document's `...`)."""
    tokens, done, kind = {}, None, None
    for line in text.split("\n"):
        if line.startswith("event: "):
            kind = line[len("event: "):]
        elif line.startswith("data: ") and kind == "token":
            data = json.loads(line[len("data: "):])
            tokens.setdefault(data["index"], []).extend(data["tokens"])
        elif line.startswith("data: ") and kind == "done":
            done = json.loads(line[len("data: "):])
    return tokens, done


def event_difference(got, want):
    """The tokens each sentence's events append, as the document shows
    them: the same from the first (its `...` leaves the rest out; how the
    tokens are grouped into events depends on timing), and the same done
    event."""
    got_tokens, got_done = events(got)
    want_tokens, want_done = events(want)
    for index, tokens in want_tokens.items():
        if got_tokens.get(index, [])[:len(tokens)] != tokens:
            return f"sentence {index}: tokens {got_tokens.get(index)}, documented {tokens}"
    return None if same_json(got_done, want_done) else f"done: {got_done}"


def difference(got, want):
    """None when the output got is the documented want, else why not."""
    if want.startswith("event: "):
        return event_difference(got, want)
    if "..." in want:
        return with_gaps(got, want)
    try:
        wanted = json.loads(want)
    except ValueError:
        wanted = None
    if wanted is not None:
        try:
            answer = json.loads(got)
        except ValueError:
            return f"the output is not JSON: {got[:200]!r}"
        return None if same_json(answer, wanted) else f"got {got.strip()[:400]}"
    if got.rstrip("\n").split("\n") != want.rstrip("\n").split("\n"):
        return f"got {got.strip()[:400]!r}"
    return None


# ---- running -----------------------------------------------------------------------

class Reader:
    """Runs a document's examples in order, with the server its text last
    started."""

    def __init__(self, path):
        self.path = path
        self.server = None
        self.models = None

    def start(self, command):
        words = shlex.split(command, comments=True)
        models = [w for prev, w in zip(words, words[1:]) if prev == "-m"]
        if self.models == models:
            return
        self.stop()
        self.models = models
        self.server = ted_test.Server([os.path.join(ROOT, m) for m in models])

    def stop(self):
        if self.server is not None:
            status = self.server.stop()
            check(f"{self.path}: ted serve {' '.join(self.models)} stops", status == 0,
                  f"exit {status}: {self.server.last_words()}")
            self.server = None

    def run(self, command):
        if self.server is None:
            return None, "no `build/ted serve` line before it in the document"
        here = command.replace("localhost:8080", f"127.0.0.1:{self.server.port}")
        done = subprocess.run(["bash", "-c", here], cwd=ROOT, capture_output=True,
                              text=True, timeout=TIMEOUT)
        return done.stdout, None


def ted_command(command):
    """A documented `build/ted ...` as run here: the build's ted."""
    return TED + command[len("build/ted"):]


def check_example(name, got, want, problem=None):
    if problem is None and got is not None:
        problem = difference(got, want)
    check(name, problem is None, problem)


def read_sh_block(reader, block, following):
    number, _, lines, _ = block
    if any(line.startswith("$ ") for line in lines):
        for command, output in prompt_runs(lines):
            done = subprocess.run(["bash", "-c", ted_command(command)], cwd=ROOT,
                                  capture_output=True, text=True, timeout=TIMEOUT)
            check_example(f"{reader.path}:{number} {command[:60]}", done.stdout,
                          "\n".join(output))
        return
    runs = commands(lines)
    for i, (command, comments) in enumerate(runs):
        line = command.strip()
        serve = re.search(r"(?:^|&& )(build/ted serve .*)", line)
        if serve:
            reader.start(serve.group(1))
            continue
        if not line.startswith("curl "):
            continue
        want = "\n".join(comments)
        if not comments and i == len(runs) - 1 and following is not None:
            want = "\n".join(following[2])
        if not want.strip():
            continue
        got, problem = reader.run(line)
        check_example(f"{reader.path}:{number} {line[:60]}", got, want, problem)


def read_document(path):
    reader = Reader(path)
    blocks = fenced_blocks(path)
    try:
        for i, block in enumerate(blocks):
            if block[1] != "sh":
                continue
            if block[3] is not None:
                print(f"skip {path}:{block[0]}: {block[3]}")
                continue
            following = blocks[i + 1] if i + 1 < len(blocks) and \
                blocks[i + 1][1] != "sh" and \
                blocks[i + 1][0] == block[0] + len(block[2]) + 2 else None
            try:
                read_sh_block(reader, block, following)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                fail(f"{path}:{block[0]}", str(e))
    finally:
        reader.stop()


# ---- links -------------------------------------------------------------------------

def anchors(path):
    """The anchors of a Markdown file: GitHub's slug of each heading, and
    each `id="..."`."""
    found = set()
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for heading in re.findall(r"^#+\s+(.*)$", text, flags=re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    found.update(re.findall(r'id="([^"]+)"', text))
    return found


def check_links():
    """Every relative link of the documents a reader opens leads to a file
    that exists, and to a heading of it that exists."""
    pages = ["README.md", "CONTRIBUTING.md"] + sorted(
        os.path.relpath(p, ROOT) for pattern in ("docs/*.md", "models/*/README.md")
        for p in glob.glob(os.path.join(ROOT, pattern)))
    for page in pages:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        broken = []
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", link):
                continue
            target, _, anchor = link.partition("#")
            path = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target)) \
                if target else os.path.join(ROOT, page)
            if not os.path.exists(path):
                broken.append(f"{link} (no such file)")
            elif anchor and path.endswith(".md") and anchor not in anchors(path):
                broken.append(f"{link} (no such heading)")
        check(f"links {page}", not broken, ", ".join(broken))


def main():
    check_links()
    for path in DOCUMENTS:
        read_document(path)
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
