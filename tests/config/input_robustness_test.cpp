// Bad input that used to crash, pass silently or fail without naming the
// field: each is a ConfigError naming the file, the JSON path and the value;
// and `check` (resolve_config) refuses exactly what building a run refuses.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/system/config/resource_limits.h"
#include "sim/system/run/catalog.h"
#include "sim/system/run/run.h"
#include "sim/system/run/setup_checks.h"
#include "sim/system/workload/csr_graph.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {
namespace {

using nlohmann::json;

json small_topology() {
  return json::parse(R"({
    "name": "t",
    "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "sw0", "kind": "switch"},
      {"id": "gpu0", "kind": "gpu"},
      {"id": "ssd0", "kind": "nvme_ssd", "profile": "samsung-980-pro"},
      {"id": "ssd1", "kind": "nvme_ssd", "profile": "samsung-980-pro", "capacity_gib": 64}
    ],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "ssd0", "gen": 4, "width": 4},
      {"from": "sw0", "to": "ssd1", "gen": 4, "width": 4}
    ]
  })");
}

json small_scenario() {
  return json::parse(R"({"name": "s", "rw": "randread", "bs": 4096, "threads": 64, "ios": 200,
                         "gpu": "gpu0", "ssds": ["ssd0"], "queues": 4, "queue_entries": 64})");
}

RawConfig small_raw() {
  RawConfig raw;
  raw.topology_file = "topo.json";
  raw.scenario_file = "scen.json";
  raw.topology = small_topology();
  raw.scenario = small_scenario();
  return raw;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("gpunvme_robustness_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// The error `action` throws; fails the test when it throws none or another kind.
ConfigError config_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ConfigError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ConfigError: " << e.what();
    return ConfigError("", "", "", "");
  }
  ADD_FAILURE() << "accepted";
  return ConfigError("", "", "", "");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- duplicates in id lists -------------------------------------------------

TEST(InputRobustness, DuplicateSsdInTheScenarioIsRefused) {
  RawConfig raw = small_raw();
  raw.scenario["ssds"] = {"ssd0", "ssd1", "ssd0"};
  const ConfigError e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.file(), "scen.json");
  EXPECT_EQ(e.path(), "$.ssds[2]");
  EXPECT_EQ(e.value(), "\"ssd0\"");
  EXPECT_TRUE(contains(e.problem(), "duplicate: \"ssd0\" is already at $.ssds[0]")) << e.what();
}

TEST(InputRobustness, DuplicatesInEveryStringListAreRefused) {
  RawConfig raw = small_raw();
  raw.topology["nodes"][5]["fault_schedule"] = {"media@cmd=3", "media@cmd=3"};
  ConfigError e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.path(), "$.nodes[5].fault_schedule[1]") << e.what();
  raw = small_raw();
  raw.topology["nodes"][3]["acs_ports"] = {"gpu0", "gpu0"};
  e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.path(), "$.nodes[3].acs_ports[1]") << e.what();
}

// --- span beyond the drive ---------------------------------------------------

TEST(InputRobustness, SpanBeyondTheSmallestSsdIsRefused) {
  RawConfig raw = small_raw();
  raw.scenario["ssds"] = {"ssd0", "ssd1"};
  raw.scenario["span_gib"] = 100;  // ssd1 holds 64 GiB
  const ConfigError e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.file(), "scen.json");
  EXPECT_EQ(e.path(), "$.span_gib");
  EXPECT_EQ(e.value(), "100");
  EXPECT_TRUE(contains(e.problem(), "smallest SSD of the scenario, ssd1 (68719476736 B"))
      << e.what();
  raw.scenario["span_gib"] = 64;  // exactly the drive: allowed
  EXPECT_NO_THROW(resolve_config(raw));
}

// --- JSON that is too deep, too large or not text ----------------------------

TEST(InputRobustness, DeeplyNestedJsonIsRefusedWithoutCrashing) {
  const std::string deep = std::string(65000, '[') + std::string(65000, ']');
  const std::string file = temp_file("deep.json", "{\"name\": " + deep + "}");
  const ConfigError e = config_error_of([&] { read_json_file(file); });
  EXPECT_EQ(e.file(), file);
  EXPECT_TRUE(contains(e.problem(), "nest deeper than 256 levels (line 1, column 265)"))
      << e.what();
  RawConfig raw = small_raw();
  const ConfigError set = config_error_of([&] { apply_set(raw, "scenario.name=" + deep); });
  EXPECT_EQ(set.path(), "name");
  EXPECT_TRUE(contains(set.problem(), "nest deeper than 256 levels")) << set.what();
  EXPECT_LT(std::string(set.what()).size(), 300u);
  std::filesystem::remove(file);
}

