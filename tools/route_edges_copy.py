#!/usr/bin/env python3
"""The road network of a vegdb generation as a pgRouting edge table, built here from the network
rows on its own (no vegdb code): the rows /vegnett/rute uses by default (topology level 0,
connection links included), each row one undirected edge weighted by its length_m. A vertex is
a network node (a row's start_node where no row of the same link and nodes starts earlier,
its end_node where none ends later) or a position inside a link where a veglenke is cut into
rows. Needs pyarrow.

  python3 tools/route_edges_copy.py --edges DATA_DIR | psql -c "COPY route_edges FROM STDIN"
      id, source, target, cost, geom (SRID=25833 hex WKB)
  python3 tools/route_edges_copy.py --pairs DATA_DIR COUNT SEED
      COUNT pairs of row starts 1-50 km apart:
      vid_a vid_b position@link_a position@link_b xa ya xb yb
"""
import glob
import math
import os
import random
import struct
import sys

import pyarrow.parquet as pq

COLUMNS = ["link_id", "from_pos", "to_pos", "start_node", "end_node", "length_m",
           "topology_level", "geometry"]


def rows(root):
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    out = []
    for f in sorted(glob.glob(os.path.join(root, gen, "network", "links*.parquet"))):
        t = pq.read_table(f, columns=COLUMNS).to_pydict()
        for i in range(len(t["link_id"])):
            if t["topology_level"][i] == 0:
                out.append({c: t[c][i] for c in COLUMNS})
    return out


def first_point(wkb):
    little = wkb[0] == 1
    kind = struct.unpack("<I" if little else ">I", wkb[1:5])[0]
    fmt = "<dd" if little else ">dd"
    # ISO WKB LineString (Z): count at 5, points from 9
    assert kind % 1000 == 2, kind
    return struct.unpack(fmt, wkb[9:25])


def vertices(rs):
    span = {}
    for r in rs:
        k = (r["link_id"], r["start_node"], r["end_node"])
        lo, hi = span.get(k, (math.inf, -math.inf))
        span[k] = (min(lo, r["from_pos"]), max(hi, r["to_pos"]))
    ids = {}

    def vid(key):
        return ids.setdefault(key, len(ids) + 1)

    out = []
    for r in rs:
        lo, hi = span[(r["link_id"], r["start_node"], r["end_node"])]
        a = ("n", r["start_node"]) if r["from_pos"] == lo else ("p", r["link_id"], r["from_pos"])
        b = ("n", r["end_node"]) if r["to_pos"] == hi else ("p", r["link_id"], r["to_pos"])
        out.append((vid(a), vid(b)))
    return out


def edges(root):
    rs = rows(root)
    w = sys.stdout.write
    for i, (r, (a, b)) in enumerate(zip(rs, vertices(rs)), 1):
        w(f"{i}\t{a}\t{b}\t{r['length_m']!r}\tSRID=25833;{r['geometry'].hex()}\n")


def pairs(root, count, seed):
    rs = rows(root)
    vs = vertices(rs)
    rng = random.Random(seed)
    made = 0
    while made < count:
        i, j = rng.randrange(len(rs)), rng.randrange(len(rs))
        (xa, ya), (xb, yb) = first_point(rs[i]["geometry"]), first_point(rs[j]["geometry"])
        if not 1000.0 <= math.hypot(xa - xb, ya - yb) <= 50000.0:
            continue
        print(vs[i][0], vs[j][0], f"{rs[i]['from_pos']!r}@{rs[i]['link_id']}",
              f"{rs[j]['from_pos']!r}@{rs[j]['link_id']}", xa, ya, xb, yb)
        made += 1


if __name__ == "__main__":
    if sys.argv[1] == "--edges":
        edges(sys.argv[2])
    else:
        pairs(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
