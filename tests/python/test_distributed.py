"""Distributed sweeps on a real Dask scheduler with two worker processes."""

import faulthandler
import time

import pytest

import gpunvme
from conftest import SMALL_IOS, require

distributed = require("distributed")

# Bound on this file's tests: starting the cluster, the sweeps, shutting down.
DEADLINE_S = 120


@pytest.fixture(scope="module")
def cluster():
    """A scheduler and two single-threaded worker processes on 127.0.0.1.

    The workers import gpunvme from the same build through the PYTHONPATH they
    inherit. A watchdog ends the test run (with tracebacks) if anything hangs.
    """
    faulthandler.dump_traceback_later(DEADLINE_S, exit=True)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None,
                                      silence_logs=40) as c:
            with distributed.Client(c.scheduler_address, set_as_default=False) as client:
                client.wait_for_workers(2, timeout=60)
            yield c
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_distributed_sweep_matches_the_local_one_and_uses_both_workers(cluster):
    start = time.monotonic()
    base = gpunvme.load_config(overrides={"scenario.ios": SMALL_IOS})
    axes = {"scenario.queues": [2, 4, 8, 16], "scenario.threads": [256, 1024]}
    remote = gpunvme.sweep(base, axes, scheduler=cluster.scheduler_address,
                           timeout=DEADLINE_S)
    local = gpunvme.sweep(base, axes)
    columns = ["index", "key", "scenario.queues", "scenario.threads", "iops",
               "latency_ns.p99", "events"]
    assert len(remote) == 8
    assert remote["error"].isna().all()
    assert remote[columns].equals(local[columns])
    # The points were fanned out: both workers ran some.
    assert set(remote["worker"]) == set(cluster.scheduler_info["workers"])
    assert time.monotonic() - start < DEADLINE_S


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(cluster):
    base = gpunvme.load_config(overrides={"scenario.ios": SMALL_IOS})
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
        with pytest.warns(gpunvme.SweepPointsFailed, match="1 of 3 points failed"):
            frame = gpunvme.sweep(base, {"scenario.iodepth": [1, 0, 2]}, scheduler=client,
                                  timeout=DEADLINE_S)
    assert list(frame["error"].notna()) == [False, True, False]
    assert "ConfigError" in frame.loc[1, "error"]


def test_a_sweep_past_its_time_limit_stops(cluster):
    # Each point takes seconds (a few hundred thousand simulated I/Os per wall second at
    # most), far past the 0.5 s limit on any machine.
    base = gpunvme.load_config(overrides={"scenario.ios": 1000000})
    with pytest.raises(TimeoutError):
        gpunvme.sweep(base, {"seed": [1, 2]}, scheduler=cluster.scheduler_address,
                      timeout=0.5)


def _set_version(version):
    """Gives this process's gpunvme another version (None: the one it had)."""
    import gpunvme as module

    if version is None:
        module.__version__ = module._version_before_test
        if module.__version__ is None:
            del module.__version__
        del module._version_before_test
    else:
        module._version_before_test = getattr(module, "__version__", None)
        module.__version__ = version
    return module.build_fingerprint()


def test_workers_of_another_build_are_refused_by_name(cluster):
    base = gpunvme.load_config(overrides={"scenario.ios": SMALL_IOS})
    workers = sorted(cluster.scheduler_info["workers"])
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
        other = client.run(_set_version, "0.0-other", workers=[workers[1]])[workers[1]]
        try:
            with pytest.raises(gpunvme.WorkerBuildError) as caught:
                gpunvme.sweep(base, {"scenario.queues": [2, 4]}, scheduler=client,
                              timeout=DEADLINE_S)
        finally:
            client.run(_set_version, None, workers=[workers[1]])
    message = str(caught.value)
    assert "1 of 2 Dask workers" in message
    assert "%s runs %s" % (workers[1], other) in message and workers[0] not in message
    assert other.startswith("0.0-other+") and gpunvme.build_fingerprint() in message


def test_a_distributed_sweep_writes_its_rows_and_resumes(cluster, tmp_path):
    base = gpunvme.load_config(overrides={"scenario.ios": SMALL_IOS})
    prefix = str(tmp_path / "d")
    first = gpunvme.sweep(base, {"scenario.queues": [2, 4]}, scheduler=cluster.scheduler_address,
                          timeout=DEADLINE_S, out=prefix)
    with open(prefix + ".jsonl") as f:
        rows = f.read().splitlines()
    assert len(rows) == 2
    more = gpunvme.sweep(base, {"scenario.queues": [2, 4, 8]},
                         scheduler=cluster.scheduler_address, timeout=DEADLINE_S, out=prefix,
                         resume=True)
    with open(prefix + ".jsonl") as f:
        now = f.read().splitlines()
    assert now[:2] == rows and len(now) == 3
    assert more["iops"].tolist()[:2] == first["iops"].tolist()
    assert list(more["scenario.queues"]) == [2, 4, 8] and more["error"].isna().all()
