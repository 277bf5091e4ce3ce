"""The GPU path's error handling in the result and its frames."""

import gpunvme


def run_with_errors(policy):
    return gpunvme.run(
        gpunvme.load_config(
            overrides={
                "scenario.ios": 400,
                "scenario.threads": 64,
                "scenario.queues": 1,
                "scenario.error_policy": policy,
                "topology.nodes.ssd0.fault_schedule": ["command@cmd=10", "command@cmd=20"],
            }
        )
    )


def test_retried_errors_appear_in_the_summary_and_the_per_ssd_frame():
    result = run_with_errors("retry")
    summary = result.flat()
    assert summary["error_handling.signalled"] == 2
    assert summary["error_handling.retries"] == 2
    assert summary["failed"] == 0
    frame = result.error_handling_frame()
    assert list(frame.index) == ["ssd0"]
    assert frame.loc["ssd0", "retried_ok"] == 2
    assert frame.loc["ssd0", "gpu_wait_ns_per_error"] > frame.loc["ssd0", "host_ns_per_error"]
    assert frame.loc["ssd0", "queue_stalled_lane_ns.1"] == frame.loc["ssd0", "stalled_lane_ns"]


def test_with_fail_the_errors_go_back_and_without_a_policy_there_is_no_frame():
    assert run_with_errors("fail").flat()["failed"] == 2
    assert run_with_errors("none").error_handling_frame().empty
