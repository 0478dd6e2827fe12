"""Fixtures for the tile and map-page tests: the real `vegdb` binary on a freshly generated tiny
dataset (started once per session on a free port of 127.0.0.1, killed at the end), by
`tests/pyhelpers/vegdb_server.py`, which also says which binary it runs."""

import sys
from pathlib import Path

import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for pyhelpers
from pyhelpers.vegdb_server import free_port, running_vegdb  # noqa: E402,F401 (test_kart uses free_port)


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
    with running_vegdb("vegdb-tiles-", generate_timeout=300) as run:
        yield Server(run.root)
