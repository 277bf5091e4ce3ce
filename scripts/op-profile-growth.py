#!/usr/bin/env python3
"""Where a warp's time per I/O goes as warps are added, on the hardware and in the simulator.

Reads the op-profile runs (`gpunvme-hw --trace 3`) of the GPU-resident target with the per-role
kernels (default: the runs of hw-gpu-target-perrole-h100-2026-11-27.json and
hw-gpu-target-perrole-oppro-h100-2026-11-28.json, six runs of every case over five machine
instances) and a `gpunvme validate` report on those cases (default:
validate-gpu-target-perrole-oppro-h100-2026-11-28.json), whose `op_profile_ns_per_io` holds the
simulated split. Prints per strategy and kind of call the hardware's ns per I/O (median over the
runs; every role's warps added) beside the simulator's at 1, 8, 32, 132 and 528 warps, and the
growth from 1 to 528 warps of each. The hardware's "other" (the warps' own code between platform
calls) is the simulator's lane_loop; both are shown as own code.

Usage: scripts/op-profile-growth.py [REPORT.json RUNS.json ...]
"""

import collections
import os
import statistics
import sys

import measurement_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENTS = os.path.join(ROOT, "configs", "measurements")
STRATEGIES = ["all_threads", "bam_ticket", "warp_batch", "warp_batch+polling_warps",
              "per_warp_queue", "io_agents"]
WARPS = [1, 8, 32, 132, 528]
# Kinds of call grouped as the diagnosis reads them (hardware names; "other" is own code).
GROUPS = {
    "own code": ["other"],
    "ballots, for_lanes": ["ballot", "for_lanes"],
    "atomics": ["atomic"],
    "loads, peeks": ["load", "peek"],
    "stores": ["store", "mmio_store"],
    "polls, waits": ["wait", "nanosleep"],
    "fences": ["fence_gpu", "fence_system"],
}


def simulated_kind(kind):
    return "own_code" if kind == "other" else kind


def main(argv):
    if len(argv) > 1:
        report_file, run_files = argv[1], argv[2:]
    else:
        report_file = os.path.join(MEASUREMENTS,
                                   "validate-gpu-target-perrole-oppro-h100-2026-11-28.json")
        run_files = [os.path.join(MEASUREMENTS, f) for f in (
            "hw-gpu-target-perrole-h100-2026-11-27.json",
            "hw-gpu-target-perrole-oppro-h100-2026-11-28.json")]
    report = measurement_files.load_json(report_file)
    simulated = {(c["strategy"], c["warps"]): c["op_profile_ns_per_io"] for c in report["cases"]}
    measured = collections.defaultdict(list)
    for f in run_files:
        for c in measurement_files.load_json(f)["cases"]:
            if c.get("stage_timing") != "op_profile":
                continue
            totals = collections.Counter()
            for role in c["op_profile"].values():
                for kind, ns in role["ns_per_io"].items():
                    totals[kind] += ns
            measured[(c["strategy"], c["warps"])].append(totals)
    for s in STRATEGIES:
        runs = min(len(measured[(s, w)]) for w in WARPS)
        print(f"\n{s} ({runs}+ op-profile runs a case): ns per I/O at "
              f"{', '.join(map(str, WARPS))} warps, hardware (simulated); growth 1 -> 528 warps")
        for group, kinds in GROUPS.items():
            hw = [statistics.median(sum(t[k] for k in kinds) for t in measured[(s, w)])
                  for w in WARPS]
            sim = [sum(simulated[(s, w)][simulated_kind(k)]["simulated"] for k in kinds)
                   for w in WARPS]
            cells = "  ".join(f"{h:8.0f} ({m:7.0f})" for h, m in zip(hw, sim))
            growth = (f"x{hw[-1] / hw[0]:.2f} (x{sim[-1] / sim[0]:.2f})"
                      if hw[0] > 0 and sim[0] > 0 else "-")
            print(f"  {group:19s}{cells}  {growth}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
