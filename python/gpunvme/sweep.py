"""Sweeps: many runs over config paths, in this process, local processes or Dask.

A sweep is a base configuration plus a ``sweep`` object, the one that
``gpunvme sweep SPEC.json`` reads (sim/frontend/sweep/sweep_spec.h; the expansion is the
same C++ code, so points and their keys match the command line's)::

    {"scenario.threads": [1024, 4096],                             # a list of values
     "scenario.queues": {"start": 8, "stop": 32, "step": 8},       # stop included
     "topology.nodes.cpu0.cores": {"start": 1, "stop": 16, "factor": 2},   # geometric
     "zip": [{"scenario.bs": [4096, 8192], "scenario.ios": [4000, 2000]}]}

Each key other than ``zip`` is an axis; each object of ``zip`` is one axis whose
lists advance together. Points are the cartesian product of the axes, the first
varying slowest; ``seed`` may be swept like any path. A full spec adds the base
configuration: ``{"topology": FILE, "scenario": FILE, "seed": N, "set": [...],
"sweep": {...}, "metrics": [RESULT.PATH, ...]}``.
"""

import json
import os
import sys
import time

from . import _native
from .config import PYTHON_ORIGIN, Config, load_config, to_json_text
from .errors import ConfigError
from .results import Result, flatten, lookup, run


def _expanded(spec, origin):
    """The native parse and expansion of a spec dict (or file path when ``spec`` is None)."""
    if spec is None:
        return json.loads(_native.sweep_load_spec(origin))
    return json.loads(_native.sweep_spec(to_json_text(spec), origin))


def expand(axes, origin=PYTHON_ORIGIN):
    """The points of a ``sweep`` object: a list of dicts, path → value, in run order.

    Raises :class:`gpunvme.ConfigError` (naming ``origin`` and the JSON path) for a
    malformed object, a value repeated within one path, or more than 10,000,000
    points; whether each path exists is checked when the point runs.
    """
    return [p["params"] for p in _expanded({"sweep": axes}, origin)["points"]]


def load_spec(spec):
    """A sweep spec (file path or dict) as (base :class:`Config`, points, metrics).

    ``points`` is a list of dicts {index, key, params, seed} as ``gpunvme sweep``
    expands them; file names in a spec file are relative to its folder first.
    """
    if isinstance(spec, dict):
        parsed = _expanded(spec, PYTHON_ORIGIN)
    else:
        parsed = _expanded(None, os.fspath(spec))
    base = load_config(parsed["topology_file"] or None, parsed["scenario_file"] or None,
                       parsed["seed"], parsed["set"])
    return base, parsed["points"], parsed["metrics"]


def _plan(base, axes, metrics):
    """(base Config, points, metrics) for sweep()'s argument forms."""
    if base is None:
        base = load_config()
    if isinstance(base, dict) and "topology_file" in base and "sweep" not in base:
        base = Config.from_dict(base)
    if isinstance(base, Config):
        if axes is None:
            raise ConfigError(PYTHON_ORIGIN, "$.sweep", "", "a Config needs axes to sweep")
        points = _expanded({"sweep": axes}, PYTHON_ORIGIN)["points"]
        return base, points, list(metrics or [])
    if axes is not None:
        spec = dict(base) if isinstance(base, dict) else _read_spec(base)
        spec["sweep"] = dict(spec.get("sweep", {}), **axes)
        config, points, spec_metrics = load_spec(spec if isinstance(base, dict) else
                                                 _anchor(spec, base))
    else:
        config, points, spec_metrics = load_spec(base)
    return config, points, spec_metrics + [m for m in (metrics or []) if m not in spec_metrics]


def _read_spec(file):
    try:
        with open(file) as f:
            return json.load(f)
    except OSError as error:
        raise ConfigError(os.fspath(file), "", "", "cannot open sweep spec (%s)"
                          % error.strerror) from None
    except ValueError as error:
        raise ConfigError(os.fspath(file), "", "", "not valid JSON: %s" % error) from None


def _anchor(spec, file):
    """A spec read from ``file`` with its file names made relative to the working folder."""
    folder = os.path.dirname(os.fspath(file))
    for key in ("topology", "scenario"):
        name = spec.get(key)
        if isinstance(name, str) and not os.path.isabs(name):
            beside = os.path.join(folder, name)
            if os.path.exists(beside):
                spec[key] = beside
    return spec


def points(base=None, axes=None):
    """The sweep's points as (params, :class:`Config`) pairs; arguments as :func:`sweep`.

    A point whose path is bad raises here; :func:`sweep` records such a point's error
    in its row and goes on.
    """
    config, plan, _ = _plan(base, axes, None)
    return [(p["params"], config.with_(p["params"])) for p in plan]


