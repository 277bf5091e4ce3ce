// Loading shipped scenarios with overrides, for the workload tests.
#pragma once

#include <string>
#include <vector>

#include "sim/run/run.h"

namespace gpunvme::test {

inline std::string scenario_file(const std::string& name) {
  return std::string(GPUNVME_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

inline RunConfig scenario(const std::string& name, const std::vector<std::string>& overrides = {},
                          std::uint64_t seed = 1) {
  return load_config("", scenario_file(name), overrides, seed);
}

}  // namespace gpunvme::test