TEST(InputRobustness, RenderingAValueIsBoundedForAnySizeOrDepth) {
  json deep = json::array();
  json* inner = &deep;
  for (int i = 0; i < 100000; ++i) {
    inner->push_back(json::array());
    inner = &(*inner)[0];
  }
  const std::string shown = render_value(deep);
  EXPECT_EQ(shown, std::string(57, '[') + "...");
  json wide = json::array();
  for (int i = 0; i < 1000000; ++i) wide.push_back(i);
  EXPECT_EQ(render_value(wide).size(), 60u);
  // Bytes that are not UTF-8 never make rendering throw.
  EXPECT_EQ(render_value(json(std::string("a\xff"))), "\"a\xEF\xBF\xBD\"");
}

TEST(InputRobustness, NumbersBeyondADoubleNameTheirOrigin) {
  const std::string file = temp_file("huge.json", R"({"name": "s", "span_gib": 1e400})");
  ConfigError e = config_error_of([&] { read_json_file(file); });
  EXPECT_EQ(e.file(), file);
  EXPECT_TRUE(contains(e.problem(), "beyond the range of a double")) << e.what();
  RawConfig raw = small_raw();
  e = config_error_of([&] { apply_set(raw, "scenario.span_gib=1e400"); });
  EXPECT_EQ(e.file(), "--set scenario.span_gib=1e400");
  EXPECT_EQ(e.path(), "span_gib");
  EXPECT_TRUE(contains(e.problem(), "beyond the range of a double")) << e.what();
  std::filesystem::remove(file);
}

TEST(InputRobustness, NonFiniteNumbersAreRefused) {
  RawConfig raw = small_raw();
  raw.scenario["span_gib"] = std::numeric_limits<double>::quiet_NaN();
  ConfigError e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.path(), "$.span_gib");
  EXPECT_TRUE(contains(e.problem(), "finite")) << e.what();
  raw = small_raw();
  raw.topology["nodes"][5]["processor_time_scale"] = {1.0, 1.0, 1.0,
                                                      std::numeric_limits<double>::infinity()};
  e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.path(), "$.nodes[5].processor_time_scale[3]") << e.what();
}

TEST(InputRobustness, HugeValueForAChoiceIsRefused) {
  RawConfig raw = small_raw();
  raw.topology["links"][0]["width"] = 1e300;
  const ConfigError e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.path(), "$.links[0].width");
  EXPECT_TRUE(contains(e.problem(), "expected one of: 1, 2, 4, 8, 16")) << e.what();
}

TEST(InputRobustness, OverflowingArrayIndexIsAPathError) {
  RawConfig raw = small_raw();
  const ConfigError e =
      config_error_of([&] { apply_set(raw, "topology.links.99999999999999999999.gen=4"); });
  EXPECT_EQ(e.file(), "--set topology.links.99999999999999999999.gen=4");
  EXPECT_EQ(e.path(), "$.links[99999999999999999999]");
  EXPECT_TRUE(contains(e.problem(), "no element with that index or id (array has 4 elements)"));
}

TEST(InputRobustness, InvalidUtf8InASetValueIsRefusedAtInput) {
  RawConfig raw = small_raw();
  const ConfigError e = config_error_of([&] { apply_set(raw, "scenario.name=ab\xff\xfe"); });
  EXPECT_TRUE(contains(e.problem(), "not valid UTF-8 (byte 0xFF at offset 16)")) << e.what();
  // The message itself is valid UTF-8: the bad bytes are escaped.
  EXPECT_TRUE(contains(e.file(), "ab\\xFF\\xFE")) << e.file();
  EXPECT_EQ(utf8_problem(e.what()), "");
}

TEST(InputRobustness, BinaryAndDirectoryConfigsSayWhatTheyAre) {
  const std::string binary = temp_file("binary.json", std::string("{\"a\x00", 4));
  ConfigError e = config_error_of([&] { read_json_file(binary); });
  EXPECT_EQ(e.problem(), "not a JSON text file: it holds a NUL byte (offset 3)");
  const std::string dir = std::filesystem::temp_directory_path().string();
  e = config_error_of([&] { read_json_file(dir); });
  EXPECT_EQ(e.problem(), "is a directory, not a JSON file");
  e = config_error_of([&] { read_graph_file(dir, true); });
  EXPECT_EQ(e.problem(), "is a directory, not a graph file");
  std::filesystem::remove(binary);
}

