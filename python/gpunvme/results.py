"""Runs and their results: dicts, tables and pandas DataFrames."""

import json

from . import _native
from .config import Config, load_config
from .errors import ConfigError
from .result import Result, flatten, lookup


def run(config=None, **load_args):
    """Validate and run one configuration; returns a :class:`Result`.

    ``config`` is a :class:`Config`, a dict in :meth:`Config.to_dict` form, or None to
    load one with :func:`gpunvme.load_config` from ``load_args`` (topology, scenario,
    seed, overrides). Raises :class:`gpunvme.ConfigError` on bad input, RuntimeError
    if the simulation itself fails. Runs in one process happen one at a time (the
    GIL is released meanwhile); for parallel runs use :func:`gpunvme.sweep`.
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
    return Result(json.loads(_native.run(config._json())))


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
