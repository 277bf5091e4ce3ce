// Table of bad configurations: each must be rejected with a ConfigError whose
// text names the right file, JSON path and problem.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

using nlohmann::json;

json good_topology() {
  return json::parse(R"({
    "name": "t",
    "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "sw0", "kind": "switch"},
      {"id": "gpu0", "kind": "gpu"},
      {"id": "ssd0", "kind": "nvme_ssd", "profile": "samsung-980-pro"}
    ],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "ssd0", "gen": 4, "width": 4}
    ]
  })");
}

json good_scenario() {
  return json::parse(R"({"name": "s", "rw": "randread", "bs": 4096, "threads": 64, "ios": 100,
                         "gpu": "gpu0", "ssds": ["ssd0"], "queues": 4, "queue_entries": 64})");
}

struct BadCase {
  std::string name;
  std::function<void(json& topology, json& scenario)> mutate;
  std::string file;     // which file the error must name
  std::string path;     // the JSON path it must name
  std::string problem;  // a phrase of the explanation
};

std::vector<BadCase> bad_cases() {
  return {
      {"misspelt node parameter",
       [](json& t, json&) { t["nodes"][5]["chanels"] = 8; }, "topo.json", "$.nodes[5].chanels",
       "did you mean 'channels'"},
      {"wrong type", [](json& t, json&) { t["links"][0]["gen"] = "five"; }, "topo.json",
       "$.links[0].gen", "expected an integer"},
      {"generation out of range", [](json& t, json&) { t["links"][0]["gen"] = 7; }, "topo.json",
       "$.links[0].gen", "out of range; allowed 1 to 6"},
      {"gpu entry store cost below 0",
       [](json& t, json&) { t["nodes"][4]["entry_store_ns"] = -205.0; }, "topo.json",
       "$.nodes[4].entry_store_ns", "out of range"},
      {"gpu first_lane pass cost above its range",
       [](json& t, json&) { t["nodes"][4]["first_lane_pass_ns"] = 2e4; }, "topo.json",
       "$.nodes[4].first_lane_pass_ns", "out of range"},
      {"list element out of range",
       [](json& t, json&) { t["nodes"][5]["processor_time_scale"] = {1.0, 0.0}; }, "topo.json",
       "$.nodes[5].processor_time_scale[1]", "expected a number, 0.01 to 100"},
      {"not a list", [](json& t, json&) { t["nodes"][5]["processor_time_scale"] = 2.0; },
       "topo.json", "$.nodes[5].processor_time_scale", "expected a list of numbers"},
      {"shadow polling without shadow doorbells",
       [](json& t, json&) { t["nodes"][5]["shadow_doorbell_polling"] = true; }, "topo.json",
       "$.nodes[5].shadow_doorbell_polling", "needs shadow_doorbells true"},
      {"illegal width", [](json& t, json&) { t["links"][2]["width"] = 3; }, "topo.json",
       "$.links[2].width", "expected one of: 1, 2, 4, 8, 16"},
      {"node without id", [](json& t, json&) { t["nodes"][1].erase("id"); }, "topo.json",
       "$.nodes[1].id", "missing required field"},
      {"unknown kind", [](json& t, json&) { t["nodes"][3]["kind"] = "swtich"; }, "topo.json",
       "$.nodes[3].kind", "did you mean 'switch'"},
      {"duplicate id", [](json& t, json&) { t["nodes"][4]["id"] = "sw0"; }, "topo.json",
       "$.nodes[4].id", "duplicate node id"},
      {"link to unknown node", [](json& t, json&) { t["links"][1]["to"] = "gpu9"; }, "topo.json",
       "$.links[1].to", "link to unknown node"},
      {"loop in the PCIe tree",
       [](json& t, json&) {
         t["nodes"].push_back({{"id", "sw1"}, {"kind", "switch"}});
         t["links"].push_back({{"from", "sw0"}, {"to", "sw1"}});
         t["links"].push_back({{"from", "sw1"}, {"to", "rc0"}});
       },
       "topo.json", "$.links[4]", "closes a loop in the PCIe tree"},
      {"device with no path to a root complex",
       [](json& t, json&) { t["links"].erase(2); }, "topo.json", "$.nodes[5]",
       "no path to a root complex"},
      {"endpoint with two links",
       [](json& t, json&) {
         t["nodes"].push_back({{"id", "sw1"}, {"kind", "switch"}});
         t["links"].push_back({{"from", "sw1"}, {"to", "gpu0"}});
       },
       "topo.json", "$.links[3]",
       "gpu0 is a PCIe endpoint (gpu) and already has its one link, $.links[1] (\"sw0\" - "
       "\"gpu0\")"},
      {"socket that is not a cpu",
       [](json& t, json&) { t["nodes"][2]["socket"] = "dram0"; }, "topo.json",
       "$.nodes[2].socket", "expected the id of a node of kind cpu"},
      {"unknown profile",
       [](json& t, json&) { t["nodes"][5]["profile"] = "samsung-990-pro"; }, "topo.json",
       "$.nodes[5].profile", "no nvme_ssd profile of that name"},
      {"negative latency", [](json& t, json&) { t["nodes"][3]["latency_ns"] = -5; }, "topo.json",
       "$.nodes[3].latency_ns", "out of range"},
      {"nodes not an array", [](json& t, json&) { t["nodes"] = json::object(); }, "topo.json",
       "$.nodes", "expected a non-empty array"},
      {"misspelt scenario field", [](json&, json& s) { s["iodepht"] = 4; }, "scen.json",
       "$.iodepht", "did you mean 'iodepth'"},
      {"unknown rw", [](json&, json& s) { s["rw"] = "randomread"; }, "scen.json", "$.rw",
       "expected one of: randread, read, randwrite, write"},
      {"zero threads", [](json&, json& s) { s["threads"] = 0; }, "scen.json", "$.threads",
       "out of range"},
      {"gpu that does not exist", [](json&, json& s) { s["gpu"] = "gpu1"; }, "scen.json", "$.gpu",
       "expected the id of a gpu in the topology (gpu0)"},
      {"ssd list naming a switch", [](json&, json& s) { s["ssds"] = {"sw0"}; }, "scen.json",
       "$.ssds[0]", "expected the id of an nvme_ssd"},
      {"ssds not a list", [](json&, json& s) { s["ssds"] = "ssd0"; }, "scen.json", "$.ssds",
       "expected a list of strings"},
      {"block size not a multiple of the LBA size", [](json&, json& s) { s["bs"] = 1000; },
       "scen.json", "$.bs", "multiple of ssd0's 512 B LBAs"},
      {"more queues than the SSD grants", [](json&, json& s) { s["queues"] = 129; }, "scen.json",
       "$.queues", "grants at most 128 I/O queues"},
      {"queue larger than MQES",
       [](json& t, json& s) {
         t["nodes"][5]["mqes"] = 256;
         s["queue_entries"] = 1024;
       },
       "scen.json", "$.queue_entries", "at most 256 entries"},
      {"no path across sockets",
       [](json& t, json&) {
         t["nodes"].push_back({{"id", "cpu1"}, {"kind", "cpu"}});
         t["nodes"].push_back({{"id", "rc1"}, {"kind", "root_complex"}, {"socket", "cpu1"}});
         t["links"][2]["from"] = "rc1";
       },
       "scen.json", "$.ssds[0]", "no path between gpu0 and ssd0"},
  };
}

class BadConfig : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfig, IsRejectedWithFilePathAndReason) {
  const BadCase& c = GetParam();
  RawConfig raw;
  raw.topology_file = "topo.json";
  raw.scenario_file = "scen.json";
  raw.topology = good_topology();
  raw.scenario = good_scenario();
  // The unmutated pair is valid: each case fails for its own reason.
  ASSERT_NO_THROW(resolve_config(raw));
  c.mutate(raw.topology, raw.scenario);
  try {
    resolve_config(raw);
    FAIL() << "accepted: " << c.name;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), c.file) << e.what();
    EXPECT_EQ(e.path(), c.path) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.problem), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << c.problem;
  }
}

std::string case_name(const ::testing::TestParamInfo<BadCase>& info) {
  std::string name;
  for (char ch : info.param.name) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Table, BadConfig, ::testing::ValuesIn(bad_cases()), case_name);

TEST(BadConfig, TableHasAtLeastFifteenCases) { EXPECT_GE(bad_cases().size(), 15u); }

}  // namespace
}  // namespace gpunvme