TEST(InputRobustness, NegativeAndOversizedSeedsAreRefusedAlike) {
  for (const std::string text : {"-5", "-1", "18446744073709551616", "1.5", "", "+3"}) {
    const ConfigError e = config_error_of([&] { parse_seed(text, "--seed"); });
    EXPECT_EQ(e.path(), "seed");
    EXPECT_EQ(e.problem(), "expected a non-negative integer below 2^64") << text;
  }
  EXPECT_EQ(parse_seed("18446744073709551615", "--seed"), 18446744073709551615ull);
  RawConfig raw = small_raw();
  EXPECT_EQ(config_error_of([&] { apply_set(raw, "seed=-5"); }).problem(),
            "expected a non-negative integer below 2^64");
}

// --- resource limits ---------------------------------------------------------

class MemoryCap : public ::testing::Test {
 protected:
  void TearDown() override { set_max_memory_bytes(default_max_memory_bytes()); }
};

TEST_F(MemoryCap, LargeGraphIsRefusedBeforeItIsMade) {
  RawConfig raw = small_raw();
  raw.scenario = {{"kind", "graph"}, {"scale", 30}, {"ssds", {"ssd0"}}};
  set_max_memory_bytes(4ull << 30);
  const ConfigError e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.path(), "$.scale");
  EXPECT_TRUE(contains(e.problem(), "above the cap of 4096 MiB")) << e.what();
}

TEST_F(MemoryCap, MatrixMarketSizeLineIsCheckedBeforeAllocating) {
  const std::string file = temp_file("huge.mtx",
                                     "%%MatrixMarket matrix coordinate pattern general\n"
                                     "2147483648 2147483648 1\n1 2\n");
  set_max_memory_bytes(1ull << 30);
  const ConfigError e = config_error_of([&] { read_graph_file(file, true); });
  EXPECT_EQ(e.path(), "line 2");
  EXPECT_TRUE(contains(
      e.problem(), "(2147483648 vertices, 1 entries) needs more than the memory cap of 1024 MiB"))
      << e.what();
  std::filesystem::remove(file);
}

TEST_F(MemoryCap, EstimateGrowsWithWhatTheRunHolds) {
  RawConfig raw = small_raw();
  const std::uint64_t base = estimate_memory(resolve_config(raw)).bytes();
  raw.scenario["threads"] = 64 * 1024;
  const std::uint64_t more_warps = estimate_memory(resolve_config(raw)).bytes();
  // 2,046 warps more, each a simulated thread with its stack.
  EXPECT_GT(more_warps - base, 2000ull * 16 * 1024);
}

// --- check refuses what run refuses at setup ---------------------------------

struct SetupCase {
  std::string name;
  std::function<void(json& topology, json& scenario)> mutate;
  bool valid;
  std::string path;  // the field the error names when not valid
};

