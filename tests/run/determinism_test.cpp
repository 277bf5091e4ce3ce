// The same configuration and seed give a byte-identical result, apart from the
// wall-clock fields; a different seed gives a different run.
#include <gtest/gtest.h>

#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

std::string without_wall_clock(nlohmann::json result) {
  for (const std::string& field : wall_clock_fields()) result["summary"].erase(field);
  return result.dump();
}

RunConfig small_config(std::uint64_t seed) {
  return load_config("", "", {"scenario.ios=3000", "scenario.threads=256"}, seed);
}

TEST(Determinism, SameSeedGivesIdenticalResults) {
  const std::string first = without_wall_clock(run(small_config(3)));
  const std::string second = without_wall_clock(run(small_config(3)));
  EXPECT_EQ(first, second);
}

TEST(Determinism, DifferentSeedsGiveDifferentRuns) {
  EXPECT_NE(without_wall_clock(run(small_config(3))), without_wall_clock(run(small_config(4))));
}

TEST(Determinism, WallClockIsTheOnlyHostDependentField) {
  nlohmann::json result = run(small_config(5));
  ASSERT_TRUE(result["summary"].contains("wall_time_s"));
  EXPECT_GE(result["summary"]["wall_time_s"].get<double>(), 0.0);
}

}  // namespace
}  // namespace gpunvme
