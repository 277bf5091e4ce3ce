// Configuration errors of multi-tenant scenarios, each naming the field inside
// the file. In a file that sorts before the run tests: under AddressSanitizer an
// exception thrown after SystemC has run warp threads in the same process is
// misreported (google/sanitizers#189), so these run before any simulation.
#include <gtest/gtest.h>

#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"
#include "sim/system/run/tenants.h"
#include "tests/run/tenant_config_util.h"

namespace gpunvme {
namespace {

TEST(TenantConfig, ErrorsNameTheFieldInsideTheFile) {
  nlohmann::json doc = test::two_tenants();
  doc["tenants"][1]["scenario"]["iodepht"] = 4;
  ConfigError e = test::tenants_error_of(doc);
  EXPECT_EQ(e.file(), "tenants.json");
  EXPECT_EQ(e.path(), "$.tenants[1].scenario.iodepht");

  doc = test::two_tenants();
  doc["tenants"][1]["name"] = "a";
  EXPECT_EQ(test::tenants_error_of(doc).path(), "$.tenants[1].name");

  doc = test::two_tenants();
  doc["tenants"] = nlohmann::json::array();
  EXPECT_EQ(test::tenants_error_of(doc).path(), "$.tenants");

  doc = test::two_tenants();
  doc["tenants"][0].erase("scenario");
  EXPECT_EQ(test::tenants_error_of(doc).path(), "$.tenants[0].scenario");

  doc = test::two_tenants();
  doc["tenants"][0]["rate_iops"] = -1;
  EXPECT_EQ(test::tenants_error_of(doc).path(), "$.tenants[0].rate_iops");
}

TEST(TenantConfig, PrioritiesNeedWeightedRoundRobin) {
  nlohmann::json doc = test::two_tenants();
  doc["tenants"][0]["priority"] = "high";
  ConfigError e = test::tenants_error_of(doc);
  EXPECT_EQ(e.path(), "$.tenants[0].priority");
  EXPECT_NE(e.problem().find("weighted_round_robin"), std::string::npos) << e.what();
}

TEST(TenantConfig, WeightedRoundRobinNeedsSsdsThatOfferIt) {
  nlohmann::json doc = test::two_tenants();
  doc["arbitration"] = "weighted_round_robin";
  RawConfig raw = load_raw_config(default_topology_file(), default_scenario_file());
  raw.scenario = doc;
  raw.scenario["tenants"][1]["scenario"]["path"] = "gds";
  raw.scenario["tenants"][1]["scenario"]["gpu"] = "gpu0";
  raw.scenario_file = "tenants.json";
  try {
    resolve_config(raw);
    FAIL() << "weighted round robin accepted on an SSD without it";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.arbitration");
    EXPECT_NE(e.problem().find("ssd0"), std::string::npos) << e.what();
  }
}

TEST(TenantConfig, GpuInitiatedTenantsNeedAGpuEach) {
  nlohmann::json doc = test::two_tenants();
  doc["tenants"][1]["scenario"]["gpu"] = "gpu0";
  EXPECT_EQ(test::tenants_error_of(doc).path(), "$.tenants[1].scenario.gpu");
}

TEST(TenantConfig, SharedSsdQueuesStayWithinWhatItGrants) {
  // The PM1743 grants 128 I/O queues: 100 + 100 is too many.
  nlohmann::json doc = test::two_tenants();
  doc["tenants"][0]["scenario"]["queues"] = 100;
  doc["tenants"][1]["scenario"]["queues"] = 100;
  ConfigError e = test::tenants_error_of(doc);
  EXPECT_EQ(e.path(), "$.tenants[1].scenario.queues");
  EXPECT_NE(e.problem().find("200"), std::string::npos) << e.what();
}

TEST(TenantConfig, QueuesArePartitionedPerTenant) {
  RawConfig raw = load_raw_config(
      std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-gpus-shared-ssds.json",
      default_scenario_file());
  raw.scenario = test::two_tenants();
  raw.scenario_file = "tenants.json";
  const RunConfig config = resolve_config(raw);
  ASSERT_TRUE(config.tenants);
  const std::vector<Tenant>& t = config.tenants->tenants;
  // Tenant a has qids 1-4 of ssd0, tenant b 5-8; b runs with the seed + 1.
  EXPECT_EQ(t[0].config.qos.qid_base("ssd0"), 1);
  EXPECT_EQ(t[1].config.qos.qid_base("ssd0"), 5);
  EXPECT_EQ(config.tenants->shared_queues.at("ssd0"), 8u);
  EXPECT_EQ(t[1].config.seed, t[0].config.seed + 1);
}

}  // namespace
}  // namespace gpunvme
