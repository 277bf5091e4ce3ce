// first_lane_pass_ns against hand-computed cases: picking the lowest lane of
// a mask with first_lane(p, mask) (sim/core/algo/lanes.h) costs one pass per
// lane below the lane it finds, in warp-uniform code on the warp's time and
// inside for_lanes on the lane's own path (the lanes run side by side); a
// readiness predicate's pick costs nothing, and at 0 no pick costs anything.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/core/algo/lanes.h"
#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

// Bad values first: these tests build a GPU that refuses them before any
// warp runs in the process (tests/gpu/gpu_bench.h).
TEST(FirstLane, BadValuesAreRefused) {
  testing::expect_gpu_rejected(nlohmann::json{{"first_lane_pass_ns", -1.0}}, "first_lane_pass_ns",
                               "out of range");
  testing::expect_gpu_rejected(nlohmann::json{{"first_lane_pass_ns", "fast"}}, "first_lane_pass_ns",
                               "expected");
}

// The warp's time for each of: first_lane of a mask whose lowest lane is 0,
// 5 and 31 (warp-uniform); a for_lanes whose lane k picks lane k of its own
// mask; a check() whose predicate picks lane 31.
std::vector<Picoseconds> pick_times(const nlohmann::json& params) {
  GpuBench bench(params);
  std::vector<Picoseconds> took;
  std::vector<int> lanes;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    for (const algo::LaneMask mask :
         {algo::LaneMask{0xFFFFFFFFu}, algo::LaneMask{0xF0E0u}, algo::LaneMask{0x80000000u}}) {
      const Picoseconds start = p.clock();
      lanes.push_back(algo::first_lane(p, mask));
      took.push_back(p.clock() - start);
    }
    Picoseconds start = p.clock();
    p.for_lanes(algo::kAllLanes, [&](int lane) { algo::first_lane(p, algo::LaneMask{1} << lane); });
    took.push_back(p.clock() - start);
    start = p.clock();
    p.check([&] { return algo::first_lane(p, algo::LaneMask{0x80000000u}) == 31; });
    took.push_back(p.clock() - start);
  });
  bench.run();
  EXPECT_EQ(lanes, (std::vector<int>{0, 5, 31}));
  return took;
}

// Hand-worked with a round 10 ns a pass: lane 0 none, lane 5 five passes
// (50 ns), lane 31 thirty-one (310 ns); the for_lanes' slowest lane, 31,
// sets its time (310 ns); the predicate's pick is free.
TEST(FirstLane, APickCostsOnePassPerLaneBelowIt) {
  const std::vector<Picoseconds> t = pick_times(nlohmann::json{{"first_lane_pass_ns", 10.0}});
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0], Picoseconds{0});
  EXPECT_EQ(t[1], Picoseconds{50000});
  EXPECT_EQ(t[2], Picoseconds{310000});
  EXPECT_EQ(t[3], Picoseconds{310000});
  EXPECT_EQ(t[4], Picoseconds{0});
}

// The profiles' measured figure, 14.65 ns a pass: the average turn of a
// lane-per-command loop (lanes 0 to 31 in order, 15.5 passes) costs 227.1 ns.
TEST(FirstLane, TheMeasuredFigureOverAWarpsTurns) {
  GpuBench bench(nlohmann::json{{"first_lane_pass_ns", 14.65}});
  Picoseconds took = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    const Picoseconds start = p.clock();
    for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
      algo::first_lane(p, algo::kAllLanes << lane);
    }
    took = p.clock() - start;
  });
  bench.run();
  EXPECT_EQ(took, Picoseconds{14650} * 496);  // 0 + 1 + ... + 31 = 496 passes
}

// At 0 a pick costs nothing, wherever it is made.
TEST(FirstLane, ZeroMakesAPickFree) {
  const std::vector<Picoseconds> t = pick_times(nlohmann::json{{"first_lane_pass_ns", 0.0}});
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[1], Picoseconds{0});
  EXPECT_EQ(t[2], Picoseconds{0});
  // An empty for_lanes still takes its issue cycle (the GPU's 1.98 GHz).
  EXPECT_LE(t[3], Picoseconds{1000});
}

}  // namespace
}  // namespace gpunvme
