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

import hashlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
import warnings

from . import _native
from .config import PYTHON_ORIGIN, Config, load_config, to_json_text
from .errors import ConfigError
from .results import Result, lookup, run


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
    """(base Config, points, metrics, shared, refine) for sweep()'s argument forms.

    ``shared`` holds what rows record of the base as ``gpunvme sweep`` does: ``set``
    (a spec's base assignments), ``topology`` and ``scenario_file`` (a spec's file
    names, "" for the shipped defaults; a Config's origins). ``refine`` is None, or a
    spec's ``{"file", "metric", "goal", "keep"}``.
    """
    if base is None:
        base = load_config()
    if isinstance(base, dict) and "topology_file" in base and "sweep" not in base:
        base = Config.from_dict(base)
    if isinstance(base, Config):
        if axes is None:
            raise ConfigError(PYTHON_ORIGIN, "$.sweep", "", "a Config needs axes to sweep")
        points = _expanded({"sweep": axes}, PYTHON_ORIGIN)["points"]
        shared = {"set": [], "topology": base.topology_file, "scenario_file": base.scenario_file}
        return base, points, list(metrics or []), shared, None
    if axes is not None:
        spec = dict(base) if isinstance(base, dict) else _read_spec(base)
        spec["sweep"] = dict(spec.get("sweep", {}), **axes)
        spec = spec if isinstance(base, dict) else _anchor(spec, base)
    else:
        spec = base
    parsed = (_expanded(spec, PYTHON_ORIGIN) if isinstance(spec, dict)
              else _expanded(None, os.fspath(spec)))
    config = load_config(parsed["topology_file"] or None, parsed["scenario_file"] or None,
                         parsed["seed"], parsed["set"])
    spec_metrics = parsed["metrics"]
    shared = {"set": parsed["set"], "topology": parsed["topology_file"],
              "scenario_file": parsed["scenario_file"]}
    refine = parsed.get("refine")
    if refine is not None:
        refine = dict(refine, file=parsed["file"])
    return (config, parsed["points"],
            spec_metrics + [m for m in (metrics or []) if m not in spec_metrics], shared, refine)


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
    config, plan, _, _, _ = _plan(base, axes, None)
    return [(p["params"], config.with_(p["params"])) for p in plan]


# -- the build a row was computed with ---------------------------------------------

_digests = {}


def _file_digest(path):
    """SHA-256 of a file (first 16 hex digits), cached by path, size and mtime."""
    stat = os.stat(path)
    cache_key = (path, stat.st_size, stat.st_mtime_ns)
    if cache_key not in _digests:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        _digests[cache_key] = digest.hexdigest()[:16]
    return _digests[cache_key]


def build_fingerprint():
    """The gpunvme build this process runs: ``VERSION+HASH``, or ``HASH`` alone.

    HASH is the SHA-256 (16 hex digits) of the native module's file; VERSION is
    ``gpunvme.__version__`` where the package has one. Rows of a sweep record it; a
    resumed sweep refuses rows of another build, a Dask sweep workers of another.
    """
    import _gpunvme

    import gpunvme

    digest = _file_digest(os.path.abspath(_gpunvme.__file__))
    version = getattr(gpunvme, "__version__", None)
    return "%s+%s" % (version, digest) if version else digest


