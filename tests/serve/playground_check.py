"""The playground page in headless Chromium: load it, type a prompt, press Generate, read the
streamed text from the DOM, check it against the API's greedy completion and that tokens carry
probabilities for the hover; then the chat tab: two turns typed and sent, each streamed reply
checked against the API's greedy chat completion of the conversation so far (the page sends
the earlier reply back as the assistant's turn); and save a screenshot of each tab.

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


# The chat run's context (192) holds the second turn's prompt with 8 tokens to answer.
SYSTEM, TURNS, CHAT_MAX_TOKENS = "Be brief.", ["Doc 3?", "Doc 4?"], 8


def post(path, body):
    req = urllib.request.Request(base + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def api_greedy():
    body = {"prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0}
    return post("/v1/completions", body)["choices"][0]["text"]


def api_chat_greedy(messages):
    body = {"messages": messages, "max_tokens": CHAT_MAX_TOKENS, "temperature": 0}
    return post("/v1/chat/completions", body)["choices"][0]["message"]["content"]


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


def wait_done(b, status_id):
    """Polls the status line until the stream ends; returns it and the set of lengths seen."""
    seen = set()
    deadline = time.time() + 60
    while True:
        seen.add(b.js("document.querySelectorAll('#output .tok, .msg.assistant .tok').length"))
        status = b.js(f"document.getElementById('{status_id}').textContent")
        if status.startswith("done") or status.startswith("error"):
            return status, seen
        if time.time() > deadline:
            raise TimeoutError("no end of stream: " + status)
        time.sleep(0.02)


def screenshot(b, path):
    png = b.call("Page.captureScreenshot", {"format": "png"})["data"]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(base64.b64decode(png))


def chat_tab(b):
    """Two turns in the chat tab; True when both replies are the API's greedy ones."""
    b.js("""(() => {
        document.getElementById('tab_chat').click();
        document.getElementById('system').value = %s;
        document.getElementById('max_tokens').value = '%d';
    })()""" % (json.dumps(SYSTEM), CHAT_MAX_TOKENS))
    if b.js("document.getElementById('pane_chat').hidden") or not b.js(
            "document.getElementById('pane_complete').hidden"):
        print("FAIL: the chat tab did not show")
        return False
    messages, ok = [{"role": "system", "content": SYSTEM}], True
    for i, turn in enumerate(TURNS):
        messages.append({"role": "user", "content": turn})
        want = api_chat_greedy(messages)
        b.js("""(() => {
            document.getElementById('chat_input').value = %s;
            document.getElementById('send').click();
        })()""" % json.dumps(turn))
        status, seen = wait_done(b, "chat_status")
        replies = b.js("Array.from(document.querySelectorAll('.msg.assistant'))"
                       ".map(d => d.textContent)")
        users = b.js("Array.from(document.querySelectorAll('.msg.user')).map(d => d.textContent)")
        spans = b.js("Array.from(document.querySelectorAll('.msg.assistant')).pop()"
                     ".querySelectorAll('.tok[title^=\"p = \"]').length")
        print(f"chat turn {i + 1}: status {status!r}; reply {replies[-1]!r}; tokens with "
              f"probabilities {spans}; token counts seen while streaming {sorted(seen)}")
        good = (status.startswith("done") and replies[-1] == want and users == TURNS[:i + 1]
                and len(replies) == i + 1 and spans >= 1)
        if not good:
            print(f"FAIL: chat turn {i + 1}: expected the reply {want!r} after {users!r}")
        ok = ok and good
        messages.append({"role": "assistant", "content": want})
    screenshot(b, shot.replace(".png", "_chat.png"))
    return ok


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
        status, seen = wait_done(b, "status")
        text = b.js("document.getElementById('output').textContent")
        spans = b.js("Array.from(document.querySelectorAll('#output .tok'))"
                     ".filter(s => s.title.startsWith('p = ')).length")
        screenshot(b, shot)
        print(f"status: {status}")
        print(f"page text: {text!r}")
        print(f"tokens with probabilities: {spans}; token counts seen while streaming: "
              f"{sorted(seen)}")
        ok = status.startswith("done") and text == PROMPT + want and spans >= 1
        if not ok:
            print(f"FAIL: expected {PROMPT + want!r}")
        chat_ok = chat_tab(b)
    finally:
        b.close()
    passed = int(ok) + int(chat_ok)
    print(f"{passed} passed, {2 - passed} failed")
    sys.exit(0 if passed == 2 else 1)


main()
