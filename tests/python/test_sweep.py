"""Sweeps: the CLI's expansion, local runs, failing points, spec files."""

import csv
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


# A refined sweep: four points, fast mode for all, the best two by IOPS again in exact mode.
REFINED = {"set": ["scenario.ios=2000"],
           "sweep": {"scenario.strategy": ["warp_batch", "io_agents"],
                     "scenario.threads": [128, 256]},
           "refine": {"metric": "summary.iops", "goal": "max", "keep": 2}}


def without_wall_clock(row, *also):
    """A row without what depends on the host or the stage: the wall-clock summary
    fields, the build's file hash and ``also``."""
    row = {k: v for k, v in row.items() if k not in ("build",) + also}
    row["summary"] = {k: v for k, v in row["summary"].items()
                      if k not in gpunvme._native.wall_clock_fields()}
    return row


def rows_of(jsonl):
    return [json.loads(line) for line in open(jsonl)]


def test_a_refined_sweep_runs_as_gpunvme_sweep_does(tmp_path, cli):
    spec_file = tmp_path / "refined.json"
    spec_file.write_text(json.dumps(REFINED))
    frame = gpunvme.sweep(str(spec_file), out=tmp_path / "py")
    # Every point fast, the best two again exact: a row each, the stage and ranks shown.
    assert list(frame["index"]) == [0, 1, 1, 2, 3, 3]
    assert list(frame["refine.stage"]) == ["fast", "fast", "exact", "fast", "fast", "exact"]
    fast = frame[frame["refine.stage"] == "fast"]
    assert (fast["scenario.fidelity"] == "fast").all()
    assert (frame[frame["refine.stage"] == "exact"]["scenario.fidelity"] == "exact").all()
    assert sorted(fast["refine.fast_rank"]) == [1, 2, 3, 4]
    best = fast.sort_values("iops", ascending=False)
    assert list(best["refine.fast_rank"]) == [1, 2, 3, 4]  # ranked by fast IOPS, best first
    assert list(frame["refine.finalist"]) == [False, True, True, False, True, True]
    # The comparison and the CSV are gpunvme sweep's, byte for byte where no wall clock
    # enters (the same C++ code ranks and compares both).
    ran = cli("sweep", str(spec_file), "--out", str(tmp_path / "cli"), "--jobs", "1")
    assert ran.returncode == 0, ran.stderr
    ours = (tmp_path / "py.refine.json").read_text()
    assert ours == (tmp_path / "cli.refine.json").read_text()
    assert frame.attrs["refine"] == json.loads(ours)
    assert frame.attrs["refine"]["agreement"]["same_best"] is not None
    ours_csv = list(csv.reader(open(tmp_path / "py.csv")))
    cli_csv = list(csv.reader(open(tmp_path / "cli.csv")))
    assert ours_csv[0] == cli_csv[0] and len(ours_csv) == len(cli_csv) == 7
    same = [n for n, c in enumerate(ours_csv[0])
            if c in ("index", "key", "error", "scenario.fidelity") or c.startswith("refine.")]
    assert len(same) == 8
    assert [[line[n] for n in same] for line in ours_csv] == [
        [line[n] for n in same] for line in cli_csv]
    # Each exact row is the row a plain exact sweep gives for its point (rows of the
    # Python runner), spec_id and the stage aside.
    plain = dict(REFINED, sweep=REFINED["sweep"])
    del plain["refine"]
    gpunvme.sweep(plain, out=tmp_path / "plain")
    reference = {row["key"]: row for row in rows_of(tmp_path / "plain.jsonl")}
    exact = [row for row in rows_of(tmp_path / "py.jsonl") if row["refine"]["stage"] == "exact"]
    assert len(exact) == 2
    for row in exact:
        assert "refine" not in reference[row["key"]]
        assert without_wall_clock(row, "spec_id", "refine") == without_wall_clock(
            reference[row["key"]], "spec_id")
    # The CLI's rows of the same points hold the same results.
    cli_rows = {(r["refine"]["stage"], r["key"]): r for r in rows_of(tmp_path / "cli.jsonl")}
    for row in rows_of(tmp_path / "py.jsonl"):
        theirs = cli_rows[(row["refine"]["stage"], row["key"])]
        assert without_wall_clock(row, "spec_id")["summary"] == without_wall_clock(
            theirs, "spec_id")["summary"]


