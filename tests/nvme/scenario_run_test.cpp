// Whole scenarios through run(): the host driver brings every SSD up and
// creates the queues in GPU memory before the warps start.
//
// Kept in a file that sorts after the tests that stop runs on purpose: an
// exception thrown through the kernel after warp threads (coroutines) have
// run trips AddressSanitizer's stack-use-after-scope check with the Debian
// SystemC build, which switches stacks without telling the sanitizer.
#include <gtest/gtest.h>

#include "sim/system/run/run.h"
#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

// The shipped two-SSD topology: ssd0's namespace has 512 B LBAs, ssd1's 4 KiB. 1 KiB I/Os,
// which only the 512 B format can address, run on ssd0 (tests/config checks that ssd1 refuses
// them); 4 KiB I/Os striped over both split evenly and move whole 4 KiB per command.
TEST(ScenarioRun, ShippedTwoSsdTopologyWithBothLbaFormats) {
  const std::string topology = std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/two-ssds.json";
  const nlohmann::json small =
      run(load_config(topology, "", {"scenario.bs=1024", "scenario.ios=256", "scenario.threads=64"}, 1));
  EXPECT_EQ(small.at("summary").at("ios"), 256);
  EXPECT_EQ(small.at("ssds").at("ssd0").at("bytes_read"), 256 * 1024);
  const nlohmann::json both = run(load_config(
      topology, "",
      {"scenario.ios=512", "scenario.threads=64", R"(scenario.ssds=["ssd0","ssd1"])",
       "scenario.ssd_mapping=stripe"},
      1));
  EXPECT_EQ(both.at("summary").at("ios"), 512);
  std::uint64_t commands = 0;
  for (const char* ssd : {"ssd0", "ssd1"}) {
    const nlohmann::json& s = both.at("ssds").at(ssd);
    EXPECT_GT(s.at("commands").get<std::uint64_t>(), 128u) << ssd;
    EXPECT_EQ(s.at("bytes_read").get<std::uint64_t>(), 4096 * s.at("commands").get<std::uint64_t>())
        << ssd;
    commands += s.at("commands").get<std::uint64_t>();
  }
  EXPECT_EQ(commands, 512u);
}

// Two SSDs, one of them with 4 KiB LBAs.
TEST(ScenarioRun, DriverBringsEverySsdUp) {
  RawConfig raw;
  raw.topology_file = "two-ssds.json";
  raw.topology = {{"name", "two-ssds"},
                  {"nodes",
                   {{{"id", "cpu0"}, {"kind", "cpu"}},
                    {{"id", "dram0"}, {"kind", "host_memory"}, {"socket", "cpu0"}},
                    {{"id", "rc0"}, {"kind", "root_complex"}, {"socket", "cpu0"}},
                    {{"id", "sw0"}, {"kind", "switch"}},
                    {{"id", "gpu0"}, {"kind", "gpu"}},
                    {{"id", "ssd0"}, {"kind", "nvme_ssd"}, {"profile", "samsung-pm1743"}},
                    {{"id", "ssd1"}, {"kind", "nvme_ssd"}, {"profile", "generic-gen5-tlc"}}}},
                  {"links",
                   {{{"from", "rc0"}, {"to", "sw0"}, {"gen", 5}, {"width", 16}},
                    {{"from", "sw0"}, {"to", "gpu0"}, {"gen", 5}, {"width", 16}},
                    {{"from", "sw0"}, {"to", "ssd0"}, {"gen", 5}, {"width", 4}},
                    {{"from", "sw0"}, {"to", "ssd1"}, {"gen", 5}, {"width", 4}}}}};
  raw.scenario_file = "scenario.json";
  raw.scenario = {
      {"name", "two"}, {"rw", "randread"},   {"bs", 4096},    {"iodepth", 1},
      {"threads", 64}, {"ios", 512},         {"gpu", "gpu0"}, {"ssds", {"ssd0", "ssd1"}},
      {"queues", 2},   {"queue_entries", 64}};
  const nlohmann::json result = run(resolve_config(raw));
  EXPECT_EQ(result.at("summary").at("ios"), 512);
  for (const char* ssd : {"ssd0", "ssd1"}) {
    const nlohmann::json& s = result.at("ssds").at(ssd);
    // Identify x2, Set Features, 2 x Create I/O CQ, 2 x Create I/O SQ.
    EXPECT_EQ(s.at("admin_commands"), 7) << ssd;
    EXPECT_EQ(s.at("commands"), 256) << ssd;
    EXPECT_GT(s.at("ready_ns").get<double>(), 20000.0);
    EXPECT_GT(s.at("first_io_doorbell_ns").get<double>(), s.at("ready_ns").get<double>());
  }
}

}  // namespace
}  // namespace gpunvme::nvme::testing
