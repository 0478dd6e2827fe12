"""Fixtures for the client suite: the real `vegdb` binary on a freshly generated tiny dataset.

The server is started once per test session on 127.0.0.1 with a free port and its own temporary
data directory, and killed at the end (`tests/pyhelpers/vegdb_server.py`, which also says which
binary it runs).
"""

import sys
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for pyhelpers
from pyhelpers.vegdb_server import running_vegdb  # noqa: E402


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
    with running_vegdb("vegdb-clients-", generate_timeout=120) as run:
        yield Server(run.root, run.log)


@pytest.fixture
def nvdb(server):
    """A `pnvdb.Nvdb` pointed at the server. The only change to pnvdb is its base URL
    (`pnvdb.config.lesapi_base_url`, which every pnvdb request reads)."""
    import pnvdb
    import pnvdb.config

    pnvdb.config.lesapi_base_url = server.base
    return pnvdb.Nvdb(client="vegdb-client-suite", contact="dev@vegdb.local")
