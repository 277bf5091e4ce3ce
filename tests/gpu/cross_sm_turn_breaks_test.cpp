// cross_sm_turn_breaks against hand-computed cases: a warp's run of
// PerCommand turns breaks at the profile's rate times the share of the
// queue's other warps (those that have taken a turn on it) that run on
// another SM, with a per-warp credit, so the breaks come at fixed turns;
// warps that share their queue with warps of their own SM only, and a
// profile without the calibration, never break.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

TEST(CrossSmTurnBreaks, TheShareOfTheQueuesOtherWarpsOnOtherSms) {
  GpuBench bench;
  gpu::Gpu& g = bench.gpu();
  const int a = 0, b = 0, c = 0, d = 0;  // four warps, named by their addresses
  const std::uint64_t queue = 0x1000, other_queue = 0x2000;
  EXPECT_EQ(g.turn_sharers_elsewhere(queue, &a, 0), 0.0);               // alone
  EXPECT_EQ(g.turn_sharers_elsewhere(queue, &b, 0), 0.0);               // a: its own SM
  EXPECT_EQ(g.turn_sharers_elsewhere(queue, &c, 1), 1.0);               // a, b: SM 0
  EXPECT_EQ(g.turn_sharers_elsewhere(queue, &d, 2), 1.0);               // a, b, c: SMs 0 and 1
  EXPECT_DOUBLE_EQ(g.turn_sharers_elsewhere(queue, &a, 0), 2.0 / 3.0);  // b here; c, d elsewhere
  EXPECT_EQ(g.turn_sharers_elsewhere(queue, &c, 1), 1.0);               // a, b, d elsewhere
  // Each queue has its own warps.
  EXPECT_EQ(g.turn_sharers_elsewhere(other_queue, &d, 2), 0.0);
  EXPECT_EQ(g.turn_sharers_elsewhere(other_queue, &a, 0), 1.0);
}

TEST(CrossSmTurnBreaks, TheShareAgreesWithAScanOfTheSharersOnRandomTurns) {
  // Random turns of 64 warps on 132 SMs over 5 queues, each answer against a
  // scan of the warps that have taken a turn on that queue so far.
  GpuBench bench;
  gpu::Gpu& g = bench.gpu();
  constexpr int kWarps = 64;
  constexpr std::uint64_t kQueues = 5;
  std::vector<int> warp(kWarps);  // a warp's identity is its element's address
  std::vector<std::uint32_t> sm_of(kWarps);
  std::mt19937_64 random(49);
  for (int i = 0; i < kWarps; ++i) sm_of[i] = static_cast<std::uint32_t>(random() % 132);
  std::vector<std::vector<int>> sharers(kQueues);  // by queue: warps, in first-turn order
  for (int turn = 0; turn < 20000; ++turn) {
    const auto queue = random() % kQueues;
    // Some queues see few warps, some many: warps below a per-queue bound.
    const int bound = 2 + static_cast<int>(queue) * 15;
    const int w = static_cast<int>(random() % static_cast<std::uint64_t>(bound));
    std::vector<int>& on_queue = sharers[queue];
    if (std::find(on_queue.begin(), on_queue.end(), w) == on_queue.end()) on_queue.push_back(w);
    std::size_t elsewhere = 0;
    for (int other : on_queue) elsewhere += sm_of[other] != sm_of[w] ? 1 : 0;
    const double expected = on_queue.size() == 1 ? 0.0
                                                 : static_cast<double>(elsewhere) /
                                                       static_cast<double>(on_queue.size() - 1);
    ASSERT_EQ(g.turn_sharers_elsewhere(0x1000 + queue * 0x100, &warp[w], sm_of[w]), expected)
        << "turn " << turn << ", queue " << queue << ", warp " << w;
  }
}

