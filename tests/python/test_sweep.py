"""Sweeps: the CLI's expansion, local runs, failing points, spec files."""

import json

import pytest

import gpunvme
from conftest import SMALL_IOS


def test_expansion_is_cartesian_with_the_first_axis_slowest():
    points = gpunvme.expand({
        "scenario.queues": [4, 8],
        "zip": [{"scenario.bs": [4096, 8192], "scenario.ios": [100, 50]}],
        "seed": {"start": 1, "stop": 3, "step": 1},
    })
    assert len(points) == 2 * 2 * 3
    assert points[0] == {"scenario.queues": 4, "scenario.bs": 4096, "scenario.ios": 100,
                         "seed": 1}
    assert points[1]["seed"] == 2 and points[3]["scenario.bs"] == 8192
    assert points[3]["scenario.ios"] == 50  # zipped lists advance together
    assert points[6]["scenario.queues"] == 8
    # Ranges include stop; geometric ranges multiply.
    assert [p["scenario.threads"] for p in gpunvme.expand(
        {"scenario.threads": {"start": 256, "stop": 1024, "step": 256}})] == [256, 512, 768, 1024]
    assert [p["topology.nodes.cpu0.cores"] for p in gpunvme.expand(
        {"topology.nodes.cpu0.cores": {"start": 1, "stop": 16, "factor": 2}})] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("axes, path", [
    ({"scenario.bs": []}, "$.sweep.scenario.bs"),
    ({"scenario.bs": {"start": 1}}, "$.sweep.scenario.bs"),
    ({"zip": [{"scenario.bs": [1, 2], "scenario.ios": [1]}]}, "$.sweep.zip[0].scenario.ios"),
    ({"threads": [1]}, "$.sweep.threads"),
    ({"scenario.bs": [4096, 8192, 4096]}, "$.sweep.scenario.bs[2]"),
])
def test_malformed_axes_name_their_path(axes, path):
    with pytest.raises(gpunvme.ConfigError) as caught:
        gpunvme.expand(axes)
    assert caught.value.path == path


def test_sweep_runs_every_point_and_records_failures(small_config):
    with pytest.warns(gpunvme.SweepPointsFailed, match="2 of 4 points failed"):
        frame = gpunvme.sweep(small_config, {"scenario.queues": [4, 8],
                                             "scenario.iodepth": [1, 0]},
                              metrics=["stages.doorbell.p50"])
    assert list(frame["index"]) == [0, 1, 2, 3]
    assert list(frame["scenario.queues"]) == [4, 4, 8, 8]
    ok = frame[frame["error"].isna()]
    failed = frame[frame["error"].notna()]
    assert list(ok["index"]) == [0, 2] and list(failed["index"]) == [1, 3]
    assert failed["error"].str.contains(r"\$\.iodepth").all()
    assert (ok["ios"] == SMALL_IOS).all() and (ok["iops"] > 0).all()
    assert (ok["stages.doorbell.p50"] > 0).all()
    # Each row is the run of its point: the same as running it alone.
    alone = gpunvme.run(small_config.with_({"scenario.queues": 8}))
    assert frame.loc[2, "iops"] == alone["summary"]["iops"]
    assert frame.loc[2, "key"] == '{"scenario.queues":8,"scenario.iodepth":1}'


def test_sweep_from_a_spec_file_matches_the_cli_points(tmp_path, cli):
    spec = {"scenario": "randread-4k.json", "set": ["scenario.ios=%d" % SMALL_IOS],
            "sweep": {"scenario.threads": [128, 512]}}
    scenarios = tmp_path / "spec.json"
    scenarios.write_text(json.dumps(spec))
    # File names resolve beside the spec first, then from the working folder.
    (tmp_path / "randread-4k.json").write_text(
        open(gpunvme.shipped_file("randread-4k", "scenario")).read())
    frame = gpunvme.sweep(str(scenarios), keep_results=True)
    assert list(frame["scenario.threads"]) == [128, 512]
    assert frame.loc[1, "result"]["config"]["scenario"]["threads"] == 512
    assert frame["error"].isna().all()
    base, points, metrics = gpunvme.load_spec(str(scenarios))
    assert base.scenario_file == str(tmp_path / "randread-4k.json")
    assert [p["key"] for p in points] == list(frame["key"])
    # Axes given beside a spec are added to its own.
    more = gpunvme.sweep(str(scenarios), {"seed": [1, 2]})
    assert list(more["key"]) == [
        '{"scenario.threads":128,"seed":1}', '{"scenario.threads":128,"seed":2}',
        '{"scenario.threads":512,"seed":1}', '{"scenario.threads":512,"seed":2}']
    assert more.loc[0, "iops"] == frame.loc[0, "iops"]
    pairs = gpunvme.points(str(scenarios))
    assert [params for params, _ in pairs] == [{"scenario.threads": 128},
                                               {"scenario.threads": 512}]
    assert pairs[1][1].scenario["threads"] == 512


def test_local_processes_give_the_same_rows(small_config):
    axes = {"scenario.queues": [2, 4, 8]}
    here = gpunvme.sweep(small_config, axes)
    spread = gpunvme.sweep(small_config, axes, jobs=2)
    columns = ["index", "key", "scenario.queues", "iops", "latency_ns.p99", "events"]
    assert here[columns].equals(spread[columns])


def test_a_config_needs_axes(small_config):
    with pytest.raises(gpunvme.ConfigError):
        gpunvme.sweep(small_config)


def test_a_refined_spec_is_refused_rather_than_run_in_one_mode(tmp_path):
    # The two stages of refine run in `gpunvme sweep`; the Python runner would
    # run every point once, in one mode, so it refuses the spec.
    spec = {"set": ["scenario.ios=%d" % SMALL_IOS],
            "sweep": {"scenario.threads": [32, 64]},
            "refine": {"metric": "summary.iops", "goal": "max", "keep": 1}}
    with pytest.raises(gpunvme.ConfigError) as caught:
        gpunvme.sweep(spec)
    assert caught.value.path == "$.refine"
    assert "gpunvme sweep" in caught.value.problem
    # Its points are the plain spec's; a bad refine is the native parser's error.
    assert [p["params"] for p in gpunvme.load_spec(spec)[1]] == [
        {"scenario.threads": 32}, {"scenario.threads": 64}]
    spec["refine"]["keep"] = 3
    with pytest.raises(gpunvme.ConfigError) as caught:
        gpunvme.sweep(spec)
    assert caught.value.path == "$.refine.keep"
