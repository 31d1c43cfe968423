#!/usr/bin/python3
"""The explorer page of `ted serve`, in a real browser: headless Chromium
driven over the DevTools protocol (a websocket), with the toy model.

    TED=build/ted /usr/bin/python3 tests/browser/test_explorer.py [--screenshots DIR]

The page is used as a learner uses it: keys typed and pressed, candidates
clicked with the mouse. What it shows is compared with the ted program run
on its own (`ted translate`, `ted translate --beam N`, `ted step --force
--auto`, `ted step --explain`).

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  api/*        the JSON the page reads: every refusal (unknown field, empty or
               too long source, a token not in the vocabulary, a forced step
               past the end, top_k, beam size, model, early_stopping,
               malformed JSON, method) names its field; every step's top-k
               probabilities are the softmax of `ted logits` teacher-forced
               on the translation; /v1/beam with early_stopping true, false
               or "never" gives ted translate --early-stopping's best
  assets/*     the page, its script and its style: their types, a
               Content-Security-Policy that allows this server only (their
               weight in bytes is printed on an "info" line, not counted)
  greedy/*     a sentence typed, Enter, then the right arrow until EOS: the
               tokens shown are ted translate's; every heatmap is drawn (3
               attentions x layers x (heads + their mean)); every attention
               row of the page's data sums to 1 within 1e-5; the
               computation shown is ted step --explain's; the time from
               Enter to the whole first view
  force/*      the second candidate of step 2 clicked: the continuation is
               ted step --force 2:TOKEN --auto's, the step marked forced; undo
               brings back the greedy translation
  beam/*       beam search of size 3: the best is ted translate --beam 3's
               (text and score), and the trace's ranking agrees
  url/*        the URL of a view opened afresh shows the same view: step,
               tokens, forced mark and every heatmap's pixels
  model/*      the menu switches to a second model served: its translation
               of the sentence is ted translate's, its architecture is said,
               and the detokenized text shown beside its pieces is ted
               translate's line
  language/*   a multilingual model (ted_test.tiny_multilingual_model, its
               target code forced): the picker lists its codes; choosing a
               target language decodes into it (the code the first output
               token, marked as a language token; the text ted translate
               --target-lang's), and the URL keeps it; three languages
               picked at once are decoded one request at a time, the last
               shown; the API refuses a missing or unknown code, naming it
  rules/*      the rules on the scores: a URL with no_repeat_ngram_size=2
               opens on a step where the model's own choice would repeat a
               2-gram of the prefix; that candidate, and only the
               candidates the rule's definition bans after that prefix,
               are struck out with "banned: would repeat the 2-gram '...'",
               and the translation is ted translate --no-repeat-ngram-size
               2's; min_length typed into the rules form bans EOS, said so
               beside it, at exactly the steps before min_length; a URL with
               bad_words_ids=6,84; 312 ('le chat', 'mange') gives ted translate
               --bad-words-ids's translation, the form shows the sequences,
               and exactly the candidates the rule's definition bans are
               struck out with "banned: would complete the bad words 'le
               chat'" or "banned: a bad word"
  network/*    no request left 127.0.0.1 (the DevTools network events), none
               failed, every answer 200 (no 503: the page never sends an
               explorer request while another is decoded); no console
               error, no uncaught exception
  trained/*    models/multi-en-fr-es, trained from English into French and
               Spanish and back: the pickers start on a trained pair and offer
               only the targets the source is translated into; the example
               menu holds the first lines of test.<source code> and follows
               the source language; a change of language decodes the sentence
               in the box (not the one submitted before), as ted translate
               does; long prefix and output lines wrap inside their panel;
               an error leaves no earlier result under it; a beam ranking
               holding one text twice shows each one's tokens and says why
  t5/*         a small T5 (tests/lib/t5_learn_model.py): the bias view shows
               both stacks' bucket tables (heads x buckets) as the model's
               relative_attention_bias weights read with NumPy; the buckets
               of the last step's query (outlined in the decoder's table)
               and of every encoder query-key pair are transformers'
               T5Attention._relative_position_bucket; no bias view on a
               model without relative positions
  screenshot/* 1280x800 and 390x844 (phone) PNGs under 200 KB; on the phone
               nothing is wider than the screen (with --screenshots DIR they
               are written there, as docs/img/ has them)
"""
import base64
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import ted_browser  # noqa: E402
from ted_browser import CHROMIUM, WAIT  # noqa: E402
from ted_test import SLOW, Server, check, fail, failures, ok, ted_output  # noqa: E402
from ted_test import tiny_multilingual_model  # noqa: E402

MODEL = os.environ.get("EXPLORER_MODEL", os.path.join(ROOT, "models", "toy-en-fr"))
# a second model served, for the model switch
OTHER = os.path.join(ROOT, "models", "en-fr" if os.path.basename(MODEL) != "en-fr" else "toy-en-fr")
SENTENCE = os.environ.get("EXPLORER_SENTENCE", "the black cat eats the small bird .")
BEAM = 3


def ted(*args):
    """The ted program's standard output."""
    return ted_output(list(args), timeout=120 * SLOW)


def chosen_tokens(step_output):
    """The tokens `ted step --auto` chose, EOS left out (it ends its output
    with "(N steps, the last one chose the end of sentence)")."""
    tokens = []
    for line in step_output.splitlines():
        if line.startswith("step ") and ": chosen '" in line:
            tokens.append(line.split(": chosen '", 1)[1].split("' p=", 1)[0])
    if "the last one chose the end of sentence" in step_output:
        tokens = tokens[:-1]
    return [t.replace("\u2423", " ") for t in tokens]


# ---- the server and the browser ----------------------------------------------

class Browser(ted_browser.Browser):
    """The browser on the explorer page."""

    def navigate(self, url):
        """Opens `url`; for the explorer, waits until it has drawn its view."""
        if url == "about:blank":
            return super().navigate(url)
        return super().navigate(
            url, "window.ted && window.ted.ready && document.readyState === 'complete'")


# ---- what the page shows -------------------------------------------------------

SHOWN = """(() => ({
  step: window.ted.state.step,
  steps: window.ted.state.data ? window.ted.state.data.steps.length : 0,
  label: document.getElementById('step-label').textContent,
  output: [...document.querySelectorAll('#output .word')].map(e => e.textContent),
  forced: [...document.querySelectorAll('#output .word')].map(e => e.classList.contains('forced')),
  prefix: document.getElementById('prefix').textContent,
  text: document.getElementById('translation').textContent,
  candidates: [...document.querySelectorAll('#candidates li')].map(e => e.textContent),
  focus: document.getElementById('focus-title').textContent,
}))()"""

# Every heatmap as [kind, layer, head, width, height, pixels that are not blank, hash].
HEATMAPS = """[...document.querySelectorAll('canvas.heatmap')].map(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width || 1, c.height || 1).data;
  let inked = 0, hash = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] > 0) inked++;
    hash = (hash * 31 + d[i] * 7 + d[i + 1] * 3 + d[i + 2]) >>> 0;
  }
  return [c.dataset.kind, +c.dataset.layer, +c.dataset.head, c.width, c.height, inked, hash];
})"""


