#!/usr/bin/python3
"""HTML pages split as a browser splits them, with html5lib (Debian's
python3-html5lib, scripting on, as in a browser) as the judge:

  - text that was not a text node in html5lib's parse of the page never
    reaches the model: each word of each sentence is a word of html5lib's
    text nodes (the constructs put in the pages hold words that no text
    of theirs holds: onerror, alert, CDATA, DOCTYPE, php, div, ...), but
    for a page that a frameset replaces (a browser shows none of its
    text, and what came before the frameset is gone from the tree);
  - the page rebuilt around translations holds no element or attribute
    that the page did not have (html5lib's elements, each with its
    attributes), its tree of elements is the page's (no end tag lost), and
    the comments html5lib finds are the page's;
  - a construct that a browser reads as a comment, a bogus comment, a
    doctype or a CDATA section comes back byte for byte.

    BUILD=build PYTHON=/usr/bin/python3 /usr/bin/python3 tests/cli/html_markup.py

The pages: tests/data/html/*.html and pages of the same shape below, each
with every construct of FAMILY put in at several places, and pages made at
random (a fixed seed) of tags, text and those constructs. src/document
parses them through BUILD/document-check (tests/cli/document_check.c),
which prints the sentences and the page rebuilt with a translation full of
markup (a page may be refused: "could not be placed"). Then pages where
libxml2 alone hands such markup to the model as text go through the
shipped model models/en-fr: `ted translate --format html`, POST
/translate and POST /v1/translate.

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  GROUP/model-text, GROUP/no-new-markup, GROUP/tree-kept,
  GROUP/comments-kept, GROUP/bytes-kept
        the above over the pages of a construct of FAMILY (GROUP: its
        name), of CONTEXTS ("contexts") and the random ones ("fuzz")
  pages/parsed  under 1 page in 20 is refused
  long/NAME     a page of one construct over and over answers in time
  model/cli-N, model/translate-N, model/v1-N
        page N of SPLIT through the model: html5lib's elements, attributes,
        comments and tree as the page's, its tags and "<!...>" byte for byte
  model/serve-exit  ted serve exits 0, without a sanitizer report
"""
import os
import random
import re
import subprocess
import sys
import time

import html5lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_test  # noqa: E402
from ted_test import TED, check, failures, run  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
MODEL = os.path.join(ROOT, "models", "en-fr")
PAGES = os.path.join(ROOT, "tests", "data", "html")
ALERT = "<img src=x onerror=alert(1)>"

# (name, the construct's bytes that a browser reads as markup, what follows
# it as text).
FAMILY = [
    ("cdata", f"<![CDATA[ {ALERT}", " ]]>"),
    ("cdata-svg-onload", "<![CDATA[ <svg onload=alert(1)>", " ]]>"),
    ("entity", f'<!ENTITY x "{ALERT}', '">'),
    ("bang", f"<!x {ALERT}", ">"),
    ("doctype", "<!DOCTYPE html>", ""),
    ("doctype-quoted", '<!doctype html PUBLIC "-//W3C//DTD x>', '<b>y</b>">'),
    ("pi", '<?xml version="1.0"?>', ""),
    ("pi-markup", f'<?php echo "{ALERT}', '"; ?>'),
    ("end-space", "</ x>", ""),
    ("end-digit", f"</1 {ALERT}", ">"),
    ("comment", f"<!-- {ALERT} -->", ""),
    ("comment-gt", "<!-- a > b -->", ""),
    ("comment-abrupt", "<!-->", f"{ALERT}-->"),
    ("comment-abrupt-dash", "<!--->", "-->"),
    ("comment-bang", "<!-- a --!>", " b -->"),
    ("comment-dashes", "<!---- x ---->", ""),
    ("conditional", "<!--[if IE]><p>old</p><![endif]-->", ""),
    ("endif", "<![endif]-->", ""),
    ("empty-bang", "<!>", ""),
    ("empty-pi", "<?>", ""),
    ("empty-end", "</>", ""),
]
# Pieces that are markup only in some places.
CONTEXTS = [
    f"<script><!--<script></script>{ALERT}</script>",
    '<script>document.write("</b>The cat sleeps.")</script>',
    f"<title><!x {ALERT}></title>",
    "<textarea><!-- The cat --></textarea>",
    f"<noscript><!x {ALERT}></noscript>",
    f"<style>/* <!x {ALERT}> */</style>",
    f"<xmp><!x {ALERT}></xmp>",
    '<a title="<!x>">The <b>cat</b></a>',
    "<svg><![CDATA[ The cat > the dog ]]></svg>",
    "<p>The cat.</p x=\"y>The dog.\">",
]

