"""Python sweeps on disk and on par with `gpunvme sweep`: rows written as they finish
(CSV and JSON lines, the CLI's layout and column names), resume, progress, worker
processes from a plain script, and failed points reported where they cannot be missed."""

import csv
import json
import os
import subprocess
import sys

import pytest

import gpunvme
from conftest import SMALL_IOS, require


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def table(path, drop):
    """A CSV file's cells, one list a line, without the column ``drop``."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    gone = rows[0].index(drop)
    return [[c for i, c in enumerate(row) if i != gone] for row in rows]


def test_out_writes_the_rows_and_csv_the_cli_writes_for_the_same_spec(tmp_path, cli):
    spec = {"scenario": os.path.join(gpunvme.source_dir(), "scenarios", "randread-4k.json"),
            "set": ["scenario.ios=%d" % SMALL_IOS, "topology.nodes.cpu0.cores=4"],
            "sweep": {"scenario.threads": [128, 512], "scenario.queues": [4, 70000]},
            "metrics": ["stages.doorbell.p50"]}
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec))
    proc = cli("sweep", str(spec_file), "--out", str(tmp_path / "cli"), "--jobs", "1")
    assert proc.returncode == 1, proc.stderr + proc.stdout  # 1: points failed
    with pytest.warns(gpunvme.SweepPointsFailed, match="2 of 4 points failed"):
        frame = gpunvme.sweep(str(spec_file), out=tmp_path / "py")

    cli_csv = lines(tmp_path / "cli.csv")
    # The CLI's column names: the summary's own (`iops`, not `summary.iops`), the
    # metrics by their paths, the frame's columns the same in the same order.
    header = cli_csv[0].split(",")
    assert "iops" in header and "latency_ns.p99" in header and "stages.doorbell.p50" in header
    assert not [c for c in header if c.startswith(("summary.", "metric."))]
    assert list(frame.columns) == header
    # Cell for cell the same, bar the wall-clock time; the infeasible points' errors
    # name the same override (Python's say which exception it was).
    expected = table(tmp_path / "cli.csv", "wall_time_s")
    error = expected[0].index("error")
    for row in expected[1:]:
        row[error] = "ConfigError: " + row[error] if row[error] else ""
    got = table(tmp_path / "py.csv", "wall_time_s")
    assert got[0] == expected[0]
    # A failed point's row carries its scenario as written (the file's fields, no
    # defaults filled in), where the CLI's has none.
    written = [i for i, c in enumerate(got[0])
               if c.startswith("scenario.") and c not in spec["sweep"]]
    ios = got[0].index("scenario.ios")
    for mine, theirs in zip(got[1:], expected[1:]):
        assert mine[ios] == str(SMALL_IOS)
        if mine[error]:
            assert not any(theirs[i] for i in written)
            mine[:] = [theirs[i] if i in written else c for i, c in enumerate(mine)]
    assert got == expected
    # Rows file: the CLI's fields in its order (no metrics where the point failed),
    # then the build.
    cli_rows = [json.loads(line) for line in lines(tmp_path / "cli.jsonl")]
    py_rows = [json.loads(line) for line in lines(tmp_path / "py.jsonl")]
    assert [list(r) for r in py_rows] == [list(r) + ["build"] for r in cli_rows]
    assert [r["params"] for r in py_rows] == [r["params"] for r in cli_rows]
    assert all(r["build"] == gpunvme.build_fingerprint() for r in py_rows)
    assert list(frame["error"].notna()) == [False, True, False, True]
    assert frame.loc[1, "error"].startswith(
        "ConfigError: --set scenario.queues=70000: $.queues = 70000")


def test_resume_runs_only_the_missing_points_and_drops_a_cut_line(tmp_path, small_config):
    prefix = tmp_path / "runs" / "q"
    first = gpunvme.sweep(small_config, {"scenario.queues": [2, 4]}, out=prefix)
    jsonl = str(prefix) + ".jsonl"
    finished = lines(jsonl)
    assert len(finished) == 2
    # A sweep killed while writing its third row leaves a line cut short.
    with open(jsonl, "a", encoding="utf-8") as f:
        f.write('{"index":2,"key":"{\\"scenario.queues\\":8}","spec_id":"')
    more = gpunvme.sweep(small_config, {"scenario.queues": [2, 4, 8]}, out=prefix,
                         resume=True, keep_results=True)
    # Two points came from the file (no result kept), one ran now.
    assert [r is None for r in more["result"]] == [True, True, False]
    assert list(more["scenario.queues"]) == [2, 4, 8]
    assert more.loc[:1, "iops"].tolist() == first["iops"].tolist()
    assert more.loc[2, "iops"] == gpunvme.run(
        small_config.with_({"scenario.queues": 8}))["summary"]["iops"]
    now = lines(jsonl)
    assert now[:2] == finished and len(now) == 3 and json.loads(now[2])["index"] == 2
    assert len(lines(str(prefix) + ".csv")) == 1 + 3
    # Nothing left to run: the file stays as it is.
    again = gpunvme.sweep(small_config, {"scenario.queues": [2, 4, 8]}, out=prefix,
                          resume=True)
    assert lines(jsonl) == now and again["iops"].tolist() == more["iops"].tolist()


def test_resume_refuses_rows_of_another_configuration_or_build(tmp_path, small_config):
    prefix = str(tmp_path / "q")
    gpunvme.sweep(small_config, {"scenario.queues": [2]}, out=prefix)
    jsonl = prefix + ".jsonl"
    with pytest.raises(gpunvme.ConfigError, match="resume=True") as caught:
        gpunvme.sweep(small_config, {"scenario.queues": [2, 4]}, out=prefix)
    assert caught.value.file == jsonl
    # Another base configuration gives other results for the same params.
    with pytest.raises(gpunvme.ConfigError, match="another base configuration") as caught:
        gpunvme.sweep(small_config.with_({"scenario.ios": SMALL_IOS + 8}),
                      {"scenario.queues": [2, 4]}, out=prefix, resume=True)
    assert caught.value.file == jsonl and caught.value.path == "$[0].spec_id"
    # So may another build.
    row = json.loads(lines(jsonl)[0])
    row["build"] = "0.0+0123456789abcdef"
    with open(jsonl, "w", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    with pytest.raises(gpunvme.ConfigError, match="another gpunvme build") as caught:
        gpunvme.sweep(small_config, {"scenario.queues": [2, 4]}, out=prefix, resume=True)
    assert caught.value.path == "$[0].build" and caught.value.value == '"0.0+0123456789abcdef"'
    assert len(lines(jsonl)) == 1  # nothing was added
    with pytest.raises(gpunvme.ConfigError, match="needs out="):
        gpunvme.sweep(small_config, {"scenario.queues": [2]}, resume=True)


def test_progress_is_a_tqdm_bar_or_lines_when_asked_and_silent_otherwise(
        small_config, capsys, monkeypatch):
    require("tqdm")
    axes = {"scenario.queues": [2, 4]}
    gpunvme.sweep(small_config, axes)  # stderr is no terminal here: nothing
    assert capsys.readouterr().err == ""
    gpunvme.sweep(small_config, axes, progress=True)
    bar = capsys.readouterr().err
    assert "sweep: 100%" in bar and "2/2" in bar
    # Without tqdm in the user's environment: a line a point, no failure.
    monkeypatch.setitem(sys.modules, "tqdm", None)
    gpunvme.sweep(small_config, axes, progress=True)
    assert capsys.readouterr().err.splitlines()[-1].startswith("sweep: 2/2 points, 0 failed")
    gpunvme.sweep(small_config, axes, progress=False)
    assert capsys.readouterr().err == ""


# The README's Python sweep example pasted into a file, as a new user would run it:
# no `if __name__ == "__main__":` guard, jobs=2.
PLAIN_SCRIPT = """\
import gpunvme