def model_sizes():
    sizes = {}
    with open(os.path.join(MODEL, "config.yaml")) as f:
        for line in f:
            key, _, value = line.strip().partition(":")
            if key in ("heads", "encoder_layers", "decoder_layers"):
                sizes[key] = int(value.split("#")[0])
    return sizes


def rows_off_by(data):
    """The largest |sum - 1| of every attention row of an /v1/explore answer."""
    worst = 0.0
    rows = [row for layer in data["encoder"] for head in layer for row in head]
    for step in data["steps"]:
        rows += [row for kind in ("self", "cross") for layer in step[kind] for row in layer]
    for row in rows:
        worst = max(worst, abs(sum(row) - 1.0))
    return worst, len(rows)


def explain_lines(text, step):
    """The operation lines `ted step --explain` prints for the encoder and step N."""
    blocks, current = {}, None
    for line in text.splitlines():
        if line.startswith("how the encoder reads"):
            current = "encoder"
        elif line.startswith("  how step "):
            current = int(line.split()[2])
        elif line.startswith("step ") or line.startswith("translation:"):
            current = None
        elif current is not None and line.startswith(" " * 20) and blocks.get(current):
            blocks[current][-1] += " " + line.strip()  # a shape on a line of its own
        elif current is not None and line.startswith("    "):
            blocks.setdefault(current, []).append(line.strip())
    return blocks.get("encoder", []) + blocks.get(step, [])


# ---- the checks ---------------------------------------------------------------------

def test_assets(server):
    total = 0
    for path, kind in (("/", "text/html"), ("/explorer.js", "text/javascript"),
                       ("/explorer.css", "text/css")):
        status, headers, body = server.get(path)
        total += len(body)
        policy = headers.get("Content-Security-Policy", "")
        check(f"assets/type{path}", status == 200 and headers.get("Content-Type", "").startswith(kind),
              f"{status} {headers.get('Content-Type')}")
        check(f"assets/policy{path}", "default-src 'none'" in policy and "connect-src 'self'" in policy
              and "http" not in policy, policy)
    print(f"info assets/weight: {total} bytes (the page, its script and its style)", flush=True)
    return total


def as_text(tokens):
    """Target tokens as ted translate prints them: pieces joined, ▁ a space."""
    if any(t.startswith("\u2581") for t in tokens):
        return "".join(tokens).replace("\u2581", " ").strip()
    return " ".join(tokens)


def shown_text(shown, data):
    """The translation the page shows: its output tokens, EOS left out."""
    tokens = shown["output"]
    if data["end"] == "eos" and len(tokens) == len(data["steps"]):
        tokens = tokens[:-1]
    return as_text(tokens)