def _spec_id(base_dict, stage=None):
    """What every point of a sweep shares besides its params: the base configuration.

    16 hex digits of SHA-256 over the base topology and scenario documents, their
    files and the seed; two sweeps with the same spec_id give the same result for the
    same params (of the same build). A refined sweep's ``stage`` ("fast" or "exact") is
    added, so that a point's fast row, its exact re-run and a plain sweep's row of it
    have three spec_ids (the refine settings are left out: a changed metric, goal or
    keep reuses the rows computed).
    """
    shared = {k: base_dict[k] for k in ("topology_file", "topology", "scenario_file",
                                        "scenario", "seed")}
    if stage is not None:
        shared["refine_stage"] = stage
    text = json.dumps(shared, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- one point -----------------------------------------------------------------------

def _assignment(path, value):
    """A point's ``--set`` assignment as ``gpunvme sweep`` writes it (value as JSON)."""
    return path + "=" + json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _build_info():
    """The build's ``{"version", "commit"}``, the ``"gpunvme"`` block every row records."""
    return json.loads(_native.build_info())


def _base_row(task):
    """The fields of a row that do not depend on running it, in the CLI's order."""
    shared = task.get("shared", {})
    topology_overrides = [a for a in shared.get("set", []) if a.startswith("topology.")]
    topology_overrides += [_assignment(p, v) for p, v in task["params"].items()
                           if p.startswith("topology.")]
    seed = task["params"].get("seed", task["base"].get("seed", 1))
    row = {"index": task["index"], "key": task["key"], "spec_id": task["spec_id"]}
    if task.get("stage"):
        row["refine"] = {"stage": task["stage"]}
    return dict(row, **{
            "params": dict(task["params"]), "seed": seed, "gpunvme": _build_info(),
            "topology": shared.get("topology"),
            "scenario_file": shared.get("scenario_file"), "set": list(shared.get("set", [])),
            "topology_overrides": topology_overrides, "config": None, "summary": None})


def _failed_row(task, error):
    row = _base_row(task)
    row["error"] = error
    row["build"] = task.get("build")
    return row


def run_point(task):
    """Run one sweep point (the function sweep workers and Dask workers call).

    ``task`` holds ``index``, ``key``, ``spec_id``, ``stage`` (a refined sweep's "fast"
    or "exact", which sets ``scenario.fidelity``; absent otherwise), ``base`` (a :meth:`Config.to_dict`),
    ``shared`` (what rows record of the base: a spec's ``set``, already in ``base``,
    ``topology`` and ``scenario_file``), ``params`` (path →
    value), ``metrics`` (extra result paths), ``keep_result`` and ``build`` (the
    sweep's :func:`build_fingerprint`). Returns the row as ``gpunvme sweep`` writes it
    to PREFIX.jsonl: ``index``, ``key``, ``spec_id``, ``refine`` (``{"stage"}``, a
    refined sweep's only), ``params``, ``seed``,
    ``topology``, ``scenario_file``, ``set``, ``topology_overrides``, ``config`` (the
    resolved scenario; as written when the point failed, where the CLI's row has None),
    ``summary``, ``metrics`` (when
    asked for) and ``error`` (None, or why the point failed: the sweep goes on), then
    ``build`` (and ``result`` with ``keep_result``, ``worker`` on Dask).
    """
    row = _base_row(task)
    build = build_fingerprint()
    try:
        if task.get("build") not in (None, build):
            raise RuntimeError("this worker runs gpunvme build %s, the sweep's is %s"
                               % (build, task["build"]))
        config = Config.from_dict(task["base"])
        for path, value in task["params"].items():
            config.set(path, value)
        if task.get("stage"):
            # Last, so that it holds over the scenario file's own fidelity.
            config.set("scenario.fidelity", task["stage"])
        # Until it runs, the row carries the scenario as written, so that a failed
        # point's row still has every scenario.FIELD column (the CLI's has none).
        row["config"] = dict(config.scenario)
        result = run(config)
        row["config"] = result.get("config", {}).get("scenario", {})
        row["summary"] = result.get("summary", {})
        if task.get("metrics"):
            row["metrics"] = {path: lookup(result, path) for path in task["metrics"]}
        row["error"] = None
        if task.get("keep_result"):
            row["result"] = dict(result)
    except ConfigError as error:
        row["error"] = "ConfigError: %s" % error
    except Exception as error:  # a failing point is recorded, the sweep goes on
        row["error"] = "%s: %s" % (type(error).__name__, error)
    row["build"] = build
    if task.get("record_worker"):
        try:
            from distributed import get_worker

            row["worker"] = get_worker().address
        except (ImportError, ValueError):
            row["worker"] = None
    return row


# -- rows as columns: the CLI's CSV layout (sim/frontend/sweep/sweep_runner.cpp) -------

def _flatten_into(value, name, cells):
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten_into(inner, name + "." + key, cells)
    else:
        cells.append((name, value))


def _cells(row):
    """A row's (column, value) pairs in the CLI CSV's order; the first of a name wins."""
    cells = [(c, row.get(c)) for c in ("index", "key", "error")]
    if isinstance(row.get("refine"), dict):
        _flatten_into(row["refine"], "refine", cells)
    cells += list((row.get("params") or {}).items())
    cells += [(c, row.get(c)) for c in ("seed", "topology", "scenario_file")]
    _flatten_into(row.get("gpunvme") or {}, "gpunvme", cells)
    cells += [("scenario." + k, v) for k, v in (row.get("config") or {}).items()]
    for key, value in (row.get("summary") or {}).items():
        _flatten_into(value, key, cells)
    cells += list((row.get("metrics") or {}).items())
    return cells


def _columns(rows):
    """The columns of rows as ``gpunvme sweep`` orders them in PREFIX.csv."""
    groups = {"fixed": ["index", "key", "error"], "refine": [], "params": [],
              "files": ["seed", "topology", "scenario_file"], "build": [], "config": [],
              "results": []}
    for row in rows:
        if isinstance(row.get("refine"), dict):
            refine = []
            _flatten_into(row["refine"], "refine", refine)
            groups["refine"] += [name for name, _ in refine]
        groups["params"] += list((row.get("params") or {}))
        build = []
        _flatten_into(row.get("gpunvme") or {}, "gpunvme", build)
        groups["build"] += [name for name, _ in build]
        groups["config"] += ["scenario." + k for k in (row.get("config") or {})]
        results = []
        for key, value in (row.get("summary") or {}).items():
            _flatten_into(value, key, results)
        groups["results"] += [name for name, _ in results] + list(row.get("metrics") or {})
    ordered = []
    for group in ("fixed", "refine", "params", "files", "build", "config", "results"):
        ordered += groups[group]
    return list(dict.fromkeys(ordered))


def _csv_cell(value):
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(
        value, separators=(",", ":"), ensure_ascii=False)
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_text(rows, amend=None):
    """PREFIX.csv as ``gpunvme sweep`` writes it: rows by index, file order within one;
    ``amend`` returns a row as its line shows it (a refined sweep's ranks added)."""
    rows = sorted((amend(r) if amend else r for r in rows), key=lambda r: r.get("index") or 0)
    columns = _columns(rows)
    lines = [",".join(_csv_cell(c) for c in columns)]
    for row in rows:
        by_column = {}
        for name, value in _cells(row):
            by_column.setdefault(name, value)
        lines.append(",".join(_csv_cell(by_column.get(c)) for c in columns))
    return "\n".join(lines) + "\n"


# -- the row file --------------------------------------------------------------------

def _replace_file(path, text):
    """Writes PATH as a whole (PATH.tmp, synced, renamed over it): a kill leaves the
    old file or the new one, never a part."""
    temp = path + ".tmp"
    with open(temp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _row_of_line(line):
    try:
        row = json.loads(line)
    except ValueError:
        return None  # a line cut short by an interrupted sweep: its point runs again
    return row if isinstance(row, dict) and isinstance(row.get("key"), str) else None


def _finished_rows(jsonl):
    """The rows of PREFIX.jsonl; lines that hold none (one cut short by a kill) are
    removed from the file, so that the next row does not join them."""
    if not os.path.exists(jsonl):
        return []
    with open(jsonl, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    rows, kept = [], []
    for line in lines:
        row = _row_of_line(line) if line else None
        if row is not None:
            rows.append(row)
            kept.append(line)
    if kept != lines[:-1] or lines[-1] != "":
        _replace_file(jsonl, "".join(line + "\n" for line in kept))
    return rows


def _check_resumable(jsonl, rows, spec_ids, build):
    """ConfigError when a row of the file belongs to another sweep or another build:
    resuming would mix results that do not belong together. ``spec_ids``: the sweep's
    (a refined sweep's two stages have one each)."""
    for number, row in enumerate(rows):
        if row.get("spec_id") not in spec_ids:
            raise ConfigError(
                jsonl, "$[%d].spec_id" % number, json.dumps(row.get("spec_id")),
                "a row of another base configuration (this sweep's spec_id is %s): resuming "
                "would mix their results; write to another out= or remove the file"
                % " or ".join(spec_ids))
        if row.get("build") != build:
            raise ConfigError(
                jsonl, "$[%d].build" % number, json.dumps(row.get("build")),
                "a row of another gpunvme build (this one is %s): resuming would mix their "
                "results; write to another out= or remove the file" % build)


class _RowFile:
    """PREFIX.jsonl, appended a row at a time: one write each, synced before the point
    counts as done, so a kill loses no finished row."""

    def __init__(self, jsonl):
        self.jsonl = jsonl
        self.file = open(jsonl, "a", encoding="utf-8")

    def append(self, row):
        stored = {k: v for k, v in row.items() if k != "result"}
        self.file.write(json.dumps(stored, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self):
        self.file.close()


# -- progress ------------------------------------------------------------------------

class _Progress:
    """A tqdm bar (where tqdm is installed; else a line a point) on stderr, or nothing."""

    def __init__(self, total, enabled):
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self.done = self.failed = 0
        self.start = time.monotonic()
        self.bar = None
        if self.enabled and total:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc="sweep", unit="point", file=sys.stderr,
                                dynamic_ncols=True)

    def update(self, row):
        self.done += 1
        self.failed += row.get("error") is not None
        if self.bar is not None:
            if self.failed:
                self.bar.set_postfix(failed=self.failed, refresh=False)
            self.bar.update(1)
        elif self.enabled:
            elapsed = time.monotonic() - self.start
            eta = elapsed / self.done * (self.total - self.done)
            print("sweep: %d/%d points, %d failed, %.1f s elapsed, ETA %.1f s"
                  % (self.done, self.total, self.failed, elapsed, eta), file=sys.stderr,
                  flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# -- where points run ----------------------------------------------------------------

def _worker_environment():
    """The environment of a worker process: this process's, with the folders of gpunvme
    and of its native module first on PYTHONPATH."""
    import _gpunvme

    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    native = os.path.dirname(os.path.abspath(_gpunvme.__file__))
    paths = [package_parent, native] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _run_processes(tasks, jobs):
    """Rows of ``tasks`` as they finish, from ``jobs`` worker processes.

    A worker is ``python -m gpunvme._sweep_worker``: a fresh interpreter that never
    imports the caller's ``__main__`` (as multiprocessing's spawn does), so a plain
    script needs no ``if __name__ == "__main__":`` guard; nor is it a fork of a
    process whose threads may hold locks. A worker that dies takes only its point
    with it: that row records why, and a new worker runs the rest.
    """
    pending = list(reversed(tasks))
    lock = threading.Lock()
    results = queue.Queue()
    stop = threading.Event()
    processes = []
    env = _worker_environment()

    def start():
        process = subprocess.Popen(
            [sys.executable, "-m", "gpunvme._sweep_worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, text=True, encoding="utf-8")
        with lock:
            processes.append(process)
        return process

    def serve():
        process = None
        try:
            while not stop.is_set():
                with lock:
                    if not pending:
                        break
                    task = pending.pop()
                if process is None:
                    process = start()
                try:
                    process.stdin.write(json.dumps(task, separators=(",", ":"),
                                                   ensure_ascii=False) + "\n")
                    process.stdin.flush()
                    line = process.stdout.readline()
                except OSError:
                    line = ""
                if stop.is_set():
                    break
                row = _row_of_line(line) if line else None
                if row is None:
                    code = process.wait()
                    row = _failed_row(task, "point process killed by signal %d" % -code
                                      if code < 0 else
                                      "point process exited with code %d and no result" % code)
                    process = None
                results.put(("row", row))
        except Exception as error:  # noqa: BLE001  (handed to the caller to raise)
            results.put(("error", error))
        finally:
            if process is not None and process.poll() is None:
                process.stdin.close()
                process.wait()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(min(jobs, len(tasks)))]
    for thread in threads:
        thread.start()
    try:
        for _ in range(len(tasks)):
            kind, item = results.get()
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()
        with lock:
            for process in processes:
                if process.poll() is None:
                    process.kill()
        for thread in threads:
            thread.join()
        for process in processes:
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            process.wait()


def _run_local(tasks, jobs):
    if jobs <= 1:
        for task in tasks:
            yield run_point(task)
        return
    yield from _run_processes(tasks, jobs)


class SweepPointsFailed(UserWarning):
    """Warned by :func:`sweep` when points failed: their rows hold only ``error``."""


class WorkerBuildError(RuntimeError):
    """Dask workers that run another gpunvme build than the process that sweeps."""


def _check_worker_builds(client, build):
    """Raises :class:`WorkerBuildError` naming every worker whose build differs."""
    builds = client.run(build_fingerprint)
    other = {address: theirs for address, theirs in builds.items() if theirs != build}
    if other:
        raise WorkerBuildError(
            "sweep: %d of %d Dask workers run another gpunvme build than this process (%s): "
            "%s; give every worker this build (PYTHONPATH) or leave those out"
            % (len(other), len(builds), build,
               ", ".join("%s runs %s" % item for item in sorted(other.items()))))


def _run_dask(tasks, scheduler, progress, timeout, build):
    import distributed

    own = not isinstance(scheduler, distributed.Client)
    client = (distributed.Client(scheduler, timeout=timeout or "30s", set_as_default=False)
              if own else scheduler)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        _check_worker_builds(client, build)
        if not tasks:
            return
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
                    row = _failed_row(task_of[future], "%s: %s" % (type(error).__name__, error))
                    row["worker"] = None
                yield row
    finally:
        if own:
            client.close()


def sweep(base=None, axes=None, *, scheduler=None, jobs=1, metrics=None, keep_results=False,
          progress=None, timeout=None, out=None, resume=False):
    """Run every point of a sweep; returns a pandas DataFrame, one row per point.

    A spec with ``refine`` runs as ``gpunvme sweep`` runs it: every point in fast mode,
    ranked by the metric (the command's C++ ranking), then the best ``keep`` again in
    exact mode, each in a row of its own; a metric that a fast row does not hold stops the
    sweep with a :class:`gpunvme.ConfigError` at ``$.refine.metric``.

    Args:
        base: a :class:`Config` (then ``axes`` is required), a sweep spec dict or the
            path of a spec file (the JSON ``gpunvme sweep`` takes), or None for the
            shipped defaults.
        axes: the ``sweep`` object (see the module docstring); with a spec, these axes
            are added to (and replace same-named ones of) the spec's.
        scheduler: None to run here; a Dask scheduler address (``"tcp://host:8786"``)
            or a ``distributed.Client`` to fan the points out to its workers, which
            must run this build (checked: :class:`WorkerBuildError` names those that
            do not; see :func:`build_fingerprint`).
        jobs: worker processes when no scheduler is given (1 = this process). Workers
            are fresh interpreters that do not import the calling script, so a plain
            script needs no ``if __name__ == "__main__":`` guard.
        metrics: extra dotted result paths to add as columns
            (``"stages.doorbell.p99"``), after a spec's own ``metrics``.
        keep_results: add a ``result`` column holding each point's full :class:`Result`
            (of the points this call runs; resumed rows have None).
        progress: a progress bar on stderr (tqdm; without it, a line a point): True,
            False, or None for "when stderr is a terminal".
        timeout: seconds a distributed sweep may take (also the connect timeout).
        out: a path PREFIX: rows are appended to PREFIX.jsonl as points finish (synced,
            so an interrupted sweep loses no finished row) and PREFIX.csv is written
            when the sweep ends or is interrupted, laid out as ``gpunvme sweep --out
            PREFIX`` writes them. Rows record the sweep's ``spec_id`` (a hash of the base
            configuration) and ``build``.
        resume: with ``out``, skip the points already in PREFIX.jsonl (a row cut short
            is dropped and its point runs again). Rows of another base configuration or
            another build are refused with a :class:`gpunvme.ConfigError`, as is an
            existing PREFIX.jsonl without ``resume=True``. A refined sweep keeps the rows
            of either stage (each stage has a ``spec_id`` of its own): stopped in the fast
            stage, it runs the rest of it, then the finalists; stopped in the exact stage,
            the finalists left.

    Returns:
        DataFrame sorted by ``index``, with the columns of ``gpunvme sweep``'s CSV in its
        order: ``index``, ``key`` (the point's canonical key), ``error`` (None, or why
        the point failed, such as a configuration the topology cannot run: a failing
        point does not stop the sweep), the swept paths (named by path), ``seed``,
        ``topology``, ``scenario_file``, every resolved scenario field
        (``scenario.FIELD``), the flattened summary (``iops``, ``latency_ns.p99``, ...)
        and the metrics (named by path); then ``worker`` for distributed sweeps and
        ``result`` with ``keep_results``. A refined sweep's frame has a fast row for every
        point and an exact row for each finalist (after its fast one), the columns
        ``refine.stage``, ``refine.fast_rank``, ``refine.finalist`` and
        ``refine.exact_rank`` after ``error``, and in ``frame.attrs["refine"]`` the
        comparison of the two rankings (what ``PREFIX.refine.json`` holds; None while a
        stage has points left). Its ``refine:`` line goes to stderr with the progress.
    """
    import pandas as pd

    config, plan, metric_paths, shared, refine = _plan(base, axes, metrics)
    base_dict = config.to_dict()
    to_json_text(base_dict)  # reject non-JSON values before shipping anything
    stages = ("fast", "exact") if refine is not None else (None,)
    spec_ids = {stage: _spec_id(base_dict, stage) for stage in stages}
    build = build_fingerprint()

    def task_of(point, stage=None):
        task = {"index": point["index"], "key": point["key"], "spec_id": spec_ids[stage],
                "base": base_dict, "shared": shared, "params": point["params"],
                "metrics": metric_paths, "keep_result": keep_results,
                "record_worker": scheduler is not None, "build": build}
        if stage is not None:
            task["stage"] = stage
        return task

    done = {}  # (spec_id, key) -> row of an earlier run
    rows_file = csv = refine_file = None
    if out is not None:
        prefix = os.fspath(out)
        jsonl, csv, refine_file = prefix + ".jsonl", prefix + ".csv", prefix + ".refine.json"
        if os.path.dirname(prefix):
            os.makedirs(os.path.dirname(prefix), exist_ok=True)
        stored = _finished_rows(jsonl)
        if stored and not resume:
            raise ConfigError(jsonl, "", "", "holds %d rows of an earlier sweep: pass "
                              "resume=True to skip the points it has, or write to another out="
                              % len(stored))
        _check_resumable(jsonl, stored, list(spec_ids.values()), build)
        done = {(row["spec_id"], row["key"]): row for row in stored}
        rows_file = _RowFile(jsonl)
    elif resume:
        raise ConfigError(PYTHON_ORIGIN, "resume", "True", "resume needs out=PREFIX, the "
                          "rows file to resume")
    rows = []  # this call's
    ranks = {}  # (spec_id, key) -> a refined sweep's {fast_rank, finalist, exact_rank}
    comparison = None

    def run_stage(tasks, check=None):
        """Runs the tasks without a row yet; True when every task has one."""
        todo = [t for t in tasks if (t["spec_id"], t["key"]) not in done]
        tracker = _Progress(len(todo), progress)
        source = (_run_dask(todo, scheduler, tracker, timeout, build) if scheduler is not None
                  else _run_local(todo, jobs))
        finished = 0
        try:
            for row in source:
                if rows_file is not None:
                    rows_file.append(row)
                tracker.update(row)
                rows.append(row)
                done[(row["spec_id"], row["key"])] = row
                finished += 1
                if check is not None:
                    check(row)  # raises: the sweep stops, its rows kept
        finally:
            source.close()  # stops the workers of an interrupted sweep at once
            tracker.close()
        return finished == len(todo)

    def stage_rows(stage):
        """The rows of one stage for the sweep's points, in point order."""
        return [done[(spec_ids[stage], p["key"])] for p in plan
                if (spec_ids[stage], p["key"]) in done]

    try:
        if refine is None:
            run_stage([task_of(p) for p in plan])
        else:
            # Every point in fast mode, ranked by the metric (gpunvme sweep's code:
            # sim/frontend/sweep/refine.cpp); the best `keep` again in exact mode.
            settings = json.dumps({k: refine[k] for k in ("metric", "goal", "keep")})

            def rank(stage_rows_):
                return json.loads(_native.sweep_refine_rank(
                    refine["file"], settings, json.dumps([dict(r, index=index_of[r["key"]])
                                                          for r in stage_rows_])))

            index_of = {p["key"]: p["index"] for p in plan}
            if run_stage([task_of(p, "fast") for p in plan], check=lambda row: rank([row])):
                ranked = rank(stage_rows("fast"))
                kept = min(refine["keep"], len(ranked))
                finalists = [plan[r["index"]] for r in ranked[:kept]]
                for position, r in enumerate(ranked):
                    key = plan[r["index"]]["key"]
                    ranks[(spec_ids["fast"], key)] = {"fast_rank": position + 1,
                                                      "finalist": position < kept,
                                                      "exact_rank": None}
                    if position < kept:
                        ranks[(spec_ids["exact"], key)] = dict(ranks[(spec_ids["fast"], key)])
                if run_stage([task_of(p, "exact") for p in finalists]):
                    exact = {r["key"]: r for r in stage_rows("exact")}
                    exact_values = {r["index"]: r["value"] for r in rank(exact.values())}
                    described = [{"index": p["index"], "key": p["key"], "fast_rank": n + 1,
                                  "fast": ranked[n]["value"],
                                  "exact": exact_values.get(p["index"])}
                                 for n, p in enumerate(finalists)]
                    pruned = None
                    if kept < len(ranked):
                        point = plan[ranked[kept]["index"]]
                        pruned = {"index": point["index"], "key": point["key"],
                                  "fast_rank": kept + 1, "fast": ranked[kept]["value"]}
                    text, line = _native.sweep_refine_compare(
                        settings, len(plan), len(ranked), json.dumps(described),
                        json.dumps(pruned))
                    comparison = {"text": text, "line": line, "doc": json.loads(text)}
                    for finalist in comparison["doc"]["finalists"]:
                        for stage in stages:
                            ranks[(spec_ids[stage], finalist["key"])]["exact_rank"] = (
                                finalist["exact_rank"])
    finally:
        if rows_file is not None:
            rows_file.close()
            _replace_file(csv, _csv_text(_finished_rows(jsonl), amend=lambda row: _ranked(
                row, ranks)))
    if comparison is not None and refine_file is not None:
        _replace_file(refine_file, comparison["text"])
    if refine is not None and _Progress(0, progress).enabled:
        # gpunvme sweep's refine: line, where the progress goes.
        print(comparison["line"] if comparison is not None else
              "refine: not compared yet: a stage has points left (rerun to complete it)",
              file=sys.stderr, flush=True)
    index_of = {p["key"]: p["index"] for p in plan}
    this_call = {(row["spec_id"], row["key"]) for row in rows}
    rows += [dict(row, index=index_of[key]) for (sid, key), row in done.items()
             if key in index_of and sid in spec_ids.values() and (sid, key) not in this_call]
    stage_order = {None: 0, "fast": 0, "exact": 1}
    rows = [_ranked(row, ranks) for row in rows]
    rows.sort(key=lambda r: (r["index"], stage_order.get((r.get("refine") or {}).get("stage"))))
    columns = _columns(rows)
    extras = [c for c in ("worker", "result") if any(c in r for r in rows)]
    records = []
    for row in rows:
        cells = {}
        for name, value in _cells(row):
            cells.setdefault(name, value)
        for name in extras:
            cells[name] = row.get(name)
        records.append(cells)
    failed = [row for row in rows if row.get("error") is not None]
    if failed:
        # A failed point's row holds no results (NaN in every result column): say so
        # where it cannot be missed, not only in its error column.
        warnings.warn("sweep: %d of %d points failed and hold no results (see the error "
                      "column); the first, %s: %s" % (len(failed), len(rows),
                                                      failed[0]["key"], failed[0]["error"]),
                      SweepPointsFailed, stacklevel=2)
    frame = pd.DataFrame(records, columns=columns + extras)
    if keep_results and "result" in frame:
        frame["result"] = [Result(r) if isinstance(r, dict) else r for r in frame["result"]]
    if refine is not None:
        # The comparison PREFIX.refine.json holds (None until both stages are complete).
        frame.attrs["refine"] = comparison["doc"] if comparison is not None else None
    return frame


def _ranked(row, ranks):
    """A refined sweep's row with where the sweep's ranking puts its point
    (``refine.fast_rank``, ``refine.finalist``, ``refine.exact_rank``), as gpunvme sweep's
    CSV shows it; other rows as they are."""
    cells = ranks.get((row.get("spec_id"), row.get("key")))
    if cells is None or not isinstance(row.get("refine"), dict):
        return row
    return dict(row, refine=dict(row["refine"], **cells))
