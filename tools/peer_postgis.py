#!/usr/bin/env python3
"""Peer comparison on vegdb's own data: PostGIS KNN (GiST, `ORDER BY geom <-> p LIMIT 1` with
ST_DWithin 30 m) over the level-0, non-connection links of a generation, for the query file that
`vegdb snapshot queries` writes. Start a private cluster first, e.g. with the project's shared
peer scripts: `PEERDATA=/tmp/peerdata ../shared/bench/peers/pg_cluster.sh start`
(127.0.0.1:54329, trust auth).

Usage: python3 tools/peer_postgis.py DATA_DIR QUERIES.txt [N_QUERIES]
       python3 tools/peer_postgis.py --objects DATA_DIR [VALUE]
The --objects mode loads type 95 (id, 1876, its links) and the links' municipalities and times
the statistikk query (kommune 301 + 1876 = VALUE) with a matching index, the whole-type count,
and a listing page of 1000 objects as json_agg.
"""
import io
import glob
import os
import sys
import time
import urllib.parse

import numpy as np
import psycopg
import pyarrow as pa
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


def objects(root, value="8005"):
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    links = pq.read_table(os.path.join(root, gen, "network/links.parquet"), columns=["link_id", "municipality"])
    single = os.path.join(root, gen, "objects/type-95.parquet")
    # one file per type, or the chunked layout (objects/type-95-<first id>.parquet)
    paths = [single] if os.path.exists(single) else sorted(glob.glob(os.path.join(root, gen, "objects/type-95-*.parquet")))
    objs = pa.concat_tables([pq.read_table(p, columns=["id", "p1876", "placements"]) for p in paths])
    con = psycopg.connect("host=127.0.0.1 port=54329 user=postgres dbname=postgres", autocommit=True)
    cur = con.cursor()
    for t in ("obj_links", "objs", "link_muni"):
        cur.execute(f"DROP TABLE IF EXISTS {t}")
    cur.execute("CREATE TABLE link_muni (link_id bigint, municipality int)")
    cur.execute("CREATE TABLE objs (id bigint primary key, p1876 bigint, version int, startdato date)")
    cur.execute("CREATE TABLE obj_links (id bigint, link_id bigint)")
    t = time.perf_counter()
    with cur.copy("COPY link_muni FROM STDIN") as cp:
        for l, m in zip(links.column("link_id").to_pylist(), links.column("municipality").to_pylist()):
            cp.write_row((l, m))
    ids = objs.column("id").to_pylist()
    with cur.copy("COPY objs (id, p1876) FROM STDIN") as cp:
        for i, v in zip(ids, objs.column("p1876").to_pylist()):
            cp.write_row((i, v))
    # one COPY at a time per connection
    with cur.copy("COPY obj_links FROM STDIN") as cl:
        for i, pl in zip(ids, objs.column("placements").to_pylist()):
            for p in pl:
                cl.write_row((i, p["link_id"]))
    cur.execute("CREATE INDEX ON link_muni (link_id) INCLUDE (municipality)")
    cur.execute("CREATE INDEX ON obj_links (link_id)")
    cur.execute("CREATE INDEX ON objs (p1876)")
    cur.execute("ANALYZE")
    print(f"PostGIS/PostgreSQL: loaded {objs.num_rows} objects and {links.num_rows} links with indexes in {time.perf_counter() - t:.1f} s")
    def timed(sql, args=(), n=20):
        cur.execute(sql, args, prepare=True).fetchall()
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            r = cur.execute(sql, args, prepare=True).fetchall()
            ts.append(time.perf_counter() - t)
        ts.sort()
        return ts[len(ts) // 2] * 1000, r
    ms, r = timed("SELECT count(*) FROM objs")
    print(f"whole-type count: {r[0][0]} in {ms:.2f} ms (median of 20)")
    ms, r = timed("SELECT count(DISTINCT o.id) FROM objs o JOIN obj_links ol ON ol.id = o.id JOIN link_muni lm ON lm.link_id = ol.link_id "
                  "WHERE o.p1876 = %s AND lm.municipality = 301", (int(value),))
    print(f"kommune 301 + 1876={value}: {r[0][0]} in {ms:.2f} ms (median of 20)")
    ms, r = timed("SELECT json_agg(t) FROM (SELECT o.id, o.p1876 FROM objs o WHERE o.id > %s ORDER BY o.id LIMIT 1000) t", (0,))
    print(f"listing page of 1000 (json_agg of id + one property): {ms:.2f} ms (median of 20)")


if __name__ == "__main__":
    if sys.argv[1] == "--objects":
        objects(*sys.argv[2:4])
    else:
        main(*sys.argv[1:4])
