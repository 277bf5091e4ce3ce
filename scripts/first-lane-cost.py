#!/usr/bin/env python3
"""The calibration of first_lane_pass_ns from the first-lane-scan microbenchmark.

Reads results files of tests/hardware/first_lane_scan.cu (default: the committed
configs/measurements/first-lane-scan-h200-2026-11-29.json, instance h200-percall47): one warp alone
making a ballot over its lanes and then first_lane (sim/core/algo/lanes.h) on the result, the lane
that matches fixed per row (0 to 31), as the turn loops and the request routing pick a lane. No
queue, no target and no strategy case enter it.

first_lane scans the mask from lane 0 up to the lowest set lane, one loop pass per lane below it.
In each row's loop the chosen lane matches in every other iteration, so the time one pass takes is
twice the least-squares slope of the ballot_first_lane figure (ns per iteration) over the chosen
lane. Per run that slope, then the median over the runs.

Usage: scripts/first-lane-cost.py [FILE.json ...] [--check PROFILE.json [--scale X]]
  --check: exit 1 unless the profile's first_lane_pass_ns is the figure of the last file times X
  (default 1; the a100-sxm profile scales the measured figure by the clock ratio 1.404), within
  0.005 ns.
A row without an integer lane 0 to 31 or a ballot_first_lane figure, a run with fewer than two
lanes, or a figure outside first_lane_pass_ns' range exits 2 naming the file and JSON path.
"""

import json
import os
import statistics
import sys

import measurement_files

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = [os.path.join(HERE, "..", "configs", "measurements", "first-lane-scan-h200-2026-11-29.json")]


class BadInput(Exception):
    """A value the calibration cannot use: file, JSON path, value and what is allowed."""


def number_at(path, where, value, low, high, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise BadInput(f"{path}: {where}: bad value {json.dumps(value)}; allowed {what}")
    return float(value)


def rows_of(path, run, where):
    rows = run.get("rows") if isinstance(run, dict) else None
    if not isinstance(rows, list) or len(rows) < 2:
        raise BadInput(f"{path}: {where}.rows: bad value {json.dumps(rows)}; allowed a list of at "
                       "least two rows {lane, ns_per_iteration: {ballot_first_lane}}")
    out = []
    for j, r in enumerate(rows):
        at = f"{where}.rows[{j}]"
        lane = r.get("lane") if isinstance(r, dict) else None
        if isinstance(lane, bool) or not isinstance(lane, int) or not 0 <= lane <= 31:
            raise BadInput(f"{path}: {at}.lane: bad value {json.dumps(lane)}; allowed an integer "
                           "lane, 0 to 31")
        figures = r.get("ns_per_iteration") if isinstance(r, dict) else None
        value = figures.get("ballot_first_lane") if isinstance(figures, dict) else None
        out.append((lane, number_at(path, f"{at}.ns_per_iteration.ballot_first_lane", value, 0.0,
                                    1e6, "a number of ns per iteration, 0 to 1e6")))
    return out


def slope(rows):
    xs = [float(lane) for lane, _ in rows]
    ys = [ns for _, ns in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("the rows must choose at least two different lanes")
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def first_lane_pass_ns(path):
    with open(path) as f:
        data = json.load(f)
    # A scan in every other iteration: twice the slope per iteration.
    runs = measurement_files.runs_of(data)
    where = "$.runs" if "runs" in data else "$"
    per_run = []
    for i, run in enumerate(runs):
        at = f"{where}[{i}]" if "runs" in data else where
        try:
            per_run.append(2.0 * slope(rows_of(path, run, at)))
        except ValueError as e:
            raise BadInput(f"{path}: {at}.rows: {e}") from e
    figure = round(statistics.median(per_run), 2)
    # first_lane_pass_ns's range (models/gpu/gpu_params.def).
    number_at(path, f"{where} (the derived first_lane_pass_ns)", figure, 0.0, 1e4,
              "a figure in first_lane_pass_ns' range, 0 to 1e4 ns")
    instance = (data.get("instances") or [{}])[0].get("id", os.path.basename(path))
    return instance, per_run, figure


def main(argv):
    check, scale = None, 1.0
    if "--scale" in argv:
        at = argv.index("--scale")
        scale = float(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    if "--check" in argv:
        at = argv.index("--check")
        check = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    files = argv or DEFAULT
    figure = None
    for path in files:
        try:
            instance, per_run, figure = first_lane_pass_ns(path)
        except BadInput as e:
            print(e, file=sys.stderr)
            return 2
        print(f"{os.path.basename(path)} ({instance}): per-run slopes "
              f"{', '.join(f'{v:.3f}' for v in per_run)} ns -> first_lane_pass_ns {figure:.2f} ns")
    if check is not None:
        return measurement_files.check_profile_param(check, "first_lane_pass_ns", round(figure * scale, 2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
