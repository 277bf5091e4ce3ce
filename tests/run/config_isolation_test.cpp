// Configuration errors of tenant isolation, each naming the field inside the file. Sorted
// before the run tests, for the reason config_tenants_test.cpp gives.
#include <gtest/gtest.h>

#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"
#include "sim/system/run/tenants.h"

namespace gpunvme {
namespace {

nlohmann::json isolation_reads(const std::string& gpu) {
  return {{"kind", "microbenchmark"}, {"threads", 64}, {"ios", 100}, {"gpu", gpu},
          {"ssds", {"ssd0"}},         {"queues", 4}};
}

nlohmann::json two_isolated_tenants() {
  return {{"name", "t"},
          {"tenants",
           {{{"name", "a"}, {"scenario", isolation_reads("gpu0")}},
            {{"name", "b"}, {"scenario", isolation_reads("gpu1")}}}}};
}

ConfigError error_of(const nlohmann::json& doc, const std::string& topology) {
  RawConfig raw =
      load_raw_config(std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/" + topology + ".json",
                      default_scenario_file());
  raw.scenario = doc;
  raw.scenario_file = "tenants.json";
  try {
    resolve_config(raw);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << doc.dump();
  return ConfigError("", "", "", "");
}

TEST(IsolationConfig, PerTenantDomainsNeedATranslatingIommu) {
  nlohmann::json doc = two_isolated_tenants();
  doc["iommu_domains"] = "per_tenant";
  const ConfigError e = error_of(doc, "two-gpus-shared-ssds");
  EXPECT_EQ(e.path(), "$.iommu_domains");
  EXPECT_EQ(e.value(), "\"per_tenant\"");
  EXPECT_NE(e.problem().find("iommu = translate on rc0"), std::string::npos) << e.problem();
}

TEST(IsolationConfig, AStrayDmaNamesAnotherTenant) {
  nlohmann::json doc = two_isolated_tenants();
  doc["tenants"][1]["stray_dma_every"] = 10;
  doc["tenants"][1]["stray_dma_target"] = "nobody";
  ConfigError e = error_of(doc, "two-gpus-shared-ssds-iommu");
  EXPECT_EQ(e.path(), "$.tenants[1].stray_dma_target");
  EXPECT_NE(e.problem().find("(a)"), std::string::npos) << e.problem();

  doc["tenants"][1]["stray_dma_target"] = "b";  // itself
  EXPECT_EQ(error_of(doc, "two-gpus-shared-ssds-iommu").path(), "$.tenants[1].stray_dma_target");

  doc = two_isolated_tenants();
  doc["tenants"][0]["stray_dma_every"] = -1;
  EXPECT_EQ(error_of(doc, "two-gpus-shared-ssds-iommu").path(), "$.tenants[0].stray_dma_every");
}

}  // namespace
}  // namespace gpunvme
