#!/usr/bin/env python3
"""The calibration of cq_scan_co_waiter_ns from the controller-only feeder runs.

Reads a packed file of tests/hardware/run_target_feeder_packing.sh's runs (default: the committed
configs/measurements/hw-gpu-target-feeder-packing-h200-2026-11-28.json.gz) and prints, per machine
instance and queue count, the wait beyond the target's batch of the cq_scan wait (bam_ticket's
completion code) at 1, 2, 4 and 8 feeder warps on an SM (medians of the untraced runs), its growth
over 1 warp, and the own_slot control's; then the fit: the growth against (warps on the SM - 1) x
the waiting share of a feeder warp's time (the op-profile runs' wait over the warp's time, mean
over their instances, per queue count and packing), least squares through 0, with every instance
left out in turn. No strategy case enters it.

Usage: scripts/cq-scan-co-waiters.py [FILE.json.gz] [--check PROFILE.json]
  --check: exit 1 unless the profile's cq_scan_co_waiter_ns is the fit (within 0.05 ns).
"""

import collections
import gzip
import json
import os
import statistics
import sys

DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "measurements",
                       "hw-gpu-target-feeder-packing-h200-2026-11-28.json.gz")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def medians(cases, wait):
    """(instance, queues, warps per block) -> median wait beyond the batch of the untraced runs."""
    runs = collections.defaultdict(list)
    for c in cases:
        if "op_profile" in c or c["feed_wait"] != wait:
            continue
        if c["errors"] or c["data_mismatches"] or c["timed_out_warps"]:
            continue
        runs[(c["instance"], c["queues"], c["feed_warps_per_block"])].append(c["wait_beyond_batch_ns_mean"])
    return {k: statistics.median(v) for k, v in runs.items()}


def waiting_shares(cases):
    """(queues, warps per block) -> mean share of a feeder warp's time in its wait (op profiles)."""
    shares = collections.defaultdict(list)
    for c in cases:
        if "op_profile" not in c:
            continue
        op = c["op_profile"]["compute"]
        shares[(c["queues"], c["feed_warps_per_block"])].append(op["ns_per_io"]["wait"] / op["warp_ns_per_io"])
    return {k: statistics.mean(v) for k, v in shares.items()}


def points(data):
    beyond = medians(data["cases"], "cq_scan")
    shares = waiting_shares(data["cases"])
    out = []
    for (inst, queues, packing), value in sorted(beyond.items()):
        if packing == 1 or (inst, queues, 1) not in beyond:
            continue
        growth = value - beyond[(inst, queues, 1)]
        out.append((inst, queues, packing, growth, (packing - 1) * shares[(queues, packing)]))
    return beyond, out


def fit(pts, leave_out=None):
    num = sum(g * x for inst, _, _, g, x in pts if inst != leave_out)
    den = sum(x * x for inst, _, _, _, x in pts if inst != leave_out)
    return num / den


def main(argv):
    check = None
    if "--check" in argv:
        i = argv.index("--check")
        check = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    path = argv[0] if argv else DEFAULT
    data = load(path)
    beyond, pts = points(data)
    control = medians(data["cases"], "own_slot")
    print(f"{os.path.basename(path)}: wait beyond the batch (us), medians of the untraced runs")
    print(f"{'instance':10s} {'queues':>6s}  {'warps/SM':>8s} {'cq_scan':>8s} {'growth':>7s} {'own_slot':>8s}")
    for (inst, queues, packing), value in sorted(beyond.items()):
        growth = value - beyond[(inst, queues, 1)]
        ctl = control.get((inst, queues, packing), float("nan"))
        print(f"{inst:10s} {queues:6d}  {packing:8d} {value / 1e3:8.2f} {growth / 1e3:+7.2f} {ctl / 1e3:8.2f}")
    c = fit(pts)
    print(f"cq_scan_co_waiter_ns = {c:.1f} ns per co-waiting warp "
          f"(growth against (warps on the SM - 1) x waiting share, least squares through 0, {len(pts)} points)")
    for inst in sorted({p[0] for p in pts}):
        print(f"  without {inst}: {fit(pts, inst):.1f} ns")
    if check:
        with open(check) as f:
            value = json.load(f)["params"]["cq_scan_co_waiter_ns"]["value"]
        if abs(value - c) > 0.05:
            print(f"{check}: cq_scan_co_waiter_ns {value} is not the fit {c:.1f}")
            return 1
        print(f"{check}: cq_scan_co_waiter_ns {value} is the fit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
