"""The module: configs as dicts, validation, runs, results, errors as the CLI's."""

import json
import os
import threading

import pytest

import gpunvme
from conftest import SMALL_IOS, SOURCE_DIR, require


def strip_wall_clock(result):
    result = json.loads(json.dumps(result))
    for key in gpunvme._native.wall_clock_fields():
        result["summary"].pop(key, None)
    return result


def test_load_config_reads_the_shipped_defaults():
    cfg = gpunvme.load_config()
    with open(os.path.join(SOURCE_DIR, "scenarios", "randread-4k.json")) as f:
        assert cfg.scenario == json.load(f)
    with open(os.path.join(SOURCE_DIR, "configs", "topologies", "default.json")) as f:
        assert cfg.topology == json.load(f)
    assert cfg.seed == 1
    assert cfg.scenario_file.endswith("scenarios/randread-4k.json")


def test_shipped_names_and_dicts_load_like_files():
    by_name = gpunvme.load_config(topology="default", scenario="randread-4k")
    assert by_name == gpunvme.load_config()
    as_dict = gpunvme.load_config(topology=dict(by_name.topology),
                                  scenario=dict(by_name.scenario))
    assert as_dict.topology == by_name.topology and as_dict.topology_file == "<python>"


def test_set_changes_fields_like_the_cli(small_config):
    cfg = small_config.with_({"scenario.threads": 256, "topology.nodes.ssd0.profile":
                              "samsung-980-pro", "seed": 7})
    assert cfg.scenario["threads"] == 256
    assert cfg.seed == 7
    ssd0 = next(n for n in cfg.topology["nodes"] if n["id"] == "ssd0")
    assert ssd0["profile"] == "samsung-980-pro"
    # with_ copies; the original is unchanged.
    assert small_config.scenario["threads"] == 1024 and small_config.seed == 1
    # The text form and the (path, value) form agree.
    assert small_config.copy().set("scenario.queues=4") == small_config.copy().set(
        "scenario.queues", 4)


def test_validate_returns_the_resolved_configuration(small_config):
    resolved = small_config.validate()
    assert resolved["scenario"]["ios"] == SMALL_IOS
    ssd = next(n for n in resolved["topology"]["nodes"] if n["id"] == "ssd0")
    assert "mqes" in ssd["params"]  # defaults and profile filled in


