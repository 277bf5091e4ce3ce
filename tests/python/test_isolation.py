"""Tenant isolation from Python: the isolation columns of tenants_frame for a tenant whose
stray DMAs the per-tenant IOMMU domains refuse."""

import os

import gpunvme

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_tenants_frame_shows_refused_dmas_and_translations():
    cfg = gpunvme.load_config(
        topology=os.path.join(ROOT, "configs/topologies/two-gpus-shared-ssds-iommu.json"),
        scenario=os.path.join(ROOT, "scenarios/tenants/isolation-stray-dma.json"),
    )
    cfg.set("scenario.tenants.0.scenario.ios", 1000)
    cfg.set("scenario.tenants.1.scenario.ios", 1000)
    frame = gpunvme.run(cfg).tenants_frame()
    rogue, victim = frame.loc["rogue"], frame.loc["victim"]
    # Every 50th of 1000 commands at most, each refused and failed; nothing reached the victim.
    assert 0 < rogue["isolation.refused_dmas"] <= 20
    assert rogue["failed"] == rogue["isolation.refused_dmas"]
    assert victim["isolation.bytes_landed_by_others"] == 0
    assert victim["isolation.translated_bytes"] == 1000 * 4096
    assert victim["isolation.pasid"] == 1 and rogue["isolation.pasid"] == 2