NEWS = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>The cat sleeps</title>
<style>body { font: 14px sans-serif } p > a { color: red }</style>
<script>var x = "<b>not text</b>"; if (a < b && c > d) {}</script>
<!--[if lt IE 9]><script src="html5shiv.js"></script><![endif]-->
</head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li></ul></nav>
<article><h1>The black cat</h1>
<p>The cat sleeps on the <b>old</b> green car. My sister did not see it.</p>
<p>The dog eats the small bird &amp; the apple.</p>
<svg width="10" height="10"><title>An icon</title><circle r="5"/></svg>
<noscript>Please turn on JavaScript.</noscript>
<table><tr><td>The cat.</td><td>The dog.</td></tr></table>
<form><label>Name <input name="n" placeholder="Your name"></label>
<textarea>The text.</textarea></form>
</article><footer><p>The cat, 2024.</p></footer></body></html>
"""
BLOG = """<div class="post"><div class="body">
<h2>My sister and the dog</h2>
<p>My sister did not see the old green car. <em>The dog</em> eats the apple.</p>
<p class="notranslate">The cat stays as it is.</p>
<ul><li>The first cat.</li><li>The <a href="/b">second</a> cat.</li></ul>
<blockquote>The bird sings. The cat sleeps.</blockquote>
</div></div>
<p>The end.</p>
"""

DOCS = """<!doctype html>
<html><head><title>Read the manual</title>
<script type="application/ld+json">{"name": "<b>The cat</b>", "url": "/a?b=1&c=2"}</script>
<script>if (a < b) { document.write("<p>" + x + "</p>"); } // </div> here is script</script>
</head><body>
<header><a class="logo" href="/"><svg viewBox="0 0 8 8" aria-hidden="true"><title>Home</title>
<desc>A small house</desc><path d="M0 0h8v8z"/></svg> The site</a></header>
<main><h1 id="intro">The cat and the dog</h1>
<p>Run <code>make test</code> before you push. Press <kbd>Ctrl</kbd> and <kbd>C</kbd>.</p>
<pre>  keep   this
exactly as it is</pre>
<p>The area is <math><mi>x</mi><mo>=</mo><mn>2</mn></math> square meters.</p>
<template><p>The template text.</p></template>
<details><summary>More</summary><p>The cat sleeps under the table.</p></details>
<iframe src="/frame" title="A frame">Your browser has no frames.</iframe>
<select name="s"><option value="1">The first cat</option><option>The second dog</option></select>
<p translate="no">Tedly</p>
</main>
<!--[if lt IE 9]><p class="old">Your browser is old.</p><![endif]-->
<footer><p>The end of the page.</p></footer>
</body></html>
"""
SHOP = """<table class="prices"><caption>The prices</caption>
<thead><tr><th>Fruit</th><th>Price</th></tr></thead>
<tbody><tr><td>The red apple</td><td>1 &euro;</td></tr>
<tr><td>The green pear</td><td>2 &#8364;</td></tr></tbody></table>
<form action="/buy"><label for="q">How many?</label><input id="q" value="1 > 0">
<button type="submit" title="Buy it now">Buy</button></form>
<p>My sister <a href="/s" title='The "best" sister'>did not see</a> the old car.<br>
The dog eats the apple.</p>
<noscript><img src="/pixel" alt="">Please turn on JavaScript.</noscript>
"""

TAGS = ["<p>", "</p>", "<div>", "</div>", "<b>", "</b>", "<i>", "</i>", '<a href="/x">',
        "</a>", "<br>", '<span class="notranslate">', "</span>", "<table>", "<tr>", "<td>",
        "</td>", "<svg>", "</svg>", "<math>", "</math>", "<title>", "</title>", "<script>",
        "</script>", "<style>", "</style>", "<textarea>", "</textarea>", "<noscript>",
        "</noscript>", "<ul><li>", "</li>", '<img alt="a > b">', "</p x='>'>"]
TEXTS = ["The cat sleeps. ", "The dog eats the apple. ", "My sister did not see the car. ",
         "The bird &amp; the cat. ", "a &lt; b ", "> ", "<", '"', "'", "=", "-->", "]]>",
         "<!--", "<!", "<?", "</", "<![CDATA[", " ", "\n"]


def page_files():
    pages = {}
    for name in sorted(os.listdir(PAGES)):
        with open(os.path.join(PAGES, name), encoding="utf-8", newline="") as f:
            pages[name.rsplit(".", 1)[0]] = f.read()
    pages.update(news=NEWS, blog=BLOG, docs=DOCS, shop=SHOP)
    return pages


def text_places(page):
    """The places of the page where a browser reads what is put there as
    text: a word put at each, html5lib finds it in a text node."""
    places = sorted({m.end() for m in re.finditer(r"[> ]", page)})
    marked, at = "", 0
    for k, place in enumerate(places):
        marked += page[at:place] + f"Qz{k}zQ"
        at = place
    text = "".join(text_nodes(parse(marked + page[at:]), []))
    found = set(int(k) for k in re.findall(r"Qz(\d+)zQ", text))
    return [place for k, place in enumerate(places) if k in found]


def family_pages():
    """(family name, page, the construct's bytes when they are markup)."""
    rng = random.Random(7)
    out = []
    for page in page_files().values():
        text = text_places(page)
        for name, markup, rest in FAMILY:
            for at in rng.sample(text, 3):
                out.append((name, page[:at] + markup + rest + page[at:], markup))
            at = rng.randrange(len(page) + 1)  # anywhere: in a tag, a comment, a script
            out.append((name, page[:at] + markup + rest + page[at:], None))
        for piece in CONTEXTS:
            for at in rng.sample(text, 2) + [rng.randrange(len(page) + 1)]:
                out.append(("contexts", page[:at] + piece + page[at:], None))
    return out


def fuzzed_pages(count):
    rng = random.Random(11)
    pieces = TAGS + TEXTS + [m + r for _, m, r in FAMILY] + CONTEXTS
    return [("fuzz", "".join(rng.choice(pieces) for _ in range(rng.randrange(3, 40))), None)
            for _ in range(count)]


def document_check(pages):
    """[(sentences, rebuilt page) or None when refused] of src/document."""
    data = b"".join(p.encode("utf-8") + b"\0" for p in pages)
    out = subprocess.run([os.path.join(BUILD, "document-check")], input=data,
                         capture_output=True, check=True, timeout=300).stdout
    fields, at, answers = out.split(b"\0"), 0, []
    for _ in pages:
        if fields[at] != b"ok":
            answers.append(None)
            at += 1
            continue
        n = int(fields[at + 1])
        sentences = [f.decode("utf-8") for f in fields[at + 2:at + 2 + n]]
        answers.append((sentences, fields[at + 2 + n].decode("utf-8")))
        at += 3 + n
    return answers


# ---- html5lib, the judge -------------------------------------------------------------

PARSER = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree", fullTree=True),
                             namespaceHTMLElements=False)


