"""Fixtures for the client suite: the real `vegdb` binary on a freshly generated tiny dataset.

The server is started once per test session on 127.0.0.1 with a free port and its own temporary
data directory, and killed at the end. The binary is the one `cargo test` builds (debug profile):
`$VEGDB_BIN`, else `$CARGO_TARGET_DIR/debug/vegdb`, else `target/debug/vegdb` of this repository.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60


def vegdb_binary() -> Path:
    if os.environ.get("VEGDB_BIN"):
        return Path(os.environ["VEGDB_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "vegdb"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: str, log: Path):
        self.root = root
        self.base = root + "/nvdb/api/v2"
        self.log = log

    def get(self, path: str, **params):
        """Plain HTTP GET of the read API (no client library): the independent expectation."""
        r = requests.get(self.base + path, params=params, timeout=30)
        assert r.status_code == 200, f"GET {r.url}: {r.status_code} {r.text[:500]}"
        return r.json()

    def get_all(self, path: str, **params):
        """Every item of a paged list, following `metadata.neste.href` until a page is empty."""
        page = self.get(path, **params)
        items = []
        while page["metadata"]["returnert"] > 0:
            items.extend(page["objekter"])
            r = requests.get(page["metadata"]["neste"]["href"], timeout=30)
            assert r.status_code == 200, r.text[:500]
            page = r.json()
        return items


@pytest.fixture(scope="session")
def server():
    binary = vegdb_binary()
    assert binary.is_file(), (
        f"{binary} is missing: build it first (`cargo build`), or set VEGDB_BIN"
    )
    tmp = Path(tempfile.mkdtemp(prefix="vegdb-clients-"))
    data = tmp / "data"
    log_path = tmp / "serve.log"
    gen = subprocess.run(
        [str(binary), "generate", "--scale", "tiny", "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gen.returncode == 0, f"vegdb generate failed:\n{gen.stdout}\n{gen.stderr}"
    port = free_port()
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [str(binary), "serve", "--listen", f"127.0.0.1:{port}", "--data", str(data)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    srv = Server(f"http://127.0.0.1:{port}", log_path)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    f"vegdb serve exited with {proc.returncode}:\n{log_path.read_text()}"
                )
            try:
                if requests.get(srv.base + "/status", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"vegdb serve not ready:\n{log_path.read_text()}")
            time.sleep(0.1)
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def nvdb(server):
    """A `pnvdb.Nvdb` pointed at the server. The only change to pnvdb is its base URL
    (`pnvdb.config.lesapi_base_url`, which every pnvdb request reads)."""
    import pnvdb
    import pnvdb.config

    pnvdb.config.lesapi_base_url = server.base
    return pnvdb.Nvdb(client="vegdb-client-suite", contact="dev@vegdb.local")