def test_a_bad_refine_is_refused_naming_its_path(tmp_path, cli):
    spec = json.loads(json.dumps(REFINED))
    spec["refine"]["keep"] = 5  # more than the points
    with pytest.raises(gpunvme.ConfigError) as caught:
        gpunvme.sweep(spec)
    assert caught.value.path == "$.refine.keep"
    # A metric the rows do not hold stops the sweep at the first fast row, as the CLI's.
    spec = json.loads(json.dumps(REFINED))
    spec["refine"]["metric"] = "summary.iopz"
    spec_file = tmp_path / "bad.json"
    spec_file.write_text(json.dumps(spec))
    with pytest.raises(gpunvme.ConfigError) as caught:
        gpunvme.sweep(str(spec_file), out=tmp_path / "py")
    assert caught.value.path == "$.refine.metric"
    assert caught.value.file == str(spec_file)
    assert "did you mean 'summary.iops'" in caught.value.problem
    assert len(rows_of(tmp_path / "py.jsonl")) == 1  # stopped at the first fast row
    ran = cli("sweep", str(spec_file), "--out", str(tmp_path / "cli"), "--jobs", "1")
    assert ran.returncode == 2
    assert str(caught.value) in ran.stderr
    # The fidelity is the stages' to set.
    spec = json.loads(json.dumps(REFINED))
    spec["set"].append("scenario.fidelity=fast")
    with pytest.raises(gpunvme.ConfigError) as caught:
        gpunvme.sweep(spec)
    assert caught.value.path == "$.set[1]"


def test_a_refined_sweep_resumes_in_either_stage(tmp_path):
    whole = gpunvme.sweep(REFINED, out=tmp_path / "whole")
    lines = (tmp_path / "whole.jsonl").read_text().splitlines(keepends=True)
    stages = [json.loads(line)["refine"]["stage"] for line in lines]
    assert stages == ["fast"] * 4 + ["exact"] * 2
    comparison = (tmp_path / "whole.refine.json").read_text()
    # Stopped between the stages (a kill cutting the next row short), then after one
    # exact re-run: the rows there are kept, only the missing ones run.
    for kept in (4, 5):
        prefix = tmp_path / ("stopped%d" % kept)
        (tmp_path / ("stopped%d.jsonl" % kept)).write_text(
            "".join(lines[:kept]) + lines[kept][:40])
        with pytest.raises(gpunvme.ConfigError, match="resume=True"):
            gpunvme.sweep(REFINED, out=prefix)
        resumed = gpunvme.sweep(REFINED, out=prefix, resume=True)
        now = (tmp_path / ("stopped%d.jsonl" % kept)).read_text().splitlines(keepends=True)
        assert len(now) == 6 and now[:kept] == lines[:kept]  # nothing redone
        assert [json.loads(line)["refine"]["stage"] for line in now] == stages
        assert (tmp_path / ("stopped%d.refine.json" % kept)).read_text() == comparison
        columns = ["index", "refine.stage", "refine.fast_rank", "refine.finalist",
                   "refine.exact_rank", "iops"]
        assert resumed[columns].equals(whole[columns])
    # Stopped inside the fast stage: the rest of it runs, then the finalists.
    (tmp_path / "early.jsonl").write_text("".join(lines[:2]))
    resumed = gpunvme.sweep(REFINED, out=tmp_path / "early", resume=True)
    now = (tmp_path / "early.jsonl").read_text().splitlines(keepends=True)
    assert len(now) == 6 and now[:2] == lines[:2]
    assert (tmp_path / "early.refine.json").read_text() == comparison
