// Holds a fresh `validate` prediction to the committed report: each re-run
// case has the committed measured figures and is no further from the
// measured median than the committed prediction was, plus the measured
// interquartile range (the run-to-run noise of the hardware).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpunvme::test {

// The AddressSanitizer build holds each report that a newer one supersedes
// on one strategy's 1-warp case (its calibration still in full): that run is
// there for memory errors, which every strategy's code meets in the newest
// reports' holds (all six strategies) and in tests/algo, and it simulates
// about twenty times slower than the release build, which holds every case.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

// The strategies a superseded report's hold re-runs: `all` in the release
// build, warp_batch alone under AddressSanitizer.
inline std::vector<std::string> superseded_hold_strategies(std::vector<std::string> all) {
  if (kSanitizerBuild) return {"warp_batch"};
  return all;
}

// Returns how many cases were compared.
inline std::size_t expect_as_committed(const nlohmann::json& now, const nlohmann::json& committed) {
  std::size_t compared = 0;
  for (const nlohmann::json& row : now.at("cases")) {
    const nlohmann::json* before = nullptr;
    for (const nlohmann::json& r : committed.at("cases")) {
      if (r.at("strategy") == row.at("strategy") && r.at("warps") == row.at("warps")) before = &r;
    }
    EXPECT_NE(before, nullptr) << row.at("strategy") << " " << row.at("warps")
                               << " is not in the committed report: re-run gpunvme validate";
    if (before == nullptr) continue;
    const nlohmann::json& m = row.at("measured_iops");
    EXPECT_EQ(m, before->at("measured_iops"));
    const double median = m.at("median").get<double>();
    const double noise = m.at("q3").get<double>() - m.at("q1").get<double>();
    const double sim = row.at("simulated_iops").get<double>();
    const double sim_before = before->at("simulated_iops").get<double>();
    EXPECT_LE(std::fabs(sim - median), std::fabs(sim_before - median) + noise)
        << row.at("strategy") << " " << row.at("warps") << " warps: predicted " << sim
        << ", committed " << sim_before << ", measured median " << median << ", IQR " << noise;
    ++compared;
  }
  return compared;
}

}  // namespace gpunvme::test
