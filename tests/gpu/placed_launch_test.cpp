// Launches with a placement of their own (placed_launch_blocks,
// placed_launch_sms): a hand-worked GPU, the checks of the lists, and the
// H200 profile against the placement measurement and against the queues the
// GPU-resident target served in all_threads' 528-warp runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sim/core/algo/mapping.h"
#include "sim/kernel/params/config_error.h"
#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

nlohmann::json read_json(const std::string& relative) {
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) + "/" + relative);
  return nlohmann::json::parse(in);
}

// The blocks on each queue when a launch's warps map to queue SM mod
// `queues` (PerSm), largest first, queues with none left out.
std::vector<std::uint32_t> blocks_per_queue(const std::vector<std::uint32_t>& block_sms,
                                            std::uint32_t queues) {
  algo::QueueMap map;
  map.mapping = algo::QueueMapping::PerSm;
  map.queues_per_ssd = queues;
  map.ssds = 1;
  std::map<std::uint32_t, std::uint32_t> count;
  for (std::uint32_t b = 0; b < block_sms.size(); ++b) {
    ++count[algo::home_queue(map, b * 8, block_sms[b])];
  }
  std::vector<std::uint32_t> out;
  for (const auto& [queue, n] : count) out.push_back(n);
  std::sort(out.rbegin(), out.rend());
  return out;
}

std::vector<std::uint32_t> simulated_sms(GpuBench& bench, std::uint32_t blocks) {
  std::vector<std::uint32_t> sms;
  for (std::uint32_t b = 0; b < blocks; ++b) sms.push_back(bench.gpu().block_sm(b, blocks));
  return sms;
}

// In the GpuProfile suite, which gpu_model_test.cpp opens and which runs
// before any test that simulates: ASan misreports an exception thrown after
// warps' fibres have run in the process (google/sanitizers#189), and this
// folder's earlier files run fibres.
TEST(GpuProfile, PlacedLaunchListsMustMatch) {
  const auto rejects = testing::expect_gpu_rejected;
  rejects({{"sms", 8}, {"placed_launch_blocks", {3}}, {"placed_launch_sms", {1, 2}}},
          "$.nodes[3].placed_launch_sms", "expected 3 SMs");
  rejects({{"sms", 8}, {"placed_launch_blocks", {2}}, {"placed_launch_sms", {1, 8}}},
          "$.nodes[3].placed_launch_sms", "below 8");
  rejects({{"sms", 8}, {"placed_launch_blocks", {1, 1}}, {"placed_launch_sms", {1, 2}}},
          "$.nodes[3].placed_launch_blocks", "each launch size once");
}

// Hand-worked: 8 SMs in the default order, a 3-block launch placed on SMs
// 6, 2 and 4 and a 2-block one on 7 and 7; every other launch in the order.
TEST(PlacedLaunch, HandWorkedGpu) {
  GpuBench bench(
      {{"sms", 8}, {"placed_launch_blocks", {3, 2}}, {"placed_launch_sms", {6, 2, 4, 7, 7}}});
  EXPECT_EQ(simulated_sms(bench, 3), (std::vector<std::uint32_t>{6, 2, 4}));
  EXPECT_EQ(simulated_sms(bench, 2), (std::vector<std::uint32_t>{7, 7}));
  EXPECT_EQ(simulated_sms(bench, 4), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(bench.gpu().block_sm(9, 10), 1u);
  EXPECT_EQ(bench.gpu().block_sm(1), 1u);  // no launch size: the order
}

// The H200 profile places the 132- and 528-warp launches (17 and 66 blocks
// of 256 threads) where the scheduler put them beside the target's kernel
// (the second launch of each size: not the first of its process).
TEST(PlacedLaunch, H200FollowsTheMeasurement) {
  const nlohmann::json m =
      read_json("configs/measurements/block-placement-beside-target-h200-2026-11-28.json");
  GpuBench bench(nlohmann::json{{"profile", "h200-sxm"}});
  int checked = 0;
  for (const nlohmann::json& launch : m.at("runs").at(0).at("launches")) {
    if (!launch.at("beside_occupier").get<bool>() || launch.at("repeat") != 1) continue;
    const auto blocks = launch.at("blocks").get<std::uint32_t>();
    if (blocks != 17 && blocks != 66) continue;
    EXPECT_EQ(simulated_sms(bench, blocks), launch.at("smid").get<std::vector<std::uint32_t>>());
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// all_threads at 528 warps against the GPU-resident target, 32 queues:
// serving warp q served queue q (hw-gpu-target-queue-sharing-h200-2026-11-28,
// base528, five runs), each block 1,024 I/Os (8 warps x 32 lanes x 4). The
// queues' blocks, measured: 14 queues of 4, 2 of 3, 4 of 1 (12 idle); from
// the placement measurement by hand (SM mod 32 of the 66 SMs above) the
// same. The profile's placement gives them; block_sm_order alone (the
// placement of launches with no kernel beside them) spreads the blocks over
// 28 queues.
TEST(PlacedLaunch, H200QueuesAt528WarpsAsTheTargetServedThem) {
  const std::vector<std::uint32_t> hand = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
                                           4, 4, 4, 4, 3, 3, 1, 1, 1, 1};
  const nlohmann::json runs =
      read_json("configs/measurements/hw-gpu-target-queue-sharing-h200-2026-11-28.json");
  int checked = 0;
  for (const nlohmann::json& c : runs.at("cases")) {
    if (c.at("variant") != "base528") continue;
    std::vector<std::uint32_t> measured;
    for (const nlohmann::json& t : c.at("target").at("threads")) {
      const auto completed = t.at("completed").get<std::uint32_t>();
      ASSERT_EQ(completed % 1024, 0u);
      if (completed != 0) measured.push_back(completed / 1024);
    }
    std::sort(measured.rbegin(), measured.rend());
    EXPECT_EQ(measured, hand) << c.at("run_file");
    ++checked;
  }
  EXPECT_EQ(checked, 5);
  GpuBench bench(nlohmann::json{{"profile", "h200-sxm"}});
  EXPECT_EQ(blocks_per_queue(simulated_sms(bench, 66), 32), hand);
  // At 132 warps (17 blocks) the measurement puts 16 queues to work, one with two full blocks
  // (the last block, half filled, has a queue of its own).
  EXPECT_EQ(blocks_per_queue(simulated_sms(bench, 17), 32),
            (std::vector<std::uint32_t>{2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  // Without the launches' own placement the same profile spreads them otherwise.
  nlohmann::json order_only = {{"profile", "h200-sxm"},
                               {"placed_launch_blocks", nlohmann::json::array()},
                               {"placed_launch_sms", nlohmann::json::array()}};
  GpuBench without(order_only);
  EXPECT_EQ(blocks_per_queue(simulated_sms(without, 66), 32).size(), 28u);
  EXPECT_EQ(blocks_per_queue(simulated_sms(without, 17), 32).size(), 10u);
}

}  // namespace
}  // namespace gpunvme
