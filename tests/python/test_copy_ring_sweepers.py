"""scripts/copy-ring-sweepers.py against hand-made rows whose figure is known, against the H100
figure of configs/topologies/hw-soft-controller.json, and the H200 figure that
scripts/remake-perrole-reports.sh gives the H200 host-thread target's prediction against the
committed H200 runs.
"""

import json
import os
import re
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "copy-ring-sweepers.py")
MEASUREMENTS = os.path.join(SOURCE_DIR, "configs", "measurements")


def figure(path):
    out = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def case(run, pollers, depth, batch_ns, copies=1.0, scattered=False):
    return {"run_file": f"u-w{pollers}-r{run}.json", "instance": "x", "host_pollers": pollers,
            "depth": depth, "scatter_buffers": scattered,
            "target": {"batch_fixed_ns": batch_ns, "batch_copies": {"mean": copies}}}


def test_hand_made_rows(tmp_path):
    cases = []
    for run, base in ((1, 10000.0), (2, 20000.0)):
        for depth in (8, 32):
            cases.append(case(run, 0, depth, base + depth))
            cases.append(case(run, 0, depth, 1e9, scattered=True))
            # 66 warps on 32 rings: 34 beyond the first; 2 copies a batch, 5,000 ns each per warp.
            cases.append(case(run, 66, depth, base + depth + 2 * 34 * 5000.0, copies=2.0))
            # Scattered rows (one copy per command) are the prediction set, not the calibration.
            cases.append(case(run, 66, depth, 1e12, copies=8.0, scattered=True))
    path = tmp_path / "polls.json"
    path.write_text(json.dumps({"cases": cases}))
    assert figure(path) == {"copy_op_ring_sweeper_ns": 5000.0, "rows": 4}


def test_the_h100_figure_is_the_topologys():
    out = figure(os.path.join(MEASUREMENTS, "hw-controller-under-polls-h100-2026-11-26.json"))
    with open(os.path.join(SOURCE_DIR, "configs", "topologies", "hw-soft-controller.json")) as f:
        ssd = [n for n in json.load(f)["nodes"] if n["kind"] == "nvme_ssd"][0]
    assert out == {"copy_op_ring_sweeper_ns": ssd["copy_op_ring_sweeper_ns"], "rows": 24}


def test_the_h200_prediction_takes_the_h200_figure():
    out = figure(os.path.join(MEASUREMENTS, "hw-host-target-h200-2026-11-29-under-polls.json"))
    with open(os.path.join(SOURCE_DIR, "scripts", "remake-perrole-reports.sh")) as f:
        script = f.read()
    given = re.findall(r"copy_op_ring_sweeper_ns=([0-9.]+)", script)
    assert given == [str(out["copy_op_ring_sweeper_ns"])], (given, out)
    report = os.path.join(MEASUREMENTS, "validate-h200-2026-11-29-host-perrole-load.json")
    with open(report) as f:
        assert json.load(f)["overrides"] == [
            f"topology.nodes.ssd0.copy_op_ring_sweeper_ns={out['copy_op_ring_sweeper_ns']}"]