def post(server, path, body):
    """(status, parsed JSON) of a POST."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(server.base + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60 * SLOW) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_early_stopping(server):
    """/v1/beam's early_stopping (true, false, "never", as POST /translate
    spells them) decodes as `ted translate --early-stopping` does, and the
    trace of true stops before that of "never" (which runs until no open
    hypothesis can win)."""
    steps = {}
    for value, word in ((True, "true"), (False, "false"), ("never", "never"), ("true", "true")):
        line = ted("translate", "-m", MODEL, "--beam", str(BEAM), "--early-stopping", word,
                   "--length-penalty", "2", "--scores", SENTENCE).strip()
        _, text, score, _, _ = [part.strip() for part in line.split("|||")]
        status, data = post(server, "/v1/beam", {"source": SENTENCE, "beam": BEAM,
                                                 "length_penalty": 2, "early_stopping": value})
        best = data.get("best", {})
        steps[word] = len(data.get("steps", []))
        check(f"api/beam-early-stopping-{json.dumps(value)}",
              status == 200 and data.get("early_stopping") == word and
              best.get("text") == text and abs(best.get("score", 0) - float(score)) <= 1e-5,
              f"{status}: early_stopping {data.get('early_stopping')}, best {best.get('text')!r} "
              f"{best.get('score')}; ted translate {text!r} {score}")
    check(f"api/beam-early-stopping-steps (true {steps['true']}, never {steps['never']})",
          steps["true"] < steps["never"], f"steps {steps}")


def test_api(server):
    """The endpoints the page reads: refusals name the field; the top-k
    probabilities are the softmax of `ted logits` (teacher-forced on the
    page's translation) at every step."""
    long_source = " ".join(["the cat"] * 60)
    cases = [
        ("unknown-field", "/v1/explore", {"source": "the cat .", "bogus": 1}, 400, 'unknown field "bogus"'),
        ("empty", "/v1/explore", {"source": ""}, 400, "source: the sentence is empty"),
        ("no-source", "/v1/explore", {"model": "toy-en-fr"}, 400, "source: missing"),
        ("long", "/v1/explore", {"source": long_source}, 400, "source: 122 tokens, more than the explorer's 100"),
        ("token", "/v1/explore", {"source": "the cat .", "forced": [{"step": 1, "token": "zzz"}]},
         400, 'forced[0].token: "zzz" is not in the target vocabulary'),
        ("past-end", "/v1/explore", {"source": "the cat .", "forced": [{"step": 9, "token": "le"}]},
         400, "forced[0].step: 9 is past the end"),
        ("top-k", "/v1/explore", {"source": "the cat .", "top_k": 0}, 400, "top_k: expected a whole number from 1 to 20"),
        ("beam-size", "/v1/beam", {"source": "the cat .", "beam": 99}, 400, "beam: expected a whole number from 1 to 16"),
        ("model", "/v1/beam", {"source": "the cat .", "model": "de-en"}, 404, 'model "de-en" is not served'),
        ("json", "/v1/explore", b'{"source": ', 400, "malformed JSON"),
        ("no-target-lang", "/v1/explore", {"model": "multilingual", "source": "s0 s1"}, 400,
         "source: no target language given, and the model translates into 2 languages: t8, t9"),
        ("unknown-target-lang", "/v1/beam", {"model": "multilingual", "source": "s0",
                                             "target_lang": "de"},
         400, 'unknown target language "de"; the model\'s: t8, t9'),
        ("target-lang-type", "/v1/explore", {"source": "the cat .", "target_lang": ["fr"]}, 400,
         "target_lang: expected a string"),
        ("early-stopping", "/v1/beam", {"source": "the cat .", "early_stopping": "sometimes"},
         400, 'early_stopping: expected false, true, "never" or "marian"'),
        ("early-stopping-explore", "/v1/explore", {"source": "the cat .", "early_stopping": True},
         400, 'unknown field "early_stopping"'),
        ("forced-twice", "/v1/explore",
         b'{"source": "the cat .", "forced": [{"step": 1, "token": "le"}, '
         b'{"step": 2, "token": "chat"}], "forced": [{"step": 3, "token": "noir"}]}',
         400, 'field "forced" given twice'),
    ]
    for name, path, body, status, needle in cases:
        got, answer = post(server, path, body)
        check(f"api/refuses-{name} ({got})", got == status and needle in answer.get("error", ""),
              f"{got} {answer}")
    try:
        urllib.request.urlopen(server.base + "/v1/explore", timeout=30 * SLOW)
        fail("api/method", "GET /v1/explore answered")
    except urllib.error.HTTPError as e:
        check("api/method (405)", e.code == 405 and "POST" in e.headers.get("Allow", ""), str(e.code))

    test_early_stopping(server)

    status, data = post(server, "/v1/explore", {"source": SENTENCE, "top_k": 20})
    steps = data["steps"]
    target = [s["chosen"]["token"] for s in steps[:-1]] if data["end"] == "eos" else []
    rows = ted("logits", "-m", MODEL, "--source", SENTENCE, "--target", as_text(target)).split("\n")
    worst = 0.0
    for step, row in zip(steps, rows):
        logits = [float(x) for x in row.split()]
        top = max(logits)
        z = sum(math.exp(x - top) for x in logits)
        for c in step["top"]:
            worst = max(worst, abs(c["p"] - math.exp(logits[c["id"]] - top) / z))
        order = sorted(range(len(logits)), key=lambda v: (-logits[v], v))
        if [c["id"] for c in step["top"]][:3] != order[:3]:
            worst = float("inf")
    check(f"api/top-k-is-softmax-of-ted-logits ({len(steps)} steps x 20, worst {worst:.1e})",
          status == 200 and len(rows) >= len(steps) and worst <= 1e-5, f"worst difference {worst}")

    # One log line per request: an answered exploration decoded one sentence,
    # a refused one none (the line is written once the answer is out).
    deadline = time.monotonic() + 10 * SLOW
    while time.monotonic() < deadline and not (server.matching(" POST /v1/explore 200 ")
                                               and server.matching(" POST /v1/explore 400 ")):
        time.sleep(0.05)
    explored = server.matching(" POST /v1/explore 200 ")
    refused = server.matching(" POST /v1/explore 400 ")
    check("api/log-counts-the-sentence",
          explored and refused and all(" 1 sentence " in line for line in explored)
          and all(" 0 sentences " in line for line in refused), f"{explored[:2]} {refused[:2]}")

    # Explorer requests decode on an HTTP thread, one at a time: others at
    # once get a 503 with Retry-After, and translation is answered meanwhile.
    long_text = " ".join(["the black cat eats the small bird"] * 10) + " ."
    answers = []

    def beam_request():
        answers.append(post(server, "/v1/beam", {"source": long_text, "beam": 16}))

    beams = [threading.Thread(target=beam_request) for _ in range(4)]
    for t in beams:
        t.start()
    status, data = post(server, "/v1/translate", {"text": [SENTENCE]})
    for t in beams:
        t.join(120 * SLOW)
    statuses = sorted(code for code, _ in answers)
    busy_named = all("explorer is decoding another request" in a.get("error", "")
                     for code, a in answers if code == 503)
    check(f"api/explorer-one-at-a-time (statuses {statuses})",
          len(answers) == 4 and set(statuses) <= {200, 503} and 200 in statuses and busy_named,
          str([(code, str(a)[:80]) for code, a in answers]))
    check("api/translate-while-exploring", status == 200 and data.get("translations"),
          f"{status} {data}")

def test_greedy(browser, server, sizes):
    expected = ted("translate", "-m", MODEL, SENTENCE).strip()
    browser.navigate(server.base + "/")
    browser.evaluate("document.getElementById('source').focus()")
    browser.type_text(SENTENCE)
    start = time.monotonic()
    browser.key("Enter", keycode=13, text="\r")
    if not browser.wait_for("window.ted.ready && window.ted.state.data && window.ted.state.step === 1"):
        fail("greedy/first-view", f"no first view; error: {browser.evaluate('window.ted.error')}")
        return None
    seen = time.monotonic() - start
    first_view = browser.evaluate("window.ted.timing.firstView")
    ok(f"greedy/first-view (Enter to the whole first view: {first_view:.1f} ms in the page, "
       f"{seen * 1e3:.0f} ms seen over the DevTools protocol)")
    steps = browser.evaluate("window.ted.state.data.steps.length")
    for n in range(2, steps + 1):
        browser.key("ArrowRight", keycode=39)
        if not browser.wait_for(f"window.ted.state.step === {n}", timeout=10 * SLOW):
            fail("greedy/arrow-keys", f"the right arrow did not reach step {n}")
            return None
    shown, data = browser.evaluate(SHOWN), browser.evaluate("window.ted.state.data")
    eos = data["steps"][-1]["chosen"]["token"]
    check(f"greedy/arrow-keys (to step {steps}, '{eos}')",
          shown["output"][-1] == eos and data["end"] == "eos" and shown["step"] == steps,
          f"stopped at {shown['label']}, last token {shown['output'][-1:]}")
    text = shown_text(shown, data)
    check(f"greedy/tokens-are-ted-translate ({' '.join(shown['output'])})", text == expected,
          f"page '{text}', ted translate '{expected}'")
    browser.key("ArrowLeft", keycode=37)
    check("greedy/arrow-back", browser.wait_for(f"window.ted.state.step === {steps - 1}"),
          "the left arrow did not step back")
    browser.key("End", keycode=35)
    browser.wait_for(f"window.ted.state.step === {steps}")

    heatmaps = browser.evaluate(HEATMAPS)
    H, EL, DL = sizes["heads"], sizes["encoder_layers"], sizes["decoder_layers"]
    want = (EL + 2 * DL) * (H + 1)
    blank = [h[:3] for h in heatmaps if h[5] == 0 or h[3] == 0]
    check(f"greedy/heatmap-count ({len(heatmaps)} = 3 attentions x {DL} layers x ({H} heads + mean))",
          len(heatmaps) == want and EL == DL, f"{len(heatmaps)} heatmaps, expected {want}")
    check("greedy/heatmaps-drawn", not blank and heatmaps, f"blank: {blank[:5]}")
    worst, count = rows_off_by(data)
    check(f"greedy/rows-sum-to-1 ({count} rows, worst |sum - 1| = {worst:.2e})", worst <= 1e-5,
          f"a row sums to 1 +- {worst}")

    test_hover(browser, data, sizes)
    explained = ted("step", "-m", MODEL, "--explain", "--auto", SENTENCE)
    for step in (1, steps):
        browser.key("Home" if step == 1 else "End", keycode=36 if step == 1 else 35)
        browser.wait_for(f"window.ted.state.step === {step}")
        page = browser.evaluate("""[...document.querySelectorAll('#explain-lines .line')].map(
            e => (e.children[0].textContent + ' ' + e.children[1].textContent).trim())""")
        cli = [" ".join(line.split()) for line in explain_lines(explained, step)]
        page = [" ".join(line.split()) for line in page]
        check(f"greedy/explain-is-ted-step-explain-step-{step} ({len(page)} lines)",
              page == cli and len(page) > 10,
              f"first difference: {next(((a, b) for a, b in zip(page, cli) if a != b), (len(page), len(cli)))}")
    return first_view


def test_hover(browser, data, sizes):
    """The large heatmap (at first: encoder-decoder attention, last layer, mean
    of the heads): hovering a cell of the current row shows both tokens and
    the weight, the mean computed here from the page's per-head data."""
    step = len(data["steps"])
    geometry = browser.evaluate("window.ted.focus")
    source = [t["token"] for t in data["source"]["tokens"]]
    heads = data["steps"][step - 1]["cross"][sizes["decoder_layers"] - 1]
    query = data["steps"][step - 1]["input"]["token"]
    box = browser.evaluate("""(() => { const c = document.getElementById('focus-canvas');
        c.scrollIntoView({block: 'center'}); const r = c.getBoundingClientRect();
        return [r.left, r.top]; })()""")
    wrong = []
    for j in range(len(source)):
        x = box[0] + geometry["left"] + (j + 0.5) * geometry["cell"]
        y = box[1] + geometry["top"] + (step - 0.5) * geometry["cell"]
        browser.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        tip = browser.evaluate("document.getElementById('tip').hidden ? '' : "
                               "document.getElementById('tip').textContent")
        mean = sum(h[j] for h in heads) / len(heads)
        if tip != f"{query} → {source[j]}: {mean:.6f}":
            wrong.append((tip, f"{query} → {source[j]}: {mean:.6f}"))
    check(f"greedy/hover-shows-weight-and-tokens ({len(source)} cells of step {step})", not wrong,
          f"tip, expected: {wrong[:3]}")


def test_force(browser):
    browser.key("Home", keycode=36)
    browser.key("ArrowRight", keycode=39)
    if not browser.wait_for("window.ted.state.step === 2"):
        fail("force/click", "cannot reach step 2")
        return None
    token = browser.evaluate("document.querySelectorAll('#candidates li')[1].dataset.token")
    browser.click("#candidates li:nth-child(2)")
    if not browser.wait_for(f"window.ted.ready && window.ted.state.forced.length === 1 && "
                            f"window.ted.state.data.steps[1].chosen.token === {json.dumps(token)}"):
        fail("force/click", f"clicking '{token}' forced nothing")
        return None
    expected = chosen_tokens(ted("step", "-m", MODEL, "--force", f"2:{token}", "--auto", SENTENCE))
    browser.key("End", keycode=35)
    browser.wait_for("window.ted.state.step === window.ted.state.data.steps.length")
    shown, data = browser.evaluate(SHOWN), browser.evaluate("window.ted.state.data")
    tokens = shown["output"][:-1] if data["end"] == "eos" else shown["output"]
    check(f"force/continuation-is-ted-step-force (2:{token} -> {' '.join(tokens)})",
          tokens == expected, f"page {tokens}, ted step --force 2:{token} {expected}")
    check("force/marked", shown["forced"][1] and sum(shown["forced"]) == 1,
          f"forced marks {shown['forced']}")
    return token


def test_url(browser, server):
    browser.key("Home", keycode=36)
    browser.key("ArrowRight", keycode=39)
    browser.key("ArrowRight", keycode=39)
    browser.wait_for("window.ted.state.step === 3")
    url = browser.evaluate("location.href")
    before, pixels = browser.evaluate(SHOWN), browser.evaluate(HEATMAPS)
    browser.navigate("about:blank")
    if not browser.navigate(url):
        fail("url/same-view", f"{url} did not load")
        return url
    after, pixels_after = browser.evaluate(SHOWN), browser.evaluate(HEATMAPS)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    check(f"url/state-in-url ({urllib.parse.urlparse(url).query})",
          query.get("step") == ["3"] and len(query.get("forced", [])) == 1 and query.get("source"),
          str(query))
    check("url/same-view", after == before, f"before {before}, after {after}")
    check(f"url/same-heatmaps ({len(pixels_after)} canvases, pixel for pixel)",
          pixels_after == pixels and all(p[5] > 0 for p in pixels_after), "the heatmaps differ")
    return url


def test_undo(browser):
    expected = ted("translate", "-m", MODEL, SENTENCE).strip()
    browser.click("#forced button")
    if not browser.wait_for("window.ted.ready && window.ted.state.forced.length === 0"):
        fail("force/undo", "undo did not remove the forced token")
        return
    browser.key("End", keycode=35)
    browser.wait_for("window.ted.state.step === window.ted.state.data.steps.length")
    text = shown_text(browser.evaluate(SHOWN), browser.evaluate("window.ted.state.data"))
    check("force/undo", text == expected, f"after undo '{text}', ted translate '{expected}'")


def test_beam(browser):
    line = ted("translate", "-m", MODEL, "--beam", str(BEAM), "--scores", SENTENCE).strip()
    _, text, score, _, _ = [part.strip() for part in line.split("|||")]
    browser.evaluate(f"document.getElementById('beam-size').value = '{BEAM}'")
    browser.click("#beam-form button")
    if not browser.wait_for(f"window.ted.ready && window.ted.state.beamData && "
                            f"window.ted.state.beamData.beam === {BEAM} && "
                            f"document.querySelector('.beam-best')"):
        fail("beam/best", f"no beam view; error: {browser.evaluate('window.ted.error')}")
        return
    shown = browser.evaluate("document.querySelector('.beam-best').textContent")
    beam = browser.evaluate("window.ted.state.beamData")
    check(f"beam/best-is-ted-translate-beam-{BEAM} ({shown})", shown == text,
          f"page '{shown}', ted translate --beam {BEAM} '{text}'")
    check("beam/score", abs(beam["best"]["score"] - float(score)) <= 2e-6 + 1e-6 * abs(float(score)),
          f"page {beam['best']['score']}, ted translate {score}")
    ranking = beam["ranking"]
    ordered = all(a["score"] >= b["score"] for a, b in zip(ranking, ranking[1:]))
    check(f"beam/ranking ({len(ranking)} finished, {len(beam['steps'])} steps)",
          ranking and ranking[0]["text"] == text and ordered,
          f"ranking {[(r['text'], r['score']) for r in ranking[:3]]}")
    fates = {c["fate"] for s in beam["steps"] for c in s["candidates"]}
    shown_fates = browser.evaluate("""['open', 'finished', 'pruned'].map(
        f => document.querySelectorAll('.hyp.' + f).length)""")
    check(f"beam/steps-shown (open, finished, pruned: {shown_fates})",
          fates == {"open", "finished", "pruned"} and all(shown_fates), f"fates {fates}")


def png_size(png):
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", png[16:24])


def test_screenshots(browser, url, out_dir):
    for name, width, height, mobile in (("explorer-desktop", 1280, 800, False),
                                        ("explorer-phone", 390, 844, True)):
        browser.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                     deviceScaleFactor=1, mobile=mobile)
        browser.navigate("about:blank")
        if not browser.navigate(url):
            fail(f"screenshot/{name}", "the page did not load")
            continue
        if mobile:
            wide = browser.evaluate("document.documentElement.scrollWidth")
            check(f"screenshot/phone-fits ({wide} px wide)", wide <= width,
                  f"the page is {wide} px wide on a {width} px screen")
        png = base64.b64decode(browser.send("Page.captureScreenshot", format="png")["data"])
        path = os.path.join(out_dir, name + ".png")
        with open(path, "wb") as f:
            f.write(png)
        check(f"screenshot/{name} ({width}x{height}, {len(png)} bytes)",
              png_size(png) == (width, height) and len(png) < 200_000,
              f"{png_size(png)}, {len(png)} bytes")


