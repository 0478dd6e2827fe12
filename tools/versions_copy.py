#!/usr/bin/env python3
"""Write every version of one object type of a vegdb generation (its current chunks and its
history file, format 4) as PostgreSQL COPY text for the history peer (tools/bench_history_pg.sh):

  --objects: id, versjon, [start_date, end_date) as a daterange, located length, geometry
             (`id<TAB>versjon<TAB>[start,end)<TAB>length_m<TAB>SRID=25833;<hex WKB>`)
  --municipalities: one row per (version, municipality) with the located meters inside it
             (`id<TAB>versjon<TAB>kommune<TAB>[start,end)<TAB>length_m`)

The columns are the files' own (DICTIONARY.md): `start_date` inclusive, `end_date` exclusive
(null = open), `municipalities` every municipality a placement touches (also with 0 m), as
vegdb's statistikk counts an object in a kommune. Needs pyarrow.

Usage: python3 tools/versions_copy.py --objects|--municipalities DATA_DIR TYPE_ID
"""
import glob
import os
import sys

import pyarrow.parquet as pq


def files(root, type_id):
    gen = "gen-%06d" % int(open(os.path.join(root, "CURRENT")).read())
    base = os.path.join(root, gen)
    out = sorted(glob.glob(os.path.join(base, f"objects/type={type_id}/*.parquet")))
    out += glob.glob(os.path.join(base, f"history/type={type_id}/versions.parquet"))
    return out


def daterange(start, end):
    return f"[{start},{end if end is not None else ''})"


def main(mode, root, type_id):
    out = sys.stdout
    for f in files(root, type_id):
        cols = ["id", "version", "start_date", "end_date", "length_m"]
        cols += ["geometry"] if mode == "--objects" else ["municipalities"]
        t = pq.read_table(f, columns=cols).to_pydict()
        for i in range(len(t["id"])):
            r = daterange(t["start_date"][i], t["end_date"][i])
            head = f"{t['id'][i]}\t{t['version'][i]}"
            if mode == "--objects":
                g = t["geometry"][i]
                geom = f"SRID=25833;{g.hex()}" if g is not None else "\\N"
                out.write(f"{head}\t{r}\t{t['length_m'][i]}\t{geom}\n")
            else:
                for m in t["municipalities"][i] or []:
                    out.write(f"{head}\t{m['municipality']}\t{r}\t{m['length_m']}\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
