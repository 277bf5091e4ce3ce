"""Latency budgets: every shipped budget holds; failures are reported readably."""

import glob
import json
import os

import pytest

import gpunvme
from conftest import SMALL_IOS, SOURCE_DIR

SCENARIO = os.path.join(SOURCE_DIR, "scenarios", "randread-4k.json")


@pytest.mark.parametrize("budget_file", gpunvme.budgets.files(),
                         ids=lambda f: os.path.basename(f)[:-5])
def test_shipped_budget_holds(budget_file):
    report = gpunvme.budgets.check(budget_file)
    if not report.ok:
        pytest.fail(report.message() + "\nIf the change is intended, re-baseline: "
                    "gpunvme budgets --update " + budget_file, pytrace=False)


def kind_and_path(scenario):
    return scenario.get("kind", "microbenchmark"), scenario.get("path", "gpu_initiated")


def test_budgets_cover_every_kind_and_path_of_the_shipped_scenarios():
    shipped = set()
    for f in glob.glob(os.path.join(SOURCE_DIR, "scenarios", "*.json")):
        with open(f) as doc:
            shipped.add(kind_and_path(json.load(doc)))
    covered = set()
    for f in gpunvme.budgets.files():
        budget = gpunvme.budgets.load(f)
        base = gpunvme.load_config(scenario=os.path.join(os.path.dirname(f), budget["scenario"]),
                                   overrides=budget.get("set", []))
        covered.add(kind_and_path(base.scenario))
    assert shipped - covered == set(), "scenario kinds/paths without a budget"
    assert {p for _, p in covered} >= {"gpu_initiated", "gds", "bounce"}
    assert {k for k, _ in covered} >= {"microbenchmark", "kv_cache", "graph", "gather"}


def write_budget(tmp_path, **fields):
    doc = {"schema": "gpunvme.budget/1", "scenario": SCENARIO,
           "set": ["scenario.ios=%d" % SMALL_IOS]}
    doc.update(fields)
    path = tmp_path / "budget.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture(scope="module")
def measured():
    """The summary and stages of the small run the synthetic budgets use."""
    return gpunvme.load_config(overrides={"scenario.ios": SMALL_IOS}).run()


def test_exceeded_figures_are_reported_with_how_much(tmp_path, measured):
    p99 = measured["stages"]["end_to_end"]["p99"]
    iops = measured["summary"]["iops"]
    budget = write_budget(tmp_path, tolerance={"relative": 0.1, "absolute_ns": 0},
                          latency_ns={"end_to_end": {"p50": 1e9, "p99": p99 / 2}},
                          floors={"summary.iops": iops * 2})
    report = gpunvme.budgets.check(budget)
    assert not report.ok
    failed = {c["metric"]: c for c in report.failures()}
    assert set(failed) == {"stages.end_to_end.p99", "summary.iops"}
    assert failed["stages.end_to_end.p99"]["over_budget"] == pytest.approx(1.0)
    assert failed["summary.iops"]["over_budget"] == pytest.approx(0.5)
    assert failed["summary.iops"]["limit"] == pytest.approx(iops * 2 * 0.9)
    text = report.message()
    assert "2 of 3 checks out of budget" in text
    row = next(line for line in text.splitlines() if "stages.end_to_end.p99" in line)
    assert "EXCEEDED" in row and "+100.0 %" in row
    assert "stages.end_to_end.p50" not in report.failures_table
    assert "stages.end_to_end.p50" in report.table
    assert len(report.frame()) == 3


