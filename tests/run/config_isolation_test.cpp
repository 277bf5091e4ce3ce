// Configuration errors of tenant isolation, each naming the field inside the file. Sorted
// before the run tests, for the reason config_tenants_test.cpp gives.
#include <gtest/gtest.h>

#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"
#include "sim/system/run/tenants.h"
#include "tests/run/tenant_config_util.h"

namespace gpunvme {
namespace {

TEST(IsolationConfig, PerTenantDomainsNeedATranslatingIommu) {
  nlohmann::json doc = test::two_tenants();
  doc["iommu_domains"] = "per_tenant";
  const ConfigError e = test::tenants_error_of(doc, "two-gpus-shared-ssds");
  EXPECT_EQ(e.path(), "$.iommu_domains");
  EXPECT_EQ(e.value(), "\"per_tenant\"");
  EXPECT_NE(e.problem().find("iommu = translate on rc0"), std::string::npos) << e.problem();
}

TEST(IsolationConfig, AStrayDmaNamesAnotherTenant) {
  nlohmann::json doc = test::two_tenants();
  doc["tenants"][1]["stray_dma_every"] = 10;
  doc["tenants"][1]["stray_dma_target"] = "nobody";
  ConfigError e = test::tenants_error_of(doc, "two-gpus-shared-ssds-iommu");
  EXPECT_EQ(e.path(), "$.tenants[1].stray_dma_target");
  EXPECT_NE(e.problem().find("(a)"), std::string::npos) << e.problem();

  doc["tenants"][1]["stray_dma_target"] = "b";  // itself
  EXPECT_EQ(test::tenants_error_of(doc, "two-gpus-shared-ssds-iommu").path(),
            "$.tenants[1].stray_dma_target");

  doc = test::two_tenants();
  doc["tenants"][0]["stray_dma_every"] = -1;
  EXPECT_EQ(test::tenants_error_of(doc, "two-gpus-shared-ssds-iommu").path(),
            "$.tenants[0].stray_dma_every");
}

}  // namespace
}  // namespace gpunvme
