#!/usr/bin/env python3
"""nvme_ssd copy_op_ring_sweeper_ns from the host-thread target's controller-under-polls runs
(no strategy): the target alone, fed by host threads, while W GPU warps read its 32 CQ rings'
entries one after another. Per row with pollers whose batches make one copy (a batch's buffers
adjacent): the batch time less the same run's batch time at the same depth without pollers, per
copy operation, per warp beyond the first on each of the 32 rings,

  (batch - batch without pollers) / copies per batch / (W - 32),

and the figure is the median over those rows (tests/validate/copy_line_pollers_test.cpp works the
H100's by hand: 15,755.2 ns over its 24 rows).

  copy-ring-sweepers.py FILE
"""
import json
import re
import statistics
import sys

RINGS = 32


def run_of(case) -> tuple:
    match = re.search(r"-r(\d+)(\.json)?$", case["run_file"])
    if match is None:
        raise SystemExit(f"run file {case['run_file']!r}: no -rN round in its name")
    return case.get("instance"), int(match.group(1))


def figure(cases) -> tuple:
    base = {}
    for c in cases:
        if c["host_pollers"] == 0:
            base[(run_of(c), c["depth"], c["scatter_buffers"])] = c["target"]["batch_fixed_ns"]
    rows = []
    for c in cases:
        if c["host_pollers"] == 0 or c["scatter_buffers"]:
            continue
        key = (run_of(c), c["depth"], c["scatter_buffers"])
        if key not in base:
            raise SystemExit(f"{c['run_file']}: no run without pollers at depth {c['depth']}")
        t = c["target"]
        rows.append((t["batch_fixed_ns"] - base[key]) / t["batch_copies"]["mean"]
                    / (c["host_pollers"] - RINGS))
    return statistics.median(rows), len(rows)


def main() -> None:
    with open(sys.argv[1]) as f:
        cases = json.load(f)["cases"]
    value, rows = figure(cases)
    print(json.dumps({"copy_op_ring_sweeper_ns": round(value, 1), "rows": rows}))


if __name__ == "__main__":
    main()
