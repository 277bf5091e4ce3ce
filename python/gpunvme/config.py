"""Run configurations as editable dicts: load, change, validate."""

import copy
import json
import math
import os

from . import _native
from .errors import ConfigError
from .result import Result

PYTHON_ORIGIN = "<python>"
_NO_VALUE = object()
# The C++ loader's bound on nesting (sim/kernel/params/json_path.h, kMaxJsonDepth).
MAX_DEPTH = 256


def data_dir():
    """The shipped data (``configs/``, ``scenarios/``): ``$GPUNVME_DATA_DIR``, else
    ``share/gpunvme`` in the nearest folder above the extension module (the install prefix,
    or the build tree, whose ``share/gpunvme`` links to the sources)."""
    return _native.data_dir()


def source_dir():
    """The same folder as :func:`data_dir`."""
    return _native.data_dir()


def shipped_file(name, kind):
    """The path of a shipped topology or scenario given by name, or ``name`` unchanged.

    ``kind`` is ``"topology"`` (``configs/topologies/NAME.json``) or ``"scenario"``
    (``scenarios/NAME.json``). A name that is an existing path, or that has no shipped
    file, is returned as it is, so the loader reports a missing file as the CLI does.
    """
    if os.path.exists(name) or os.sep in name or name.endswith(".json"):
        return name
    folder = os.path.join("configs", "topologies") if kind == "topology" else "scenarios"
    candidate = os.path.join(data_dir(), folder, name + ".json")
    return candidate if os.path.exists(candidate) else name


def check_depth(document, path="$"):
    """ConfigError when lists and dicts nest deeper than MAX_DEPTH; iterative, so that a
    document of any depth is refused before anything recurses over it (deepcopy, json)."""
    stack = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(
                PYTHON_ORIGIN, path, "", "lists and dicts nest deeper than %d levels" % MAX_DEPTH
            )
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend((item, depth + 1) for item in value)


def text_argument(value, what):
    """``value`` as a str that crosses into C++ (UTF-8), else ConfigError."""
    if not isinstance(value, str):
        raise ConfigError(PYTHON_ORIGIN, "", repr(value)[:60], "%s: expected a str" % what)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ConfigError(
            PYTHON_ORIGIN, "", repr(value)[:60], "%s: not valid text (%s)" % (what, e.reason)
        )
    return value