def test_model_switch(browser):
    """The menu switches to the other model: the same sentence decoded by it,
    its architecture said, the URL naming it."""
    name = os.path.basename(OTHER)
    before = browser.evaluate("document.getElementById('variant').textContent")
    browser.evaluate(f"""(() => {{ const m = document.getElementById('model');
        m.value = {json.dumps(name)}; m.dispatchEvent(new Event('change')); }})()""")
    if not browser.wait_for(f"window.ted.ready && window.ted.state.data && "
                            f"window.ted.state.data.model === {json.dumps(name)}"):
        fail("model/switch", f"no decode by {name}; error: {browser.evaluate('window.ted.error')}")
        return
    variant = browser.evaluate("document.getElementById('variant').textContent")
    config = open(os.path.join(OTHER, "config.yaml")).read()
    said = [("pre-norm" if "norm_first: true" in config else "post-norm"),
            ("concatenated" if "positional_encoding: concatenated" in config else "interleaved"),
            ("tied" if "tied_output: true" in config else "separate")]
    expected = ted("translate", "-m", OTHER, SENTENCE).strip()
    browser.key("End", keycode=35)
    browser.wait_for("window.ted.state.step === window.ted.state.data.steps.length")
    text = shown_text(browser.evaluate(SHOWN), browser.evaluate("window.ted.state.data"))
    check(f"model/switch ({name}: {variant})",
          variant != before and all(w in variant for w in said) and text == expected
          and f"model={name}" in browser.evaluate("location.search"),
          f"variant '{variant}' (expected {said}), page '{text}', ted translate '{expected}'")
    shown = browser.evaluate(SHOWN)["text"]
    check(f"model/detokenized-text-beside-pieces ({shown})", shown == expected,
          f"page '{shown}', ted translate '{expected}'")


