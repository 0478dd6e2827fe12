#!/usr/bin/env python3
"""Write the links of a vegdb generation as PostgreSQL COPY text (`id<TAB>SRID=25833;<hex WKB>`),
the same selection as tools/peer_postgis.py: level-0 links that are not connection links (what
`/posisjon` answers with by default). Needs pyarrow.

Usage: python3 tools/links_copy.py DATA_DIR | psql -c "COPY links (id, geom) FROM STDIN"
"""
import glob
import os
import sys

import pyarrow.compute as pc
import pyarrow.parquet as pq


def main(root):
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    files = sorted(glob.glob(os.path.join(root, gen, "network", "links*.parquet")))
    out = sys.stdout
    for f in files:
        t = pq.read_table(f, columns=["link_id", "topology_level", "is_connection", "geometry"])
        keep = pc.and_(pc.equal(t.column("topology_level"), 0), pc.invert(t.column("is_connection")))
        t = t.filter(keep)
        for i, g in zip(t.column("link_id").to_pylist(), t.column("geometry").to_pylist()):
            out.write(f"{i}\tSRID=25833;{g.hex()}\n")


if __name__ == "__main__":
    main(sys.argv[1])