def to_json_text(document, what="configuration"):
    """JSON text of a Python document; ConfigError naming the field that is not JSON.

    Accepts dicts, lists, strings, numbers, booleans and None, plus numpy scalars and
    arrays (handy when sweeping over ``numpy.arange``).
    """

    def convert(value, path, depth=0):
        if depth > MAX_DEPTH:
            raise ConfigError(
                PYTHON_ORIGIN, path, "", "lists and dicts nest deeper than %d levels" % MAX_DEPTH
            )
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ConfigError(PYTHON_ORIGIN, path, repr(key), "keys must be strings")
                out[key] = convert(item, path + "." + key, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            return [convert(item, "%s[%d]" % (path, i), depth + 1) for i, item in enumerate(value)]
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            if not -(2**63) <= value < 2**64:
                raise ConfigError(
                    PYTHON_ORIGIN, path, repr(value)[:60], "integer out of range (-2^63, 2^64)"
                )
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ConfigError(PYTHON_ORIGIN, path, repr(value), "expected a finite number")
            return value
        # numpy scalars and arrays, without importing numpy.
        if hasattr(value, "tolist"):
            return convert(value.tolist(), path, depth)
        raise ConfigError(
            PYTHON_ORIGIN, path, repr(value), "cannot be written as JSON (%s)" % type(value).__name__
        )

    check_depth(document)
    return json.dumps(convert(document, "$"), allow_nan=False)


class Config:
    """One run's configuration: topology and scenario documents, seed, and origins.

    ``topology`` and ``scenario`` are plain dicts laid out exactly as the JSON files
    (``configs/topologies/*.json``, ``scenarios/*.json``); edit them directly or with
    :meth:`set`, which takes the CLI's ``--set`` paths. Nothing is validated until
    :meth:`validate` or :func:`gpunvme.run`, which raise :class:`gpunvme.ConfigError`
    exactly as the CLI reports it.

    Attributes:
        topology: the topology document (dict).
        scenario: the scenario document (dict).
        seed: the random seed (non-negative int).
        topology_file, scenario_file: where the documents came from; errors name
            them, and device profiles are looked up beside the topology file first.
    """

    def __init__(
        self, topology, scenario, seed=1, topology_file=PYTHON_ORIGIN, scenario_file=PYTHON_ORIGIN
    ):
        self.topology = topology
        self.scenario = scenario
        self.seed = seed
        self.topology_file = topology_file
        self.scenario_file = scenario_file
        # The fields set() changed ({file, path, origin}): a value one of them set
        # that fails validation is blamed on that call, as the CLI blames --set.
        self._overrides = []

    # -- conversions -------------------------------------------------------------
    def to_dict(self):
        """The configuration as a plain dict (deep copy), the form :meth:`from_dict` reads."""
        check_depth(self.topology)
        check_depth(self.scenario)
        document = {
            "topology_file": self.topology_file,
            "topology": self.topology,
            "scenario_file": self.scenario_file,
            "scenario": self.scenario,
            "seed": self.seed,
        }
        if self._overrides:
            document["overrides"] = self._overrides
        return copy.deepcopy(document)

    @classmethod
    def from_dict(cls, d):
        """A Config from :meth:`to_dict`'s form (missing origins become ``<python>``)."""
        if not isinstance(d, dict):
            raise ConfigError(PYTHON_ORIGIN, "$", repr(d)[:60], "expected a dict")
        for key in ("topology", "scenario"):
            if key not in d:
                raise ConfigError(PYTHON_ORIGIN, "$." + key, "", "missing required field")
        check_depth(d)
        config = cls(
            copy.deepcopy(d["topology"]),
            copy.deepcopy(d["scenario"]),
            d.get("seed", 1),
            d.get("topology_file", PYTHON_ORIGIN),
            d.get("scenario_file", PYTHON_ORIGIN),
        )
        config._overrides = copy.deepcopy(d.get("overrides", []))
        return config

    def _json(self):
        return to_json_text(self.to_dict())

    def _assign_from_json(self, text):
        d = json.loads(text)
        self.topology, self.scenario, self.seed = d["topology"], d["scenario"], d["seed"]
        self._overrides = d.get("overrides", [])

    def copy(self):
        """An independent copy."""
        return Config.from_dict(self.to_dict())

    # -- changes -----------------------------------------------------------------
    def set(self, path, value=_NO_VALUE):
        """Change one field in place, as the CLI's ``--set`` does; returns self.

        ``path`` starts with ``topology.`` or ``scenario.`` or is ``seed``; on arrays a
        segment is an index or an element's ``id`` (``topology.nodes.ssd0.mqes``). Either
        ``set("scenario.threads", 4096)`` or ``set("scenario.threads=4096")`` (VALUE is
        JSON, or a string). Bad paths raise :class:`gpunvme.ConfigError`, and so does a
        value that later fails validation: both name the call as the CLI names an
        override (``--set scenario.iodepth=0``), not the file whose value it replaced.
        """
        text_argument(path, "path (e.g. scenario.bs)")
        if value is _NO_VALUE:
            if "=" not in path:
                raise ConfigError(PYTHON_ORIGIN, path, "", "expected PATH=VALUE, or a value")
            assignment = path
        else:
            assignment = path + "=" + to_json_text(value)
        self._assign_from_json(_native.apply_set(self._json(), assignment))
        return self

    def with_(self, *assignments, **values):
        """A changed copy: positional ``"PATH=VALUE"`` strings and/or a dict of path → value.

        Keyword form: ``cfg.with_(**{"scenario.threads": 4096})``, or pass a dict
        positionally: ``cfg.with_({"scenario.threads": 4096, "seed": 3})``.
        """
        out = self.copy()
        for a in assignments:
            if isinstance(a, dict):
                for path, value in a.items():
                    out.set(path, value)
            else:
                out.set(a)
        for path, value in values.items():
            out.set(path, value)
        return out

    # -- validation and runs -----------------------------------------------------
    def validate(self):
        """Validate; returns the fully resolved configuration (dict) as results record it.

        Raises :class:`gpunvme.ConfigError` on bad input.
        """
        return json.loads(_native.resolve(self._json()))

    def run(self):
        """Run this configuration; see :func:`gpunvme.run`."""
        return Result(json.loads(_native.run(self._json())))

    def __repr__(self):
        return "Config(topology=%r, scenario=%r, seed=%r)" % (
            self.topology.get("name", self.topology_file)
            if isinstance(self.topology, dict)
            else self.topology_file,
            self.scenario.get("name", self.scenario_file)
            if isinstance(self.scenario, dict)
            else self.scenario_file,
            self.seed,
        )

    def __eq__(self, other):
        # The same documents, whichever set() calls made them.
        def documents(config):
            return {k: v for k, v in config.to_dict().items() if k != "overrides"}

        return isinstance(other, Config) and documents(self) == documents(other)


def load_config(topology=None, scenario=None, seed=1, overrides=None):
    """Load a configuration from files, shipped names or dicts, then apply overrides.

    Args:
        topology: a topology file, a shipped topology's name (``"default"``), a dict
            laid out as the file, or None for the shipped default.
        scenario: likewise for the scenario (``"randread-4k"``, ``scenarios/*.json``).
        seed: the random seed.
        overrides: ``--set`` assignments: a list of ``"PATH=VALUE"`` strings or a dict
            of path → value, applied in order.

    Returns:
        a :class:`Config`. Raises :class:`gpunvme.ConfigError` for unreadable files and
        bad override paths; the values themselves are checked by :meth:`Config.validate`.
    """
    files = []
    for document, kind in ((topology, "topology"), (scenario, "scenario")):
        is_path = document is not None and not isinstance(document, dict)
        if is_path and not isinstance(document, (str, os.PathLike)):
            raise ConfigError(
                PYTHON_ORIGIN,
                "",
                repr(document)[:60],
                "%s: expected a file path (str), a shipped name, a dict or None" % kind,
            )
        path = text_argument(os.fspath(document), kind + " file") if is_path else ""
        files.append(shipped_file(path, kind) if is_path else "")
    if overrides is not None and not isinstance(overrides, (dict, list, tuple)):
        raise ConfigError(
            PYTHON_ORIGIN,
            "",
            repr(overrides)[:60],
            "overrides: expected a list of \"PATH=VALUE\" strings or a dict of path -> value",
        )
    raw = json.loads(_native.load_raw(files[0], files[1]))
    config = Config(raw["topology"], raw["scenario"], seed, raw["topology_file"],
                    raw["scenario_file"])
    if isinstance(topology, dict):
        check_depth(topology)
        config.topology, config.topology_file = copy.deepcopy(topology), PYTHON_ORIGIN
    if isinstance(scenario, dict):
        check_depth(scenario)
        config.scenario, config.scenario_file = copy.deepcopy(scenario), PYTHON_ORIGIN
    if isinstance(overrides, dict):
        for path, value in overrides.items():
            config.set(path, value)
    elif overrides:
        for assignment in overrides:
            config.set(assignment)
    return config


def with_ssds(topology, count, template="ssd0"):
    """A copy of a topology dict with ``count`` SSDs: the template and clones of it.

    Clones are named ``ssd1``, ``ssd2``, ... (the template's id with its trailing number
    replaced) and hang off the template's parent with a copy of its link, so every
    drive sees the same fabric. Useful for "how many SSDs" studies::

        cfg.topology = gpunvme.with_ssds(cfg.topology, 8)
        cfg.set("scenario.ssds", ["ssd%d" % i for i in range(8)])
    """
    if not isinstance(topology, dict):
        raise ConfigError(PYTHON_ORIGIN, "$", repr(topology)[:60], "expected a topology dict")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(PYTHON_ORIGIN, "", repr(count)[:60], "count: expected an integer >= 1")
    check_depth(topology)
    topo = copy.deepcopy(topology)
    nodes = topo.get("nodes", [])
    if not isinstance(nodes, list) or not isinstance(topo.get("links", []), list):
        raise ConfigError(PYTHON_ORIGIN, "$.nodes", "", "expected lists of nodes and links")
    node = next((n for n in nodes if n.get("id") == template), None)
    if node is None:
        raise ConfigError(PYTHON_ORIGIN, "$.nodes", repr(template), "no node with this id to clone")
    links = [lk for lk in topo.get("links", []) if template in (lk.get("from"), lk.get("to"))]
    if len(links) != 1:
        raise ConfigError(PYTHON_ORIGIN, "$.links", repr(template),
                          "the template must have exactly one link")
    stem = template.rstrip("0123456789")
    taken = {n.get("id") for n in nodes}
    added = 0
    index = 0
    while added < count - 1:
        index += 1
        name = "%s%d" % (stem, index)
        if name in taken:
            continue
        nodes.append(dict(copy.deepcopy(node), id=name))
        link = copy.deepcopy(links[0])
        link["to" if link.get("to") == template else "from"] = name
        topo["links"].append(link)
        added += 1
    return topo


def validate(config):
    """Validate a :class:`Config`; returns the resolved configuration dict."""
    return config.validate()


def describe(kind=None):
    """Declared parameters: every kind (dict kind → {doc, params}) or one kind's params.

    Each parameter is a dict: name, type, unit, default, doc, source, and min/max,
    choices or allowed where declared. Unknown kinds raise ConfigError.
    """
    catalog = json.loads(_native.catalog())
    if kind is None:
        return catalog
    if not isinstance(kind, str) or kind not in catalog:
        raise ConfigError(
            PYTHON_ORIGIN, "", repr(kind), "unknown kind; known: " + ", ".join(sorted(catalog))
        )
    return catalog[kind]