LANGUAGE_SENTENCE = "s0 s1 s2 s3"

PICKER = """(() => ({
  shown: !document.getElementById('languages').hidden,
  source: !document.getElementById('source-lang-label').hidden,
  target: [...document.getElementById('target-lang').options].map(o => o.value),
  chosen: document.getElementById('target-lang').value,
}))()"""

FIRST_WORD = """(() => { const w = document.querySelector('#output .word');
  return [w.textContent, w.classList.contains('lang'), w.classList.contains('forced')]; })()"""


def choose(browser, select, value):
    """Picks `value` in the menu of id `select`, as a change of it does."""
    browser.evaluate(f"""(() => {{ const s = document.getElementById({json.dumps(select)});
        s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()""")


def test_languages(browser, model_dir):
    """The picker of a multilingual model: each target language chosen is
    decoded into, as ted translate --target-lang decodes it."""
    choose(browser, "model", "multilingual")
    if not browser.wait_for("window.ted.ready && window.ted.state.model.name === 'multilingual'"):
        fail("language/picker", f"no switch; error: {browser.evaluate('window.ted.error')}")
        return
    picker = browser.evaluate(PICKER)
    check(f"language/picker-lists-the-codes ({picker['target']})",
          picker["shown"] and not picker["source"] and picker["target"] == ["t8", "t9"],
          str(picker))
    browser.evaluate(f"document.getElementById('source').value = {json.dumps(LANGUAGE_SENTENCE)}")
    browser.click("#source-form button")
    text = ""
    for code in ("t9", "t8"):
        choose(browser, "target-lang", code)
        if not browser.wait_for(f"window.ted.ready && window.ted.state.data && "
                                f"window.ted.state.data.source.text === {json.dumps(LANGUAGE_SENTENCE)} && "
                                f"window.ted.state.data.steps[0].chosen.token === '{code}'"):
            fail(f"language/target-{code}", f"no decode into {code}; error: "
                 f"{browser.evaluate('window.ted.error')}")
            continue
        browser.key("End", keycode=35)
        browser.wait_for("window.ted.state.step === window.ted.state.data.steps.length")
        shown, first = browser.evaluate(SHOWN), browser.evaluate(FIRST_WORD)
        text = shown["text"]
        expected = ted("translate", "-m", model_dir, "--target-lang", code,
                       LANGUAGE_SENTENCE).strip()
        check(f"language/target-{code} ({' '.join(shown['output'])}: '{text}')",
              first == [code, True, True] and text == expected
              and f"target_lang={code}" in browser.evaluate("location.search"),
              f"first token {first}, page '{text}', ted translate --target-lang {code} "
              f"'{expected}'")
    url = browser.evaluate("location.href")
    browser.navigate("about:blank")
    browser.navigate(url)
    again = browser.evaluate(PICKER)["chosen"], browser.evaluate(SHOWN)["text"]
    check(f"language/url-keeps-the-language ({again[0]})", again == ("t8", text),
          f"{again}, before ('t8', '{text}')")
    test_latest_wins(browser, model_dir)


def test_latest_wins(browser, model_dir):
    """Three target languages picked in one go, each change asking for a
    decode while the first is decoded: the page sends one request at a
    time (the server decodes one explorer request at once and refuses
    another with 503) and shows the last language's decode, with no error."""
    browser.evaluate("""(() => {
        const fetch = window.fetch, counts = window.fetchCounts = { now: 0, most: 0 };
        window.fetch = async (...args) => {
          counts.most = Math.max(counts.most, ++counts.now);
          try { return await fetch(...args); } finally { counts.now--; }
        };
        const s = document.getElementById('target-lang');
        for (const code of ['t9', 't8', 't9']) {
          s.value = code; s.dispatchEvent(new Event('change')); } })()""")
    done = browser.wait_for("window.ted.ready && window.ted.state.data && "
                            "window.ted.state.data.steps[0].chosen.token === 't9'")
    browser.key("End", keycode=35)
    browser.wait_for("window.ted.state.step === window.ted.state.data.steps.length")
    shown, error = browser.evaluate(SHOWN)["text"], browser.evaluate("window.ted.error")
    most = browser.evaluate("window.fetchCounts.most")
    check(f"language/one-request-at-a-time ({most} at most)", most == 1,
          f"{most} requests were under way at once")
    expected = ted("translate", "-m", model_dir, "--target-lang", "t9", LANGUAGE_SENTENCE).strip()
    check("language/latest-wins", done and not error and shown == expected,
          f"error '{error}', page '{shown}', ted translate --target-lang t9 '{expected}'")


MULTI = os.path.join(ROOT, "models", "multi-en-fr-es")

TRAINED = """(() => {
  const values = (id) => [...document.getElementById(id).options].map(o => o.value);
  return { source: values('source-lang'), target: values('target-lang'),
           chosen: [document.getElementById('source-lang').value,
                    document.getElementById('target-lang').value],
           examples: values('examples').filter(v => v) };
})()"""

# Each element of the decode view whose content is wider than it, or which
# reaches past its panel's right edge.
OVERFLOW = """(() => {
  const panel = document.getElementById('decode').getBoundingClientRect();
  return ['prefix', 'output', 'translation'].map(id => document.getElementById(id)).filter(e =>
    e.scrollWidth > e.clientWidth + 1 || [...e.querySelectorAll('*')].concat([e]).some(c =>
      c.getBoundingClientRect().right > panel.right + 1)).map(e => e.id);
})()"""