def test_run_matches_the_cli_byte_for_byte(small_config, cli, tmp_path):
    result = gpunvme.run(small_config)
    out = tmp_path / "result.json"
    proc = cli("run", "--set", "scenario.ios=%d" % SMALL_IOS, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        from_cli = json.load(f)
    assert strip_wall_clock(result) == strip_wall_clock(from_cli)
    assert result["summary"]["ios"] == SMALL_IOS
    assert "KIOPS" in result.table()


def test_fast_mode_run_length_matches_the_cli(cli, tmp_path):
    sets = {"scenario.fidelity": "fast", "scenario.ios": 60000, "scenario.threads": 256,
            "scenario.strategy": "all_threads"}
    result = gpunvme.run(gpunvme.load_config().with_(sets))
    out = tmp_path / "fast.json"
    args = ["run", "--out", str(out)]
    for key, value in sets.items():
        args += ["--set", "%s=%s" % (key, value)]
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        from_cli = json.load(f)
    assert strip_wall_clock(result) == strip_wall_clock(from_cli)
    run_length = result["summary"]["run_length"]
    assert run_length["applied"] and run_length["requested_ios"] == 60000
    assert result["summary"]["submitted"] == run_length["simulated_ios"] < 60000
    # The run ends at the stop: the I/Os then in flight are counted, not completed.
    summary = result["summary"]
    assert run_length["drain"] == "not simulated"
    completed = summary["ios"] + summary["errors"]
    assert run_length["in_flight_at_stop"] == summary["submitted"] - completed
    assert run_length["in_flight_at_stop"] > 0
    assert "run length: 60000 requested I/Os answered" in result.table()


def test_runs_are_deterministic_and_seeds_matter(small_config):
    a = strip_wall_clock(gpunvme.run(small_config))
    b = strip_wall_clock(gpunvme.run(small_config.copy()))
    c = strip_wall_clock(gpunvme.run(small_config.with_({"seed": 2})))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["stages"] != c["stages"]


def test_results_as_dataframes(small_config):
    result = gpunvme.run(small_config)
    stages = result.stages_frame()
    assert list(stages.columns[:4]) == ["count", "mean", "min", "p50"]
    assert (stages["count"] == SMALL_IOS).all()
    assert stages.loc["end_to_end", "p99"] == result["stages"]["end_to_end"]["p99"]
    assert (stages["p50"] <= stages["p99"]).all()
    assert list(result.ssds_frame().index) == ["ssd0"]
    assert len(result.links_frame()) > 0
    assert result.flat()["latency_ns.p99"] == result["summary"]["latency_ns"]["p99"]
    frame = gpunvme.results_frame([result, gpunvme.run(small_config.with_({"seed": 3}))])
    assert list(frame["seed"]) == [1, 3]
    assert frame.loc[0, "iops"] == result["summary"]["iops"]


def test_config_errors_carry_the_cli_fields_and_message(small_config, cli):
    bad = small_config.with_({"scenario.iodepth": 0})
    with pytest.raises(gpunvme.ConfigError) as caught:
        bad.validate()
    e = caught.value
    # Blamed on the override that set the value, not on the scenario file it replaced
    # a value of, as the CLI blames --set.
    assert e.file == "--set scenario.iodepth=0"
    assert e.path == "$.iodepth"
    assert e.value == "0"
    assert "allowed" in e.problem or "range" in e.problem
    proc = cli("check", "--set", "scenario.iodepth=0")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: " + str(e)
    # The same error from run().
    with pytest.raises(gpunvme.ConfigError):
        gpunvme.run(bad)
    assert isinstance(e, ValueError)


def test_misspelt_keys_and_bad_set_paths(small_config, cli):
    cfg = small_config.copy()
    cfg.scenario["iodepht"] = 4
    with pytest.raises(gpunvme.ConfigError) as caught:
        cfg.validate()
    assert caught.value.path == "$.iodepht" and "iodepth" in caught.value.problem
    with pytest.raises(gpunvme.ConfigError) as caught:
        small_config.copy().set("topology.nodes.ssd9.mqes", 8)
    proc = cli("check", "--set", "topology.nodes.ssd9.mqes=8")
    assert proc.returncode == 2 and proc.stderr.strip() == "error: " + str(caught.value)
    assert caught.value.file == "--set topology.nodes.ssd9.mqes=8"


def test_python_values_that_are_not_json_are_config_errors(small_config):
    with pytest.raises(gpunvme.ConfigError) as caught:
        small_config.copy().set("scenario.span_gib", float("nan"))
    assert "finite" in caught.value.problem
    cfg = small_config.copy()
    cfg.scenario["threads"] = object()
    with pytest.raises(gpunvme.ConfigError) as caught:
        cfg.validate()
    assert caught.value.path == "$.scenario.threads"
    with pytest.raises(gpunvme.ConfigError) as caught:
        small_config.with_({"seed": -1})
    assert caught.value.path == "seed"
    with pytest.raises(gpunvme.ConfigError):
        gpunvme.load_config(scenario="no-such-scenario")


def test_numpy_values_are_accepted(small_config):
    np = require("numpy")
    cfg = small_config.with_({"scenario.threads": np.int64(128)})
    assert cfg.scenario["threads"] == 128 and type(cfg.scenario["threads"]) is int


def test_config_errors_pickle_with_their_fields():
    import pickle

    e = gpunvme.ConfigError("f.json", "$.a", "1", "bad")
    back = pickle.loads(pickle.dumps(e))
    assert (back.file, back.path, back.value, back.problem, str(back)) == (
        "f.json", "$.a", "1", "bad", "f.json: $.a = 1: bad")


def test_describe_lists_kinds_and_sources():
    kinds = gpunvme.describe()
    assert {"gpu", "nvme_ssd", "scenario", "link"} <= set(kinds)
    assert {"network_link", "network_switch", "rdma_nic", "nvmf_target", "dpu"} <= set(kinds)
    threads = next(p for p in gpunvme.describe("scenario")["params"] if p["name"] == "threads")
    assert threads["source"] and threads["min"] == 1
    with pytest.raises(gpunvme.ConfigError):
        gpunvme.describe("warp_drive")


def test_runs_release_the_gil(small_config):
    # A Python thread keeps running while a simulation runs in another one.
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        before = len(ticks)
        gpunvme.run(small_config.with_({"scenario.ios": 4 * SMALL_IOS}))
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
    assert during > 5


def test_public_functions_have_docstrings():
    for name in gpunvme.__all__:
        obj = getattr(gpunvme, name)
        assert obj.__doc__ and obj.__doc__.strip(), name
        if isinstance(obj, type):
            for attr, member in vars(obj).items():
                if callable(member) and not attr.startswith("_"):
                    assert member.__doc__, "%s.%s" % (name, attr)
    for name in ("check", "check_all", "update", "files", "load"):
        assert getattr(gpunvme.budgets, name).__doc__


def test_with_ssds_clones_the_drive_and_its_link(small_config):
    topo = gpunvme.with_ssds(small_config.topology, 4)
    ids = [n["id"] for n in topo["nodes"] if n["kind"] == "nvme_ssd"]
    assert ids == ["ssd0", "ssd1", "ssd2", "ssd3"]
    assert sum(1 for lk in topo["links"] if lk["from"] == "sw0") == 5  # GPU and 4 SSDs
    assert len(small_config.topology["nodes"]) == 6  # the original is untouched
    cfg = small_config.copy()
    cfg.topology = topo
    cfg.set("scenario.ssds", ids)
    result = gpunvme.run(cfg)
    assert sorted(result["ssds"]) == ids
    assert all(s["commands"] > 0 for s in result["ssds"].values())


def test_version_comes_from_the_cmake_project_and_is_in_results(small_config):
    import re
    with open(os.path.join(SOURCE_DIR, "CMakeLists.txt")) as f:
        version = re.search(r"project\(gpunvme VERSION ([0-9.]+)", f.read()).group(1)
    assert gpunvme.__version__ == version
    info = gpunvme.build_info()
    assert info["version"] == version and info["commit"]
    assert gpunvme.run(small_config)["gpunvme"] == info


def test_data_dir_holds_the_shipped_data_from_the_build_tree():
    data = gpunvme.data_dir()
    assert data == gpunvme.source_dir()
    assert os.path.samefile(os.path.join(data, "scenarios", "randread-4k.json"),
                            os.path.join(SOURCE_DIR, "scenarios", "randread-4k.json"))
