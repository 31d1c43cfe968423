#!/usr/bin/python3
"""`ted serve --cors` in a real browser: a page of another origin (a second
local HTTP server, on another port) calls POST /translate, as a web page
or a browser extension using LibreTranslate would. Headless Chromium,
driven over the DevTools protocol (tests/lib/ted_browser.py).

    TED=build/ted /usr/bin/python3 tests/browser/test_cors.py

Checks (one "ok NAME" or "FAIL NAME: why" line each; exit 1 if one fails):
  cors/allowed-*  with --cors ORIGIN (the page's origin): a JSON request
                  (preflighted) and a form request (a simple one) are
                  answered to the page, with ted translate's translation
  cors/blocked-*  without --cors, and with --cors naming another origin: the
                  browser keeps the answer from the page (fetch fails)
"""
import http.server
import os
import shutil
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from ted_browser import CHROMIUM, Browser  # noqa: E402
from ted_test import SLOW, Server, check, fail, failures, ted_output  # noqa: E402

MODEL = os.path.join(ROOT, "models", "en-fr")
SENTENCE = "I saw the cat."

# The page's script: both kinds of request, each result (the translation,
# or the error's name) in window.results.
PAGE = """<!doctype html><meta charset="utf-8"><title>another origin</title>
<script>
const server = new URLSearchParams(location.search).get("server");
async function call(kind) {
  const fields = {q: "%s", source: "en", target: "fr"};
  const options = kind === "json"
    ? {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(fields)}
    : {method: "POST", body: new URLSearchParams(fields)};
  try {
    const answer = await fetch(server + "/translate", options);
    return (await answer.json()).translatedText;
  } catch (e) {
    return "blocked: " + e.name;
  }
}
window.results = Promise.all([call("json"), call("form")]);
</script>""" % SENTENCE


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def results(browser, page, server):
    browser.navigate(f"{page}/?server={server.base}")
    return browser.evaluate("window.results")


def main():
    if not os.access(CHROMIUM, os.X_OK):
        fail("cors/chromium", f"{CHROMIUM} is missing (scripts/install-deps.sh --test)")
        return 1
    want = ted_output(["translate", "-m", MODEL, SENTENCE], timeout=120 * SLOW).strip()
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    page = f"http://127.0.0.1:{site.server_address[1]}"
    work = tempfile.mkdtemp(prefix="ted-cors-")
    browser = None
    servers = {"allowed": Server([MODEL], "--cors", page), "blocked-off": Server([MODEL]),
               "blocked-other": Server([MODEL], "--cors", "http://127.0.0.1:1")}
    try:
        browser = Browser(work)
        browser.send("Runtime.enable")
        for name, server in servers.items():
            got = results(browser, page, server)
            for kind, text in zip(["json", "form"], got or [None, None]):
                if name == "allowed":
                    check(f"cors/{name}-{kind}", text == want, f"{text!r}, ted translate {want!r}")
                else:
                    check(f"cors/{name}-{kind}", str(text).startswith("blocked: "),
                          f"the page read {text!r}")
    except Exception as e:  # a broken browser: one failure, with why
        fail("cors/run", f"{type(e).__name__}: {e}")
    finally:
        if browser:
            browser.close()
        for name, server in servers.items():
            check(f"cors/{name}-exit-0", server.stop(timeout=30 * SLOW) == 0, server.last_words())
            reports = server.sanitizer_reports()
            check(f"cors/{name}-no-sanitizer-report", not reports, str(reports[:3]))
        site.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
