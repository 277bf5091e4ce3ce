"""scripts/host-poll-figures.py against hand-made rows whose figures are known, against the H100
figures of models/gpu/gpu_params.def (derived from the 2026-11-24 and -26 files the same way), and
the committed h200-sxm profile against the committed H200 runs.
"""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "host-poll-figures.py")
MEASUREMENTS = os.path.join(SOURCE_DIR, "configs", "measurements")


def figures(path, *extra):
    out = subprocess.run([sys.executable, SCRIPT, str(path), *extra], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def poll_row(warps, window, loads_per_s, load_ns, batch_us, memory="host"):
    return {"pollers_memory": memory, "lanes": "same", "window": window, "poll_warps": warps,
            "copy_threads": 4, "batch": "64x4KiB", "poll_loads_per_s": loads_per_s,
            "poll_load_ns": load_ns, "batch_us": batch_us}


def hand_made_polls(rate_per_us, copy_reads):
    alone = 600.0
    rows = [poll_row(0, 64, 0, 0.0, alone, memory="none"), poll_row(16, 64, 1.0e7, 1300.0, 700.0)]
    for w in (528, 1056, 2112):
        # Each of the 64 x 4 copy operations waits copy_reads times W / rate longer.
        rows.append(poll_row(w, 64, rate_per_us * 1e6, 9999.0, alone + 256 * copy_reads * w / rate_per_us))
    for w in (132, 528, 2112):
        rows.append(poll_row(w, 1, 32 / 1000.0 * 1e9, 9999.0, 9999.0))  # 32 lines, 1,000 ns a line
    # Rows of other shapes that must not be read.
    rows.append(poll_row(528, 64, 1.0, 1.0, 1.0, memory="device"))
    return {"schema": "gpunvme.host_polls_under_copies/1", "rows": rows}


def hand_made_access(extra_ns):
    rows = [{"pattern": "fence_system", "pollers": 0, "pollers_where": "none", "ns": 700.0},
            {"pattern": "fence_gpu", "pollers": 1, "pollers_where": "same_sm", "ns": 99999.0}]
    for p, where, ns in ((1, "same_sm", 1.0), (3, "same_sm", 2.0), (7, "other_sms", 3.0)):
        rows.append({"pattern": "fence_system", "pollers": p, "pollers_where": where,
                     "ns": 700.0 + extra_ns + ns})
    return {"schema": "gpunvme.warp_host_access/1", "rows": rows}


def test_hand_made_rows_give_their_figures(tmp_path):
    polls = tmp_path / "polls.json"
    polls.write_text(json.dumps(hand_made_polls(160.0, 8.0)))
    out = figures(polls)
    assert out == {"host_poll_read_ns": 1300.0, "host_reads_per_us": 160.0,
                   "host_line_read_interval_ns": 1000.0, "copy_op_host_reads": 8.0}, out
    access = tmp_path / "access.json"
    access.write_text(json.dumps(hand_made_access(400.0)))
    assert figures(access) == 402.0  # the median of the polled rows, less the row without


def test_runs_by_instance_take_the_median_of_the_instances(tmp_path):
    runs = {"a": hand_made_polls(150.0, 8.0), "b": hand_made_polls(170.0, 10.0)}
    accesses = {"a": hand_made_access(500.0), "b": hand_made_access(700.0)}
    (tmp_path / "x-host-polls.json").write_text(json.dumps({"runs": runs}))
    (tmp_path / "x-warp-host-access.json").write_text(json.dumps({"runs": accesses}))
    out = figures(tmp_path / "x-host-polls.json")
    assert out["host_reads_per_us"] == 160.0 and out["copy_op_host_reads"] == 9.0, out
    assert out["host_poll_fence_system_ns"] == 602.0, out
    assert figures(tmp_path / "x-host-polls.json", "b")["host_reads_per_us"] == 170.0


def test_the_h100_defaults_are_the_figures_of_their_files():
    out = figures(os.path.join(MEASUREMENTS, "host-polls-under-copies-h100-2026-11-26.json"))
    assert out == {"host_poll_read_ns": 1234.3, "host_reads_per_us": 157.9,
                   "host_line_read_interval_ns": 1023.7, "copy_op_host_reads": 8.67}, out
    assert figures(os.path.join(MEASUREMENTS, "warp-host-access-h100-2026-11-24.json")) == 415.6


def test_the_h200_profile_holds_the_figures_of_the_committed_runs():
    out = figures(os.path.join(MEASUREMENTS, "hw-host-target-h200-2026-11-29-host-polls.json"))
    with open(os.path.join(SOURCE_DIR, "configs", "gpu", "h200-sxm.json")) as f:
        params = json.load(f)["params"]
    for key in ("host_poll_read_ns", "host_reads_per_us", "host_line_read_interval_ns",
                "copy_op_host_reads", "host_poll_fence_system_ns"):
        assert params[key]["value"] == out[key], (key, params[key]["value"], out[key])