def parse(page):
    """html5lib's tree of the page: the document, its doctype and comments
    outside <html> included."""
    return PARSER.parse(page, scripting=True)


# Elements whose text html5lib reads as one text node (RCDATA, RAWTEXT):
# libxml2 reads tags in it, so its words are also those of its own parse.
TEXT_ELEMENTS = {"title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript",
                 "plaintext"}
# The text of script and style is never text to translate.
CODE_ELEMENTS = {"script", "style"}


def text_nodes(root, parts):
    """parts and the text of html5lib's text nodes, in document order."""
    def walk(e):
        if e.tag in TEXT_ELEMENTS and e.text and len(e) == 0:  # "." keeps a frameset out
            parts.extend([" "] + text_nodes(parse("." + e.text), []) + [" "])
        if isinstance(e.tag, str) and e.tag not in CODE_ELEMENTS and e.tag != "<!DOCTYPE>":
            parts.append(e.text or "")
        for c in e:
            walk(c)
            parts.append(c.tail or "")
    walk(root)
    return parts


def markup(root):
    """({(element, its attributes)}, [comments, sorted]): a comment's place
    in the tree follows the text around it (a comment after </body> goes
    into <body> when text follows it)."""
    elements, comments = set(), []
    for e in root.iter():
        if isinstance(e.tag, str):
            elements.add((e.tag, frozenset(e.attrib.items())))
        else:
            comments.append(e.text)
    return elements, sorted(comments)


