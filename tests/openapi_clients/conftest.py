"""Fixtures of the OpenAPI client suite: the real `vegdb` binary on a freshly generated tiny
dataset with a write user, and Python clients generated from the two OpenAPI documents it serves.

The server runs on 127.0.0.1 with a free port and its own temporary data directory. The binary
is `$VEGDB_BIN`, else `$CARGO_TARGET_DIR/debug/vegdb`, else `target/debug/vegdb`. The client
generator is `openapi-python-client` from the same environment as pytest (pinned in `.ci/run`).
"""

import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60
READ = "/nvdb/api/v2"
WRITE = "/nvdb/apiskriv/rest/v2"
USER = "kari"
PASSWORD = "et godt passord"


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
    def __init__(self, root: str, token: str, tmp: Path):
        self.root = root
        self.token = token
        self.tmp = tmp


@pytest.fixture(scope="session")
def server():
    binary = vegdb_binary()
    assert binary.is_file(), f"{binary} is missing: build it first (`cargo build`), or set VEGDB_BIN"
    tmp = Path(tempfile.mkdtemp(prefix="vegdb-openapi-"))
    data = tmp / "data"
    gen = subprocess.run(
        [str(binary), "generate", "--scale", "tiny", "--data", str(data)],
        capture_output=True, text=True, timeout=180,
    )
    assert gen.returncode == 0, f"vegdb generate failed:\n{gen.stdout}\n{gen.stderr}"
    add = subprocess.run(
        [str(binary), "user", "add", USER, "--roles", "skriv", "--password-stdin", "--data", str(data)],
        input=PASSWORD + "\n", capture_output=True, text=True, timeout=60,
    )
    assert add.returncode == 0, add.stderr
    token = add.stdout.strip().splitlines()[-1]
    port = free_port()
    log_path = tmp / "serve.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [str(binary), "serve", "--listen", f"127.0.0.1:{port}", "--data", str(data)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    srv = Server(f"http://127.0.0.1:{port}", token, tmp)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"vegdb serve exited with {proc.returncode}:\n{log_path.read_text()}")
            try:
                if requests.get(srv.root + READ + "/status", timeout=2).status_code == 200:
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


def generate_client(server: Server, base: str, package: str):
    """Generate a client package from the document the server serves at `<base>/openapi.json`
    and import it. Warnings are allowed only for request media types the generator does not
    support (XML, images, text): everything else of the document must generate."""
    out = server.tmp / "clients"
    out.mkdir(exist_ok=True)
    doc = out / f"{package}.json"
    r = requests.get(server.root + base + "/openapi.json", timeout=30)
    assert r.status_code == 200
    doc.write_bytes(r.content)
    config = out / "config.yaml"
    config.write_text(f"post_hooks: []\npackage_name_override: {package}\n")
    generator = Path(sys.executable).parent / "openapi-python-client"
    assert generator.is_file(), f"{generator} missing: pip install openapi-python-client"
    run = subprocess.run(
        [str(generator), "generate", "--path", str(doc), "--meta", "none",
         "--output-path", str(out / package), "--config", str(config), "--overwrite"],
        capture_output=True, text=True, timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    for line in output.splitlines():
        if line.startswith("WARNING parsing"):
            reason = output.split(line, 1)[1].strip().splitlines()[0]
            assert reason.startswith("Unsupported content type"), f"{line}: {reason}\n{output}"
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    return importlib.import_module(package)


@pytest.fixture(scope="session")
def read_client_package(server):
    return generate_client(server, READ, "vegdb_read_client")


@pytest.fixture(scope="session")
def write_client_package(server):
    return generate_client(server, WRITE, "vegdb_write_client")
