// The lane-mask helpers of sim/core/algo/lanes.h (population count, bit
// scans, iteration over set lanes) against a plain test of each of the 32
// bits: hand-picked masks with known answers, then random masks of every
// density. The simulator's platforms visit every instruction's lanes
// through them, so an answer off by one lane, or lanes visited out of
// order, would move every result.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sim/core/algo/lanes.h"

namespace gpunvme::algo {
namespace {

bool lane_set(LaneMask mask, int lane) { return ((mask >> lane) & 1u) != 0; }

std::uint32_t count_by_bits(LaneMask mask) {
  std::uint32_t n = 0;
  for (int lane = 0; lane < kWarpLanes; ++lane) n += lane_set(mask, lane) ? 1u : 0u;
  return n;
}

std::uint32_t leading_run_by_bits(LaneMask mask) {
  std::uint32_t n = 0;
  while (n < 32 && lane_set(mask, static_cast<int>(n))) ++n;
  return n;
}

std::vector<int> lanes_by_bits(LaneMask mask) {
  std::vector<int> lanes;
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    if (lane_set(mask, lane)) lanes.push_back(lane);
  }
  return lanes;
}

std::vector<int> visited(LaneMask mask) {
  std::vector<int> lanes;
  visit_lanes(mask, [&](int lane) { lanes.push_back(lane); });
  return lanes;
}

TEST(LaneMask, HandPickedMasks) {
  EXPECT_EQ(lane_count(0u), 0u);
  EXPECT_EQ(lane_count(kAllLanes), 32u);
  EXPECT_EQ(lane_count(0x80000001u), 2u);
  EXPECT_EQ(lane_count(0x0000FFFFu), 16u);
  EXPECT_EQ(lane_count(0xAAAAAAAAu), 16u);
  EXPECT_EQ(lane_count(0x7FFFFFFFu), 31u);

  EXPECT_EQ(leading_run(0u), 0u);
  EXPECT_EQ(leading_run(0xFFFFFFFEu), 0u);
  EXPECT_EQ(leading_run(0x00000007u), 3u);
  EXPECT_EQ(leading_run(0x7FFFFFFFu), 31u);
  EXPECT_EQ(leading_run(kAllLanes), 32u);

  EXPECT_EQ(first_lane(1u), 0);
  EXPECT_EQ(first_lane(0x80000000u), 31);
  EXPECT_EQ(first_lane(0x00010100u), 8);

  EXPECT_EQ(lane_rank(0xF0u, 6), 2u);  // lanes 4 and 5 below lane 6
  EXPECT_EQ(lane_rank(kAllLanes, 31), 31u);

  EXPECT_EQ(visited(0u), std::vector<int>{});
  EXPECT_EQ(visited(0x80000005u), (std::vector<int>{0, 2, 31}));
  EXPECT_EQ(visited(kAllLanes).size(), 32u);
  EXPECT_EQ(visited(kAllLanes).back(), 31);
}

TEST(LaneMask, RandomMasksAgreeWithABitByBitTest) {
  std::mt19937_64 random(2026);
  for (int round = 0; round < 20000; ++round) {
    // Densities from one lane in 32 to every lane, so that sparse, dense,
    // full and prefix masks all come up.
    const int density = round % 33;
    LaneMask mask = 0;
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      if (static_cast<int>(random() % 32) < density) mask |= LaneMask{1} << lane;
    }
    if (round % 7 == 0) mask = lanes_below(static_cast<std::uint32_t>(random() % 33));
    SCOPED_TRACE(mask);
    EXPECT_EQ(lane_count(mask), count_by_bits(mask));
    EXPECT_EQ(leading_run(mask), leading_run_by_bits(mask));
    const std::vector<int> expected = lanes_by_bits(mask);
    EXPECT_EQ(visited(mask), expected);
    if (mask != 0) {
      EXPECT_EQ(first_lane(mask), expected.front());
    }
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      EXPECT_EQ(lane_rank(mask, lane), count_by_bits(mask & ((LaneMask{1} << lane) - 1u)));
    }
  }
}

}  // namespace
}  // namespace gpunvme::algo
