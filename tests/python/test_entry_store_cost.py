"""scripts/entry-store-cost.py against a hand-made file whose answer is known, and the committed
h100-sxm and h200-sxm profiles against the committed submission-costs runs.

Per run the figure is the median of store_ns_per_warp over the sqe_store rows, and the calibration
the median over the runs; --check fails when a profile holds another figure.
"""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "entry-store-cost.py")
MEASUREMENTS = os.path.join(SOURCE_DIR, "configs", "measurements")
PROFILES = os.path.join(SOURCE_DIR, "configs", "gpu")


def run_with(rows):
    return {"sqe_store": {"rows": [{"store_ns_per_warp": v} for v in rows]}}


def test_the_median_of_run_medians(tmp_path):
    # Run medians 200, 210 (even count: the mean of the middle two) and 300: the median is 210.
    data = {"instances": [{"id": "hand"}],
            "runs": [run_with([190, 200, 250]), run_with([205, 215, 100, 400]), run_with([300])]}
    path = tmp_path / "sc.json"
    path.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True,
                         check=True).stdout
    assert "(hand): per-run medians 200.00, 210.00, 300.00 ns -> entry_store_ns 210.00 ns" in out, out
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"params": {"entry_store_ns": {"value": 211.0}}}))
    r = subprocess.run([sys.executable, SCRIPT, str(path), "--check", str(profile)],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout


def test_the_profiles_hold_their_own_gpus_figures():
    for data, profile in (("submission-costs-h100-2026-11-27.json", "h100-sxm.json"),
                          ("submission-costs-h200-2026-11-28.json", "h200-sxm.json")):
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(MEASUREMENTS, data), "--check",
                            os.path.join(PROFILES, profile)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
