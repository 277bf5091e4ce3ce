"""scripts/cross-sm-turn-breaks.py against a hand-made file whose answer is known, and the committed
h200-sxm profile against the committed shared-queue reaping runs.

The hand-made cases break a warp's run of turns exactly B x (the share of the queue's other warps on
other SMs) times per turn that has a turn of the same warp after it; the script must print B, the
same B with any case left out, leave the aggregated-tickets control out of the fit, and refuse a
case it cannot read.
"""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "cross-sm-turn-breaks.py")
B = 0.125


def case(blocks, warps):
    per_block = warps // blocks
    elsewhere = (warps - per_block) / (warps - 1)
    breaks = B * elsewhere
    # breaks = (31/32 - share) x 32/31  ->  share = 31/32 - breaks x 31/32
    share = 31 / 32 - breaks * 31 / 32
    return {"blocks_per_queue": blocks, "warps_per_queue": warps, "same_warp_turn_share_median": share,
            "runs": 3}


def write(tmp_path, derived):
    path = tmp_path / "reaping.json"
    path.write_text(json.dumps({"schema": "gpunvme.shared_queue_reaping.runs/1", "derived": derived}))
    return str(path)


def test_the_fit_of_a_hand_made_file(tmp_path):
    # An aggregated-tickets case breaks nothing at any sharing: a control, printed, never fitted.
    control = dict(case(4, 32), same_warp_turn_share_median=31 / 32, aggregated_atomics=True)
    path = write(tmp_path, {"one": case(1, 8), "one_big": case(1, 32), "two": case(2, 16),
                            "four": case(4, 32), "eight": case(8, 32), "four_aggregated": control})
    out = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True, check=True).stdout
    assert f"cross_sm_turn_breaks = {B:.4f} breaks" in out, out
    for name in ("one", "one_big", "two", "four", "eight"):
        assert f"without {name}: {B:.4f}" in out, out


def test_a_case_it_cannot_read_is_refused(tmp_path):
    path = write(tmp_path, {"odd": {"blocks_per_queue": 3, "warps_per_queue": 16,
                                    "same_warp_turn_share_median": 0.9, "runs": 3}})
    run = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
    assert run.returncode != 0
    assert "$.derived.odd" in run.stderr + run.stdout


def test_the_h200_profile_is_the_fit_of_the_committed_runs():
    profile = os.path.join(SOURCE_DIR, "configs", "gpu", "h200-sxm.json")
    run = subprocess.run([sys.executable, SCRIPT, "--check", profile], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
