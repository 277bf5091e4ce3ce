"""scripts/target-concurrency.py against a hand-made file whose answers are known.

Batch times are built as (fixed + per_command * depth) * (1 + slope * (k - 1)), so the script
must print that line at k = 1 and that slope; a run with errors must be left out.
"""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

FIXED, PER_COMMAND, SLOPE = 2000.0, 1100.0, 0.004


def case(k, depth, round_, order, service_ns, errors=0):
    return {"depth": depth, "queues": k, "wall_ms": 10.0, "errors": errors, "data_mismatches": 0,
            "timed_out_warps": 0, "instance": "x", "variant": "k_sweep", "round": round_,
            "depth_order": order,
            "target": {"errors": 0, "service_ns": {"mean": service_ns}, "batch_gap_ns": {"mean": 5000.0},
                       "busy_threads": k, "busy_ns_median": 9e6}}


def test_line_and_slope_from_a_hand_made_file(tmp_path):
    cases = []
    for round_ in (1, 2, 3, 4):
        order = "1,8,32" if round_ % 2 else "32,8,1"
        for k in (1, 2, 4, 8, 16, 32):
            for depth in (1, 8, 32):
                ns = (FIXED + PER_COMMAND * depth) * (1 + SLOPE * (k - 1))
                cases.append(case(k, depth, round_, order, ns))
    # A run in error, far off: the script must leave it out.
    cases.append(case(1, 32, 5, "32", 1e9, errors=3))
    data = {"device": {"name": "Test GPU"}, "smi_summary": [],
            "instances": [{"id": "x", "gpu": "Test GPU", "requested_kind": "none",
                           "boot_id": "0123456789"}],
            "cases": cases}
    path = tmp_path / "hw-gpu-target-concurrency-test.json"
    path.write_text(json.dumps(data))
    script = os.path.join(SOURCE_DIR, "scripts", "target-concurrency.py")
    out = subprocess.run([sys.executable, script, str(path)], check=True, capture_output=True,
                         text=True).stdout
    assert "72 cases (1 failed or in error)" in out
    # k = 1: fixed 2.00 us, 1100.0 ns per command, batch of 32 = 37.20 us.
    k1 = next(line for line in out.splitlines() if line.strip().startswith("1 "))
    assert "37.20" in k1 and "2.00" in k1 and "1100.0" in k1
    assert f"all runs: batch(k) / batch(1) = 1.000, 1.004, 1.012, 1.028, 1.060, 1.124; = 1 + {SLOPE:.5f} (k - 1)" in out
    assert "worst residual 0.00 points" in out


def test_footprint_form_and_split_from_a_hand_made_file(tmp_path):
    """Footprint runs built as 30 us + 50 ns per MiB of buffers at k = 1 and 30.2 us + 100 ns per
    MiB at k = 32: the line in MiB fits exactly, the line in log2 MiB does not, and k = 32 over
    k = 1 splits into 0.20 us with no buffers and 50 ns per MiB."""
    cases = []
    for k, entries in ((1, 256), (1, 2048), (1, 8192), (32, 64), (32, 256)):
        mib = k * entries * 4 / 1024
        ns = 30000.0 + 50.0 * mib if k == 1 else 30200.0 + 100.0 * mib
        for round_ in (1, 2):
            c = case(k, 32, round_, "1,8,32", ns)
            c.update({"variant": "footprint", "namespace_mib": 256, "queue_entries": entries,
                      "ios": 65536})
            cases.append(c)
    data = {"device": {"name": "Test GPU"}, "smi_summary": [],
            "instances": [{"id": "x", "gpu": "Test GPU", "requested_kind": "none",
                           "boot_id": "0123456789"}],
            "cases": cases}
    path = tmp_path / "hw-gpu-target-concurrency-footprint.json"
    path.write_text(json.dumps(data))
    script = os.path.join(SOURCE_DIR, "scripts", "target-concurrency.py")
    out = subprocess.run([sys.executable, script, str(path)], check=True, capture_output=True,
                         text=True).stdout
    forms = [line for line in out.splitlines() if "footprint form" in line]
    assert len(forms) == 2, out
    assert "batch =  30.00 us +   50.0 ns per MiB, worst residual     0 ns" in forms[0]
    assert "per log2 MiB" in forms[1] and not forms[1].endswith("residual     0 ns")
    assert ("k 32 over k 1 =   0.20 us at no buffers +  50.0 ns per MiB of buffers"
            " (100.0 against  50.0 ns per MiB)") in out
