// Loading shipped scenarios with overrides, for the workload tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/system/run/run.h"

namespace gpunvme::test {

inline std::string scenario_file(const std::string& name) {
  return std::string(GPUNVME_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

inline RunConfig scenario(const std::string& name, const std::vector<std::string>& overrides = {},
                          std::uint64_t seed = 1) {
  return load_config("", scenario_file(name), overrides, seed);
}

// The default machine (one socket, one Gen5 x16 switch, the GPU on it) with
// `ssds` PM1743 drives (Gen5 x4) below the switch, written to a temporary
// file; links.0 is the switch's uplink rc0 -> sw0.
inline std::string multi_ssd_topology(int ssds) {
  const std::string path = ::testing::TempDir() + "/gpunvme-" + std::to_string(ssds) + "ssd.json";
  nlohmann::json nodes = {{{"id", "cpu0"}, {"kind", "cpu"}},
                          {{"id", "dram0"}, {"kind", "host_memory"}, {"socket", "cpu0"}},
                          {{"id", "rc0"}, {"kind", "root_complex"}, {"socket", "cpu0"}},
                          {{"id", "sw0"}, {"kind", "switch"}},
                          {{"id", "gpu0"}, {"kind", "gpu"}}};
  nlohmann::json links = {{{"from", "rc0"}, {"to", "sw0"}, {"gen", 5}, {"width", 16}},
                          {{"from", "sw0"}, {"to", "gpu0"}, {"gen", 5}, {"width", 16}}};
  for (int k = 0; k < ssds; ++k) {
    const std::string id = "ssd" + std::to_string(k);
    nodes.push_back({{"id", id}, {"kind", "nvme_ssd"}, {"profile", "samsung-pm1743"}});
    links.push_back({{"from", "sw0"}, {"to", id}, {"gen", 5}, {"width", 4}});
  }
  std::ofstream(path) << nlohmann::json{
      {"name", "gpunvme-" + std::to_string(ssds) + "ssd"}, {"nodes", nodes}, {"links", links}}
                             .dump(2);
  return path;
}

// "scenario.ssds=[\"ssd0\",...]" for the first n drives.
inline std::string ssds_override(int n) {
  nlohmann::json ids = nlohmann::json::array();
  for (int k = 0; k < n; ++k) ids.push_back("ssd" + std::to_string(k));
  return "scenario.ssds=" + ids.dump();
}

}  // namespace gpunvme::test
