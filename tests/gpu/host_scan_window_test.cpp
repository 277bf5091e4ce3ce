// The GPU's reads of host memory beside its other work, against the H100.
//
// A cq_scan window (sim/core/algo/completion.h, scan_cq) is one ballot whose
// 32 lanes each read a 16 B CQE of host memory and then the entry's consumed
// mark in GPU memory. The lanes issue together: the ballot takes one round
// trip of the reads plus one load latency for the marks, not one round trip
// per lane (one lane's 16 B read of host memory 1.5 us on the H100, 32
// lanes' together 1.5 us: configs/measurements/
// warp-host-access-h100-2026-11-24.json). Oracle: the same ballot without
// the marks, and the difference worked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

struct Entry {
  std::uint32_t words[4];
};

// One ballot over `lanes` on the H100 profile: lane i reads entry i (16 B,
// or only its first word when `entry_bytes` is 4) from host memory and, with
// `marks`, word i of GPU memory after it. Returns the ballot's time.
Picoseconds scan_window(algo::LaneMask lanes, std::uint32_t entry_bytes, bool marks,
                        Picoseconds* load_latency = nullptr) {
  GpuBench bench(nlohmann::json{{"profile", "h100-sxm"}});
  const std::uint64_t ring = GpuBench::host_memory() + 8192;
  const std::uint64_t marks_at = bench.gpu().allocate(4096);
  if (load_latency != nullptr) *load_latency = bench.gpu().costs().load_latency;
  for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
    bench.machine().memory().store<std::uint32_t>(ring + 16u * static_cast<std::uint64_t>(lane),
                                                  1u);
    bench.machine().memory().store<std::uint32_t>(marks_at + 4u * static_cast<std::uint64_t>(lane),
                                                  static_cast<std::uint32_t>(lane));
  }
  Picoseconds took = 0;
  algo::LaneMask seen = 0;
  std::uint32_t mark_sum = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    const Picoseconds start = p.clock();
    seen = p.ballot(lanes, [&](int lane) {
      const std::uint64_t at = ring + 16u * static_cast<std::uint64_t>(lane);
      const bool posted =
          entry_bytes == 16 ? p.load<Entry>(at).words[0] == 1u : p.load_u32(at) == 1u;
      if (marks) mark_sum += p.load_u32(marks_at + 4u * static_cast<std::uint64_t>(lane));
      return posted;
    });
    took = p.clock() - start;
  });
  bench.run();
  EXPECT_EQ(seen, lanes);
  if (marks && lanes == algo::kAllLanes) {
    EXPECT_EQ(mark_sum, 31u * 32u / 2u);
  }
  return took;
}

TEST(HostScanWindow, ItsLanesReadEntriesAndMarksInOneRoundTrip) {
  Picoseconds load_latency = 0;
  const Picoseconds entries = scan_window(algo::kAllLanes, 16, false, &load_latency);
  const Picoseconds window = scan_window(algo::kAllLanes, 16, true);
  // Each lane's mark completes one load latency after its entry returns; the
  // slowest lane sets the ballot's time. Lane by lane, one round trip each,
  // the window would take about 32 times `entries`.
  EXPECT_EQ(window, entries + load_latency);
  // One lane: its mark after its entry, as a lane's load of GPU memory
  // waits for its own PCIe read.
  EXPECT_EQ(scan_window(1u, 16, true), scan_window(1u, 16, false) + load_latency);
}

// A fence while other warps spin on host memory waits behind their reads.
// The system fence: on the H100 715.0 ns alone, 1,119.6-1,165.6 ns with 1 to
// 7 such warps on its SM or on others (configs/measurements/
// warp-host-access-h100-2026-11-24.json, fence_system rows), and both
// fences grow with the pollers' number (configs/measurements/
// gpu-ops-under-host-polls-h200-2026-11-29.json). Warp 1 fences after 5 us;
// warps 2.. spin on a host word until the host writes it at 20 us, on its SM
// or one SM each. Oracle by hand: on the h100-sxm profile the system fence
// (627.5 ns + the L1 reload 135.0 ns) plus host_poll_fence_system_ns
// (415.6 ns) with pollers, and host_poller_fence_system_ns (10.93 ns) per
// poller beyond host_pollers_before_fence_cost (8); the GPU fence (340 ns +
// 135.0 ns) plus host_poller_fence_gpu_ns (15.23 ns) per poller beyond 8.
enum class Fence { gpu, system };

Picoseconds fence_beside_host_pollers(std::uint32_t pollers, bool same_sm,
                                      Fence fence = Fence::system,
                                      const std::string& profile = "h100-sxm") {
  GpuBench bench(nlohmann::json{{"profile", profile}});
  const std::uint64_t flag = GpuBench::host_memory() + 4096;
  Picoseconds took = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    GpuBench::idle_for(ns_to_ps(5000));
    EXPECT_EQ(bench.gpu().host_pollers(), pollers);
    const Picoseconds start = p.clock();
    if (fence == Fence::system) {
      p.fence_system();
    } else {
      p.fence_gpu();
    }
    took = p.clock() - start;
  });
  const std::uint32_t sms = bench.gpu().sms();
  for (std::uint32_t w = 0; w < pollers; ++w) {
    const platform::WarpPlacement where =
        same_sm ? platform::WarpPlacement{0, (w + 1) % 4}
                : platform::WarpPlacement{(w + 1) % sms, (w / sms) % 4};
    bench.spawn(where, [&](platform::SimWarp& p) {
      p.wait_until([&] { return p.load_u32(flag) != 0; }, flag, 4);
    });
  }
  sc_core::sc_spawn([&] {
    sc_core::wait(sc_core::sc_time(20000.0, sc_core::SC_NS));
    bench.machine().memory().store<std::uint32_t>(flag, 1);
  });
  bench.run();
  EXPECT_EQ(bench.gpu().host_pollers(), 0u);
  return took;
}

