"""The real `vegdb` binary serving the demo snapshot (Trøndelag) for the GIS client tests: an
empty data directory, which `serve` fills from the embedded demo, on a free port of 127.0.0.1;
stopped and removed at the end. The binary is found as `tests/pyhelpers/vegdb_server.py` says."""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for pyhelpers
from pyhelpers.vegdb_server import _answers, free_port, vegdb_binary  # noqa: E402

READY_TIMEOUT_S = 180


@pytest.fixture(scope="session")
def demo_root():
    binary = vegdb_binary()
    assert binary.is_file(), f"{binary} is missing: build it first (`cargo build`), or set VEGDB_BIN"
    tmp = Path(tempfile.mkdtemp(prefix="vegdb-gis-"))
    port = free_port()
    log_path = tmp / "serve.log"
    try:
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [str(binary), "serve", "--listen", f"127.0.0.1:{port}", "--data", str(tmp / "data")],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                root = f"http://127.0.0.1:{port}"
                deadline = time.monotonic() + READY_TIMEOUT_S
                while not _answers(root + "/ready"):
                    if proc.poll() is not None:
                        raise AssertionError(f"vegdb serve exited:\n{log_path.read_text()}")
                    if time.monotonic() > deadline:
                        raise AssertionError(f"vegdb serve not ready:\n{log_path.read_text()}")
                    time.sleep(0.2)
                yield root
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
