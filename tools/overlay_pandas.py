#!/usr/bin/env python3
"""The overlay of tools/bench_overlay_pg.sh in pandas, as a GeoPandas user writes it (the
tables in memory, vectorised merges and group-bys, no loop over rows), read from a vegdb
generation's Parquet files here on their own (no vegdb code). Needs pyarrow and pandas.

  python3 tools/overlay_pandas.py DATA_DIR FYLKE ROUNDS TYPE...

Prints one line: pieces, total length (m, 3 decimals), the pieces each type covers, then the
overlay's time per round in ms (the tables read once before, as PostGIS has them loaded).

The rules are /vegnett/segmentert's (and the SQL's): the fylke's network rows; the stretch
placements (from < to) of the types' objects on their links; per row its ends and every
placement end strictly inside it cut it; a row of no length is one piece; a placement covers a
piece it spans; a piece's length is its share of the row's length.
"""
import glob
import os
import sys
import time

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq


def generation(root):
    return os.path.join(root, "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read()))


def network(root, fylke):
    parts, row = [], 0
    for f in sorted(glob.glob(os.path.join(generation(root), "network", "links*.parquet"))):
        t = pq.read_table(f, columns=["link_id", "from_pos", "to_pos", "length_m", "county"])
        d = t.to_pandas()
        d["row_id"] = range(row, row + len(d))
        row += len(d)
        parts.append(d[d["county"] == fylke].drop(columns="county"))
    return pd.concat(parts, ignore_index=True)


def placements(root, types, links):
    out = []
    for type_id in types:
        for f in sorted(glob.glob(os.path.join(generation(root), "objects", f"type={type_id}", "*.parquet"))):
            t = pq.read_table(f, columns=["id", "placements"])
            flat = pc.list_flatten(t.column("placements"))
            ids = pc.take(t.column("id"), pc.list_parent_indices(t.column("placements")))
            d = pd.DataFrame({
                "type_id": type_id,
                "id": ids.to_numpy(),
                "link_id": pc.struct_field(flat, "link_id").to_numpy(),
                "from_pos": pc.struct_field(flat, "from_pos").to_numpy(),
                "to_pos": pc.struct_field(flat, "to_pos").to_numpy(),
            })
            out.append(d[d["link_id"].isin(links)])
    return pd.concat(out, ignore_index=True)


def overlay(net, plc, types):
    """(pieces, total length, covered pieces per type) of the overlay."""
    iv = plc[plc["from_pos"] < plc["to_pos"]].merge(
        net[["row_id", "link_id", "from_pos", "to_pos"]], on="link_id", suffixes=("", "_row"))
    iv = iv[(iv["from_pos"] < iv["to_pos_row"]) & (iv["to_pos"] > iv["from_pos_row"])]
    ends = pd.concat([iv[["row_id", "from_pos_row", "to_pos_row", "from_pos"]].rename(columns={"from_pos": "x"}),
                      iv[["row_id", "from_pos_row", "to_pos_row", "to_pos"]].rename(columns={"to_pos": "x"})])
    inner = ends[(ends["x"] > ends["from_pos_row"]) & (ends["x"] < ends["to_pos_row"])][["row_id", "x"]]
    cuts = pd.concat([net[["row_id", "from_pos"]].rename(columns={"from_pos": "x"}),
                      net[["row_id", "to_pos"]].rename(columns={"to_pos": "x"}), inner])
    cuts = cuts.drop_duplicates().sort_values(["row_id", "x"])
    cuts["b"] = cuts.groupby("row_id")["x"].shift(-1)
    pieces = cuts.dropna(subset=["b"]).rename(columns={"x": "a"})
    level = net[net["from_pos"] == net["to_pos"]][["row_id", "from_pos", "to_pos"]]
    pieces = pd.concat([pieces, level.rename(columns={"from_pos": "a", "to_pos": "b"})], ignore_index=True)
    pieces = pieces.merge(net[["row_id", "from_pos", "to_pos", "length_m"]], on="row_id")
    span = pieces["to_pos"] - pieces["from_pos"]
    pieces["length"] = ((pieces["b"] - pieces["a"]) / span.where(span > 0) * pieces["length_m"]).fillna(0.0)
    covers = pieces[["row_id", "a", "b"]].merge(iv[["row_id", "type_id", "from_pos", "to_pos"]], on="row_id")
    covers = covers[(covers["from_pos"] <= covers["a"]) & (covers["to_pos"] >= covers["b"])]
    covered = covers[["row_id", "a", "type_id"]].drop_duplicates().groupby("type_id").size()
    return len(pieces), pieces["length"].sum(), [int(covered.get(t, 0)) for t in types]


def main():
    root, fylke, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    types = [int(t) for t in sys.argv[4:]]
    net = network(root, fylke)
    plc = placements(root, types, set(net["link_id"]))
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        n, length, covered = overlay(net, plc, types)
        times.append((time.perf_counter() - t0) * 1000)
    print(n, "%.3f" % length, *covered, *("%.0f" % t for t in times))


if __name__ == "__main__":
    main()
