#!/usr/bin/env python3
"""The whole answer of vegdb's /vegnett/segmentert for tools/bench_overlay_pg.sh: every page
(`antall=10000`) asked in turn over one keep-alive HTTP connection, each timed from sending
the request to its body's last byte (the sum: the server's time for the whole result, as
seen on loopback; the JSON is read, not parsed, while timed). Prints one line:

  pieces total_length covered_<type>... bytes seconds pages

where covered_<type> counts the pieces a type covers. Standard library only.

  python3 tools/overlay_fetch.py http://127.0.0.1:PORT/nvdb/api/v2 'typer=105,540&fylke=50' 105 540
"""
import http.client
import json
import sys
import time
import urllib.parse


def main(base, query, types):
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    pieces, length, nbytes, seconds, pages = 0, 0.0, 0, 0.0, 0
    covered = {t: 0 for t in types}
    start = None
    while True:
        path = f"{url.path}/vegnett/segmentert?{query}&antall=10000"
        if start:
            path += "&start=" + urllib.parse.quote(start)
        t0 = time.perf_counter()
        conn.request("GET", path, headers={"Accept": "application/json"})
        r = conn.getresponse()
        body = r.read()
        seconds += time.perf_counter() - t0
        if r.status != 200:
            sys.exit(f"{path}: {r.status} {body[:300]!r}")
        nbytes += len(body)
        pages += 1
        page = json.loads(body)
        items = page["objekter"]
        if not items:
            break
        for p in items:
            pieces += 1
            length += p["lengde"]
            for t in types:
                if p["vegobjekter"][f"vegobjekttype_{t}"] is not None:
                    covered[t] += 1
        start = page["metadata"]["neste"]["start"]
    print(pieces, f"{length:.3f}", *(covered[t] for t in types), nbytes, f"{seconds:.4f}", pages)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3:]])