def examples_of(code):
    """The example menu's lines: the first 8 lines of test.CODE of at most 300 bytes."""
    with open(os.path.join(MULTI, "test." + code), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return [line for line in lines if 0 < len(line.encode()) <= 300][:8]


def decoded(browser, text):
    """Waits for the page to show the decode of `text`; True when it does."""
    return browser.wait_for(f"window.ted.ready && window.ted.state.data && "
                            f"window.ted.state.data.source.text === {json.dumps(text)}")


def submit(browser, text):
    browser.evaluate(f"document.getElementById('source').value = {json.dumps(text)}")
    browser.click("#source-form button")


def test_trained_pickers(browser, server):
    browser.navigate(server.base + "/?model=multi-en-fr-es")
    got = browser.evaluate(TRAINED)
    want = {"source": ["eng_Latn", "fra_Latn", "spa_Latn"], "target": ["fra_Latn", "spa_Latn"],
            "chosen": ["eng_Latn", "fra_Latn"], "examples": examples_of("eng_Latn")}
    check("trained/pickers-start-on-a-trained-pair", got == want, f"{got} != {want}")
    choose(browser, "source-lang", "fra_Latn")
    got = browser.evaluate(TRAINED)
    check("trained/targets-follow-the-source", got["target"] == ["eng_Latn"] and
          got["chosen"] == ["fra_Latn", "eng_Latn"], f"{got['target']} {got['chosen']}")
    check("trained/examples-follow-the-source", got["examples"] == examples_of("fra_Latn"),
          f"{got['examples'][:2]}")
    choose(browser, "source-lang", "eng_Latn")


def test_box_sentence(browser):
    first, second = examples_of("eng_Latn")[:2]
    submit(browser, first)
    if not decoded(browser, first):
        fail("trained/box-sentence", f"no decode; error: {browser.evaluate('window.ted.error')}")
        return
    browser.evaluate(f"document.getElementById('source').value = {json.dumps(second)}")
    choose(browser, "target-lang", "spa_Latn")
    done = decoded(browser, second)
    browser.key("End", keycode=35)
    browser.wait_for("window.ted.state.step === window.ted.state.data.steps.length")
    text = browser.evaluate(SHOWN)["text"]
    expected = ted("translate", "-m", MULTI, "--source-lang", "eng_Latn", "--target-lang",
                   "spa_Latn", second).strip()
    check("trained/language-change-decodes-the-box", done and text == expected,
          f"decoded {browser.evaluate('window.ted.state.data.source.text')!r}: '{text}', "
          f"ted translate '{expected}'")


def test_long_lines(browser):
    lines = examples_of("eng_Latn") + [line.strip() for line in open(
        os.path.join(MULTI, "test.eng_Latn"), encoding="utf-8")][:200]
    longest = max(lines, key=len)
    submit(browser, longest)
    if not decoded(browser, longest):
        fail("trained/long-lines-wrap", f"no decode; error: {browser.evaluate('window.ted.error')}")
        return
    browser.key("End", keycode=35)
    browser.wait_for("window.ted.state.step === window.ted.state.data.steps.length")
    steps = browser.evaluate("window.ted.state.data.steps.length")
    cut = browser.evaluate(OVERFLOW)
    check(f"trained/long-lines-wrap ({steps} tokens)", steps >= 30 and not cut,
          f"{cut} reach past the panel")


def test_error_clears(browser):
    good = examples_of("eng_Latn")[0]
    submit(browser, good)
    if not decoded(browser, good):
        fail("trained/error-clears", f"no decode; error: {browser.evaluate('window.ted.error')}")
        return
    submit(browser, " ".join([good] * 8))
    browser.wait_for("window.ted.ready && window.ted.error !== ''")
    left = browser.evaluate("""(() => ({
      error: window.ted.error,
      shown: ['decode', 'attention', 'explain', 'beam'].filter(id =>
        !document.getElementById(id).hidden && document.getElementById(id).offsetHeight > 0),
      tokens: document.getElementById('tokens').children.length,
      translation: document.getElementById('translation').offsetHeight > 0 ?
        document.getElementById('translation').textContent : '' }))()""")
    check("trained/error-clears-the-result", "more than the explorer's" in left["error"] and
          not left["shown"] and not left["tokens"] and not left["translation"], str(left))


def duplicate_sentence(server):
    """A test sentence whose beam search of 8 ranks one text twice, or None."""
    for line in examples_of("eng_Latn") + [line.strip() for line in open(
            os.path.join(MULTI, "test.eng_Latn"), encoding="utf-8")][8:60]:
        status, data = post(server, "/v1/beam", {"model": "multi-en-fr-es", "source": line,
                                                 "beam": 8, "source_lang": "eng_Latn",
                                                 "target_lang": "fra_Latn"})
        texts = [h["text"] for h in data.get("ranking", [])]
        if status == 200 and len(texts) != len(set(texts)):
            return line
    return None


def test_same_text_twice(browser, server):
    sentence = duplicate_sentence(server)
    if sentence is None:
        print("skip trained/beam-same-text-twice: no test sentence ranks a text twice", flush=True)
        return
    choose(browser, "target-lang", "fra_Latn")
    submit(browser, sentence)
    decoded(browser, sentence)
    browser.evaluate("document.getElementById('beam-size').value = '8'")
    browser.click("#beam-form button")
    browser.wait_for("window.ted.ready && window.ted.state.beamData && "
                     f"window.ted.state.beamData.source === {json.dumps(sentence)}")
    rows = browser.evaluate("""[...document.querySelectorAll('table.ranking tr')].slice(1).map(tr => {
        const td = tr.children[1], pieces = td.querySelector('.pieces');
        return [td.firstChild.textContent, pieces ? pieces.textContent : null]; })""")
    hint = browser.evaluate("!!document.querySelector('#beam-result .same-text')")
    texts = [text for text, _ in rows]
    twice = [(text, pieces) for text, pieces in rows if texts.count(text) > 1]
    spelled = all(pieces and "".join(pieces.split(" ")[1:-1]).replace("\u2581", " ").strip()
                  == text for text, pieces in twice)
    distinct = len({pieces for _, pieces in twice}) == len(twice)
    check(f"trained/beam-same-text-twice ({len(twice)} rows)", twice and hint and spelled and
          distinct, f"hint {hint}, rows {twice[:3]}")


def test_trained(browser, work):
    """The explorer on models/multi-en-fr-es (and the toy model)."""
    server = Server([MULTI, MODEL], "--host", "127.0.0.1")
    try:
        test_trained_pickers(browser, server)
        test_box_sentence(browser)
        test_long_lines(browser)
        test_error_clears(browser)
        test_same_text_twice(browser, server)
    finally:
        status = server.stop(timeout=30 * SLOW)
        check("trained/server-exit", status == 0, f"ted serve exit status {status}")


# ---- T5: the relative position bias view -------------------------------------------

T5_SENTENCE = "The old man was walking in the garden with his two small dogs yesterday."
TEST_PYTHON = os.environ.get("TEST_PYTHON", sys.executable)

# The bias view as the page shows it: each table's cells, the step's keys, the pairs.
BIAS_SHOWN = """(() => ({
  hidden: document.getElementById('bias').hidden,
  tables: Object.fromEntries([...document.querySelectorAll('table.bias-table')].map(t =>
    [t.dataset.stack, [...t.querySelectorAll('td')].map(td =>
      [+td.dataset.head, +td.dataset.bucket, +td.dataset.value, td.classList.contains('used')])])),
  step: window.ted.state.step,
  keys: [...document.querySelectorAll('#bias-step .key')].map(k => +k.dataset.bucket),
  pairs: [...document.querySelectorAll('#bias-pairs td')].map(td =>
    [+td.dataset.query, +td.dataset.key, +td.textContent]),
}))()"""

# transformers' T5Attention._relative_position_bucket of each [query, key,
# bidirectional] read on stdin as JSON: the buckets, a JSON list.
T5_BUCKETS = """
import json, sys, torch
from transformers.models.t5.modeling_t5 import T5Attention
pairs = json.load(sys.stdin)
print(json.dumps([int(T5Attention._relative_position_bucket(torch.tensor(k - q), bidirectional=b,
      num_buckets=8, max_distance=20)) for q, k, b in pairs]))
"""


def safetensors_arrays(path, names):
    """Tensors of a safetensors file, read with NumPy: {name: float32 array}."""
    import numpy as np
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    out = {}
    for name in names:
        entry = header[name]
        begin, end = entry["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype={"F32": np.float32}[entry["dtype"]]
                                  ).reshape(entry["shape"])
    return out


def transformers_buckets(pairs):
    """transformers' bucket of each (query, key, bidirectional), or (None, why)."""
    import subprocess
    p = subprocess.run([TEST_PYTHON, "-c", T5_BUCKETS], input=json.dumps(pairs),
                       capture_output=True, text=True, timeout=120 * SLOW)
    if p.returncode != 0:
        return None, p.stderr.strip()[-300:]
    return json.loads(p.stdout), None


def check_bias_tables(shown, weights):
    """The cells of both tables against relative_attention_bias.weight (buckets, heads)."""
    for stack in ("encoder", "decoder"):
        want = weights[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
        cells = shown["tables"].get(stack, [])
        worst = max((abs(v - float(want[k, h])) for h, k, v, _ in cells), default=math.inf)
        check(f"t5/bias-table-{stack} ({len(cells)} cells, max diff {worst:.1e})",
              len(cells) == want.size and worst <= 1e-6,
              f"{len(cells)} cells of {want.size}, max diff {worst}")


def check_bias_buckets(shown):
    """The step's buckets, the outlined cells and every encoder pair against transformers."""
    query = shown["step"] - 1
    asked = [[query, k, False] for k in range(len(shown["keys"]))] + \
        [[q, k, True] for q, k, _ in shown["pairs"]]
    want, why = transformers_buckets(asked)
    if want is None:
        fail("t5/bias-buckets", f"transformers: {why}")
        return
    step_want, pairs_want = want[:len(shown["keys"])], want[len(shown["keys"]):]
    check(f"t5/bias-step-buckets (step {shown['step']}: {shown['keys']})",
          len(shown["keys"]) == shown["step"] and shown["keys"] == step_want,
          f"shown {shown['keys']}, transformers {step_want}")
    outlined = sorted({k for h, k, _, used in shown["tables"]["decoder"] if used})
    check("t5/bias-used-outlined", outlined == sorted(set(step_want)),
          f"outlined {outlined}, used {sorted(set(step_want))}")
    # 7 of the 8 buckets: the first bucket of keys after the query (distance 0)
    # is never used
    got = [b for _, _, b in shown["pairs"]]
    check(f"t5/bias-encoder-pairs ({len(got)} pairs, buckets {sorted(set(got))})",
          got == pairs_want and len(set(got)) == 7,
          f"{len(set(got))} buckets used (7 wanted); first difference at " +
          str(next(([q, k, g, w] for (q, k, g), w in zip(shown["pairs"], pairs_want) if g != w),
                   None)) + " [query, key, shown, transformers]")


def test_t5_bias(browser, work):
    """A T5 model's bias view: the tables and the buckets, as transformers has them."""
    t5 = os.path.join(work, "t5")
    import subprocess
    p = subprocess.run([TEST_PYTHON, os.path.join(ROOT, "tests", "lib", "t5_learn_model.py"), t5],
                       capture_output=True, text=True, timeout=300 * SLOW)
    if p.returncode != 0:
        fail("t5/model", p.stderr.strip()[-300:])
        return
    server = Server([f"t5={t5}/ted", MODEL], "--host", "127.0.0.1")
    try:
        url = server.base + "/?model=t5&step=end&source=" + urllib.parse.quote(T5_SENTENCE)
        if not browser.navigate(url) or not browser.wait_for("window.ted.state.data !== null"):
            fail("t5/bias-view", f"{url} did not load")
            return
        shown = browser.evaluate(BIAS_SHOWN)
        check("t5/bias-view-shown", not shown["hidden"] and shown["step"] > 8,
              f"hidden {shown['hidden']}, step {shown['step']}")
        names = [f"{s}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
                 for s in ("encoder", "decoder")]
        check_bias_tables(shown, safetensors_arrays(os.path.join(t5, "hf", "model.safetensors"),
                                                    names))
        check_bias_buckets(shown)
        browser.navigate(server.base + f"/?model={os.path.basename(MODEL)}&source="
                         + urllib.parse.quote(SENTENCE))
        check("t5/no-bias-view-without-relative-positions",
              browser.evaluate("document.getElementById('bias').hidden"), "shown on toy-en-fr")
    finally:
        status = server.stop(timeout=30 * SLOW)
        check("t5/server-exit", status == 0, f"ted serve exit status {status}")


RULES_SENTENCE = "the cat eats the cat ."
CANDIDATES = """[...document.querySelectorAll('#candidates li')].map(e => ({
  token: e.dataset.token, banned: e.classList.contains('banned'),
  why: (e.querySelector('.why') || {}).textContent || ''}))"""


def shown_steps(browser, data):
    """Each step of the decode as the page shows it, gone to with the keys:
    (step index from 0, the prefix its decoder read, the candidates shown)."""
    for i in range(len(data["steps"])):
        browser.key("Home", keycode=36)
        for _ in range(i):
            browser.key("ArrowRight", keycode=39)
        browser.wait_for(f"window.ted.state.step === {i + 1}")
        prefix = [s["input"]["token"] for s in data["steps"][:i + 1]]
        yield i, prefix, browser.evaluate(CANDIDATES)


def ngram_banned(prefix, n):
    """The tokens NoRepeatNGramLogitsProcessor's definition bans after
    `prefix` (the decoder's start token first): those that followed an
    earlier occurrence of its last n - 1 tokens."""
    tail = prefix[len(prefix) - (n - 1):]
    return {prefix[i + n - 1] for i in range(len(prefix) - n + 1)
            if prefix[i:i + n - 1] == tail}


def test_rules(browser, server):
    expected = ted("translate", "-m", MODEL, "--no-repeat-ngram-size", "2", RULES_SENTENCE).strip()
    query = urllib.parse.urlencode({"model": os.path.basename(MODEL), "source": RULES_SENTENCE,
                                    "no_repeat_ngram_size": 2})
    if not browser.navigate(server.base + "/?" + query + "&step=end"):
        fail("rules/no-repeat-ngram", "the page did not load")
        return
    data = browser.evaluate("window.ted.state.data")
    text = shown_text(browser.evaluate(SHOWN), data)
    check(f"rules/translation-is-ted-translate ({text})", text == expected,
          f"page '{text}', ted translate --no-repeat-ngram-size 2 '{expected}'")
    wrong, seen = [], []
    for i, prefix, candidates in shown_steps(browser, data):
        banned = ngram_banned(prefix, 2)
        for c in candidates:
            want = f"banned: would repeat the 2-gram '{prefix[-1]} {c['token']}'" \
                if c["token"] in banned else ""
            if c["why"] != want or c["banned"] != bool(want):
                wrong.append(f"step {i + 1} '{c['token']}': shown {c['why']!r}, want {want!r}")
            if want:
                seen.append(f"step {i + 1} '{c['token']}'")
    check(f"rules/no-repeat-ngram-banned-shown ({', '.join(seen)})", seen and not wrong,
          "; ".join(wrong[:3]) or "no candidate banned")
    browser.evaluate("""(() => { const e = document.getElementById('rule-min_length');
        e.value = '9'; e.dispatchEvent(new Event('change', { bubbles: true })); })()""")
    if not browser.wait_for("window.ted.ready && window.ted.state.data && "
                            "window.ted.state.data.rules.min_length === 9"):
        fail("rules/min-length-form", f"no decode with min_length 9: {browser.evaluate('window.ted.error')}")
        return
    data = browser.evaluate("window.ted.state.data")
    marks = [(i + 1, c.get("why", "")) for i, s in enumerate(data["steps"]) for c in s["top"]
             if c["token"] == "<eos>"]
    bad = [(k, why) for k, why in marks
           if why != ("banned: end of sentence before min_length 9" if k < 9 else "")]
    first = next((k for k, why in marks if why), 0)
    browser.key("Home", keycode=36)
    for _ in range(first - 1):
        browser.key("ArrowRight", keycode=39)
    browser.wait_for(f"window.ted.state.step === {first}")
    shown = [c for c in browser.evaluate(CANDIDATES) if c["token"] == "<eos>"]
    check(f"rules/min-length-bans-eos-before-9 (EOS a candidate at steps {[k for k, _ in marks]})",
          first and not bad and shown and shown[0]["banned"] and
          shown[0]["why"] == "banned: end of sentence before min_length 9",
          f"{bad[:3]} of {marks}; shown at step {first}: {shown}")


def bad_words_banned(prefix, sequences):
    """The tokens NoBadWordsLogitsProcessor's definition bans after `prefix`:
    each sequence's last token where the prefix ends with the rest of it."""
    return {seq[-1] for seq in sequences
            if len(seq) == 1 or prefix[len(prefix) - (len(seq) - 1):] == seq[:-1]}


def test_bad_words(browser, server):
    """bad_words_ids in the URL: the translation is ted translate
    --bad-words-ids's; the candidates the rule bans, and only those, are
    struck out with why; the rules form shows the sequences."""
    vocab = [line.rstrip("\n") for line in open(os.path.join(MODEL, "vocab.tgt"),
                                                  encoding="utf-8")]
    sequences = [["le", "chat"], ["mange"]]
    ids = [[vocab.index(t) for t in seq] for seq in sequences]
    text_ids = "; ".join(",".join(str(i) for i in seq) for seq in ids)
    expected = ted("translate", "-m", MODEL, *[a for seq in ids for a in
                   ("--bad-words-ids", ",".join(str(i) for i in seq))], RULES_SENTENCE).strip()
    query = urllib.parse.urlencode({"model": os.path.basename(MODEL), "source": RULES_SENTENCE,
                                    "bad_words_ids": text_ids})
    if not browser.navigate(server.base + "/?" + query + "&step=end"):
        fail("rules/bad-words", "the page did not load")
        return
    data = browser.evaluate("window.ted.state.data")
    text = shown_text(browser.evaluate(SHOWN), data)
    form = browser.evaluate("document.getElementById('rule-bad_words_ids').value")
    check(f"rules/bad-words-translation-is-ted-translate ({text}; form '{form}')",
          text == expected and form == text_ids,
          f"page '{text}', ted translate --bad-words-ids '{expected}'; form '{form}'")
    wrong, seen = [], []
    for i, prefix, candidates in shown_steps(browser, data):
        banned = bad_words_banned(prefix, sequences)
        for c in candidates:
            want = ""
            if c["token"] in banned:
                want = "banned: a bad word (bad_words_ids)" if c["token"] == "mange" else \
                    f"banned: would complete the bad words '{prefix[-1]} {c['token']}' (bad_words_ids)"
            if c["why"] != want or c["banned"] != bool(want):
                wrong.append(f"step {i + 1} '{c['token']}': shown {c['why']!r}, want {want!r}")
            if want:
                seen.append(f"step {i + 1} '{c['token']}'")
    check(f"rules/bad-words-banned-shown ({', '.join(seen)})",
          any("chat" in x for x in seen) and not wrong,
          "; ".join(wrong[:3]) or f"no sequence's last token banned ({seen})")


def test_network(browser, server):
    events = browser.events
    urls = [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]
    outside = [u for u in urls if not u.startswith(server.base + "/") and not u.startswith("data:")]
    check(f"network/loopback-only ({len(urls)} requests, all to {server.base})",
          urls and not outside, f"requests elsewhere: {outside[:5]}")
    broken = [e["params"].get("errorText") for e in events if e["method"] == "Network.loadingFailed"]
    check("network/no-failed-request", not broken, str(broken[:5]))
    errors = [e["params"]["entry"]["text"] for e in events
              if e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]
    errors += [json.dumps(e["params"]["args"])[:200] for e in events
               if e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert")]
    errors += [e["params"]["exceptionDetails"].get("text", "") for e in events
               if e["method"] == "Runtime.exceptionThrown"]
    check("network/no-console-error", not errors, str(errors[:5]))
    statuses = [e["params"]["response"]["status"] for e in events
                if e["method"] == "Network.responseReceived"]
    check("network/every-answer-200", statuses and all(s == 200 for s in statuses),
          f"statuses {sorted(set(statuses))}")


def main():
    out_dir = None
    if len(sys.argv) == 3 and sys.argv[1] == "--screenshots":
        out_dir = sys.argv[2]
        os.makedirs(out_dir, exist_ok=True)
    if not os.access(CHROMIUM, os.X_OK):
        fail("browser/chromium", f"{CHROMIUM} is missing (scripts/install-deps.sh --test installs chromium)")
        return 1
    work = tempfile.mkdtemp(prefix="ted-explorer-")
    server = browser = None
    try:
        multilingual = tiny_multilingual_model(os.path.join(work, "multilingual"))
        server = Server([MODEL, OTHER, f"multilingual={multilingual}"], "--host", "127.0.0.1")
        browser = Browser(work)
        for domain in ("Page", "Network", "Runtime", "Log"):
            browser.send(f"{domain}.enable")
        browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=800,
                     deviceScaleFactor=1, mobile=False)
        test_assets(server)
        test_api(server)
        if test_greedy(browser, server, model_sizes()) is not None:
            if test_force(browser) is not None:
                url = test_url(browser, server)
                test_undo(browser)
                test_beam(browser)
                test_screenshots(browser, url + f"&beam={BEAM}", out_dir or work)
                test_model_switch(browser)
                test_languages(browser, multilingual)
        test_rules(browser, server)
        test_bad_words(browser, server)
        test_network(browser, server)
        test_trained(browser, work)
        test_t5_bias(browser, work)
    except Exception as e:  # a broken page or browser: one failure, with why
        fail("browser/run", f"{type(e).__name__}: {e}")
    finally:
        if browser:
            browser.close()
        if server:
            status = server.stop(timeout=30 * SLOW)
            check("server/exit", status == 0, f"ted serve exit status {status}")
            reports = server.sanitizer_reports()
            check("server/no-sanitizer-report", not reports, str(reports[:3]))
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
