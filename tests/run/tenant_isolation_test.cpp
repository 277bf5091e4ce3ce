// Isolation between tenants on a shared SSD: a tenant whose commands point at another tenant's
// buffer. With per-tenant IOMMU domains the stray DMAs are refused (the command fails with
// Data Transfer Error, no byte lands in the victim's memory, the victim's own I/O is whole);
// with one shared context they are performed and land in the victim's memory. The counts are
// checked against what the scenario implies (I/Os, the stray period, 4 KiB per I/O), not
// against a previous run.
#include <gtest/gtest.h>

#include <string>

#include "sim/system/run/run.h"
#include "sim/system/run/tenants.h"

namespace gpunvme {
namespace {

constexpr std::uint64_t kIos = 2000;
constexpr std::uint64_t kEvery = 50;

nlohmann::json tenant_reads(const std::string& gpu) {
  return {{"kind", "microbenchmark"},
          {"rw", "randread"},
          {"bs", 4096},
          {"iodepth", 1},
          {"threads", 256},
          {"ios", kIos},
          {"gpu", gpu},
          {"ssds", {"ssd0"}},
          {"queues", 4},
          {"queue_entries", 1024}};
}

nlohmann::json run_isolation(const std::string& domains) {
  nlohmann::json doc = {{"name", "isolation"},
                        {"iommu_domains", domains},
                        {"tenants",
                         {{{"name", "victim"}, {"scenario", tenant_reads("gpu0")}},
                          {{"name", "rogue"},
                           {"stray_dma_every", kEvery},
                           {"stray_dma_target", "victim"},
                           {"scenario", tenant_reads("gpu1")}}}}};
  RawConfig raw = load_raw_config(
      std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-gpus-shared-ssds-iommu.json",
      default_scenario_file());
  raw.scenario = doc;
  raw.scenario_file = "isolation.json";
  raw.seed = 1;
  return run(resolve_config(raw));
}

TEST(TenantIsolation, PerTenantDomainsRefuseStrayDmasAndNoByteLands) {
  const nlohmann::json r = run_isolation("per_tenant");
  const nlohmann::json& victim = r["tenants"][0]["isolation"];
  const nlohmann::json& rogue = r["tenants"][1]["isolation"];
  const std::uint64_t strays = rogue["stray_dmas"].get<std::uint64_t>();
  // Every 50th of 2000 data commands, once the victim has a buffer to point at.
  EXPECT_GT(strays, 0u);
  EXPECT_LE(strays, kIos / kEvery);
  EXPECT_EQ(rogue["refused_dmas"].get<std::uint64_t>(), strays);
  EXPECT_EQ(rogue["refused_bytes"].get<std::uint64_t>(), strays * 4096);
  EXPECT_EQ(rogue["foreign_bytes_written"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(rogue["pasid"].get<int>(), 2);
  // The refused commands failed, the others succeeded; the SSD reports the status.
  const nlohmann::json& rogue_summary = r["tenants"][1]["summary"];
  EXPECT_EQ(rogue_summary["failed"].get<std::uint64_t>(), strays);
  EXPECT_EQ(rogue_summary["ios"].get<std::uint64_t>(), kIos - strays);
  EXPECT_EQ(r["ssds"]["ssd0"]["error_statuses"]["Data Transfer Error"].get<std::uint64_t>(), strays)
      << r["ssds"]["ssd0"]["error_statuses"].dump();
  // The victim: nothing landed in its memory, every one of its I/Os moved its own data.
  EXPECT_EQ(victim["bytes_landed_by_others"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(victim["refused_dmas"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r["tenants"][0]["summary"]["ios"].get<std::uint64_t>(), kIos);
  EXPECT_EQ(r["tenants"][0]["summary"]["failed"].get<std::uint64_t>(), 0u);
  // Its data DMAs: 4 KiB each at 4 KiB-aligned buffers, all translated by rc0's IOMMU, one
  // IOTLB lookup per page.
  EXPECT_EQ(victim["dma_bytes"].get<std::uint64_t>(), kIos * 4096);
  EXPECT_EQ(victim["translated_bytes"].get<std::uint64_t>(), kIos * 4096);
  EXPECT_EQ(victim["iotlb_lookups"].get<std::uint64_t>(), kIos);
  EXPECT_EQ(rogue["dma_bytes"].get<std::uint64_t>(), (kIos - strays) * 4096);
  EXPECT_EQ(rogue["iotlb_lookups"].get<std::uint64_t>(), kIos - strays);
}

TEST(TenantIsolation, ASharedContextLetsStrayDmasLandInTheVictimsMemory) {
  const nlohmann::json r = run_isolation("shared");
  const nlohmann::json& victim = r["tenants"][0]["isolation"];
  const nlohmann::json& rogue = r["tenants"][1]["isolation"];
  const std::uint64_t strays = rogue["stray_dmas"].get<std::uint64_t>();
  EXPECT_GT(strays, 0u);
  EXPECT_EQ(rogue["refused_dmas"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(rogue["foreign_bytes_written"].get<std::uint64_t>(), strays * 4096);
  EXPECT_EQ(victim["bytes_landed_by_others"].get<std::uint64_t>(), strays * 4096);
  EXPECT_TRUE(rogue["pasid"].is_null());
  EXPECT_EQ(r["tenants"][1]["summary"]["failed"].get<std::uint64_t>(), 0u);
}

}  // namespace
}  // namespace gpunvme
