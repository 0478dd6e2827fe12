"""Fixtures of the engine tests: a freshly generated tiny dataset, the real vegdb binary serving
it (read-only), and an S3-protocol server (moto_server, in-process ThreadedMotoServer on
127.0.0.1) holding a copy of the data directory."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vegdb_bin():
    if os.environ.get("VEGDB_BIN"):
        return os.environ["VEGDB_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "target"))
    return os.path.join(target, "debug", "vegdb")


@pytest.fixture(scope="session")
def data_dir():
    d = tempfile.mkdtemp(prefix="vegdb-engines-")
    subprocess.run([vegdb_bin(), "generate", "--scale", "tiny", "--data", d], check=True, stdout=subprocess.DEVNULL)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def generation_dir(data_dir):
    gen = int(open(os.path.join(data_dir, "CURRENT")).read().strip())
    return os.path.join(data_dir, "gen-%06d" % gen)


class Api:
    def __init__(self, base):
        self.base = base

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=30) as r:
            return json.loads(r.read())


@pytest.fixture(scope="session")
def api(data_dir):
    port = free_port()
    p = subprocess.Popen(
        [vegdb_bin(), "serve", "--read-only", "--data", data_dir, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    a = Api(f"http://127.0.0.1:{port}/nvdb/api/v2")
    deadline = time.time() + 120
    while True:
        try:
            a.get("/status")
            break
        except Exception:
            if time.time() > deadline or p.poll() is not None:
                p.kill()
                raise RuntimeError("vegdb serve did not come up")
            time.sleep(0.2)
    yield a
    p.terminate()
    p.wait(timeout=30)


S3_KEY = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="session")
def s3(data_dir):
    """moto's S3 on 127.0.0.1 with the data directory uploaded under s3://vegdb/data/."""
    from moto.server import ThreadedMotoServer
    import boto3

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    os.environ.update(S3_KEY)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="vegdb")
    uploaded = 0
    for root, _, files in os.walk(data_dir):
        for f in files:
            if f == "LOCK":
                continue
            path = os.path.join(root, f)
            key = "data/" + os.path.relpath(path, data_dir).replace(os.sep, "/")
            client.upload_file(path, "vegdb", key)
            uploaded += 1
    assert uploaded > 10
    yield {"endpoint": endpoint, "port": port, "client": client}
    server.stop()


def statistics(api, type_id, kommune=None):
    q = f"?kommune={kommune}" if kommune is not None else ""
    s = api.get(f"/vegobjekter/{type_id}/statistikk{q}")
    return s["antall"], s["strekningslengde"]