// Warp `sm_of[i]` takes one turn on `turn_word` at i us (its first turn
// registers it); then a warp on SM `tester_sm` takes `turns` turns. Returns
// the tester's turns (1-based) after which its run broke.
std::vector<int> breaks(GpuBench& bench, const std::vector<std::uint32_t>& sm_of,
                        std::uint32_t tester_sm, int turns) {
  const std::uint64_t turn_word = bench.gpu().allocate(128, 128);
  std::vector<int> out;
  for (std::size_t i = 0; i < sm_of.size(); ++i) {
    bench.spawn({sm_of[i], 0}, [&, i](platform::SimWarp& p) {
      GpuBench::idle_for(ns_to_ps(1000.0 * static_cast<double>(i)));
      (void)p.turn_run_breaks(turn_word);
    });
  }
  bench.spawn({tester_sm, 1}, [&](platform::SimWarp& p) {
    GpuBench::idle_for(ns_to_ps(1000.0 * static_cast<double>(sm_of.size() + 1)));
    for (int t = 1; t <= turns; ++t) {
      if (p.turn_run_breaks(turn_word)) out.push_back(t);
    }
  });
  bench.run();
  return out;
}

TEST(CrossSmTurnBreaks, BreaksComeAtTheRateTimesTheOtherSmShare) {
  // Rate 0.5; the tester on SM 0 shares its queue with a warp of SM 0 and
  // one of SM 1: share 1/2, 0.25 credit a turn, a break every 4th turn.
  GpuBench bench(nlohmann::json{{"cross_sm_turn_breaks", 0.5}});
  ASSERT_EQ(bench.gpu().costs().cross_sm_turn_breaks, 0.5);
  EXPECT_EQ(breaks(bench, {1, 0}, 0, 16), (std::vector<int>{4, 8, 12, 16}));
}

TEST(CrossSmTurnBreaks, AllOthersElsewhereBreakAtTheRate) {
  // Rate 0.25, three other warps on SMs 1, 2, 3: a break every 4th turn.
  GpuBench bench(nlohmann::json{{"cross_sm_turn_breaks", 0.25}});
  EXPECT_EQ(breaks(bench, {1, 2, 3}, 0, 12), (std::vector<int>{4, 8, 12}));
}

TEST(CrossSmTurnBreaks, WarpsOfOneSmNeverBreak) {
  // 31 other warps, all on the tester's SM (one 32-warp block on a queue).
  GpuBench bench(nlohmann::json{{"cross_sm_turn_breaks", 1.0}});
  EXPECT_TRUE(breaks(bench, std::vector<std::uint32_t>(31, 7), 7, 256).empty());
}

TEST(CrossSmTurnBreaks, NothingWithoutTheCalibration) {
  GpuBench bench;
  ASSERT_EQ(bench.gpu().costs().cross_sm_turn_breaks, 0.0);
  EXPECT_TRUE(breaks(bench, {1, 2, 3}, 0, 256).empty());
}

TEST(CrossSmTurnBreaks, TheH200ProfileBreaksFourBlocksQueues) {
  // configs/gpu/h200-sxm.json's figure (scripts/cross-sm-turn-breaks.py
  // derives it from the shared-queue reaping microbenchmark). Four blocks
  // of 8 warps on a queue: the tester sees 7 others of its SM and 24 of
  // three others, a share of 24/31; over 310 turns its credit grows by
  // 310 x rate x 24/31 = 240 x rate, so floor(240 x rate) breaks.
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) + "/configs/gpu/h200-sxm.json");
  const double rate =
      nlohmann::json::parse(in)["params"]["cross_sm_turn_breaks"]["value"].get<double>();
  ASSERT_GT(rate, 0.0);
  GpuBench bench(nlohmann::json{{"profile", "h200-sxm"}});
  std::vector<std::uint32_t> others(7, 10);
  for (std::uint32_t sm : {11u, 12u, 13u}) others.insert(others.end(), 8, sm);
  const std::vector<int> got = breaks(bench, others, 10, 310);
  const auto expected = static_cast<std::size_t>(240.0 * rate);
  EXPECT_NEAR(static_cast<double>(got.size()), static_cast<double>(expected), 1.0);
  // The first break: the first turn whose credit reaches 1.
  ASSERT_FALSE(got.empty());
  int first = 1;
  while (first * rate * 24.0 / 31.0 < 1.0) ++first;
  EXPECT_NEAR(got.front(), first, 1);
}

}  // namespace
}  // namespace gpunvme