def run_point(task):
    """Run one sweep point (the function shipped to processes and Dask workers).

    ``task`` holds ``index``, ``key``, ``base`` (a :meth:`Config.to_dict`), ``params``
    (path → value), ``metrics`` (extra result paths) and ``keep_result``. Returns the
    row: ``index``, ``key``, the params, ``seed``, the resolved scenario's fields
    (``scenario.FIELD``), the flattened summary, the metrics
    and ``error`` (None, or the message of whatever failed: the sweep goes on).
    """
    row = {"index": task["index"], "key": task["key"]}
    row.update(task["params"])
    config = Config.from_dict(task["base"])
    try:
        for path, value in task["params"].items():
            config.set(path, value)
        row["seed"] = config.seed
        # Every row carries its full scenario, swept or not, as the CLI's rows do:
        # as written when the point fails, as resolved (defaults filled) when it runs.
        for field, value in config.scenario.items():
            row.setdefault("scenario." + field, value)
        result = run(config)
        for field, value in result.get("config", {}).get("scenario", {}).items():
            if field not in task["params"]:
                row["scenario." + field] = value
        row.update(flatten(result.get("summary", {})))
        for path in task.get("metrics", []):
            row[path] = lookup(result, path)
        row["error"] = None
        if task.get("keep_result"):
            row["result"] = dict(result)
    except ConfigError as error:
        row["error"] = "ConfigError: %s" % error
    except Exception as error:  # a failing point is recorded, the sweep goes on
        row["error"] = "%s: %s" % (type(error).__name__, error)
    if task.get("record_worker"):
        try:
            from distributed import get_worker

            row["worker"] = get_worker().address
        except (ImportError, ValueError):
            row["worker"] = None
    return row


class _Progress:
    def __init__(self, total, enabled):
        self.total, self.enabled = total, enabled
        self.done = self.failed = 0
        self.start = time.monotonic()

    def update(self, row):
        self.done += 1
        self.failed += row.get("error") is not None
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        print("sweep: %d/%d points, %d failed, %.1f s elapsed, ETA %.1f s"
              % (self.done, self.total, self.failed, elapsed, eta), file=sys.stderr, flush=True)


def _run_local(tasks, jobs, progress):
    if jobs <= 1:
        for task in tasks:
            row = run_point(task)
            progress.update(row)
            yield row
        return
    import concurrent.futures
    import multiprocessing

    # spawn: a fresh interpreter per worker, never a fork of a process whose
    # threads (a notebook's, the GIL-free simulation's) hold locks.
    with concurrent.futures.ProcessPoolExecutor(
            max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for row in pool.map(run_point, tasks):
            progress.update(row)
            yield row


def _run_dask(tasks, scheduler, progress, timeout):
    import distributed

    own = not isinstance(scheduler, distributed.Client)
    client = (distributed.Client(scheduler, timeout=timeout or "30s", set_as_default=False)
              if own else scheduler)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        futures = client.map(run_point, tasks, pure=False)
        task_of = dict(zip(futures, tasks))
        pending = set(futures)
        while pending:
            remaining = None if deadline is None else deadline - time.monotonic()
            try:
                if remaining is not None and remaining <= 0:
                    raise TimeoutError()
                with client.as_current():
                    done, pending = distributed.wait(list(pending), timeout=remaining,
                                                     return_when="FIRST_COMPLETED")
            except TimeoutError:
                client.cancel(list(pending))
                raise TimeoutError("sweep: %d of %d points done after %s s on %s"
                                   % (progress.done, progress.total, timeout,
                                      client.scheduler.address)) from None
            for future in done:
                try:
                    row = future.result()
                except Exception as error:  # the worker died running it, retries exhausted
                    task = task_of[future]
                    row = {"index": task["index"], "key": task["key"], **task["params"],
                           "error": "%s: %s" % (type(error).__name__, error)}
                progress.update(row)
                yield row
    finally:
        if own:
            client.close()


def sweep(base=None, axes=None, *, scheduler=None, jobs=1, metrics=None, keep_results=False,
          progress=False, timeout=None):
    """Run every point of a sweep; returns a pandas DataFrame, one row per point.

    Args:
        base: a :class:`Config` (then ``axes`` is required), a sweep spec dict or the
            path of a spec file (the JSON ``gpunvme sweep`` takes), or None for the
            shipped defaults.
        axes: the ``sweep`` object (see the module docstring); with a spec, these axes
            are added to (and replace same-named ones of) the spec's.
        scheduler: None to run here; a Dask scheduler address (``"tcp://host:8786"``)
            or a ``distributed.Client`` to fan the points out to its workers, which
            must be able to import gpunvme (same build, ``PYTHONPATH``).
        jobs: local worker processes when no scheduler is given (1 = this process).
        metrics: extra dotted result paths to add as columns
            (``"stages.doorbell.p99"``), after a spec's own ``metrics``.
        keep_results: add a ``result`` column holding each point's full :class:`Result`.
        progress: print one progress line per finished point (with ETA) to stderr.
        timeout: seconds a distributed sweep may take (also the connect timeout).

    Returns:
        DataFrame sorted by ``index``: ``index``, ``key`` (the point's canonical key,
        as in ``gpunvme sweep`` output), the swept paths as columns (named by path),
        ``seed``, every resolved scenario field (``scenario.FIELD``), the flattened summary (``iops``, ``latency_ns.p99``, ...), the
        metrics, ``error`` (None, or why the point failed: a failing point does not
        stop the sweep) and, for distributed sweeps, ``worker``.
    """
    import pandas as pd

    config, plan, metric_paths = _plan(base, axes, metrics)
    base_dict = config.to_dict()
    to_json_text(base_dict)  # reject non-JSON values before shipping anything
    tasks = [{"index": p["index"], "key": p["key"], "base": base_dict, "params": p["params"],
              "metrics": metric_paths, "keep_result": keep_results,
              "record_worker": scheduler is not None}
             for p in plan]
    tracker = _Progress(len(tasks), progress)
    if scheduler is not None:
        rows = list(_run_dask(tasks, scheduler, tracker, timeout))
    else:
        rows = list(_run_local(tasks, jobs, tracker))
    rows.sort(key=lambda r: r["index"])
    frame = pd.DataFrame(rows)
    if keep_results and "result" in frame:
        frame["result"] = [Result(r) if isinstance(r, dict) else r for r in frame["result"]]
    return frame
