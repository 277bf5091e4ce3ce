"""Remote reads from Python: a run on the two-host topology and its seams as a frame."""

import os

import pytest

import gpunvme
from conftest import SOURCE_DIR

TOPOLOGY = os.path.join(SOURCE_DIR, "configs", "topologies", "two-hosts-rdma.json")
SCENARIO = os.path.join(SOURCE_DIR, "scenarios", "remote", "staged.json")


@pytest.mark.parametrize("path", ["remote_staged", "nvmf_gpudirect", "dpu"])
def test_remote_frame_counts_the_seams_of_each_path(path):
    r = gpunvme.run(topology=TOPOLOGY, scenario=SCENARIO,
                    overrides=["scenario.path=" + path, "scenario.ios=200",
                               "scenario.threads=32"])
    frame = r.remote_frame()
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["path"] == path
    # 4 KiB reads: staged, the NIC writes each into host memory and the copy reads it back.
    staged = path == "remote_staged"
    assert row["initiator_host_memory_bytes"] == (2 * 200 * 4096 if staged else 0)
    assert row["copies"] == (200 if staged else 0)
    assert (row["dpu_core_ns_per_io"] > 0) == (path == "dpu")
    assert (row["host_core_ns_per_io"] > 0) == (path != "dpu")
    for hop in ("network", "nic_pcie", "nic", "ssd", "target_software", "initiator"):
        assert row["per_hop_ns." + hop] > 0, hop
    assert row["registrations.initiator_nic.translation_misses"] > 0


def test_a_local_run_has_no_remote_frame():
    assert gpunvme.run(overrides=["scenario.ios=100"]).remote_frame().empty


def test_a_refused_peer_path_is_a_config_error():
    with pytest.raises(gpunvme.ConfigError) as error:
        gpunvme.run(topology=TOPOLOGY, scenario=SCENARIO,
                    overrides=["scenario.path=nvmf_gpudirect",
                               "topology.nodes.sw0.acs_request_redirect=true",
                               "topology.nodes.rc0.peer_to_peer=block"])
    assert error.value.path == "$.path"


def test_storage_hosts_frame_gives_each_hosts_route_and_hops():
    topology = os.path.join(SOURCE_DIR, "configs", "topologies", "three-hosts-leaf-spine.json")
    scenario = os.path.join(SOURCE_DIR, "scenarios", "remote", "leaf-spine.json")
    r = gpunvme.run(topology=topology, scenario=scenario,
                    overrides=["scenario.ios=200", "scenario.threads=32"])
    frame = r.storage_hosts_frame()
    assert list(frame.index) == ["storage_a", "storage_b"]
    assert frame["ios"].sum() == 200
    assert list(frame.loc["storage_b", "route"]) == ["nic0", "leaf0", "spine0", "leaf1", "nic2"]
    assert (frame["network_switches"] == 3).all()
    # Each switch with the cable after it: at least its 130 ns cut-through and 10 ns of cable.
    assert frame.loc["storage_a", "to_target.leaf0>spine0"] >= 140.0
    assert "storage_hosts" not in r.remote_frame().columns
