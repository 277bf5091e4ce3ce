"""scripts/fence-under-host-polls.py against hand-made runs whose slopes are known, and the
committed h200-sxm and h100-sxm profiles' per-poller fence figures against the committed H200
runs.
"""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "fence-under-host-polls.py")
MEASURED = os.path.join(SOURCE_DIR, "configs", "measurements",
                        "gpu-ops-under-host-polls-h200-2026-11-29.json")


def figures(path, constant, *extra, free=8):
    out = subprocess.run([sys.executable, SCRIPT, str(path), str(constant), str(free), *extra],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def hand_made_run(instance, gpu_slope, system_slope, constant):
    """Rows on the lines the script fits, plus rows it must leave out."""
    rows = [{"pattern": "same_entry", "pollers": 0, "fence_gpu_ns": 300.0, "fence_system_ns": 700.0}]
    # Lines that start 8 pollers in (the free count the test passes).
    for n in (4, 8, 66, 264, 528):
        beyond = max(0, n - 8)
        rows.append({"pattern": "same_entry", "pollers": n, "fence_gpu_ns": 300.0 + gpu_slope * beyond,
                     "fence_system_ns": 700.0 + constant + system_slope * beyond})
    # Beyond the fitted range, and the other pattern: far off the lines.
    rows.append({"pattern": "same_entry", "pollers": 1056, "fence_gpu_ns": 1e9, "fence_system_ns": 1e9})
    rows.append({"pattern": "lane_entries", "pollers": 528, "fence_gpu_ns": 1e9, "fence_system_ns": 1e9})
    return {"instance": instance, "rows": rows}


def test_hand_made_runs_give_their_slopes(tmp_path):
    doc = {"schema": "gpunvme.gpu_ops_under_host_polls.runs/1",
           "runs": [hand_made_run("a", 20.0, 10.0, 600.0), hand_made_run("a", 22.0, 12.0, 600.0),
                    hand_made_run("a", 30.0, 11.0, 600.0), hand_made_run("b", 10.0, 5.0, 600.0),
                    # The program's first version: no same_entry rows, left out.
                    {"instance": "c", "rows": [{"pollers": 0, "fence_gpu_ns": 1.0,
                                                "fence_system_ns": 1.0}]}]}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(doc))
    out = figures(path, 600.0)
    # Instance a: the median of its runs (22, 11); b: (10, 5); then the median of the two.
    assert out["instances"] == {"a": {"host_poller_fence_gpu_ns": 22.0, "host_poller_fence_system_ns": 11.0},
                                "b": {"host_poller_fence_gpu_ns": 10.0, "host_poller_fence_system_ns": 5.0}}
    assert out["host_poller_fence_gpu_ns"] == 16.0 and out["host_poller_fence_system_ns"] == 8.0
    assert figures(path, 600.0, "b")["host_poller_fence_gpu_ns"] == 10.0
    # The constant comes off the system fence's excess before the slope, and the free pollers
    # off the count.
    assert figures(path, 0.0, "b")["host_poller_fence_system_ns"] > 5.0
    assert figures(path, 600.0, "b", free=0)["host_poller_fence_gpu_ns"] < 10.0


def profile_value(name, param):
    with open(os.path.join(SOURCE_DIR, "configs", "gpu", name + ".json")) as f:
        return json.load(f)["params"][param]["value"]


def test_profiles_hold_the_measured_figures():
    # Both profiles keep host_pollers_before_fence_cost at its default, 8 (gpu_params.def).
    with open(os.path.join(SOURCE_DIR, "models", "gpu", "gpu_params.def")) as f:
        assert 'host_pollers_before_fence_cost,\n    integer("", 8,' in f.read()
    for profile in ("h200-sxm", "h100-sxm"):
        with open(os.path.join(SOURCE_DIR, "configs", "gpu", profile + ".json")) as f:
            assert "host_pollers_before_fence_cost" not in json.load(f)["params"]
        constant = profile_value(profile, "host_poll_fence_system_ns")
        out = figures(MEASURED, constant)
        assert set(out["instances"]) == {"h200-o1b", "h200-o3"}, out
        for param in ("host_poller_fence_gpu_ns", "host_poller_fence_system_ns"):
            assert profile_value(profile, param) == out[param], (profile, param, out)