INLINE = {"a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font",
          "i", "ins", "q", "s", "mark", "small", "span", "label", "strike", "strong", "sub",
          "sup", "time", "tt", "u"}


def shape(e):
    """html5lib's tree of elements: (tag, attributes, children), the inline
    elements without element children left out (html5lib opens formatting
    elements again to hold text after misnested tags, so whether one is
    there, and where a comment goes, depends on the text:
    tests/serve/test_documents.py). Comments are compared on their own."""
    elements = [c for c in e if isinstance(c.tag, str)]
    children = [shape(c) for c in elements
                if not (c.tag in INLINE and not any(isinstance(g.tag, str) for g in c))]
    return (e.tag, sorted(e.attrib.items()), children)


def words(text, references=True):
    """Its words; without `references`, not those of a character reference
    without its ';' (&lt, &#): libxml2 reads those as they are, or leaves
    them out, where a browser reads a character."""
    return set(re.findall(r"\w+" if references else r"(?<![&#\w])\w+", text))


def text_words(root):
    """The words of the text nodes: those of the nodes run together (a
    word that markup splits) and those of each node alone."""
    nodes = text_nodes(root, [])
    joined = "".join(nodes)
    dropped = re.sub(r"&#(?![0-9]|[xX][0-9a-fA-F])", "", joined)  # libxml2 leaves out "&#"
    return words(joined) | words(dropped) | words(" ".join(nodes))


def judge(page, answer):
    """The problems of one page's answer: a list of (check, why)."""
    sentences, out = answer
    before, after = parse(page), parse(out)
    problems = []
    known = text_words(before)
    framed = any(e.tag == "frameset" for e in before.iter())
    for s in sentences:
        if not framed and not words(s, False) <= known:
            problems.append(("model-text", f"{sorted(words(s, False) - known)} of {s!r} are not "
                                           "in the page's text nodes"))
            break
    (e0, c0), (e1, c1) = markup(before), markup(after)
    if not e1 <= e0:
        problems.append(("no-new-markup", f"new {sorted(e1 - e0, key=str)[:2]}"))
    if shape(before) != shape(after):
        problems.append(("tree-kept", "html5lib's trees without their text differ"))
    if c0 != c1:
        k = next((k for k, (a, b) in enumerate(zip(c0, c1)) if a != b), min(len(c0), len(c1)))
        problems.append(("comments-kept", f"comment {k}: {c0[k:k + 1]} became {c1[k:k + 1]}"))
    return problems


def check_pages(pages):
    answers = document_check([p for _, p, _ in pages])
    results = {}  # (group, check) -> [pages, first problem]
    refused = {}
    for (group, page, construct), answer in zip(pages, answers):
        refused[group] = refused.get(group, 0) + (answer is None)
        checks = ["model-text", "no-new-markup", "comments-kept", "tree-kept"]
        problems = judge(page, answer) if answer else []
        if construct and answer:
            checks.append("bytes-kept")
            if construct not in answer[1]:
                problems.append(("bytes-kept", f"{construct!r} is not in the page"))
        for name in checks:
            entry = results.setdefault((group, name), [0, None])
            entry[0] += 1
            why = [w for n, w in problems if n == name]
            if why and entry[1] is None:
                entry[1] = f"{why[0]} (page {page[:300]!r})"
    for (group, name), (count, problem) in results.items():
        check(f"{group}/{name}", problem is None, problem)
    return refused, len(pages)


