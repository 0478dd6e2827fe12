#!/usr/bin/env python3
"""Peer comparison on vegdb's own data: shapely's STRtree nearest-within-30 m over the links of a
generation, for the query file that `vegdb snapshot queries` writes. Optionally cross-checks
shapely's nearest link against a running vegdb's /posisjon for a sample (an independent oracle).

Usage: python3 tools/peer_shapely.py DATA_DIR QUERIES.txt [http://127.0.0.1:8080/nvdb/api/v2]
"""
import json
import os
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pyarrow.parquet as pq
import shapely


def main(root, queries, base=None):
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    t = time.perf_counter()
    tbl = pq.read_table(os.path.join(root, gen, "network/links.parquet"),
                        columns=["link_id", "topology_level", "is_connection", "geometry"])
    keep = np.array(tbl.column("topology_level").to_numpy() == 0) & ~np.array(tbl.column("is_connection").to_numpy(zero_copy_only=False))
    ids = tbl.column("link_id").to_numpy()[keep]
    geoms = shapely.from_wkb(np.array(tbl.column("geometry").to_pylist(), dtype=object)[keep])
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    tree = shapely.STRtree(geoms)
    build_s = time.perf_counter() - t
    pts = []
    for line in open(queries):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(line.strip()).query)
        pts.append((float(q["ost"][0]), float(q["nord"][0])))
    points = shapely.points(np.array(pts))
    rates = []
    for _ in range(3):
        t = time.perf_counter()
        idx = tree.query_nearest(points, max_distance=30, all_matches=False, return_distance=True)
        rates.append(len(points) / (time.perf_counter() - t))
    (qi, gi), dist = idx
    print(f"shapely STRtree: {len(geoms)} links, read+decode {load_s:.1f} s, build {build_s:.1f} s, "
          f"query_nearest(max 30 m) batched: {sorted(rates)[1]:.0f} queries/s (median of 3), {len(qi)} hits of {len(points)}")
    if base:
        nearest = {int(q): (int(ids[g]), float(d)) for q, g, d in zip(qi, gi, dist)}
        agree = checked = 0
        for k in range(0, len(pts), max(1, len(pts) // 2000)):
            x, y = pts[k]
            with urllib.request.urlopen(f"{base}/posisjon?nord={y}&ost={x}") as r:
                ans = json.load(r)
            want = nearest.get(k)
            got = (ans[0]["veglenke"]["id"], ans[0]["avstand"]) if ans else None
            checked += 1
            if (want is None and got is None) or (want and got and (want[0] == got[0] or abs(round(want[1]) - got[1]) == 0)):
                agree += 1
            else:
                print("differs", k, x, y, want, got)
        print(f"cross-check against {base}/posisjon: {agree} of {checked} agree (same link, or an equally near one)")


if __name__ == "__main__":
    main(*sys.argv[1:4])