TEST(HostPollFence, ASystemFenceWaitsBehindWarpsPollingHostMemory) {
  const Picoseconds alone = fence_beside_host_pollers(0, false);
  EXPECT_EQ(alone, ns_to_ps(627.5) + ns_to_ps(135.0));
  for (std::uint32_t pollers : {1u, 3u, 7u}) {
    for (bool same_sm : {true, false}) {
      EXPECT_EQ(fence_beside_host_pollers(pollers, same_sm), alone + ns_to_ps(415.6))
          << pollers << " pollers, same SM " << same_sm;
    }
  }
  EXPECT_EQ(fence_beside_host_pollers(40, false), alone + ns_to_ps(415.6) + 32 * ns_to_ps(10.93));
}

TEST(HostPollFence, AGpuFenceWaitsPerWarpPollingHostMemory) {
  const Picoseconds alone = fence_beside_host_pollers(0, false, Fence::gpu);
  EXPECT_EQ(alone, ns_to_ps(340.0) + ns_to_ps(135.0));
  for (std::uint32_t pollers : {1u, 8u, 9u, 40u}) {
    EXPECT_EQ(fence_beside_host_pollers(pollers, false, Fence::gpu),
              alone + (pollers > 8 ? pollers - 8 : 0) * ns_to_ps(15.23))
        << pollers << " pollers";
  }
}

// The median over the six H200 runs of the same_entry rows with `pollers`
// polling warps (33 or 132 SMs) of a fence's increase over no poller.
double measured_h200_fence_increase(std::uint32_t pollers, const char* field) {
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) +
                   "/configs/measurements/gpu-ops-under-host-polls-h200-2026-11-29.json");
  const nlohmann::json measured = nlohmann::json::parse(in);
  std::vector<double> increases;
  for (const nlohmann::json& run : measured.at("runs")) {
    double idle = 0;
    std::vector<double> polled;
    for (const nlohmann::json& row : run.at("rows")) {
      if (row.value("pattern", "") != "same_entry") continue;
      const auto n = row.at("pollers").get<std::uint32_t>();
      if (n == 0) idle = row.at(field).get<double>();
      if (n == pollers) polled.push_back(row.at(field).get<double>());
    }
    for (double ns : polled) increases.push_back(ns - idle);
  }
  EXPECT_FALSE(increases.empty()) << pollers;
  if (increases.empty()) return 0;
  std::sort(increases.begin(), increases.end());
  return increases[increases.size() / 2];
}

// The H200 profile against the H200 runs it was fitted to. At 528 pollers
// (the most warps of a strategy case) each fence's increase over no poller
// is within 20 % of the measured median (a row's runs differ by up to a
// factor of 2),
// and the system fence's at 1,056 too. The GPU fence's measured increase
// grows faster than the pollers' number and the model is a line: at 264
// pollers its fence is too long, at 1,056 too short.
TEST(HostPollFence, H200FencesUnderManyPollersFollowTheMeasurement) {
  const auto simulated = [](std::uint32_t pollers, Fence fence) {
    return ps_to_ns(fence_beside_host_pollers(pollers, false, fence, "h200-sxm") -
                    fence_beside_host_pollers(0, false, fence, "h200-sxm"));
  };
  for (Fence fence : {Fence::gpu, Fence::system}) {
    const char* field = fence == Fence::gpu ? "fence_gpu_ns" : "fence_system_ns";
    const double at_528 = measured_h200_fence_increase(528, field);
    EXPECT_NEAR(simulated(528, fence), at_528, 0.20 * at_528) << field;
  }
  const double system_at_1056 = measured_h200_fence_increase(1056, "fence_system_ns");
  EXPECT_NEAR(simulated(1056, Fence::system), system_at_1056, 0.20 * system_at_1056);
  EXPECT_GT(simulated(264, Fence::gpu), measured_h200_fence_increase(264, "fence_gpu_ns"));
  EXPECT_LT(simulated(1056, Fence::gpu), measured_h200_fence_increase(1056, "fence_gpu_ns"));
}

TEST(HostPollFence, TheIncreaseIsWithinTheH100sSpread) {
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) +
                   "/configs/measurements/warp-host-access-h100-2026-11-24.json");
  const nlohmann::json measured = nlohmann::json::parse(in);
  double idle_min = 0, idle_max = 0, polled_min = 1e9, polled_max = 0;
  for (const nlohmann::json& row : measured.at("rows")) {
    if (row.at("pattern") != "fence_system") continue;
    if (row.at("pollers").get<int>() == 0) {
      idle_min = row.at("min_ns").get<double>();
      idle_max = row.at("max_ns").get<double>();
    } else {
      polled_min = std::min(polled_min, row.at("min_ns").get<double>());
      polled_max = std::max(polled_max, row.at("max_ns").get<double>());
    }
  }
  ASSERT_GT(idle_min, 0.0);
  ASSERT_GT(polled_max, 0.0);
  // The increase a launch could show: 1,117.2 - 715.4 to 1,181.2 - 714.9 ns.
  const double simulated =
      ps_to_ns(fence_beside_host_pollers(7, false) - fence_beside_host_pollers(0, false));
  EXPECT_GE(simulated, polled_min - idle_max);
  EXPECT_LE(simulated, polled_max - idle_min);
}

}  // namespace
}  // namespace gpunvme
