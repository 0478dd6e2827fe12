"""The real `vegdb` binary serving a freshly generated tiny dataset, for the Python suites
(tests/clients, tests/tiles, tests/openapi_clients): one copy of how they start it.

`running_vegdb` generates the dataset into a new temporary directory, lets the suite prepare it
(`prepare(binary, data)`, e.g. add a user), serves it on a free port of 127.0.0.1, waits until
`/nvdb/api/v2/status` answers 200, yields a `Running`, and at the end stops the server and
removes the directory. The binary is the one `cargo test` builds (debug profile): `$VEGDB_BIN`,
else `$CARGO_TARGET_DIR/debug/vegdb`, else `target/debug/vegdb` of this repository.

Only the standard library is used, so any suite's environment can import it.
"""

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

REPO = Path(__file__).resolve().parents[2]
READ = "/nvdb/api/v2"
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


@dataclass
class Running:
    """A started server: `root` is `http://127.0.0.1:<port>`; `tmp` holds `data` (the data
    directory) and `log` (the server's output)."""

    root: str
    binary: Path
    tmp: Path
    data: Path
    log: Path
    prepared: object = None


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@contextlib.contextmanager
def running_vegdb(
    prefix: str,
    generate_timeout: float,
    prepare: Optional[Callable[[Path, Path], object]] = None,
    ready_timeout: float = READY_TIMEOUT_S,
    demo: bool = False,
) -> Iterator[Running]:
    """Generate, serve and wait (see the module's doc); `prepare`'s result is `Running.prepared`.
    With `demo`, nothing is generated: `serve` fills the empty data directory from the embedded
    demo snapshot (Trøndelag)."""
    binary = vegdb_binary()
    assert binary.is_file(), f"{binary} is missing: build it first (`cargo build`), or set VEGDB_BIN"
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        data = tmp / "data"
        if not demo:
            gen = subprocess.run(
                [str(binary), "generate", "--scale", "tiny", "--data", str(data)],
                capture_output=True,
                text=True,
                timeout=generate_timeout,
            )
            assert gen.returncode == 0, f"vegdb generate failed:\n{gen.stdout}\n{gen.stderr}"
        prepared = prepare(binary, data) if prepare else None
        port = free_port()
        log_path = tmp / "serve.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [str(binary), "serve", "--listen", f"127.0.0.1:{port}", "--data", str(data)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                root = f"http://127.0.0.1:{port}"
                deadline = time.monotonic() + ready_timeout
                while not _answers(root + READ + "/status"):
                    if proc.poll() is not None:
                        raise AssertionError(
                            f"vegdb serve exited with {proc.returncode}:\n{log_path.read_text()}"
                        )
                    if time.monotonic() > deadline:
                        raise AssertionError(f"vegdb serve not ready:\n{log_path.read_text()}")
                    time.sleep(0.1)
                yield Running(root, binary, tmp, data, log_path, prepared)
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
