// Holds a fresh `validate` prediction to the committed report: each re-run
// case has the committed measured figures and is no further from the
// measured median than the committed prediction was, plus the measured
// interquartile range (the run-to-run noise of the hardware).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>

namespace gpunvme::test {

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
