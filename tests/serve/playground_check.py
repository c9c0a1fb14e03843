"""The playground page in headless Chromium: load it, type a prompt, press Generate, read the
streamed text from the DOM, check it against the API's greedy completion and that tokens carry
probabilities for the hover, and save a screenshot.

Usage: playground_check.py BASE_URL SCREENSHOT.png [CHROMIUM]
Talks to Chromium over --remote-debugging-pipe (the DevTools protocol on fds 3 and 4), so it needs
nothing beyond the Python standard library."""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

base, shot = sys.argv[1].rstrip("/"), sys.argv[2]
browser = sys.argv[3] if len(sys.argv) > 3 else (shutil.which("chromium") or "chromium")
PROMPT, MAX_TOKENS = "Document 12:", 24


def api_greedy():
    body = json.dumps({"prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0}).encode()
    req = urllib.request.Request(base + "/v1/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)["choices"][0]["text"]


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="meshlm-chromium-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        # The child reads commands on fd 3 and writes replies on fd 4 (the shell moves the
        # pipes there; subprocess keeps only pass_fds open).
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-dev-shm-usage", "--remote-debugging-pipe", "--window-size=1200,800",
                 "--user-data-dir=" + self.profile, "about:blank"]
        self.proc = subprocess.Popen(
            ["sh", "-c", f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w}', browser] + flags,
            pass_fds=(to_child_r, from_child_w), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.next_id, self.buf, self.session = 0, b"", None

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        raise TimeoutError(method)

    def js(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    want = api_greedy()
    b = Browser()
    try:
        target = b.call("Target.createTarget", {"url": base + "/"})["targetId"]
        b.session = b.call("Target.attachToTarget", {"targetId": target,
                                                     "flatten": True})["sessionId"]
        deadline = time.time() + 30
        while b.js("document.readyState") != "complete" or not b.js(
                "((document.getElementById('model') || {}).textContent || '').includes('context')"):
            if time.time() > deadline:
                raise TimeoutError("the page did not load")
            time.sleep(0.1)
        b.js(f"""(() => {{
            document.getElementById('prompt').value = {json.dumps(PROMPT)};
            document.getElementById('max_tokens').value = '{MAX_TOKENS}';
            document.getElementById('temperature').value = '0';
            document.getElementById('generate').click();
        }})()""")
        seen = set()
        deadline = time.time() + 60
        while True:
            text = b.js("document.getElementById('output').textContent")
            seen.add(len(text))
            status = b.js("document.getElementById('status').textContent")
            if status.startswith("done") or status.startswith("error"):
                break
            if time.time() > deadline:
                raise TimeoutError("no end of stream: " + status)
            time.sleep(0.02)
        text = b.js("document.getElementById('output').textContent")
        spans = b.js("Array.from(document.querySelectorAll('#output .tok'))"
                     ".filter(s => s.title.startsWith('p = ')).length")
        png = b.call("Page.captureScreenshot", {"format": "png"})["data"]
        os.makedirs(os.path.dirname(os.path.abspath(shot)), exist_ok=True)
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png))
    finally:
        b.close()
    print(f"status: {status}")
    print(f"page text: {text!r}")
    print(f"tokens with probabilities: {spans}; text lengths seen while streaming: {sorted(seen)}")
    ok = status.startswith("done") and text == PROMPT + want and spans >= 1
    print("1 passed, 0 failed" if ok else f"FAIL: expected {PROMPT + want!r}")
    sys.exit(0 if ok else 1)


main()
