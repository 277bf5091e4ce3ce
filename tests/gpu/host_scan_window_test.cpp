// A cq_scan window (sim/core/algo/completion.h, scan_cq) is one ballot whose
// 32 lanes each read a 16 B CQE of host memory and then the entry's consumed
// mark in GPU memory. The lanes issue together: the ballot takes one round
// trip of the reads plus one load latency for the marks, not one round trip
// per lane (one lane's 16 B read of host memory 1.5 us on the H100, 32
// lanes' together 1.5 us: configs/measurements/
// warp-host-access-h100-2026-11-24.json). Oracle: the same ballot without
// the marks, and the difference worked by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace gpunvme
