"""gpunvme: the GPU-PCIe-NVMe simulator from Python.

Load and change configurations as dicts, validate them, run them, sweep over them
(here, in local processes or on a Dask cluster), and check latency budgets::

    import gpunvme
    cfg = gpunvme.load_config(scenario="randread-4k", overrides={"scenario.ios": 4000})
    cfg.scenario["threads"] = 4096           # the documents are plain dicts
    result = gpunvme.run(cfg)                # a dict: summary, stages, ssds, pcie, ...
    result.stages_frame()                    # per-stage latency as a DataFrame
    frame = gpunvme.sweep(cfg, {"scenario.queues": [4, 8, 16]})

Bad input raises :class:`ConfigError` with ``file``, ``path``, ``value`` and
``problem``, exactly as the command line reports it. The extension module is
built by the project's CMake build; import with ``PYTHONPATH=build/python``, or
install it (``cmake --install``, README "Install").

``__version__`` is the version of the C++ build the package runs on;
:func:`build_info` adds its git commit, as every result records it under ``"gpunvme"``.
"""

import json as _json

from . import _native, budgets
from .config import (Config, data_dir, describe, load_config, shipped_file, source_dir,
                     validate, with_ssds)
from .errors import ConfigError
from .results import Result, flatten, lookup, results_frame, run
from .sweep import (SweepPointsFailed, WorkerBuildError, build_fingerprint, expand, load_spec,
                    points, sweep)

__version__ = _native.__version__


def build_info():
    """The build's ``{"version": ..., "commit": ...}``, the ``"gpunvme"`` block of results."""
    return _json.loads(_native.build_info())


__all__ = [
    "Config",
    "ConfigError",
    "Result",
    "SweepPointsFailed",
    "WorkerBuildError",
    "budgets",
    "build_fingerprint",
    "build_info",
    "data_dir",
    "describe",
    "expand",
    "flatten",
    "load_config",
    "load_spec",
    "lookup",
    "points",
    "results_frame",
    "run",
    "shipped_file",
    "source_dir",
    "sweep",
    "validate",
    "with_ssds",
]