# Pages of one construct over and over, on which a search for its end from
# each one takes time in the square of the page: each answers within 5 s.
LONG = {"titles-comment": "<title><!--</title>" * 30000 + "-->",
        "select-style-comment": "<select><style><!--</style>" * 20000 + "-->",
        "svg-scripts": "<svg>" + "<script>" * 60000, "cdata": "<![CDATA[>" * 60000 + "]]>",
        "script-escapes": "<script><!--<script>" * 30000,
        "svg-cdata-scripts": "<svg>" + "<![CDATA[><script>]]>" * 30000}


def check_long():
    for name, page in LONG.items():
        start = time.monotonic()
        answer = document_check([page])[0]
        took = time.monotonic() - start
        check(f"long/{name}", answer is not None and took < 5, f"{took:.1f} s, {answer is None}")


# ---- the shipped model ---------------------------------------------------------------

SPLIT = [
    f"<p>The cat sleeps. <![CDATA[ {ALERT} ]]> The dog.</p>",
    f'<p>The cat sleeps. <!ENTITY x "{ALERT}"> The dog.</p>',
    f"<p>The cat sleeps. <!x {ALERT}> The dog.</p>",
    "<p>The cat sleeps. <![CDATA[ <svg onload=alert(1)> ]]> The dog.</p>",
    "<div><div><p>The cat sleeps.</p><!DOCTYPE html></div></div><p>The dog eats.</p>",
]


def check_translated(name, page, out):
    """The page translated by the model: html5lib's elements, attributes
    and comments as the page's, its tree as the page's, every "<!...>" and
    every tag byte for byte and in order."""
    if out is None:
        check(name, False, "no translation")
        return
    before, after = parse(page), parse(out)
    (e0, c0), (e1, c1) = markup(before), markup(after)
    kept = all(m in out for m in re.findall(r"<![^>]*>", page))
    tags = re.findall(r"</?[A-Za-z][^>]*>", page) == re.findall(r"</?[A-Za-z][^>]*>", out)
    check(name, e1 == e0 and c1 == c0 and kept and tags and shape(before) == shape(after),
          f"elements {sorted(e1 ^ e0, key=str)[:2]}, comments {c0} -> {c1}: {out!r}")


def check_model():
    for i, page in enumerate(SPLIT):
        status, out, err = run([TED, "translate", "-m", MODEL, "--format", "html"], page)
        check_translated(f"model/cli-{i}", page, out if status == 0 else None)
    server = ted_test.Server([MODEL])
    try:
        for i, page in enumerate(SPLIT):
            status, _, body = server.call("POST", "/translate", {
                "q": page, "source": "en", "target": "fr", "format": "html"})
            out = body.get("translatedText") if status == 200 else None
            check_translated(f"model/translate-{i}", page, out)
            status, _, body = server.translate({"text": [page], "format": "html"})
            out = body.get("translations", [None])[0] if status == 200 else None
            check_translated(f"model/v1-{i}", page, out)
    finally:
        status = server.stop()
    check("model/serve-exit", status == 0 and not server.sanitizer_reports(),
          f"exit {status}; {server.sanitizer_reports()[:3]}")


def main():
    pages = family_pages() + fuzzed_pages(300)
    refused, total = check_pages(pages)
    print(f"# {sum(refused.values())} of {total} pages refused: {refused}")
    # A page is refused only where libxml2 and a browser end a tag apart.
    check("pages/parsed", sum(refused.values()) * 20 < total,
          f"{refused} of {total} pages refused")
    check_long()
    check_model()
    sys.exit(1 if failures() else 0)


if __name__ == "__main__":
    main()
