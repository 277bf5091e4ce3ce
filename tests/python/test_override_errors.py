"""A value an override set that validation refuses is blamed on the override (the
CLI's `--set`, Python's set/with_/load_config overrides), not on the file whose value it
replaced; a value from the file itself still names the file."""

import pytest

import gpunvme


def refusal(config):
    with pytest.raises(gpunvme.ConfigError) as caught:
        config.validate()
    return caught.value


def test_an_override_is_named_as_the_origin_of_the_value_it_set(small_config, cli):
    # ssd0 is the sixth node of the shipped default topology: $.nodes[5].
    error = refusal(small_config.with_("topology.nodes.ssd0.mqes=1"))
    assert (error.file, error.path, error.value) == (
        "--set topology.nodes.ssd0.mqes=1", "$.nodes[5].mqes", "1")
    proc = cli("check", "--set", "topology.nodes.ssd0.mqes=1")
    assert proc.returncode == 2 and proc.stderr.strip() == "error: " + str(error)
    # load_config's overrides are set() calls too.
    error = refusal(gpunvme.load_config(overrides={"scenario.ssds": ["ssd0", "ssd0"]}))
    assert (error.file, error.path) == ('--set scenario.ssds=["ssd0", "ssd0"]', "$.ssds[1]")
    # The last override of a field is the one blamed; a copy keeps the record.
    error = refusal(small_config.with_({"scenario.iodepth": 2}).copy().set(
        "scenario.iodepth", 5000))
    assert error.file == "--set scenario.iodepth=5000"


def test_values_not_set_by_an_override_name_their_file(small_config):
    edited = small_config.copy()
    edited.scenario["iodepth"] = 0  # the document edited directly: no override
    error = refusal(edited)
    assert error.file == small_config.scenario_file and error.path == "$.iodepth"
    # An override of another field does not take the blame.
    error = refusal(edited.with_({"scenario.threads": 256}))
    assert error.file == small_config.scenario_file
    # Nor does one whose field merely starts the name of the refused one.
    prefixed = small_config.with_({"scenario.threads": 256})
    prefixed.scenario["threads_per_block"] = 16
    error = refusal(prefixed)
    assert (error.file, error.path) == (small_config.scenario_file, "$.threads_per_block")
