#!/usr/bin/python3
"""Documents, with the shipped English -> French model (models/en-fr):
paragraphs cut into sentences (`ted translate --split-sentences`, /v1's
"split_sentences": true) and HTML pages (`ted translate --format html`,
/v1's "format": "html").

    TED=build/ted /usr/bin/python3 tests/serve/test_documents.py

The reference for every sentence is `ted translate` of that sentence alone
(one a line, nothing split). The sentences of a paragraph are this script's
own lists; the blocks of a page and their text come from Python's
html.parser, the page's DOM from html5lib (Debian's python3-html5lib), and
a block's sentences from a regular expression (the pages' sentences are
plain): nothing of ted's own splitting or parsing is the reference. The
translation quality does not matter, the equalities do.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  sentences/cli, sentences/serve
        each paragraph (abbreviations, quotes, ellipses, several scripts,
        odd spacing, line breaks through /v1) is the translations of its
        sentences joined with its own separators, byte for byte
  html/PAGE/markup  the page's markup, every tag with its attributes,
        comment and doctype (html.parser's tokens without the text), is
        unchanged: nothing dropped, nothing injected
  html/PAGE/dom     html5lib's DOM of the page without its text is unchanged
        (but for inline elements without element children: see dom_shape)
  html/PAGE/kept    the text of script, style, code, pre, kbd, textarea and
        of translate="no" / class="notranslate" elements is unchanged
  html/PAGE/text    each block's text (inline elements inside a block) is
        the translations of its sentences
  html/PAGE/serve   /v1 "format": "html" answers the same page
  errors/*          invalid UTF-8 names its byte (exit 1, 400); n_best and
        scores are refused with documents
"""
import html.parser
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import TED, check, fail, failures, run, ted_output  # noqa: E402

MODEL = os.path.join(ROOT, "models", "en-fr")
PAGES = os.path.join(ROOT, "tests", "data", "html")

# Paragraphs: their sentences, and the separators before, between and after them.
PARAGRAPHS = [
    (["Dr. Smith arrived at 10 a.m. on Monday.", 'He said "Hello, my friend."',
      "Mr. Jones, e.g. the baker, came too."], ["", "  ", " ", ""]),
    (["Wait...", "What happened?", "The cat ate the bird... and then it slept."],
     ["", " ", "\t", ""]),
    (['"Stop." she said to the dog.', "It costs $3.50 (i.e. very little)!",
      "U.S. citizens vote in November."], ["", " ", " ", ""]),
    (["你好。", "世界很大！", "Привет.", "Как дела?", "नमस्ते।", "ठीक है।", "مرحبا بكم."],
     ["", "", " ", " ", " ", " ", " ", ""]),
    (["The black cat eats the small bird.", "My sister did not see the old green car."],
     ["\t ", "   ", "  "]),
    (["no final punctuation here"], ["", ""]),
]
# Only through /v1: a line break ends a sentence (a line of ted translate's
# input is a paragraph).
LINE_BREAKS = [(["First line.", "Second line", "Third line."], ["", "\n", "\r\n", "\n"])]

INLINE = {"a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font",
          "i", "ins", "q", "s", "mark", "small", "span", "label", "strike", "strong", "sub",
          "sup", "time", "tt", "u"}
KEPT = {"script", "style", "code", "pre", "kbd", "samp", "textarea"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


def joined(sentences, separators, translation):
    out = separators[0]
    for s, sep in zip(sentences, separators[1:]):
        out += translation[s] + sep
    return out


def translate_alone(sentences):
    """{sentence: ted translate's translation of it alone}."""
    unique = sorted(set(sentences))
    out = ted_output(["translate", "-m", MODEL], "".join(s + "\n" for s in unique))
    lines = out.split("\n")[:-1]
    if len(lines) != len(unique):
        raise RuntimeError(f"{len(lines)} translations of {len(unique)} sentences")
    return dict(zip(unique, lines))


def collapse(text):
    return re.sub(r"\s+", " ", text).strip()


def split_block(text):
    """The sentences of a block of plain prose."""
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z©])", collapse(text)) if s]


# ---- HTML seen by html.parser -------------------------------------------------------

