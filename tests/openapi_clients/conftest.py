"""Fixtures of the OpenAPI client suite: the real `vegdb` binary on a freshly generated tiny
dataset with a write user, and Python clients generated from the two OpenAPI documents it serves.

The server runs on 127.0.0.1 with a free port and its own temporary data directory
(`tests/pyhelpers/vegdb_server.py`, which also says which binary it runs). The client
generator is `openapi-python-client` from the same environment as pytest (pinned in `.ci/run`).
"""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for pyhelpers
from pyhelpers.vegdb_server import READ, running_vegdb  # noqa: E402

WRITE = "/nvdb/apiskriv/rest/v2"
USER = "kari"
PASSWORD = "et godt passord"


class Server:
    def __init__(self, root: str, token: str, tmp: Path):
        self.root = root
        self.token = token
        self.tmp = tmp


def add_write_user(binary: Path, data: Path) -> str:
    """Add the write user to the data directory; its token."""
    add = subprocess.run(
        [str(binary), "user", "add", USER, "--roles", "skriv", "--password-stdin", "--data", str(data)],
        input=PASSWORD + "\n", capture_output=True, text=True, timeout=60,
    )
    assert add.returncode == 0, add.stderr
    return add.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def server():
    with running_vegdb("vegdb-openapi-", generate_timeout=180, prepare=add_write_user) as run:
        yield Server(run.root, run.prepared, run.tmp)


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
