#!/usr/bin/env python3
"""The GPU profile's host-poll figures from the two microbenchmarks of the host path, derived
as models/gpu/gpu_params.def's sources say:

  host_poll_read_ns           host_polls_under_copies, 16 warps polling (same entry per lane,
                              64-entry window, 4 copy threads, 64 x 4 KiB copies): ns per load
  host_reads_per_us           the loads per second with 528, 1,056 and 2,112 polling warps
                              (same rows): the median, per microsecond
  host_line_read_interval_ns  the window 1 rows (132, 528 and 2,112 warps, each polling one entry
                              of one of 32 rings): 32 lines / rate, the median
  copy_op_host_reads          the 528- to 2,112-warp rows: (batch time - batch time without
                              pollers) / (64 copies x 4 threads), over W / host_reads_per_us;
                              the median
  host_poll_fence_system_ns   warp_host_access: fence_system with 1 to 7 warps polling host memory
                              (same SM or others; the median of those rows) less with none

  host-poll-figures.py FILE [INSTANCE]

FILE holds either one program's rows (the files of 2026-11-24 and -26 hold one program each) or
a hw-host-target-*-host-polls.json / -warp-host-access.json pair's runs by instance: given the
-host-polls.json name, its -warp-host-access.json sibling is read too, and each figure is the
median over the instances' own figures (or INSTANCE's alone). Prints one JSON object.
"""
import json
import statistics
import sys
from pathlib import Path

COPIES_PER_BATCH, COPY_THREADS = 64, 4


def row(rows, **match):
    found = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    if len(found) != 1:
        raise SystemExit(f"expected one row with {match}, found {len(found)}")
    return found[0]


def poll_figures(rows) -> dict:
    common = dict(pollers_memory="host", lanes="same", copy_threads=COPY_THREADS, batch="64x4KiB")
    read_ns = row(rows, window=64, poll_warps=16, **common)["poll_load_ns"]
    rate = statistics.median(row(rows, window=64, poll_warps=w, **common)["poll_loads_per_s"] / 1e6
                             for w in (528, 1056, 2112))
    line = statistics.median(32 / (row(rows, window=1, poll_warps=w, **common)["poll_loads_per_s"] / 1e9)
                             for w in (132, 528, 2112))
    alone = row(rows, pollers_memory="none", lanes="same", window=64, poll_warps=0,
                copy_threads=COPY_THREADS, batch="64x4KiB")["batch_us"]
    copy = statistics.median(
        (row(rows, window=64, poll_warps=w, **common)["batch_us"] - alone)
        / (COPIES_PER_BATCH * COPY_THREADS) / (w / rate) for w in (528, 1056, 2112))
    return {"host_poll_read_ns": round(read_ns, 1), "host_reads_per_us": round(rate, 1),
            "host_line_read_interval_ns": round(line, 1), "copy_op_host_reads": round(copy, 2)}


def fence_figure(rows) -> float:
    alone = row(rows, pattern="fence_system", pollers=0, pollers_where="none")["ns"]
    polled = [r["ns"] for r in rows if r["pattern"] == "fence_system" and r["pollers"] > 0]
    return round(statistics.median(polled) - alone, 1)


def main() -> None:
    path = Path(sys.argv[1])
    only = sys.argv[2] if len(sys.argv) > 2 else None
    doc = json.loads(path.read_text())
    if "runs" not in doc:  # one program's rows
        rows = doc["rows"]
        out = fence_figure(rows) if doc["schema"].startswith("gpunvme.warp_host_access") else poll_figures(rows)
        print(json.dumps(out))
        return
    access = json.loads(Path(str(path).replace("-host-polls.json", "-warp-host-access.json")).read_text())
    ids = [only] if only else sorted(doc["runs"])
    per = {i: {**poll_figures(doc["runs"][i]["rows"]),
               "host_poll_fence_system_ns": fence_figure(access["runs"][i]["rows"])} for i in ids}
    keys = next(iter(per.values())).keys()
    out = {k: round(statistics.median(per[i][k] for i in ids), 2) for k in keys}
    out["by_instance"] = per
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
