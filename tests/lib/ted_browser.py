"""Headless Chromium for the browser tests (tests/browser/): one page of it,
driven over the DevTools protocol (a websocket; Debian's python3-websocket)."""
import json
import os
import subprocess
import time
import urllib.request

import websocket  # Debian's python3-websocket

from ted_test import SLOW

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
WAIT = 30 * SLOW          # seconds any wait for the page may take


class Browser:
    """Headless Chromium and one page of it, spoken to over the DevTools protocol."""

    def __init__(self, workdir):
        self.profile = os.path.join(workdir, "profile")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-extensions",
             "--remote-allow-origins=*", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = self._devtools_port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=WAIT,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []

    def _devtools_port(self):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30 * SLOW
        while time.monotonic() < deadline:
            if os.path.exists(path):
                with open(path) as f:
                    first = f.readline().strip()
                if first.isdigit():
                    return int(first)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("chromium did not open its DevTools port")

    def send(self, method, **params):
        """The result of one command; the events that come meanwhile are kept."""
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)
        raise TimeoutError(f"{method}: no answer in {WAIT} s")

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, timeout=WAIT):
        """Polls a JavaScript condition until it holds; False past the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(f"!!({expression})"):
                return True
            time.sleep(0.03)
        return False

    def navigate(self, url, ready="document.readyState === 'complete'"):
        """Opens `url` and waits until the JavaScript condition `ready` holds."""
        self.send("Page.navigate", url=url)
        if url == "about:blank":
            ready = "location.href === 'about:blank' && document.readyState === 'complete'"
        return self.wait_for(ready)

    def key(self, key, code=None, keycode=0, text=None):
        base = {"key": key, "code": code or key, "windowsVirtualKeyCode": keycode,
                "nativeVirtualKeyCode": keycode}
        down = dict(base, type="keyDown")
        if text is not None:
            down.update(text=text, unmodifiedText=text)
        self.send("Input.dispatchKeyEvent", **down)
        self.send("Input.dispatchKeyEvent", **dict(base, type="keyUp"))

    def type_text(self, text):
        for ch in text:
            self.key(ch, code="", text=ch)

    def click(self, selector):
        """A real mouse click in the middle of the element."""
        box = self.evaluate(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                      clickCount=1)

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
