#!/usr/bin/env python3
"""What the host-thread target's run-to-run noise follows, from committed runs only.

Reads a day's strategy runs and controller-only runs of `gpunvme-hw` (default: the H100 files of
2026-11-27, three machine instances) and prints, per strategy case (untraced runs only):

- the spread: IQR as a share of the median, and how far apart the instances' medians lie;
- how much of the variance the machine instance explains (eta squared of instance groups), and
  which instance's median is the highest;
- drift within a call: rank correlation of each run (over its instance's median) with its round;
- the mechanism: rank correlation of IOPS with the target threads' busy time per command, the
  threads' median busy share of the kernel's time, and the data step's (pread and copy) median
  share of a command's service time;
- what dividing each run by its instance's controller-only speed (4 target threads, depth 64)
  leaves of the IQR and of the instances' spread.

Usage: scripts/host-target-noise.py [STRATEGY_RUNS.json CONTROLLER_RUNS.json]
"""

import collections
import math
import os
import re
import statistics
import sys

import measurement_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENTS = os.path.join(ROOT, "configs", "measurements")
STRATEGIES = ["all_threads", "bam_ticket", "warp_batch", "warp_batch+polling_warps",
              "per_warp_queue", "io_agents"]
WARPS = [1, 8, 32, 132, 528]
REFERENCE_THREADS, REFERENCE_DEPTH = 4, 64  # the controller-only run taken as an instance's speed


def quantile(values, share):
    ordered = sorted(values)
    position = (len(ordered) - 1) * share
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def iqr_percent(values):
    return 100 * (quantile(values, 0.75) - quantile(values, 0.25)) / statistics.median(values)


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0] * len(values)
    for rank, index in enumerate(order):
        result[index] = rank
    return result


def pearson(a, b):
    mean_a, mean_b = statistics.mean(a), statistics.mean(b)
    spread_a = math.sqrt(sum((x - mean_a) ** 2 for x in a))
    spread_b = math.sqrt(sum((y - mean_b) ** 2 for y in b))
    if not spread_a or not spread_b:
        return float("nan")
    return sum((x - mean_a) * (y - mean_b) for x, y in zip(a, b)) / (spread_a * spread_b)


def spearman(a, b):
    return pearson(ranks(a), ranks(b))


def eta_squared(groups):
    values = [v for group in groups for v in group]
    mean = statistics.mean(values)
    total = sum((v - mean) ** 2 for v in values)
    between = sum(len(g) * (statistics.mean(g) - mean) ** 2 for g in groups)
    return between / total if total else float("nan")


def instance_spread_percent(runs, values):
    medians = {}
    for instance in {run["instance"] for run in runs}:
        medians[instance] = statistics.median(
            [v for run, v in zip(runs, values) if run["instance"] == instance])
    return 100 * (max(medians.values()) - min(medians.values())) / statistics.median(values)


def load(strategy_file, controller_file):
    strategy_doc = measurement_files.load_json(strategy_file)
    controller_doc = measurement_files.load_json(controller_file)
    cases = collections.defaultdict(list)
    for case in strategy_doc["cases"]:
        if case["trace"] or case["stage_timing"] != "none":
            continue  # traced runs pay for their records; only untraced runs are compared
        match = re.match(r"(.+)-s-.*-r(\d+)$", case["run_file"])
        cases[(case["strategy"], case["warps"])].append(
            {"instance": match.group(1), "round": int(match.group(2)), "iops": case["iops"],
             "target": case["target"], "kernel_ms": case["kernel_ms"]})
    controller = collections.defaultdict(list)
    for case in controller_doc["cases"]:
        match = re.match(r"(.+)-c-t(\d+)-r(\d+)$", case["run_file"])
        if int(match.group(2)) == REFERENCE_THREADS and case["depth"] == REFERENCE_DEPTH:
            controller[match.group(1)].append(case["iops"])
    return cases, controller


def main():
    strategy_file = sys.argv[1] if len(sys.argv) > 2 else os.path.join(
        MEASUREMENTS, "hw-strategies-h100-2026-11-27.json")
    controller_file = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        MEASUREMENTS, "hw-controller-h100-2026-11-27.json")
    cases, controller = load(strategy_file, controller_file)
    pooled_speed = statistics.median([v for runs in controller.values() for v in runs])
    speed_factor = {i: statistics.median(runs) / pooled_speed for i, runs in controller.items()}
    rounds = collections.Counter()
    for runs in cases.values():
        for run in runs:
            rounds[run["instance"]] = max(rounds[run["instance"]], run["round"])
    print("instances:", ", ".join(
        f"{i} ({rounds[i]} rounds, controller speed {100 * (speed_factor[i] - 1):+.1f} %)"
        for i in sorted(speed_factor)))
    print(f"{'case':32s} {'runs':>4s} {'IQR %':>6s} {'inst. %':>7s} {'eta2':>5s} "
          f"{'rho round':>9s} {'rho busy':>8s} {'busy %':>6s} {'data %':>6s} {'IQR norm. %':>11s} "
          f"{'inst. norm. %':>13s} fastest")
    bound_before, bound_after, spread_before, spread_after = [], [], [], []
    for strategy in STRATEGIES:
        for warps in WARPS:
            runs = cases[(strategy, warps)]
            if not runs:
                continue
            iops = [run["iops"] for run in runs]
            by_instance = collections.defaultdict(list)
            for run in runs:
                by_instance[run["instance"]].append(run["iops"])
            instance_median = {i: statistics.median(v) for i, v in by_instance.items()}
            relative = [run["iops"] / instance_median[run["instance"]] for run in runs]
            round_share = [(run["round"] - 1) / max(1, rounds[run["instance"]] - 1) for run in runs]
            busy_per_command = [
                sum(t["busy_ns"] for t in run["target"]["threads"]) / run["target"]["completed"]
                for run in runs]
            busy_share = [
                sum(t["busy_ns"] for t in run["target"]["threads"]) /
                (len(run["target"]["threads"]) * run["kernel_ms"] * 1e6) for run in runs]
            data_share = [run["target"]["data_ns"]["mean"] / run["target"]["service_ns"]["mean"]
                          for run in runs]
            normalised = [run["iops"] / speed_factor[run["instance"]] for run in runs]
            iqr, iqr_norm = iqr_percent(iops), iqr_percent(normalised)
            spread = instance_spread_percent(runs, iops)
            spread_norm = instance_spread_percent(runs, normalised)
            if warps >= 8 and strategy != "all_threads":  # the cases the host threads bound
                bound_before.append(iqr)
                bound_after.append(iqr_norm)
                spread_before.append(spread)
                spread_after.append(spread_norm)
            print(f"{strategy + '@' + str(warps):32s} {len(runs):4d} {iqr:6.1f} {spread:7.1f} "
                  f"{eta_squared(list(by_instance.values())):5.2f} "
                  f"{spearman(round_share, relative):9.2f} {spearman(busy_per_command, iops):8.2f} "
                  f"{100 * statistics.median(busy_share):6.1f} "
                  f"{100 * statistics.median(data_share):6.1f} "
                  f"{iqr_norm:11.1f} {spread_norm:13.1f} "
                  f"{max(instance_median, key=instance_median.get)}")
    if bound_before:
        print(f"cases bound by the host threads (8+ warps, not all_threads): median IQR "
              f"{statistics.median(bound_before):.1f} -> {statistics.median(bound_after):.1f} %, "
              f"median instance spread {statistics.median(spread_before):.1f} -> "
              f"{statistics.median(spread_after):.1f} % after dividing by the instance's "
              f"controller-only speed")


if __name__ == "__main__":
    main()
