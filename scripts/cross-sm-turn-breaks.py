#!/usr/bin/env python3
"""The calibration of cross_sm_turn_breaks from the shared-queue reaping microbenchmark.

Reads results files of tests/hardware/shared_queue_reaping.cu (default: the committed
configs/measurements/shared-queue-reaping-h200-2026-11-28b.json and -28c.json, instances h200-y and
h200-reap45): all_threads' own submit() and wait() on 8 queue pairs served by feeder warps that play
the target without data, each queue shared by 1, 2 or 4 blocks of 8 warps (one SM each) or by one
32-warp block. No target and no strategy case enter it.

A warp takes its 32 tickets at once, so its 32 turns come in a row and one turn in 32 changes warp
(31/32 of the turns follow the same warp's). Every further change of warp is a run of turns cut
short: the warp leaves it with turns of its own still to take. Per case the script prints the
share of turns that follow the same warp's (medians over the runs), the breaks per turn that has a
turn of the same warp after it, ((31/32 - share) x 32/31), and the share of the queue's other warps
that run on another SM, (warps a queue - warps a block) / (warps a queue - 1); then the fit: breaks
against that share, least squares through 0, with every instance and every case left out in turn.
The one-SM cases (share 0) are the check that the breaks follow the SMs, not the warps; the
*_aggregated cases (aggregated_atomics: a warp's lanes take their tickets with one atomic) are the
control that shows what breaks the runs, the tickets of warps on other SMs coming between a warp's
lanes' own: they are printed, not fitted.

Usage: scripts/cross-sm-turn-breaks.py [FILE.json ...] [--check PROFILE.json]
  --check: exit 1 unless the profile's cross_sm_turn_breaks is the fit (within 0.00005).
"""

import json
import os
import sys

DEFAULT = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "measurements",
                        f"shared-queue-reaping-h200-2026-11-28{suffix}.json") for suffix in ("b", "c")]
RUN = 32  # turns a warp takes in a row: its lanes' tickets


def instance_of(data, path):
    instances = data.get("instances") or [{}]
    return instances[0].get("id", os.path.basename(path))


def cases(data):
    """name -> (warps a queue, warps a block, median same-warp share, aggregated) from $.derived."""
    out = {}
    for name, c in sorted(data["derived"].items()):
        warps = int(c["warps_per_queue"])
        blocks = int(c["blocks_per_queue"])
        if warps < 2 or blocks < 1 or warps % blocks:
            raise SystemExit(f"$.derived.{name}: {warps} warps on {blocks} blocks is not a case this "
                             "calibration reads (at least 2 warps, whole blocks)")
        out[name] = (warps, warps // blocks, float(c["same_warp_turn_share_median"]),
                     bool(c.get("aggregated_atomics", False)))
    return out


def points(files):
    """(instance, name, other-SM share, breaks per turn with a successor, aggregated) per case."""
    pts = []
    for path, data in files:
        inst = instance_of(data, path)
        for name, (warps, per_block, same, aggregated) in cases(data).items():
            elsewhere = (warps - per_block) / (warps - 1)
            breaks = ((RUN - 1) / RUN - same) * RUN / (RUN - 1)
            pts.append((inst, name, elsewhere, breaks, aggregated))
    return pts


def fit(pts, leave_out=None):
    used = [p for p in pts if not p[4] and leave_out not in (p[0], p[1])]
    den = sum(p[2] * p[2] for p in used)
    if den == 0:
        raise SystemExit("no case with warps of several SMs on a queue and per-lane tickets to fit"
                         + (f" without {leave_out}" if leave_out else ""))
    return sum(p[2] * p[3] for p in used) / den


def main(argv):
    check = None
    if "--check" in argv:
        i = argv.index("--check")
        check = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    paths = argv if argv else DEFAULT
    files = []
    for path in paths:
        with open(path) as f:
            files.append((path, json.load(f)))
    pts = points(files)
    print("turns that follow the same warp's, medians of the runs")
    print(f"{'instance':12s} {'case':20s} {'same-warp':>9s} {'breaks/turn':>11s} {'other-SM share':>14s}")
    for inst, name, x, y, aggregated in pts:
        same = (RUN - 1) / RUN - y * (RUN - 1) / RUN
        note = "  (aggregated tickets: not fitted)" if aggregated else ""
        print(f"{inst:12s} {name:20s} {same:9.4f} {y:11.4f} {x:14.4f}{note}")
    b = fit(pts)
    fitted = [p for p in pts if not p[4]]
    print(f"cross_sm_turn_breaks = {b:.4f} breaks per turn with all other warps on other SMs "
          f"(least squares through 0, {len(fitted)} cases)")
    instances = sorted({p[0] for p in fitted})
    for inst in instances if len(instances) > 1 else []:
        print(f"  without instance {inst}: {fit(pts, inst):.4f}")
    for name in sorted({p[1] for p in fitted}):
        print(f"  without {name}: {fit(pts, name):.4f}")
    for inst, name, x, y, aggregated in pts:
        if aggregated:
            print(f"  control {inst} {name}: the fit predicts {b * x:.4f} with per-lane tickets, "
                  f"measured {y:.4f} with aggregated ones")
    if check:
        with open(check) as f:
            value = json.load(f)["params"]["cross_sm_turn_breaks"]["value"]
        if abs(value - b) > 0.00005:
            print(f"{check}: cross_sm_turn_breaks {value} is not the fit {b:.4f}")
            return 1
        print(f"{check}: cross_sm_turn_breaks {value} is the fit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
