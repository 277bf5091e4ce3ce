#!/usr/bin/env python3
"""The calibration of entry_store_ns from the submission-costs microbenchmark.

Reads results files of tests/hardware/submission_costs.cu (default: the committed
configs/measurements/submission-costs-h100-2026-11-27.json, instance sc, and
submission-costs-h200-2026-11-28.json, instance h200-percall46): one warp alone writing SQEs with
algo::detail::write_sqe inside p.for_lanes, as build_sqes does, into a 64-entry ring in GPU memory
or in pinned host memory, at 1, 8 and 32 lanes. No queue shared with a target, no target and no
strategy case enter it.

Each sqe_store row's store_ns_per_warp is the loop's time per iteration with the bare loop's taken
off: a lane's whole write of one entry (the slot's division, the entry built in the lane's local
memory and copied out byte by byte by store_bytes, the four 16 B stores). The lanes write side by
side and the ring's memory does not change it, so per run the figure is the median over the six
rows, and the calibration the median over the runs.

Usage: scripts/entry-store-cost.py [FILE.json ...] [--check PROFILE.json]
  --check: exit 1 unless the profile's entry_store_ns is the figure of the last file (within
  0.005 ns).
"""

import json
import os
import statistics
import sys

import measurement_files

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = [os.path.join(HERE, "..", "configs", "measurements", name)
           for name in ("submission-costs-h100-2026-11-27.json",
                        "submission-costs-h200-2026-11-28.json")]


def entry_store_ns(path):
    with open(path) as f:
        data = json.load(f)
    per_run = []
    for run in measurement_files.runs_of(data):
        rows = run["sqe_store"]["rows"]
        per_run.append(statistics.median(r["store_ns_per_warp"] for r in rows))
    instance = (data.get("instances") or [{}])[0].get("id", os.path.basename(path))
    return instance, per_run, round(statistics.median(per_run), 2)


def main(argv):
    check = None
    if "--check" in argv:
        at = argv.index("--check")
        check = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    files = argv or DEFAULT
    figure = None
    for path in files:
        instance, per_run, figure = entry_store_ns(path)
        print(f"{os.path.basename(path)} ({instance}): per-run medians "
              f"{', '.join(f'{v:.2f}' for v in per_run)} ns -> entry_store_ns {figure:.2f} ns")
    if check is not None:
        return measurement_files.check_profile_param(check, "entry_store_ns", figure)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
