"""scripts/agent-pass-merge.py against hand-made agent_pass runs whose merge is known, and bad runs.

Per kernel and figure the merged file holds the median, minimum and maximum over the runs, the
first run's calls and the build log's ptxas figures; a run that is not an agent_pass result exits 2
naming the file and the JSON path.
"""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "agent-pass-merge.py")

BUILD_LOG = """ptxas info    : Compiling entry function '_ZN46_GLOBAL__N_12k_agent_loopENS_8LoopArgsE' for 'sm_90'
ptxas info    : Function properties for _ZN46_GLOBAL__N_12k_agent_loopENS_8LoopArgsE
    1744 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 80 registers, used 0 barriers, 1744 bytes cumulative stack size
ptxas info    : Compiling entry function '_ZN7gpunvme2hw12agent_kernelENS0_10KernelArgsE' for 'sm_90'
ptxas info    : Function properties for _ZN7gpunvme2hw12agent_kernelENS0_10KernelArgsE
    3664 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 128 registers, used 0 barriers, 3664 bytes cumulative stack size
"""


def run_doc(intake, loop, loop_own, agent, agent_own, calls):
    def rows(kernel, total, own):
        return [{"kernel": kernel, "profiled": False, "event_ns_per_32_requests": total},
                {"kernel": kernel, "profiled": True, "event_ns_per_32_requests": total + 1,
                 "warp_ns_per_32_requests": total, "split_ns_per_32_requests": {"other": own},
                 "calls_per_32_requests": {"ballot": calls}}]
    return {"schema": "gpunvme.agent_pass/1", "device": {"name": "hand"}, "launches": 5,
            "intake": {"ns_per_pass": intake},
            "agent": {"rows": rows("k_agent_loop", loop, loop_own) +
                      rows("agent_kernel", agent, agent_own)}}


def merge(tmp_path, docs):
    paths = []
    for i, doc in enumerate(docs):
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    (tmp_path / "build.log").write_text(BUILD_LOG)
    (tmp_path / "instance.json").write_text(json.dumps({"id": "hand"}))
    out = tmp_path / "merged.json"
    proc = subprocess.run([sys.executable, SCRIPT, "--runs", *paths,
                           "--build-log", str(tmp_path / "build.log"),
                           "--instance", str(tmp_path / "instance.json"), "--date", "2026-11-29",
                           "--build", "by hand", "--doc", "hand-made runs", "-o", str(out)],
                          capture_output=True, text=True)
    return proc, out


def test_medians_ranges_first_calls_and_ptxas(tmp_path):
    # Three runs: agent_kernel 300, 100, 110 ns (median 110, not the mean 170; range 100..300),
    # its own code 30, 10, 11 (median 11); k_agent_loop 50, 70, 60 (median 60); calls from the
    # first run (6).
    proc, out = merge(tmp_path, [run_doc(17, 50, 5, 300, 30, 6.0),
                                 run_doc(19, 70, 7, 100, 10, 7.0),
                                 run_doc(18, 60, 6, 110, 11, 8.0)])
    assert proc.returncode == 0, proc.stderr
    m = json.loads(out.read_text())
    agent = m["agent_kernel"]
    assert agent["ns_per_32_requests_unprofiled"] == {"median": 110, "min": 100, "max": 300}
    assert agent["ns_per_request_unprofiled"] == 3.44
    assert agent["profile_split_ns_per_32_requests"]["other"] == {"median": 11, "min": 10, "max": 30}
    assert agent["profile_calls_per_32_requests_run1"] == {"ballot": 6.0}
    assert agent["ptxas"] == {"registers": 128, "stack_frame_bytes": 3664,
                              "spill_stores_bytes": 8, "spill_loads_bytes": 4}
    assert m["k_agent_loop"]["ns_per_32_requests_unprofiled"]["median"] == 60
    assert m["k_agent_loop"]["ptxas"]["registers"] == 80
    assert m["intake"]["ns_per_pass_of_32"]["median"] == 18
    assert m["runs"] == 3 and len(m["per_run"]) == 3
    assert "io_kernel" not in m


def test_a_run_of_another_program_exits_2_naming_file_and_path(tmp_path):
    bad = run_doc(17, 50, 5, 300, 30, 6.0)
    bad["schema"] = "gpunvme.gpu_microbench/1"
    proc, _ = merge(tmp_path, [run_doc(17, 50, 5, 300, 30, 6.0), bad])
    assert proc.returncode == 2
    assert "run1.json: $.schema" in proc.stderr, proc.stderr
    bad = run_doc(17, 50, 5, 300, 30, 6.0)
    bad["agent"]["rows"][0]["event_ns_per_32_requests"] = -1
    proc, _ = merge(tmp_path, [bad])
    assert proc.returncode == 2
    assert "$.agent.rows[0].event_ns_per_32_requests" in proc.stderr, proc.stderr