std::vector<SetupCase> setup_cases() {
  const std::string no_edges = temp_file("no-edges.txt", "# no edges\n5 5\n");
  const std::string tiny = temp_file("tiny.txt", "0 1\n1 2\n");
  return {
      {"defaults", [](json&, json&) {}, true, ""},
      {"scheduled fault", [](json& t, json&) { t["nodes"][5]["fault_schedule"] = {"media@cmd=3"}; },
       true, ""},
      {"malformed scheduled fault",
       [](json& t, json&) {
         t["nodes"][5]["fault_schedule"] = {"media@cmd=3", "oops"};
       },
       false, "$.nodes[5].fault_schedule[1]"},
      {"block order a permutation",
       [](json& t, json&) {
         t["nodes"][4]["sms"] = 4;
         t["nodes"][4]["block_sm_order"] = {3, 2, 1, 0};
       },
       true, ""},
      {"block order that does not fit sms",
       [](json& t, json&) {
         t["nodes"][4]["sms"] = 4;
         t["nodes"][4]["block_sm_order"] = {0, 1};
       },
       false, "$.nodes[4].block_sm_order"},
      {"block order naming an SM beyond sms",
       [](json& t, json&) {
         t["nodes"][4]["sms"] = 2;
         t["nodes"][4]["block_sm_order"] = {0, 7};
       },
       false, "$.nodes[4].block_sm_order"},
      {"L2 partition list of the wrong size",
       [](json& t, json&) {
         t["nodes"][4]["sms"] = 4;
         t["nodes"][4]["sm_l2_partition"] = {0, 1};
       },
       false, "$.nodes[4].sm_l2_partition"},
      {"processor scale of the wrong size",
       [](json& t, json&) {
         t["nodes"][5]["processor_time_scale"] = {1.0, 2.0};
       },
       false, "$.nodes[5].processor_time_scale"},
      {"batch time scale on a controller without batch_service",
       [](json& t, json&) {
         t["nodes"][5]["batch_time_busy_cores"] = {1.0, 4.0};
         t["nodes"][5]["batch_time_scale"] = {0.8, 1.0};
       },
       false, "$.nodes[5].batch_time_busy_cores"},
      {"batch time scales fewer than the busy counts",
       [](json& t, json&) {
         t["nodes"][5]["batch_service"] = true;
         t["nodes"][5]["batch_time_busy_cores"] = {1.0, 4.0};
         t["nodes"][5]["batch_time_scale"] = {0.8};
       },
       false, "$.nodes[5].batch_time_scale"},
      {"batch time busy counts out of order",
       [](json& t, json&) {
         t["nodes"][5]["batch_service"] = true;
         t["nodes"][5]["batch_time_busy_cores"] = {2.0, 2.0};
         t["nodes"][5]["batch_time_scale"] = {0.8, 1.0};
       },
       false, "$.nodes[5].batch_time_busy_cores"},
      {"batch time scale on batch_service",
       [](json& t, json&) {
         t["nodes"][5]["batch_service"] = true;
         t["nodes"][5]["batch_time_busy_cores"] = {1.0, 4.0};
         t["nodes"][5]["batch_time_scale"] = {0.8, 1.0};
       },
       true, ""},
      {"footprint times per MiB fewer than the busy counts",
       [](json& t, json&) {
         t["nodes"][5]["batch_service"] = true;
         t["nodes"][5]["batch_time_busy_cores"] = {1.0, 4.0};
         t["nodes"][5]["batch_time_scale"] = {0.8, 1.0};
         t["nodes"][5]["batch_time_footprint_ns_per_mib"] = {1.7};
         t["nodes"][5]["batch_time_footprint_mib"] = 32.0;
       },
       false, "$.nodes[5].batch_time_footprint_ns_per_mib"},
      {"footprint times per MiB without a reference footprint",
       [](json& t, json&) {
         t["nodes"][5]["batch_service"] = true;
         t["nodes"][5]["batch_time_busy_cores"] = {1.0, 4.0};
         t["nodes"][5]["batch_time_scale"] = {0.8, 1.0};
         t["nodes"][5]["batch_time_footprint_ns_per_mib"] = {1.7, 3.3};
       },
       false, "$.nodes[5].batch_time_footprint_mib"},
      {"reference footprint without times per MiB",
       [](json& t, json&) { t["nodes"][5]["batch_time_footprint_mib"] = 32.0; }, false,
       "$.nodes[5].batch_time_footprint_mib"},
      {"footprint term on a controller without batch_service",
       [](json& t, json&) {
         t["nodes"][5]["batch_time_busy_cores"] = {1.0};
         t["nodes"][5]["batch_time_scale"] = {1.0};
         t["nodes"][5]["batch_time_footprint_ns_per_mib"] = {1.7};
         t["nodes"][5]["batch_time_footprint_mib"] = 32.0;
       },
       false, "$.nodes[5].batch_time_busy_cores"},
      {"footprint term on batch_service",
       [](json& t, json&) {
         t["nodes"][5]["batch_service"] = true;
         t["nodes"][5]["batch_time_busy_cores"] = {1.0, 4.0};
         t["nodes"][5]["batch_time_scale"] = {0.8, 1.0};
         t["nodes"][5]["batch_time_footprint_ns_per_mib"] = {1.7, 3.3};
         t["nodes"][5]["batch_time_footprint_mib"] = 32.0;
       },
       true, ""},
      {"flash write buffer below one program chunk",
       [](json& t, json&) {
         t["nodes"][5]["page_bytes"] = 65536;
         t["nodes"][5]["planes_per_die"] = 16;
         t["nodes"][5]["independent_plane_reads"] = false;
         t["nodes"][5]["write_buffer_mib"] = 0.0625;
       },
       false, "$.nodes[5]"},
      {"I/O buffers beyond GPU memory",
       [](json& t, json& s) {
         t["nodes"][4]["memory_gib"] = 1;
         s["threads"] = 4096;
         s["iodepth"] = 64;
         s["bs"] = 8192;
       },
       false, "$.threads"},
      {"software cache and queue rings beyond GPU memory",
       [](json& t, json& s) {
         t["nodes"][4]["memory_gib"] = 1;
         t["nodes"][5]["mqes"] = 65536;
         s = {{"kind", "graph"},        {"scale", 8},      {"cache_mib", 500}, {"queues", 128},
              {"queue_entries", 65536}, {"ssds", {"ssd0"}}};
       },
       false, "$.queues"},
      {"BFS root inside the graph",
       [](json&, json& s) {
         s = {{"kind", "graph"}, {"scale", 8}, {"bfs_source", 255}, {"ssds", {"ssd0"}}};
       },
       true, ""},
      {"BFS root beyond the graph",
       [](json&, json& s) {
         s = {{"kind", "graph"}, {"scale", 8}, {"bfs_source", 256}, {"ssds", {"ssd0"}}};
       },
       false, "$.bfs_source"},
      {"BFS root beyond a graph file",
       [tiny](json&, json& s) {
         s = {{"kind", "graph"}, {"graph", tiny}, {"bfs_source", 3}, {"ssds", {"ssd0"}}};
       },
       false, "$.bfs_source"},
      {"graph file without edges",
       [no_edges](json&, json& s) {
         s = {{"kind", "graph"}, {"graph", no_edges}, {"ssds", {"ssd0"}}};
       },
       false, "$.graph"},
  };
}

