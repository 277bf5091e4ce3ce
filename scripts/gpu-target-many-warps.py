#!/usr/bin/env python3
"""Where the GPU-resident target's strategy cases spend their time as warps are added, from
committed runs only.

Reads the per-role strategy runs against the GPU-resident target (`gpunvme-hw --target gpu
--kernel per-role`; default: the H100 file of 2026-11-27, instances m and n, ten untraced runs and
one op-profile run per case and instance) and, if given, a `gpunvme validate` report made from
them (default: validate-gpu-target-perrole-h100-2026-11-27.json), and prints per strategy and warp
count:

- the 32-I/O round: every compute warp keeps one I/O per lane in flight (iodepth 1), so a warp's
  round of 32 I/Os lasts 32 x warps / IOPS (median of the untraced runs); beside it the target's
  time per batch (the median over the untraced runs of the mean command service time, fetch to
  CQE, which for these 32-command batches is the batch's time) and what is left of the round, the
  time the I/Os spend outside the target's service (the GPU side and the hand-offs);
- the op profile of each role (ns per I/O of a warp, median of the instances' op-profile runs)
  by kind of call, with the growth over the same role at 1 warp; and the simulator's figures of
  the compute role from the report where it has them.

At 8 warps the 256-thread blocks put all eight compute warps on one SM (two per warp scheduler),
at 32 warps four SMs hold eight each: the rows from 8 warps up are what sharing an SM adds.

Usage: scripts/gpu-target-many-warps.py [STRATEGY_RUNS.json [VALIDATE_REPORT.json]]
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
KINDS = ["other", "wait", "ballot", "for_lanes", "fence_system", "fence_gpu", "atomic", "load",
         "peek", "store", "mmio_store"]
# The report calls the warp's own code between platform calls own_code; the op profile, other.
REPORT_KIND = {"other": "own_code"}


def main(argv):
    runs_path = argv[1] if len(argv) > 1 else os.path.join(
        MEASUREMENTS, "hw-gpu-target-perrole-h100-2026-11-27.json")
    report_path = argv[2] if len(argv) > 2 else os.path.join(
        MEASUREMENTS, "validate-gpu-target-perrole-h100-2026-11-27.json")
    runs = measurement_files.load_json(runs_path)
    simulated = {}
    if measurement_files.exists(report_path):
        for case in measurement_files.load_json(report_path)["cases"]:
            profile = case.get("op_profile_ns_per_io") or {}
            simulated[(case["strategy"], case["warps"])] = {
                kind: profile.get(REPORT_KIND.get(kind, kind), {}).get("simulated")
                for kind in KINDS}

    untraced = collections.defaultdict(list)
    profiles = collections.defaultdict(list)
    for case in runs["cases"]:
        key = (case["strategy"], case["warps"])
        if case.get("op_profile"):
            profiles[key].append(case["op_profile"])
        elif not case["trace"]:
            untraced[key].append(case)

    print(f"{os.path.relpath(runs_path, ROOT)}")
    print("round: a warp's 32 I/Os (us); target: its batch time (us); outside: round - target")
    for strategy in STRATEGIES:
        print(f"\n{strategy}")
        warps_seen = sorted(w for s, w in untraced if s == strategy)
        base_profile = None
        for warps in warps_seen:
            cases = untraced[(strategy, warps)]
            iops = statistics.median(c["iops"] for c in cases)
            round_us = 32 * warps / iops * 1e6
            target_us = statistics.median(c["target"]["service_ns"]["mean"] for c in cases) / 1e3
            print(f"  {warps:4d} warps  IOPS {iops:12,.0f}  round {round_us:7.1f}  target "
                  f"{target_us:6.1f}  outside {round_us - target_us:7.1f}")
            roles = collections.defaultdict(list)
            for profile in profiles[(strategy, warps)]:
                for role, figures in profile.items():
                    roles[role].append(figures["ns_per_io"])
            if warps == warps_seen[0]:
                base_profile = {role: {k: statistics.median(p.get(k, 0.0) for p in ps)
                                       for k in KINDS} for role, ps in roles.items()}
            for role, ps in sorted(roles.items()):
                row = []
                for kind in KINDS:
                    value = statistics.median(p.get(kind, 0.0) for p in ps)
                    if value < 5 and base_profile[role][kind] < 5:
                        continue
                    base = base_profile[role][kind]
                    growth = f"{100 * (value / base - 1):+.0f}%" if base >= 5 else "new"
                    row.append(f"{kind} {value:.0f} ({growth})")
                print(f"        {role:8s} " + ", ".join(row))
            sim = simulated.get((strategy, warps))
            if sim:
                row = [f"{kind} {sim[kind]:.0f}" for kind in KINDS
                       if sim[kind] is not None and sim[kind] >= 5]
                print("        simulated compute and service roles: " + ", ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
