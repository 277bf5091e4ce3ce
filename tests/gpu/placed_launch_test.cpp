// Launches with a placement of their own (placed_launch_blocks,
// placed_launch_sms): a hand-worked GPU, the checks of the lists, the H200
// profile and the GPU-resident target's topology against the placement
// measurement, and both against the queues the two targets served in
// all_threads' runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sim/core/algo/mapping.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/config/input_file.h"
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

// The launches of a measurement file's first run (instance h200-p1, run 1)
// that were made `beside` the occupier or not, the second launch of each
// size (gpunvme-hw's compute launch is never the first of its process).
std::map<std::uint32_t, std::vector<std::uint32_t>> measured_launches(bool beside) {
  const nlohmann::json m = read_json("configs/measurements/block-placement-h200-2026-11-29.json");
  std::map<std::uint32_t, std::vector<std::uint32_t>> out;
  for (const nlohmann::json& launch : m.at("runs").at(0).at("launches")) {
    if (launch.at("beside_occupier").get<bool>() != beside || launch.at("repeat") != 1) continue;
    out[launch.at("blocks").get<std::uint32_t>()] =
        launch.at("smid").get<std::vector<std::uint32_t>>();
  }
  return out;
}

// The GPU node of the GPU-resident target's topology: the H200 profile with
// the topology's placement of launches beside the target's kernel.
nlohmann::json gpu_target_node() {
  const nlohmann::json topology = read_json("configs/topologies/hw-gpu-target.json");
  for (const nlohmann::json& node : topology.at("nodes")) {
    if (node.at("id") != "gpu0") continue;
    return {{"profile", "h200-sxm"},
            {"placed_launch_blocks", node.at("placed_launch_blocks")},
            {"placed_launch_sms", node.at("placed_launch_sms")}};
  }
  ADD_FAILURE() << "hw-gpu-target.json has no gpu0";
  return {};
}

// The H200 profile places gpunvme-hw's 32-, 132- and 528-warp launches (4, 17
// and 66 blocks of 256 threads) where the scheduler put them launched alone;
// the GPU-resident target's topology places its 1-, 8-, 32-, 132- and
// 528-warp launches where it put them beside the target's kernel.
TEST(PlacedLaunch, H200FollowsTheMeasurement) {
  GpuBench alone(nlohmann::json{{"profile", "h200-sxm"}});
  const auto launched_alone = measured_launches(false);
  for (std::uint32_t blocks : {4u, 17u, 66u}) {
    EXPECT_EQ(simulated_sms(alone, blocks), launched_alone.at(blocks)) << blocks << " blocks";
  }
  // A single block, and a launch filling the GPU, land as block_sm_order has them.
  EXPECT_EQ(simulated_sms(alone, 1), launched_alone.at(1));
  GpuBench beside(gpu_target_node());
  const auto launched_beside = measured_launches(true);
  for (std::uint32_t blocks : {1u, 4u, 17u, 66u}) {
    EXPECT_EQ(simulated_sms(beside, blocks), launched_beside.at(blocks)) << blocks << " blocks";
  }
  // Every launch of a size, on both instances and in both runs, used one set of SMs.
  const nlohmann::json m = read_json("configs/measurements/block-placement-h200-2026-11-29.json");
  std::map<std::string, std::vector<std::uint32_t>> sets;
  int launches = 0;
  for (const nlohmann::json& run : m.at("runs")) {
    for (const nlohmann::json& launch : run.at("launches")) {
      auto sms = launch.at("smid").get<std::vector<std::uint32_t>>();
      std::sort(sms.begin(), sms.end());
      const std::string key = launch.at("blocks").dump() + "x" +
                              launch.at("threads_per_block").dump() +
                              launch.at("beside_occupier").dump();
      const auto [it, fresh] = sets.emplace(key, sms);
      if (!fresh) {
        EXPECT_EQ(it->second, sms) << key;
      }
      ++launches;
    }
  }
  EXPECT_EQ(launches, 4 * 13 * 3);
}

