#!/usr/bin/env python3
"""The network rows of one fylke and the objects of some types placed on them, as PostgreSQL
COPY text for tools/bench_overlay_pg.sh, read from a vegdb generation's Parquet files here on
their own (no vegdb code). Needs pyarrow.

  python3 tools/overlay_copy.py --network DATA_DIR FYLKE | psql -c "COPY net FROM STDIN"
      row_id, link_id, from_pos, to_pos, length_m, geom (SRID=25833 hex WKB): the rows whose
      county is FYLKE; row_id is the row's place in the network file (link, position order)
  python3 tools/overlay_copy.py --objects DATA_DIR FYLKE TYPE... | psql -c "COPY obj FROM STDIN"
      type_id, id, versjon, egenskaper (jsonb: {"<property type id>": stored value}): the
      objects of the types with a placement on a link of those rows
  python3 tools/overlay_copy.py --placements DATA_DIR FYLKE TYPE... | psql -c "COPY plc FROM STDIN"
      type_id, id, link_id, from_pos, to_pos, feltspesifikk: those objects' placements on the
      rows' links (every placement: points too, which the overlay leaves out in its SQL)
"""
import glob
import json
import os
import sys

import pyarrow.compute as pc
import pyarrow.parquet as pq


def generation(root):
    return os.path.join(root, "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read()))


def network_files(root):
    return sorted(glob.glob(os.path.join(generation(root), "network", "links*.parquet")))


def network(root, fylke):
    w = sys.stdout.write
    row = 0
    for f in network_files(root):
        t = pq.read_table(f, columns=["link_id", "from_pos", "to_pos", "length_m", "county", "geometry"])
        d = t.to_pydict()
        for i in range(t.num_rows):
            if d["county"][i] == fylke:
                w(f"{row + i}\t{d['link_id'][i]}\t{d['from_pos'][i]!r}\t{d['to_pos'][i]!r}\t"
                  f"{d['length_m'][i]!r}\tSRID=25833;{d['geometry'][i].hex()}\n")
        row += t.num_rows


def links(root, fylke):
    out = set()
    for f in network_files(root):
        t = pq.read_table(f, columns=["link_id", "county"])
        t = t.filter(pc.equal(t.column("county"), fylke))
        out.update(t.column("link_id").to_pylist())
    return out


def objects(root, fylke, types, placements):
    on = links(root, fylke)
    w = sys.stdout.write
    for type_id in types:
        for f in sorted(glob.glob(os.path.join(generation(root), "objects", f"type={type_id}", "*.parquet"))):
            schema = pq.read_schema(f)
            props = [c for c in schema.names if c.startswith("p") and c[1:].isdigit()]
            d = pq.read_table(f, columns=["id", "version", "placements"] + props).to_pydict()
            for i, pl in enumerate(d["placements"]):
                mine = [p for p in pl if p["link_id"] in on]
                if not mine:
                    continue
                oid = d["id"][i]
                if placements:
                    for p in mine:
                        lanes = "t" if p["lanes"] else "f"
                        w(f"{type_id}\t{oid}\t{p['link_id']}\t{p['from_pos']!r}\t{p['to_pos']!r}\t{lanes}\n")
                else:
                    values = {c[1:]: d[c][i] for c in props if d[c][i] is not None}
                    text = json.dumps(values, ensure_ascii=False).replace("\\", "\\\\")
                    w(f"{type_id}\t{oid}\t{d['version'][i]}\t{text}\n")


if __name__ == "__main__":
    mode, root, fylke = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "--network":
        network(root, fylke)
    elif mode in ("--objects", "--placements"):
        objects(root, fylke, [int(t) for t in sys.argv[4:]], mode == "--placements")
    else:
        sys.exit(__doc__)
