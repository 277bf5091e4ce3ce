"""Runs and their results: dicts, tables and pandas DataFrames."""

import json
import os

from . import _native
from .config import Config, load_config
from .errors import ConfigError
from .result import Result, flatten, lookup


def _window_text(trace_window):
    # (start, end) in microseconds, either None, as --trace-window's START:END.
    if trace_window is None:
        return ""
    if not isinstance(trace_window, (tuple, list)) or len(trace_window) != 2:
        raise ConfigError(
            "<python>",
            "trace_window",
            repr(trace_window)[:60],
            "expected (START, END) in microseconds of simulated time; either may be None",
        )

    def bound(value):
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(
                "<python>", "trace_window", repr(trace_window)[:60],
                "expected numbers of microseconds or None",
            )
        return repr(value)

    return bound(trace_window[0]) + ":" + bound(trace_window[1])


def run(config=None, trace=None, trace_limit_mb=64.0, trace_window=None, **load_args):
    """Validate and run one configuration; returns a :class:`Result`.

    ``config`` is a :class:`Config`, a dict in :meth:`Config.to_dict` form, or None to
    load one with :func:`gpunvme.load_config` from ``load_args`` (topology, scenario,
    seed, overrides). ``trace`` (a path), ``trace_limit_mb`` and ``trace_window``
    (``(start, end)`` in microseconds of simulated time, either None) write a Chrome
    trace / Perfetto JSON of the run as the CLI's ``--trace``, ``--trace-limit-mb``
    and ``--trace-window`` do. Raises :class:`gpunvme.ConfigError` on bad input,
    RuntimeError if the simulation itself fails. Runs in one process happen one at a
    time (the GIL is released meanwhile); for parallel runs use :func:`gpunvme.sweep`.
    """
    if config is None:
        config = load_config(**load_args)
    elif load_args:
        raise TypeError("run(): pass either a config or load_config arguments, not both")
    if isinstance(config, dict):
        config = Config.from_dict(config)
    if not isinstance(config, Config):
        raise ConfigError(
            "<python>", "", repr(config)[:60], "expected a gpunvme.Config or a dict of its form"
        )
    trace_file = "" if trace is None else os.fspath(trace)
    return Result(
        json.loads(
            _native.run(
                config._json(), trace_file, float(trace_limit_mb), _window_text(trace_window)
            )
        )
    )


def results_frame(results, params=None):
    """One row per result: its summary flattened, plus chosen configuration fields.

    Args:
        results: an iterable of :class:`Result` (or plain result dicts).
        params: dotted paths into each result's resolved ``config`` to add as columns
            (``"scenario.threads"``, ``"seed"``); by default every scenario field and
            the seed.
    """
    import pandas as pd

    rows = []
    for r in results:
        cfg = r.get("config", {})
        if params is None:
            row = flatten(cfg.get("scenario", {}), "scenario.")
            row["seed"] = cfg.get("seed")
        else:
            row = {p: lookup(cfg, p) for p in params}
        row.update(flatten(r.get("summary", {})))
        rows.append(row)
    return pd.DataFrame(rows)
