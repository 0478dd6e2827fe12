"""The real `vegdb` binary serving the demo snapshot (Trøndelag) for the CSV table checks: an
empty data directory, which `serve` fills from the embedded demo, on a free port of 127.0.0.1;
stopped and removed at the end (`tests/pyhelpers/vegdb_server.py`, which also says which binary
it runs)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for pyhelpers
from pyhelpers.vegdb_server import running_vegdb  # noqa: E402

READY_TIMEOUT_S = 180


@pytest.fixture(scope="session")
def demo_root():
    with running_vegdb("vegdb-tables-", 0, ready_timeout=READY_TIMEOUT_S, demo=True) as server:
        yield server.root + "/nvdb/api/v2"
