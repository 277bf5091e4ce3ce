"""Every bad input through the Python API raises gpunvme.ConfigError, never a plain
Python error (RecursionError, TypeError, KeyError, ValueError, RuntimeError)."""

import pytest

import gpunvme


def deep(levels):
    value = []
    for _ in range(levels):
        value = [value]
    return value


BAD_INPUTS = {
    "deep nesting in a scenario": lambda: gpunvme.Config(
        {"nodes": []}, {"name": deep(5000)}).validate(),
    "deep nesting in an override": lambda: gpunvme.load_config().set("scenario.name", deep(5000)),
    "dict with non-str keys": lambda: gpunvme.load_config(scenario={1: "x"}).validate(),
    "non-dict topology": lambda: gpunvme.with_ssds("default", 2),
    "topology given as bytes": lambda: gpunvme.load_config(topology=b"default"),
    "topology given as a number": lambda: gpunvme.load_config(topology=5),
    "overrides of a bad type": lambda: gpunvme.load_config(overrides=5),
    "override path that is not a string": lambda: gpunvme.load_config().set(5, 1),
    "override with a NaN": lambda: gpunvme.load_config().set("scenario.span_gib", float("nan")),
    "override with bytes": lambda: gpunvme.load_config().set("scenario.name", b"x"),
    "huge integer": lambda: gpunvme.load_config().set("scenario.ios", 10**400),
    "huge integer in a dict": lambda: gpunvme.load_config(scenario={"ios": 10**30}).validate(),
    "from_dict without a scenario": lambda: gpunvme.Config.from_dict({"topology": {}}),
    "from_dict of a list": lambda: gpunvme.Config.from_dict([1, 2]),
    "run of a string": lambda: gpunvme.run("default"),
    "describe of a list": lambda: gpunvme.describe([]),
    "with_ssds count not an int": lambda: gpunvme.with_ssds(gpunvme.load_config().topology, "3"),
    "negative seed": lambda: gpunvme.load_config(seed=-1).validate(),
    "duplicate ssds": lambda: gpunvme.load_config().set(
        "scenario.ssds", ["ssd0", "ssd0"]).validate(),
    "lone surrogate in a file name": lambda: gpunvme.load_config(topology="\udcff.json"),
    "number beyond a double in a --set value": lambda: gpunvme.load_config().set(
        "scenario.span_gib=1e400"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_raises_config_error(name):
    with pytest.raises(gpunvme.ConfigError) as info:
        BAD_INPUTS[name]()
    # The message converts to text and names where the mistake is.
    assert str(info.value)
    assert info.value.file


def test_deep_nesting_names_the_limit():
    with pytest.raises(gpunvme.ConfigError, match="deeper than 256 levels"):
        gpunvme.load_config().set("scenario.name", deep(300))
