"""A small Chrome DevTools Protocol client over the `websockets` package, driving Debian's
`chromium` in headless mode (no browser download)."""

import json
import shutil
import subprocess
import tempfile
import time

import requests
from websockets.sync.client import connect


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("chromium is missing (apt-get install chromium); the map test needs it")


class Browser:
    def __init__(self, port: int, width: int = 1280, height: int = 800):
        self.profile = tempfile.mkdtemp(prefix="vegdb-chromium-")
        self.proc = subprocess.Popen(
            [
                chromium_binary(), "--headless=new", "--no-sandbox", "--disable-gpu-sandbox",
                "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-first-run",
                "--disable-extensions", "--disable-background-networking",
                f"--remote-debugging-port={port}", "--remote-debugging-address=127.0.0.1",
                f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                pages = requests.get(f"http://127.0.0.1:{port}/json/list", timeout=2).json()
                page = next(p for p in pages if p["type"] == "page")
                break
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise AssertionError("chromium did not start its DevTools endpoint")
                time.sleep(0.2)
        self.ws = connect(page["webSocketDebuggerUrl"], max_size=64 << 20, open_timeout=10)
        self.next_id = 0
        self.events = []

    def send(self, method: str, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def eval(self, expression: str):
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60.0):
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                v = self.eval(expression)
                if v:
                    return v
            except AssertionError as e:  # e.g. the document is not there yet
                last = e
            if time.monotonic() > deadline:
                logs = [e for e in self.events if e.get("method") in
                        ("Runtime.exceptionThrown", "Runtime.consoleAPICalled")]
                raise AssertionError(f"timed out waiting for {expression} ({last}); {logs[-5:]}")
            time.sleep(0.2)

    def click(self, x: float, y: float):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            extra = {} if kind == "mouseMoved" else {"button": "left", "clickCount": 1}
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)
