// Scenario kinds: the resolved scenario keeps only its kind's fields, every
// shipped scenario file validates, and every kind is deterministic. (Fields
// given for the wrong kind: config_errors_test.cpp.)
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/system/workload/scenario_spec.h"
#include "sim/system/workload/workload.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

TEST(ScenarioKinds, TheResolvedScenarioKeepsOnlyItsKindsFields) {
  const RunConfig kv = test::scenario("kv-cache-gpu");
  const nlohmann::json& s = kv.scenario.params.json();
  EXPECT_TRUE(s.contains("layers"));
  EXPECT_TRUE(s.contains("strategy"));  // fields of every kind stay
  EXPECT_TRUE(s.contains("bs"));
  EXPECT_FALSE(s.contains("rw"));
  EXPECT_FALSE(s.contains("rows"));
  EXPECT_FALSE(s.contains("scale"));
  const RunConfig micro = load_config("", "", {}, 1);
  EXPECT_TRUE(micro.scenario.params.json().contains("rw"));
  EXPECT_FALSE(micro.scenario.params.json().contains("layers"));
  // Fields shared by two kinds.
  EXPECT_EQ(field_kinds("zipf_theta").size(), 2u);
  EXPECT_TRUE(field_kinds("threads").empty());
}

TEST(ScenarioKinds, EveryShippedScenarioValidates) {
  const std::filesystem::path dir = std::string(GPUNVME_SOURCE_DIR) + "/scenarios";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    EXPECT_NO_THROW(load_config("", entry.path().string(), {}, 1)) << entry.path();
  }
  EXPECT_GE(files, 12);
}

TEST(ScenarioKinds, ThereIsAScenarioForEveryKindAndPath) {
  for (const char* name : {"randread-4k", "randread-4k-gds", "randread-4k-bounce", "kv-cache-gpu",
                           "kv-cache-gds", "kv-cache-bounce", "graph-bfs-gpu", "graph-bfs-gds",
                           "graph-bfs-bounce", "gather-gpu", "gather-gds", "gather-bounce"}) {
    EXPECT_TRUE(std::filesystem::exists(test::scenario_file(name))) << name;
  }
}

TEST(ScenarioKinds, EveryKindIsDeterministic) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs{
      {"kv-cache-gpu",
       {"scenario.layers=2", "scenario.context_tokens=512", "scenario.bs=65536",
        "scenario.hbm_kv_gib=0.00390625", "scenario.host_kv_gib=0.001953125"}},
      {"graph-bfs-gpu", {"scenario.scale=8", "scenario.edge_factor=4", "scenario.bs=512"}},
      {"gather-gds", {"scenario.lookups=500", "scenario.batch_lookups=100"}},
  };
  for (const auto& [name, overrides] : runs) {
    auto once = [&, &name = name, &overrides = overrides] {
      nlohmann::json r = run(test::scenario(name, overrides, 5));
      r["summary"].erase("wall_time_s");
      return r.dump();
    };
    EXPECT_EQ(once(), once()) << name;
  }
}

}  // namespace
}  // namespace gpunvme