def test_tolerance_relative_and_absolute(tmp_path, measured):
    p99 = measured["stages"]["end_to_end"]["p99"]
    doorbell = measured["stages"]["doorbell"]["p50"]

    def verdicts(tolerance, ceiling, stage="end_to_end", key="p99"):
        budget = write_budget(tmp_path, tolerance=tolerance,
                              latency_ns={stage: {key: ceiling}})
        return gpunvme.budgets.check(budget).ok

    assert verdicts({"relative": 0.1, "absolute_ns": 0}, p99 / 1.05)
    assert not verdicts({"relative": 0.1, "absolute_ns": 0}, p99 / 1.2)
    # A stage of a few hundred ns: the absolute slack decides.
    assert verdicts({"relative": 0.0, "absolute_ns": 25}, doorbell - 20, "doorbell", "p50")
    assert not verdicts({"relative": 0.0, "absolute_ns": 25}, doorbell - 30, "doorbell", "p50")


def test_missing_figures_fail_rather_than_pass(tmp_path):
    budget = write_budget(tmp_path, latency_ns={"no_such_stage": {"p99": 1}},
                          floors={"summary.no_such_figure": 1})
    report = gpunvme.budgets.check(budget)
    assert not report.ok and len(report.failures()) == 2
    assert "MISSING" in report.failures_table


def test_update_rebaselines_and_keeps_the_settings(tmp_path, measured):
    budget = write_budget(tmp_path, seed=1, tolerance={"relative": 0.05, "absolute_ns": 10},
                          latency_ns={"end_to_end": {"p50": 1, "p999": 1}})
    assert not gpunvme.budgets.check(budget).ok
    doc = gpunvme.budgets.update(budget)
    assert doc["set"] == ["scenario.ios=%d" % SMALL_IOS] and doc["seed"] == 1
    assert doc["tolerance"] == {"relative": 0.05, "absolute_ns": 10}
    # The file's percentile keys, now for every stage with samples.
    assert set(doc["latency_ns"]["end_to_end"]) == {"p50", "p999"}
    assert doc["latency_ns"]["end_to_end"]["p50"] == pytest.approx(
        measured["stages"]["end_to_end"]["p50"], abs=0.05)
    assert "doorbell" in doc["latency_ns"]
    assert doc["floors"]["summary.iops"] == pytest.approx(measured["summary"]["iops"],
                                                          rel=1e-3)
    assert json.loads(open(budget).read()) == doc
    assert gpunvme.budgets.check(budget).ok


@pytest.mark.parametrize("fields, path, problem", [
    ({"floor": {}}, "$.floor", "did you mean 'floors'"),
    ({"latency_ns": {"end_to_end": {"p99": -1}}}, "$.latency_ns.end_to_end.p99", ">= 0"),
    ({"tolerance": {"relative": 1.5}}, "$.tolerance.relative", "fraction"),
    ({"schema": "v0"}, "$.schema", "gpunvme.budget/1"),
    ({"set": ["scenario.iodepht=2"]}, "", ""),
])
def test_bad_budget_files_are_config_errors(tmp_path, fields, path, problem):
    budget = write_budget(tmp_path, **fields)
    with pytest.raises(gpunvme.ConfigError) as caught:
        gpunvme.budgets.check(budget)
    if path:
        assert caught.value.file == budget and caught.value.path == path
        assert problem in caught.value.problem


def test_cli_budgets_exit_codes_and_update(tmp_path, cli, measured):
    p99 = measured["stages"]["end_to_end"]["p99"]
    budget = write_budget(tmp_path, latency_ns={"end_to_end": {"p99": p99 / 3}})
    proc = cli("budgets", budget)
    assert proc.returncode == 1
    assert "stages.end_to_end.p99" in proc.stdout and "EXCEEDED" in proc.stdout
    assert "+200.0 %" in proc.stdout and "gpunvme budgets --update" in proc.stdout
    assert cli("budgets", "--update", budget).returncode == 0
    proc = cli("budgets", "--verbose", budget)
    assert proc.returncode == 0 and "ok" in proc.stdout
    assert "stages.doorbell.p99" in proc.stdout  # the file's percentile keys, every stage
    (tmp_path / "bad.json").write_text('{"schema": "gpunvme.budget/1", "scenario": 3}')
    proc = cli("budgets", str(tmp_path / "bad.json"))
    assert proc.returncode == 2 and "$.scenario" in proc.stderr
