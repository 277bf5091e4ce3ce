"""scripts/cq-scan-co-waiters.py against a hand-made file whose answer is known, and the committed
h200-sxm profile against the committed feeder runs.

The hand-made runs grow the cq_scan wait beyond the batch by exactly C x (warps on the SM - 1) x
share, the op profiles giving that share; the script must print C, leave out runs in error and
traced runs, and take no part of the own_slot control.
"""

import gzip
import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "cq-scan-co-waiters.py")
C, SHARE = 1500.0, 0.7


def case(inst, queues, packing, wait, beyond, errors=0, profile=False):
    c = {"instance": inst, "queues": queues, "feed_warps_per_block": packing, "feed_wait": wait,
         "wait_beyond_batch_ns_mean": beyond, "errors": errors, "data_mismatches": 0,
         "timed_out_warps": 0}
    if profile:
        c["op_profile"] = {"compute": {"warp_ns_per_io": 1000.0, "ns_per_io": {"wait": 1000.0 * SHARE}}}
    return c


def test_the_fit_of_a_hand_made_file(tmp_path):
    cases = []
    for inst, base in (("a", 30000.0), ("b", 40000.0)):
        for queues in (8, 32):
            for packing in (1, 2, 4, 8):
                for _ in range(3):
                    cases.append(case(inst, queues, packing, "cq_scan", base + C * (packing - 1) * SHARE))
                    cases.append(case(inst, queues, packing, "own_slot", 4000.0 + 9999.0 * packing))
                # A run in error and a traced run, far off: both left out of the medians.
                cases.append(case(inst, queues, packing, "cq_scan", 1e9, errors=1))
                cases.append(case(inst, queues, packing, "cq_scan", 1e9, profile=True))
    path = tmp_path / "feeder.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"cases": cases}, f)
    out = subprocess.run([sys.executable, SCRIPT, str(path)], capture_output=True, text=True, check=True).stdout
    assert f"cq_scan_co_waiter_ns = {C:.1f} ns" in out, out
    assert f"without a: {C:.1f} ns" in out and f"without b: {C:.1f} ns" in out, out


def test_the_h200_profile_is_the_fit_of_the_committed_runs():
    profile = os.path.join(SOURCE_DIR, "configs", "gpu", "h200-sxm.json")
    run = subprocess.run([sys.executable, SCRIPT, "--check", profile], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
