"""scripts/first-lane-cost.py against hand-made files whose answer is known, and the committed
profiles against the committed first-lane-scan runs.

Per run the figure is twice the least-squares slope of ballot_first_lane over the chosen lane (a
scan in every other iteration), and the calibration the median over the runs; --check fails when a
profile holds another figure; bad rows exit 2 naming the file and JSON path.
"""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "first-lane-cost.py")
MEASUREMENTS = os.path.join(SOURCE_DIR, "configs", "measurements")
PROFILES = os.path.join(SOURCE_DIR, "configs", "gpu")
DATA = os.path.join(MEASUREMENTS, "first-lane-scan-h200-2026-11-29.json")


def run_with(points):
    return {"rows": [{"lane": lane, "ns_per_iteration": {"ballot_first_lane": ns}}
                     for lane, ns in points]}


def test_twice_the_slope_median_over_runs(tmp_path):
    # Slopes 5 (80 + 5 L, exact), 6 (least squares through (0, 80), (10, 140), (20, 200)) and
    # 10 ((0, 0), (1, 10)): per scan 10, 12 and 20 ns; the median is 12.
    data = {"instances": [{"id": "hand"}],
            "runs": [run_with([(0, 80), (8, 120), (31, 235)]),
                     run_with([(0, 80), (10, 140), (20, 200)]),
                     run_with([(0, 0), (1, 10)])]}
    path = tmp_path / "fl.json"
    path.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True,
                         check=True).stdout
    assert "(hand): per-run slopes 10.000, 12.000, 20.000 ns -> first_lane_pass_ns 12.00 ns" in out, out
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"params": {"first_lane_pass_ns": {"value": 12.5}}}))
    r = subprocess.run([sys.executable, SCRIPT, str(path), "--check", str(profile)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout
    r = subprocess.run([sys.executable, SCRIPT, str(path), "--check", str(profile), "--scale",
                        str(12.5 / 12.0)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_bad_rows_exit_2_naming_the_file_and_path(tmp_path):
    cases = (
        (run_with([(0, 80), (32, 120)]), "$.runs[0].rows[1].lane: bad value 32"),
        (run_with([(0, 80), (4, "slow")]),
         "$.runs[0].rows[1].ns_per_iteration.ballot_first_lane: bad value \"slow\""),
        (run_with([(3, 80), (3, 90)]), "$.runs[0].rows: the rows must choose at least two"),
        (run_with([(0, 80)]), "$.runs[0].rows: bad value"),
    )
    for run, message in cases:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({"runs": [run]}))
        r = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True)
        assert r.returncode == 2, r.stdout + r.stderr
        assert str(path) in r.stderr and message in r.stderr, r.stderr


def test_the_profiles_hold_the_measured_figure():
    for profile, scale in (("h200-sxm.json", 1.0), ("h100-sxm.json", 1.0), ("a100-sxm.json", 1.404)):
        r = subprocess.run([sys.executable, SCRIPT, DATA, "--check", os.path.join(PROFILES, profile),
                            "--scale", str(scale)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
