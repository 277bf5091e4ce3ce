#!/usr/bin/env python3
"""The GPU profile's per-poller fence figures from tests/hardware/gpu_ops_under_host_polls.cu
(configs/measurements/gpu-ops-under-host-polls-*.json), derived as models/gpu/gpu_params.def's
sources say:

  host_poller_fence_gpu_ns     a __threadfence() after a store to GPU memory, less the same fence
                               with no warp polling, per warp polling host memory
  host_poller_fence_system_ns  a __threadfence_system() after a store to host memory, less the
                               same fence with no warp polling and less the profile's constant
                               host_poll_fence_system_ns (the fence's cost while any warp polls),
                               per warp polling host memory

Each is the least-squares slope through the origin of that excess against the number of polling
warps beyond FREE (the profile's host_pollers_before_fence_cost), over the rows of the same_entry
pattern (every lane reads the warp's one 16 B entry, as a CQ scan's waiter reads the window) with
1 to MAX_POLLERS pollers (528: the most warps of a strategy case), fitted per program run; each
figure is the median over one instance's runs, then the median over the instances (or
INSTANCE's alone).

  fence-under-host-polls.py FILE HOST_POLL_FENCE_SYSTEM_NS FREE [INSTANCE]

Prints one JSON object: the two figures and, per instance, its own.
"""
import json
import statistics
import sys

MAX_POLLERS = 528


def slope(points) -> float:
    """Least squares through the origin: sum(x y) / sum(x x)."""
    sxx = sum(x * x for x, _ in points)
    if sxx == 0:
        raise SystemExit("no rows with pollers to fit")
    return sum(x * y for x, y in points) / sxx


def run_figures(rows, constant_system_ns: float, free: int) -> dict:
    same = [r for r in rows if r.get("pattern") == "same_entry"]
    idle = [r for r in same if r["pollers"] == 0]
    if len(idle) != 1:
        raise SystemExit(f"expected one same_entry row with no pollers, found {len(idle)}")
    idle = idle[0]
    polled = [r for r in same if 1 <= r["pollers"] <= MAX_POLLERS]
    gpu = slope([(max(0, r["pollers"] - free), r["fence_gpu_ns"] - idle["fence_gpu_ns"])
                 for r in polled])
    system = slope([(max(0, r["pollers"] - free),
                     r["fence_system_ns"] - idle["fence_system_ns"] - constant_system_ns)
                    for r in polled])
    return {"host_poller_fence_gpu_ns": gpu, "host_poller_fence_system_ns": system}


def figures(doc: dict, constant_system_ns: float, free: int, instance: str = "") -> dict:
    by_instance = {}
    for run in doc["runs"]:
        if instance and run["instance"] != instance:
            continue
        if not any(r.get("pattern") == "same_entry" for r in run["rows"]):
            continue  # the program's first version measured the lane_entries pattern alone
        by_instance.setdefault(run["instance"], []).append(run_figures(run["rows"], constant_system_ns, free))
    if not by_instance:
        raise SystemExit("no run with same_entry rows" + (f" of instance {instance}" if instance else ""))
    names = ("host_poller_fence_gpu_ns", "host_poller_fence_system_ns")
    per_instance = {i: {n: round(statistics.median(r[n] for r in runs), 2) for n in names}
                    for i, runs in sorted(by_instance.items())}
    out = {n: round(statistics.median(v[n] for v in per_instance.values()), 2) for n in names}
    out["instances"] = per_instance
    return out


def main(argv) -> int:
    if len(argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        doc = json.load(f)
    print(json.dumps(figures(doc, float(argv[2]), int(argv[3]), argv[4] if len(argv) == 5 else ""),
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
