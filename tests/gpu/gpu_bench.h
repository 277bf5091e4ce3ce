// The GPU model's tests run warps on the library's one-GPU machine
// (sim/system/run/gpu_bench.h).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/gpu_bench.h"

namespace gpunvme::testing {
using gpunvme::GpuBench;

// A GPU node with `params` must be refused with a ConfigError naming `field`
// and saying `problem`. (A test calling it runs before any test that
// simulates in its process: ASan misreports an exception thrown after warps'
// fibres have run, google/sanitizers#189.)
inline void expect_gpu_rejected(const nlohmann::json& params, const std::string& field,
                                const std::string& problem) {
  try {
    GpuBench bench(params);
    ADD_FAILURE() << params.dump() << " was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
  }
}
}  // namespace gpunvme::testing
