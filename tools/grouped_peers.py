#!/usr/bin/env python3
"""Grouped statistics of type 105 (Fartsgrense): vegdb over HTTP against DuckDB (in process, over
a table and straight over the generation's Parquet files) and PostgreSQL (a table with a btree
index on the grouping columns), in one sitting, on the same rows, asserting equal answers.

The rows every peer groups: one per current type-105 object and municipality it overlaps or
touches, with the located metres inside it (the objects files' `municipalities` column, the rule
vegdb's grouped statistics follow: an object counts in each municipality it is in, its length is
cut to each), and the object's Fartsgrense value (`p2021`, an enum id). The questions:

  kommune            GROUP BY kommune                 vs  ?gruppering=kommune
  kommune_fartsgr.   GROUP BY kommune, p2021          vs  ?gruppering=kommune,egenskap(2021)

Answers are equal when every group has the same count and lengths within 1 m (vegdb writes whole
metres rounded so the groups add up to the ungrouped total).

Usage: grouped_peers.py DATA_DIR VEGDB_BASE PG_DSN [REPEATS]
  VEGDB_BASE: e.g. http://127.0.0.1:18322 (a server on DATA_DIR)
  PG_DSN:     e.g. "host=127.0.0.1 port=54339 user=postgres"
"""
import glob
import http.client
import io
import json
import os
import statistics
import sys
import time
import urllib.parse

import duckdb
import psycopg

QUESTIONS = [
    ("kommune", "kommune", "kommune"),
    ("kommune_fartsgrense", "kommune, p2021", "kommune,egenskap(2021)"),
]


def median_ms(f, repeats):
    f()  # warm-up
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1000, min(ts) * 1000


def groups_of_rows(rows, dims):
    """(key tuple) -> (count, length) from SQL rows (keys..., count, length)."""
    return {tuple(r[:dims]): (int(r[dims]), float(r[dims + 1])) for r in rows}


def groups_of_vegdb(body, dims):
    out = {}
    for g in json.loads(body):
        key = [g["kommune"]]
        if dims == 2:
            e = g.get("egenskap_2021")
            key.append(e["enum_id"] if e else None)
        out[tuple(key)] = (g["antall"], float(g["strekningslengde"]))
    return out


def assert_equal(name, peer, a, b):
    if a.keys() != b.keys():
        only_a = sorted(a.keys() - b.keys(), key=str)[:5]
        only_b = sorted(b.keys() - a.keys(), key=str)[:5]
        raise SystemExit(f"{name}: groups differ from {peer}: vegdb only {only_a}, {peer} only {only_b}")
    for k, (count, length) in a.items():
        pc, pl = b[k]
        if count != pc or abs(length - pl) > 1.0 + 1e-6:
            raise SystemExit(f"{name}: group {k}: vegdb {count} / {length} m, {peer} {pc} / {pl:.3f} m")


def main(root, base, dsn, repeats=21):
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    files = sorted(glob.glob(os.path.join(root, gen, "objects", "type=105", "*.parquet")))
    if not files:
        raise SystemExit(f"no type-105 files in {root}/{gen}/objects/type=105")
    src = "read_parquet([%s])" % ", ".join("'%s'" % f for f in files)
    rows_sql = (
        "SELECT id, p2021, m.municipality AS kommune, m.length_m AS length_m "
        f"FROM (SELECT id, p2021, unnest(municipalities) AS m FROM {src})"
    )
    duck = duckdb.connect()
    duck.execute(f"CREATE TABLE t105 AS {rows_sql}")
    n_rows = duck.execute("SELECT count(*), count(DISTINCT id) FROM t105").fetchone()
    threads = duck.execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"rows: {n_rows[0]} (object, kommune) pairs of {n_rows[1]} type-105 objects; "
          f"DuckDB {duckdb.__version__}, {threads} threads")

    pg = psycopg.connect(dsn, autocommit=True)
    pg.execute("DROP TABLE IF EXISTS g105")
    pg.execute("CREATE TABLE g105 (id bigint, p2021 bigint, kommune int, length_m float8)")
    buf = io.StringIO()
    for r in duck.execute("SELECT id, p2021, kommune, length_m FROM t105").fetchall():
        buf.write("\t".join("\\N" if v is None else repr(v) if isinstance(v, float) else str(v) for v in r))
        buf.write("\n")
    with pg.cursor().copy("COPY g105 FROM STDIN") as cp:
        cp.write(buf.getvalue())
    pg.execute("CREATE INDEX g105_k ON g105 (kommune, p2021) INCLUDE (id, length_m)")
    pg.execute("VACUUM ANALYZE g105")
    pg_version = pg.execute("SHOW server_version").fetchone()[0]
    print(f"PostgreSQL {pg_version}: table g105 with a btree on (kommune, p2021) INCLUDE (id, length_m)")

    u = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port)

    def get(path):
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise SystemExit(f"{path}: {r.status} {body[:300]!r}")
        return body

    print(f"{'question':22} {'vegdb':>15} {'DuckDB table':>15} {'DuckDB Parquet':>15} {'PostgreSQL':>15}"
          f" {'x DuckDB':>9} {'x PG':>7}")
    for name, group_by, gruppering in QUESTIONS:
        dims = group_by.count(",") + 1
        sql_t = f"SELECT {group_by}, count(*), sum(length_m) FROM t105 GROUP BY {group_by} ORDER BY {group_by}"
        sql_p = f"SELECT {group_by}, count(*), sum(length_m) FROM ({rows_sql}) GROUP BY {group_by} ORDER BY {group_by}"
        sql_g = f"SELECT {group_by}, count(*), sum(length_m) FROM g105 GROUP BY {group_by} ORDER BY {group_by}"
        path = "/nvdb/api/v2/vegobjekter/105/statistikk/gruppert?gruppering=" + urllib.parse.quote(gruppering, safe=",")
        v = groups_of_vegdb(get(path), dims)
        assert_equal(name, "DuckDB", v, groups_of_rows(duck.execute(sql_t).fetchall(), dims))
        assert_equal(name, "DuckDB/Parquet", v, groups_of_rows(duck.execute(sql_p).fetchall(), dims))
        assert_equal(name, "PostgreSQL", v, groups_of_rows(pg.execute(sql_g).fetchall(), dims))
        tv = median_ms(lambda: get(path), repeats)
        tt = median_ms(lambda: duck.execute(sql_t).fetchall(), repeats)
        tp = median_ms(lambda: duck.execute(sql_p).fetchall(), max(5, repeats // 4))
        tg = median_ms(lambda: pg.execute(sql_g).fetchall(), max(5, repeats // 4))
        fmt = lambda t: f"{t[0]:7.2f} ({t[1]:5.2f})"
        print(f"{name:22} {fmt(tv):>15} {fmt(tt):>15} {fmt(tp):>15} {fmt(tg):>15}"
              f" {tt[0] / tv[0]:8.1f}x {tg[0] / tv[0]:6.0f}x   ({len(v)} groups, equal)")
    print("ms: median (min) of the repeats; x: the peer's median over vegdb's")


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) < 3:
        raise SystemExit(__doc__)
    main(a[0], a[1], a[2], int(a[3]) if len(a) > 3 else 21)
