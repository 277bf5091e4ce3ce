"""Runs and their results: dicts, tables and pandas DataFrames."""

import json

from . import _native
from .config import Config, load_config
from .errors import ConfigError


# Column order of a latency summary, as the CLI prints it.
_SUMMARY_ORDER = ["count", "mean", "min", "p50", "p90", "p99", "p999", "max"]


class Result(dict):
    """A run's result: the JSON document the CLI writes with ``--out``, as a dict.

    Keys (see README "Results"): ``schema``, ``config`` (fully resolved), ``summary``,
    ``stages``, ``ssds``, ``gpus``, ``pcie``, ``paths``, plus any the scenario kind
    adds. Everything except ``summary.wall_time_s`` is a pure function of the
    configuration and seed. The methods give the common views as DataFrames.
    """

    def table(self):
        """The CLI's human-readable summary (str)."""
        return _native.summary_table(json.dumps(self))

    def flat(self, prefix=""):
        """The summary flattened to one level: ``iops``, ``latency_ns.p99``, ... (dict)."""
        return flatten(self.get("summary", {}), prefix)

    def stages_frame(self):
        """Per-stage latency distributions in ns: one row per stage with samples.

        Columns: count, mean, min, p50, p90, p99, p999, max (whatever the result holds).
        """
        import pandas as pd

        rows = {k: v for k, v in self.get("stages", {}).items() if v.get("count", 0) > 0}
        frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("stage")
        order = [c for c in _SUMMARY_ORDER if c in frame.columns]
        return frame[order + [c for c in frame.columns if c not in order]]

    def ssds_frame(self):
        """Per-SSD statistics, one row per SSD, nested figures flattened to dotted columns."""
        import pandas as pd

        rows = {k: flatten(v) for k, v in self.get("ssds", {}).items()}
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("ssd")

    def links_frame(self):
        """Per-link-direction PCIe statistics (utilization, TLPs, bytes), one row each."""
        import pandas as pd

        links = self.get("pcie", {}).get("links", {})
        if isinstance(links, dict):
            rows = {k: flatten(v) for k, v in links.items()}
            return pd.DataFrame.from_dict(rows, orient="index").rename_axis("link")
        return pd.DataFrame([flatten(v) for v in links])

    def to_json(self, path=None, indent=2):
        """JSON text of the result; also written to ``path`` when given."""
        text = json.dumps(self, indent=indent) + "\n"
        if path is not None:
            with open(path, "w") as out:
                out.write(text)
        return text

    def __repr__(self):
        s = self.get("summary", {})
        cfg = self.get("config", {})
        return "Result(scenario=%r, path=%r, iops=%r, p99_ns=%r)" % (
            cfg.get("scenario", {}).get("name"),
            s.get("path"),
            s.get("iops"),
            s.get("latency_ns", {}).get("p99"),
        )

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self))


def flatten(document, prefix=""):
    """Nested dicts flattened to one level with dotted keys; lists are kept as values."""
    out = {}
    for key, value in document.items():
        name = prefix + key
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


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


def lookup(document, dotted, default=None):
    """The value at a dotted path (``"summary.latency_ns.p99"``), or ``default``."""
    at = document
    for key in dotted.split("."):
        if isinstance(at, dict) and key in at:
            at = at[key]
        elif isinstance(at, list) and key.isdigit() and int(key) < len(at):
            at = at[int(key)]
        else:
            return default
    return at
