"""The docs pages (Swagger UI, vendored) rendered by headless Chromium (Debian `chromium`),
driven over the DevTools protocol: every operation of the served document is listed in the DOM
after the page's JavaScript ran, and every network request the page makes (DevTools
`Network.requestWillBeSent`, the page's own requests, not the browser's background traffic) goes
to the loopback server. The landing page at `/` links both pages.

`VEGDB_SKIP_CHROMIUM=1` skips these tests locally; CI installs chromium and never sets it.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from urllib.parse import urlparse

import pytest
import requests

from conftest import READ, WRITE

if os.environ.get("VEGDB_SKIP_CHROMIUM") == "1":
    pytest.skip("VEGDB_SKIP_CHROMIUM=1", allow_module_level=True)


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("chromium is missing (Debian: apt-get install chromium); CI installs it")


class Browser:
    """Headless Chromium with one page, driven over the DevTools websocket."""

    def __init__(self):
        import websocket  # websocket-client

        self.profile = tempfile.mkdtemp(prefix="vegdb-chromium-")
        self.proc = subprocess.Popen(
            [
                chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-extensions", f"--user-data-dir={self.profile}",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
            elif not line and self.proc.poll() is not None:
                break
        assert port, "chromium did not start its DevTools endpoint"
        pages = []
        while not pages and time.monotonic() < deadline:
            pages = [t for t in requests.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
                     if t["type"] == "page"]
            time.sleep(0.1)
        self.ws = websocket.create_connection(
            pages[0]["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        self.next_id = 0
        self.requests = []
        self.call("Network.enable")
        self.call("Page.enable")

    def _event(self, msg):
        if msg.get("method") == "Network.requestWillBeSent":
            self.requests.append(msg["params"]["request"]["url"])

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                assert "error" not in msg, msg
                return msg.get("result", {})
            self._event(msg)

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r["result"].get("value")

    def open(self, url, ready_js, timeout=60):
        """Navigate, then wait until `ready_js` is true; the page's DOM as HTML."""
        self.requests = []
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not self.evaluate(ready_js):
            assert time.monotonic() < deadline, f"{url} did not become ready: {ready_js}"
            time.sleep(0.2)
        time.sleep(0.5)  # let late requests show up
        self.evaluate("1")
        return self.evaluate("document.documentElement.outerHTML")

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


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    yield b
    b.close()


def assert_only_loopback(requests_seen):
    assert requests_seen, "no request recorded"
    for url in requests_seen:
        u = urlparse(url)
        if u.scheme in ("data", "blob", "about"):
            continue
        assert u.hostname == "127.0.0.1", f"request beyond loopback: {url}"


@pytest.mark.parametrize("base", [READ, WRITE, "/nvdb/apiskriv/v2"])
def test_docs_page_lists_every_operation_offline(server, browser, base):
    doc = requests.get(server.root + base + "/openapi.json", timeout=30).json()
    expected = sum(len(item) for item in doc["paths"].values())
    dom = browser.open(
        server.root + base + "/docs",
        f"document.querySelectorAll('.opblock').length >= {expected}",
    )
    for path, item in doc["paths"].items():
        assert f'data-path="{path}"' in dom, f"{path} not rendered"
        for method, op in item.items():
            assert f">{op['operationId']}<" in dom, f"{method} {path}: {op['operationId']} not rendered"
    assert expected >= (30 if base == READ else 13)
    assert any(u.endswith(base + "/openapi.json") for u in browser.requests), browser.requests
    assert any(u.endswith("/docs/swagger-ui-bundle.js") for u in browser.requests), browser.requests
    assert_only_loopback(browser.requests)


def test_landing_page_for_browsers_links_both_docs_pages(server, browser):
    dom = browser.open(server.root + "/", "document.querySelectorAll('a').length > 0")
    for href in (READ + "/docs", WRITE + "/docs"):
        assert f'href="{href}"' in dom, dom[:2000]
    assert_only_loopback(browser.requests)
    # a plain client's GET / is as before: 404 in the read API's error shape
    r = requests.get(server.root + "/", timeout=30)
    assert r.status_code == 404 and r.json()[0]["code"] == 4012
