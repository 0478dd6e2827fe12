#!/usr/bin/env python3
"""Peer comparison on vegdb's own data: PostGIS KNN (GiST, `ORDER BY geom <-> p LIMIT 1` with
ST_DWithin 30 m) over the level-0, non-connection links of a generation, for the query file that
`vegdb snapshot queries` writes. Start a private cluster first, e.g. with the project's shared
peer scripts: `PEERDATA=/tmp/peerdata ../shared/bench/peers/pg_cluster.sh start`
(127.0.0.1:54329, trust auth).

Usage: python3 tools/peer_postgis.py DATA_DIR QUERIES.txt [N_QUERIES]
"""
import io
import os
import sys
import time
import urllib.parse

import numpy as np
import psycopg
import pyarrow.parquet as pq

SQL = ("SELECT id, ST_Distance(geom, p) FROM links, (SELECT ST_SetSRID(ST_MakePoint(%s, %s), 25833) AS p) q "
       "WHERE ST_DWithin(geom, p, 30) ORDER BY geom <-> p LIMIT 1")


def main(root, queries, n=10000):
    n = int(n)
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    tbl = pq.read_table(os.path.join(root, gen, "network/links.parquet"), columns=["link_id", "topology_level", "is_connection", "geometry"])
    keep = (tbl.column("topology_level").to_numpy() == 0) & ~np.array(tbl.column("is_connection").to_numpy(zero_copy_only=False))
    ids = tbl.column("link_id").to_numpy()[keep]
    wkb = np.array(tbl.column("geometry").to_pylist(), dtype=object)[keep]
    con = psycopg.connect("host=127.0.0.1 port=54329 user=postgres dbname=postgres", autocommit=True)
    cur = con.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS postgis")
    cur.execute("DROP TABLE IF EXISTS links")
    cur.execute("CREATE TABLE links (id bigint, geom geometry)")
    t = time.perf_counter()
    with cur.copy("COPY links (id, geom) FROM STDIN") as cp:
        buf = io.StringIO()
        for i, g in zip(ids, wkb):
            buf.write(f"{i}\tSRID=25833;{g.hex()}\n")
            if buf.tell() > 8 << 20:
                cp.write(buf.getvalue())
                buf = io.StringIO()
        cp.write(buf.getvalue())
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    cur.execute("CREATE INDEX links_gist ON links USING gist (geom)")
    cur.execute("ANALYZE links")
    index_s = time.perf_counter() - t
    cur.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    cur.execute("SELECT pg_prewarm('links'), pg_prewarm('links_gist')")
    pts = []
    for line in open(queries):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(line.strip()).query)
        pts.append((float(q["ost"][0]), float(q["nord"][0])))
        if len(pts) >= n:
            break
    for p in pts[:500]:  # warm-up
        cur.execute(SQL, p, prepare=True).fetchall()
    rates = []
    for _ in range(3):
        t = time.perf_counter()
        hits = 0
        for p in pts:
            hits += len(cur.execute(SQL, p, prepare=True).fetchall())
        rates.append(len(pts) / (time.perf_counter() - t))
    print(f"PostGIS: {len(ids)} links, COPY {load_s:.1f} s, GiST index + analyze {index_s:.1f} s; "
          f"KNN within 30 m, psycopg prepared, 1 connection: {sorted(rates)[1]:.0f} queries/s (median of 3 rounds of {len(pts)}), {hits} hits")


if __name__ == "__main__":
    main(*sys.argv[1:4])