void PrintTo(const SetupCase& c, std::ostream* os) { *os << c.name; }

class CheckMatchesRun : public ::testing::TestWithParam<SetupCase> {};

TEST_P(CheckMatchesRun, CheckFailsExactlyWhenSetupFails) {
  const SetupCase& c = GetParam();
  RawConfig raw = small_raw();
  c.mutate(raw.topology, raw.scenario);
  // What run builds from, without the setup checks: the declared fields
  // resolved and the scenario kind applied.
  RunConfig unchecked = resolve(catalog(), raw);
  apply_scenario_kind(raw.scenario, unchecked);
  // Each run in a child process: a run that throws from inside the machine's
  // construction after another has simulated confuses AddressSanitizer's view
  // of the stack (SystemC's threads switch stacks), and the child keeps the
  // runs from sharing any state.
  const pid_t child = fork();
  if (child == 0) {
    try {
      run(unchecked);
    } catch (const std::exception&) {
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  const bool run_failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string run_error = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                  : "signal " + std::to_string(WTERMSIG(status));
  EXPECT_EQ(run_failed, !c.valid) << c.name << ": " << run_error;
  if (c.valid) {
    EXPECT_NO_THROW(resolve_config(raw)) << c.name;
  } else {
    const ConfigError e = config_error_of([&] { resolve_config(raw); });
    EXPECT_EQ(e.path(), c.path) << e.what();
  }
}

std::string setup_case_name(const ::testing::TestParamInfo<SetupCase>& info) {
  std::string name;
  for (char ch : info.param.name) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Table, CheckMatchesRun, ::testing::ValuesIn(setup_cases()),
                         setup_case_name);

// Rings the model would place past the end of host memory: refused, as the
// run would otherwise address memory the topology does not have.
TEST(InputRobustness, HostRingsBeyondHostMemoryAreRefused) {
  RawConfig raw = small_raw();
  raw.topology["nodes"][1]["capacity_gib"] = 1;
  raw.topology["nodes"][5]["mqes"] = 65536;
  raw.topology["nodes"][6]["mqes"] = 65536;
  raw.scenario["ssds"] = {"ssd0", "ssd1"};
  raw.scenario["queue_memory"] = "host";
  raw.scenario["queues"] = 128;
  raw.scenario["queue_entries"] = 65536;
  const ConfigError e = config_error_of([&] { resolve_config(raw); });
  EXPECT_EQ(e.path(), "$.queue_memory") << e.what();
  EXPECT_TRUE(contains(e.problem(), "exceed the topology's host memory (1073741824 B)"));
}

}  // namespace
}  // namespace gpunvme
