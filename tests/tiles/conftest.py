"""Fixtures for the tile and map-page tests: the real `vegdb` binary on a freshly generated tiny
dataset (started once per session on a free port of 127.0.0.1, killed at the end). The binary
is `$VEGDB_BIN`, else `$CARGO_TARGET_DIR/debug/vegdb`, else `target/debug/vegdb`."""

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
    def __init__(self, root: str):
        self.root = root
        self.api = root + "/nvdb/api/v2"

    def get_all(self, path: str, **params):
        """Every item of a paged read-API list (plain HTTP, following `metadata.neste`)."""
        r = requests.get(self.api + path, params=params, timeout=60)
        assert r.status_code == 200, r.text[:300]
        page = r.json()
        items = []
        while page["metadata"]["returnert"] > 0:
            items.extend(page["objekter"])
            r = requests.get(page["metadata"]["neste"]["href"], timeout=60)
            assert r.status_code == 200, r.text[:300]
            page = r.json()
        return items


@pytest.fixture(scope="session")
def server():
    binary = vegdb_binary()
    assert binary.is_file(), f"{binary} is missing: build it first (`cargo build`), or set VEGDB_BIN"
    tmp = Path(tempfile.mkdtemp(prefix="vegdb-tiles-"))
    data = tmp / "data"
    gen = subprocess.run(
        [str(binary), "generate", "--scale", "tiny", "--data", str(data)],
        capture_output=True, text=True, timeout=300,
    )
    assert gen.returncode == 0, gen.stdout + gen.stderr
    port = free_port()
    log_path = tmp / "serve.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [str(binary), "serve", "--listen", f"127.0.0.1:{port}", "--data", str(data)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    srv = Server(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"vegdb serve exited:\n{log_path.read_text()}")
            try:
                if requests.get(srv.api + "/status", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, log_path.read_text()
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
