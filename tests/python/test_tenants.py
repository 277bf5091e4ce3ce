"""Multi-tenant runs from Python: per-tenant figures as pandas frames, the fairness summary,
and a tenant's configuration error raised with its path inside the file."""

import pytest

import gpunvme


def small_tenants():
    cfg = gpunvme.load_config(scenario="tenants-gpu-and-host")
    cfg.set("scenario.tenants.0.scenario.ios", 400)
    cfg.set("scenario.tenants.1.scenario.ios", 1600)
    return cfg


def test_tenants_frame_has_a_row_per_tenant_with_its_figures():
    result = gpunvme.run(small_tenants())
    frame = result.tenants_frame()
    assert list(frame.index) == ["db", "inference"]
    assert list(frame["path"]) == ["gds", "gpu_initiated"]
    assert list(frame["ios"]) == [400, 1600]
    assert (frame["latency_ns.p99"] > 0).all()
    # The rate-limited tenant reports its token bucket's holds.
    assert frame.loc["inference", "throttle.wait_ns.count"] == 1600
    stages = result.tenant_stages_frame()
    assert set(stages.index.get_level_values("tenant")) == {"db", "inference"}
    assert ("inference", "end_to_end") in stages.index
    fairness = result.fairness()
    x = frame["iops"] / frame["weight"]
    assert fairness["jain_index"] == pytest.approx(x.sum() ** 2 / (2 * (x ** 2).sum()))
    assert fairness["max_p99_ns"] == frame["latency_ns.p99"].max()
    assert result["summary"]["ios"] == 2000


def test_a_tenants_bad_field_names_its_path_in_the_file():
    cfg = small_tenants()
    cfg.set("scenario.tenants.1.scenario.iodepth", 0)
    with pytest.raises(gpunvme.ConfigError) as error:
        cfg.validate()
    assert error.value.path == "$.tenants[1].scenario.iodepth"


def test_a_single_workload_result_has_no_tenants():
    result = gpunvme.run(gpunvme.load_config(overrides={"scenario.ios": 200}))
    assert result.tenants_frame().empty
    assert result.fairness() == {}