class Tokens(html.parser.HTMLParser):
    """The markup tokens of a page, and its blocks of translatable text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.markup = []
        self.blocks = [""]
        self.states = []  # (tag, translating)

    def translating(self):
        return self.states[-1][1] if self.states else True

    def boundary(self):
        if self.blocks[-1]:
            self.blocks.append("")

    def handle_starttag(self, tag, attrs):
        self.markup.append(("start", tag, attrs))
        parent = self.translating()
        state = parent and tag not in KEPT and not any(s[0] in KEPT for s in self.states)
        a = dict(attrs)
        if (a.get("translate") or "").lower() == "yes" and not any(s[0] in KEPT for s in self.states) \
                and tag not in KEPT:
            state = True
        if (a.get("translate") or "").lower() == "no" or "notranslate" in (a.get("class") or ""):
            state = False
        if tag not in INLINE or state != parent:
            self.boundary()
        if tag not in VOID:
            self.states.append((tag, state))

    def handle_startendtag(self, tag, attrs):
        self.markup.append(("startend", tag, attrs))
        if tag not in INLINE:
            self.boundary()

    def handle_endtag(self, tag):
        self.markup.append(("end", tag))
        before = self.translating()
        names = [s[0] for s in self.states]
        if tag in names:
            del self.states[len(names) - 1 - names[::-1].index(tag):]
        if tag not in INLINE or before != self.translating():
            self.boundary()

    def handle_data(self, data):
        if self.translating() and not (self.states and self.states[-1][0] in KEPT):
            self.blocks[-1] += data

    def handle_comment(self, data):
        self.markup.append(("comment", data))

    def handle_decl(self, data):
        self.markup.append(("decl", data))

    def handle_pi(self, data):
        self.markup.append(("pi", data))

    def unknown_decl(self, data):
        self.markup.append(("unknown_decl", data))


def tokens(page):
    t = Tokens()
    t.feed(page)
    t.close()
    t.blocks = [b for b in (collapse(b) for b in t.blocks) if b]
    return t


# ---- HTML seen by html5lib ---------------------------------------------------------

def dom_shape(page):
    """html5lib's tree of the page without its text: (tag, attributes,
    children). Inline elements without element children are left out: the
    HTML5 parser re-opens formatting elements to hold text after misnested
    tags (<b>x<i>y</b> z</i>: a second <i> for " z"), so whether such an
    element exists depends on the text; the markup check sees every one of
    them as a token."""
    import html5lib

    def shape(e):
        tag = e.tag if isinstance(e.tag, str) else "#comment:" + (e.text or "")
        children = [shape(c) for c in e if not (c.tag in INLINE and len(c) == 0)]
        return (tag, sorted(e.attrib.items()), children)
    return shape(html5lib.parse(page, treebuilder="etree", namespaceHTMLElements=False))


def kept_texts(page):
    """The text that stays: inside kept elements and translate="no" ones."""
    import html5lib
    texts = []

    def walk(e, translating):
        tag = e.tag if isinstance(e.tag, str) else ""
        if tag in KEPT:
            translating = False
        elif e.attrib.get("translate", "").lower() == "yes" and translating is not None:
            translating = True
        if e.attrib.get("translate", "").lower() == "no" or "notranslate" in e.attrib.get("class", ""):
            translating = False
        if tag in KEPT:
            translating = None  # nothing inside comes back
        if not translating:
            texts.append(e.text or "")
        for c in e:
            walk(c, translating)
            if not translating:
                texts.append(c.tail or "")
    walk(html5lib.parse(page, treebuilder="etree", namespaceHTMLElements=False), True)
    return texts


# ---- the checks ---------------------------------------------------------------------

def check_paragraphs(server):
    sentences = [s for p in PARAGRAPHS + LINE_BREAKS for s in p[0]]
    reference = translate_alone(sentences)
    expected = [joined(s, sep, reference) for s, sep in PARAGRAPHS]
    lines = "".join(joined(s, sep, {x: x for x in s}) + "\n" for s, sep in PARAGRAPHS)
    status, out, err = run([TED, "translate", "-m", MODEL, "--split-sentences"], lines)
    got = out.split("\n")[:-1]
    if status != 0:
        fail("sentences/cli", f"exit {status}: {err.strip()[-200:]}")
    else:
        wrong = [(e, g) for e, g in zip(expected, got) if e != g]
        check("sentences/cli", len(got) == len(expected) and not wrong,
              f"{len(got)} lines for {len(expected)}; first difference {wrong[:1]}")
    texts = [joined(s, sep, {x: x for x in s}) for s, sep in PARAGRAPHS + LINE_BREAKS]
    status, _, body = server.translate({"text": texts, "split_sentences": True})
    want = expected + [joined(s, sep, reference) for s, sep in LINE_BREAKS]
    got = body.get("translations") if isinstance(body, dict) else None
    check("sentences/serve", status == 200 and got == want,
          f"{status} {str(body)[:300]} != {str(want)[:300]}")
    return reference


def check_page(server, name, page):
    status, out, err = run([TED, "translate", "-m", MODEL, "--format", "html"], page)
    if status != 0:
        fail(f"html/{name}", f"exit {status}: {err.strip()[-300:]}")
        return
    before, after = tokens(page), tokens(out)
    diff = [(a, b) for a, b in zip(before.markup, after.markup) if a != b]
    check(f"html/{name}/markup", before.markup == after.markup,
          f"{len(before.markup)} tokens, {len(after.markup)} after; first difference {diff[:1]}")
    check(f"html/{name}/dom", dom_shape(page) == dom_shape(out), "html5lib's trees differ")
    k0, k1 = kept_texts(page), kept_texts(out)
    diff = [(a, b) for a, b in zip(k0, k1) if a != b]
    check(f"html/{name}/kept", k0 == k1, f"first difference {diff[:1]}")
    sentences = [s for b in before.blocks for s in split_block(b)]
    reference = translate_alone(sentences)
    want = [" ".join(reference[s] for s in split_block(b)) for b in before.blocks]
    diff = [(w, g) for w, g in zip(want, after.blocks) if w != g]
    check(f"html/{name}/text", want == after.blocks,
          f"{len(want)} blocks, {len(after.blocks)} after; first difference {diff[:1]}")
    status, _, body = server.translate({"text": [page], "format": "html"})
    check(f"html/{name}/serve", status == 200 and body.get("translations") == [out],
          f"{status} {str(body)[:300]}")


def check_errors(server):
    status, _, err = run([TED, "translate", "-m", MODEL, "--format", "html"],
                         b"<p>caf\xe9 au lait</p>")
    check("errors/cli-invalid-utf8", status == 1 and "byte 6" in err and "UTF-8" in err
          and err.count("\n") == 1, f"exit {status}: {err!r}")
    status, _, err = run([TED, "translate", "-m", MODEL, "--split-sentences"],
                         b"One. Two.\nthe \xff cat.\n")
    check("errors/cli-line", status == 1 and "line 2: byte 4" in err, f"exit {status}: {err!r}")
    c = server.connect()
    try:
        c.request("POST", "/v1/translate", body=b'{"text": ["<p>ok</p>", "<p>\xff</p>"], '
                  b'"format": "html"}', headers={"Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
    finally:
        c.close()
    check("errors/serve-invalid-utf8", r.status == 400 and "text[1]: byte 3" in body,
          f"{r.status} {body}")
    status, _, body = server.translate({"text": ["One. Two."], "split_sentences": True,
                                        "beam": 2, "n_best": 2})
    check("errors/serve-n-best", status == 400 and "n_best" in str(body), f"{status} {body}")
    status, _, err = run([TED, "translate", "-m", MODEL, "--format", "html", "--scores"], "<p>x</p>")
    check("errors/cli-scores", status == 1 and "--scores" in err, f"exit {status}: {err!r}")


def main():
    server = ted_test.Server([MODEL])
    try:
        check_paragraphs(server)
        for name in sorted(os.listdir(PAGES)):
            with open(os.path.join(PAGES, name), encoding="utf-8", newline="") as f:
                check_page(server, name.rsplit(".", 1)[0], f.read())
        check_errors(server)
    finally:
        status = server.stop()
    check("alive/exit", status == 0 and not server.sanitizer_reports(),
          f"exit {status}; {server.sanitizer_reports()[:3]}")
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