cfg = gpunvme.load_config(scenario="randread-4k", overrides={"scenario.ios": %d})
cfg.scenario["threads"] = 4096
cfg.set("topology.nodes.ssd0.profile", "samsung-980-pro")
frame = gpunvme.sweep(cfg, {"scenario.queues": [8, 16, 32], "scenario.strategy":
                            ["warp_batch", "io_agents"]}, jobs=2)
print(len(frame), "rows", int(frame["error"].notna().sum()), "failed",
      int((frame["iops"] > 0).sum()), "with iops")
""" % SMALL_IOS


def test_jobs_2_runs_from_a_plain_script_without_a_main_guard(tmp_path):
    script = tmp_path / "my_sweep.py"
    script.write_text(PLAIN_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6 rows 0 failed 6 with iops"
    assert "bootstrapping" not in proc.stderr


def test_the_readme_sweep_example_is_the_script_above():
    readme = open(os.path.join(gpunvme.source_dir(), "README.md"), encoding="utf-8").read()
    assert ('frame = gpunvme.sweep(cfg, {"scenario.queues": [8, 16, 32], "scenario.strategy":'
            in readme)


def test_a_worker_process_that_dies_loses_only_its_point(tmp_path, small_config, monkeypatch):
    # The first worker started is killed (SIGKILL) before it reads its point; the
    # other worker runs the rest, and so does the one started in its place.
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\nif mkdir "%s" 2>/dev/null; then kill -9 $$; fi\n'
                      'exec "%s" "$@"\n' % (tmp_path / "killed", sys.executable))
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    with pytest.warns(gpunvme.SweepPointsFailed, match="1 of 3 points failed"):
        frame = gpunvme.sweep(small_config, {"scenario.queues": [2, 4, 8]}, jobs=2)
    failed = frame[frame["error"].notna()]
    assert list(failed["error"]) == ["point process killed by signal 9"]
    assert (frame[frame["error"].isna()]["iops"] > 0).all()
