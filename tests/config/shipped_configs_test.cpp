// Every configuration the project ships validates, and overrides work like
// the files they change.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/catalog.h"
#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> json_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ShippedConfigs, EveryTopologyValidates) {
  const auto files = json_files(std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies");
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    EXPECT_NO_THROW(resolve_topology(catalog(), read_json_file(file), file));
  }
}

TEST(ShippedConfigs, EveryScenarioValidatesOnTheDefaultTopology) {
  const auto files = json_files(std::string(GPUNVME_SOURCE_DIR) + "/scenarios");
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    EXPECT_NO_THROW(load_config("", file, {}, 1));
  }
}

TEST(ShippedConfigs, EverySsdProfileResolvesOnTheDefaultTopology) {
  const auto files = json_files(std::string(GPUNVME_SOURCE_DIR) + "/configs/ssd");
  ASSERT_GE(files.size(), 4u);
  for (const std::string& file : files) {
    const std::string name = fs::path(file).stem().string();
    SCOPED_TRACE(name);
    RunConfig config = load_config("", "", {"topology.nodes.ssd0.profile=" + name}, 1);
    EXPECT_EQ(config.topology.node("ssd0")->profile, name);
  }
}

// configs/topologies/two-ssds.json formats ssd0 with 512 B LBAs and ssd1 with 4 KiB: I/Os of
// 1 KiB are valid on ssd0 alone and refused, naming ssd1 and the field, once ssd1 is added.
TEST(ShippedConfigs, TwoSsdTopologyChecksBsAgainstEachNamespace) {
  const std::string topology = std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-ssds.json";
  EXPECT_NO_THROW(load_config(topology, "", {"scenario.bs=1024"}, 1));
  try {
    load_config(topology, "", {"scenario.bs=1024", R"(scenario.ssds=["ssd0","ssd1"])"}, 1);
    ADD_FAILURE() << "1 KiB I/Os on a 4 KiB-LBA namespace were accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.bs");
    EXPECT_NE(std::string(e.what()).find("ssd1"), std::string::npos) << e.what();
  }
}

TEST(Overrides, SetChangesTheResolvedValue) {
  RunConfig config = load_config(
      "", "",
      {"scenario.iodepth=4", "topology.nodes.ssd0.controller_cores=3", "topology.links.1.gen=4",
       "seed=9"},
      1);
  EXPECT_EQ(config.scenario.params.integer("iodepth"), 4);
  EXPECT_EQ(config.topology.node("ssd0")->params.integer("controller_cores"), 3);
  EXPECT_EQ(config.topology.links[1].params.integer("gen"), 4);
  EXPECT_EQ(config.seed, 9u);
}

TEST(Overrides, ProfileValuesSitBetweenDefaultsAndTheUser) {
  RunConfig plain = load_config("", "", {}, 1);
  // samsung-pm1743 sets controller_cores; the declared default differs.
  const auto from_profile = plain.topology.node("ssd0")->params.integer("controller_cores");
  EXPECT_EQ(from_profile, 8);
  RunConfig user = load_config("", "", {"topology.nodes.ssd0.controller_cores=2"}, 1);
  EXPECT_EQ(user.topology.node("ssd0")->params.integer("controller_cores"), 2);
}

TEST(Overrides, BadOverridesAreConfigErrorsNamingTheOption) {
  struct Case {
    std::string set, path, phrase;
  };
  const std::vector<Case> cases = {
      {"scenario.iodepth=zero", "$.iodepth", "expected an integer"},
      {"topology.nodes.ssd9.mqes=4", "$.nodes[ssd9]", "no element with that index or id"},
      {"scenario.threads", "", "expected PATH=VALUE"},
      {"gpu.sms=4", "", "path must start with"},
      {"seed=-1", "seed", "non-negative integer"},
      {"topology.nodez.x=1", "$.nodez", "did you mean 'nodes'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.set);
    try {
      load_config("", "", {c.set}, 1);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), c.path) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.phrase), std::string::npos) << e.what();
    }
  }
}

// A value an override set is the override's mistake, not the file's: the
// error names the override that set the refused field (not the last one).
TEST(Overrides, AValueErrorAfterAnOverrideNamesTheOverride) {
  try {
    load_config("", "", {"scenario.rw=sideways", "scenario.threads=256"}, 1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "--set scenario.rw=sideways");
    EXPECT_EQ(e.path(), "$.rw");
    EXPECT_EQ(e.value(), "\"sideways\"");
  }
}

}  // namespace
}  // namespace gpunvme