// all_threads at 528 warps against the GPU-resident target, 32 queues:
// serving warp q served queue q (hw-gpu-target-queue-sharing-h200-2026-11-28,
// base528, five runs), each block 1,024 I/Os (8 warps x 32 lanes x 4). The
// queues' blocks, measured: 14 queues of 4, 2 of 3, 4 of 1 (12 idle); from
// the placement measurement by hand (SM mod 32 of the 66 SMs above) the
// same. The topology's placement gives them; the profile's placement of
// launches alone spreads the blocks over 20 queues, block_sm_order over 28.
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
  GpuBench bench(gpu_target_node());
  EXPECT_EQ(blocks_per_queue(simulated_sms(bench, 66), 32), hand);
  // At 132 warps (17 blocks) the measurement puts 16 queues to work, one with two full blocks
  // (the last block, half filled, has a queue of its own).
  EXPECT_EQ(blocks_per_queue(simulated_sms(bench, 17), 32),
            (std::vector<std::uint32_t>{2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  // Launched alone, or in block_sm_order, the same blocks spread otherwise.
  GpuBench alone(nlohmann::json{{"profile", "h200-sxm"}});
  EXPECT_EQ(blocks_per_queue(simulated_sms(alone, 66), 32).size(), 20u);
  nlohmann::json order_only = {{"profile", "h200-sxm"},
                               {"placed_launch_blocks", nlohmann::json::array()},
                               {"placed_launch_sms", nlohmann::json::array()}};
  GpuBench without(order_only);
  EXPECT_EQ(blocks_per_queue(simulated_sms(without, 66), 32).size(), 28u);
  EXPECT_EQ(blocks_per_queue(simulated_sms(without, 17), 32).size(), 10u);
}

// all_threads against the host-thread target, 32 queues: target thread t
// serves the queues q with q mod 4 = t, and a warp uses queue %smid mod 32,
// so each thread's completions count the blocks on its queues (blocks of 8
// warps; at 132 warps the last block holds 4). With the launches placed as
// the profile places launches alone, the blocks per target thread are those
// of every H100 and H200 run at 32 and 528 warps, and of the runs whose
// half-filled last block landed as the measured launch's did at 132 (where
// it goes rotates with the launch: the other runs give it to thread 2).
// block_sm_order alone gives none of the three.
TEST(PlacedLaunch, HostTargetThreadsServeTheBlocksThePlacementAlonePuts) {
  // The blocks on each target thread's queues when the launches go where `gpu` puts them.
  const auto blocks_per_thread = [](GpuBench& gpu) {
    std::map<std::uint32_t, std::vector<double>> out;
    for (std::uint32_t warps : {32u, 132u, 528u}) {
      const std::uint32_t blocks = (warps + 7) / 8;
      std::vector<double> per_thread(4, 0.0);
      for (std::uint32_t b = 0; b < blocks; ++b) {
        const std::uint32_t block_warps = std::min(8u, warps - 8 * b);
        per_thread[(gpu.gpu().block_sm(b, blocks) % 32) % 4] += block_warps / 8.0;
      }
      out[warps] = per_thread;
    }
    return out;
  };
  GpuBench alone(nlohmann::json{{"profile", "h200-sxm"}});
  const std::map<std::uint32_t, std::vector<double>> placed = blocks_per_thread(alone);
  GpuBench order_only(nlohmann::json{{"profile", "h200-sxm"},
                                     {"placed_launch_blocks", nlohmann::json::array()},
                                     {"placed_launch_sms", nlohmann::json::array()}});
  for (const auto& [warps, per_thread] : blocks_per_thread(order_only)) {
    EXPECT_NE(per_thread, placed.at(warps)) << warps << " warps";
  }
  EXPECT_EQ(placed.at(32), (std::vector<double>{2, 0, 2, 0}));
  EXPECT_EQ(placed.at(132), (std::vector<double>{6.5, 2, 6, 2}));
  EXPECT_EQ(placed.at(528), (std::vector<double>{31, 2, 31, 2}));
  for (const char* file : {"configs/measurements/hw-host-target-h200-2026-11-29-strategies.json",
                           "configs/measurements/hw-strategies-perrole-h100-2026-11-28.json"}) {
    const nlohmann::json runs = nlohmann::json::parse(
        read_input_file(std::string(GPUNVME_SOURCE_DIR) + "/" + file, "JSON file"));
    std::map<std::uint32_t, int> runs_at, alike_at;
    for (const nlohmann::json& c : runs.at("cases")) {
      const auto warps = c.at("warps").get<std::uint32_t>();
      if (c.at("strategy") != "all_threads" || !placed.count(warps)) continue;
      const double per_block = c.at("ios").get<double>() / (warps / 8.0);
      std::vector<double> blocks;
      for (const nlohmann::json& t : c.at("target").at("threads")) {
        blocks.push_back(t.at("completed").get<double>() / per_block);
      }
      ++runs_at[warps];
      if (blocks == placed.at(warps)) ++alike_at[warps];
    }
    for (std::uint32_t warps : {32u, 528u}) {
      EXPECT_GT(runs_at[warps], 30) << file << " " << warps;
      EXPECT_EQ(alike_at[warps], runs_at[warps]) << file << " " << warps;
    }
    EXPECT_GE(alike_at[132] * 3, runs_at[132]) << file;
  }
}

}  // namespace
}  // namespace gpunvme
