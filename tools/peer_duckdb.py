#!/usr/bin/env python3
"""Peer comparison on vegdb's own Parquet: DuckDB answering the statistikk queries of the
objects benchmark (count of type 95 objects; count in kommune 301 with property 1876 = value),
straight over the generation's Parquet files and over tables loaded into DuckDB.

Usage: python3 tools/peer_duckdb.py DATA_DIR [VALUE]   (VALUE: 1876 enum id, default 8005)
"""
import os
import statistics
import sys
import time

import duckdb


def timed(con, sql, repeats=5):
    con.execute(sql).fetchall()  # warm-up
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        r = con.execute(sql).fetchall()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1000, r


def main(root, value="8005"):
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    links = os.path.join(root, gen, "network/links.parquet")
    objs = os.path.join(root, gen, "objects/type-95.parquet")
    if not os.path.exists(objs):  # chunked layout: objects/type-95-<first id>.parquet
        objs = os.path.join(root, gen, "objects/type-95-*.parquet")
    con = duckdb.connect()
    con.execute("SET threads = 2")
    whole = "SELECT count(*) FROM {o}"
    area_enum = ("SELECT count(DISTINCT o.id) FROM (SELECT id, unnest(placements) AS p FROM {o} WHERE p1876 = " + value + ") o "
                 "JOIN (SELECT DISTINCT link_id FROM {l} WHERE municipality = 301) l ON l.link_id = o.p.link_id")
    for label, o, l in [("read_parquet", f"read_parquet('{objs}')", f"read_parquet('{links}')")]:
        ms, r = timed(con, whole.format(o=o))
        print(f"DuckDB {label}: whole type count {r[0][0]} in {ms:.2f} ms")
        ms, r = timed(con, area_enum.format(o=o, l=l))
        print(f"DuckDB {label}: kommune 301 + 1876={value}: {r[0][0]} in {ms:.2f} ms")
    t = time.perf_counter()
    con.execute(f"CREATE TABLE objs AS SELECT id, p1876, placements FROM read_parquet('{objs}')")
    con.execute(f"CREATE TABLE links AS SELECT link_id, municipality FROM read_parquet('{links}')")
    print(f"DuckDB: loaded tables in {time.perf_counter() - t:.1f} s")
    ms, r = timed(con, whole.format(o="objs"))
    print(f"DuckDB table: whole type count {r[0][0]} in {ms:.2f} ms")
    ms, r = timed(con, area_enum.format(o="objs", l="links"))
    print(f"DuckDB table: kommune 301 + 1876={value}: {r[0][0]} in {ms:.2f} ms")
    ms, r = timed(con, "SELECT to_json(list(t)) FROM (SELECT id, p1876 FROM objs WHERE id > 0 ORDER BY id LIMIT 1000) t")
    print(f"DuckDB table: listing page of 1000 as JSON (id + one property): {ms:.2f} ms")


if __name__ == "__main__":
    main(*sys.argv[1:3])
