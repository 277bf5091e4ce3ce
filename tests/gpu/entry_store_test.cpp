// entry_store_ns against hand-computed cases: a lane's store_bytes of whole
// 64 B entries (an SQE) inside for_lanes costs the larger of entry_store_ns per entry and its
// 16 B stores' issue time, wherever the entry goes; the lanes of a for_lanes
// write side by side, so 1 and 32 lanes cost the same; stores shorter than an
// entry keep their issue time; at 0 the stores' issue time alone is charged.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

// The warp's time for each of: one lane writing a 64 B entry into GPU
// memory; 32 lanes writing one each; one lane writing 128 B (two entries);
// one lane writing 16 B; one lane writing a 64 B entry into host memory.
std::vector<Picoseconds> entry_write_times(const nlohmann::json& params) {
  GpuBench bench(params);
  const std::uint64_t ring = bench.gpu().allocate(64 * 64);
  const std::uint64_t host = GpuBench::host_memory();
  std::vector<Picoseconds> took;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    const std::uint8_t entry[128] = {};
    auto timed = [&](algo::LaneMask lanes, std::uint64_t base, std::size_t len) {
      const Picoseconds start = p.clock();
      p.for_lanes(lanes, [&](int lane) { p.store_bytes(base + 128 * lane, entry, len); });
      took.push_back(p.clock() - start);
    };
    timed(1u, ring, 64);
    timed(algo::kAllLanes, ring, 64);
    timed(1u, ring, 128);
    timed(1u, ring, 16);
    timed(1u, host, 64);
  });
  bench.run();
  return took;
}

// Hand-worked with round figures: entry 200 ns, GPU store issue 3.82 ns
// (4 x 3.82 = 15.28 < 200), PCIe store issue 18 ns (4 x 18 = 72 < 200).
TEST(EntryStore, AWholeEntryCostsTheEntryFigureOncePerLanePath) {
  const std::vector<Picoseconds> t = entry_write_times(nlohmann::json{
      {"entry_store_ns", 200.0}, {"store_issue_ns", 3.82}, {"pcie_store_issue_ns", 18.0}});
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0], Picoseconds{200000});  // one lane, one entry
  EXPECT_EQ(t[1], Picoseconds{200000});  // 32 lanes side by side
  EXPECT_EQ(t[2], Picoseconds{400000});  // two entries: 8 x 3.82 = 30.56 < 400
  EXPECT_EQ(t[3], Picoseconds{3820});    // 16 B: no entry, one store's issue
  EXPECT_EQ(t[4], Picoseconds{200000});  // host memory: 200 > 72
}

// Stores whose issue time is longer than the entry figure keep it: entry 50
// ns against 4 x 18 = 72 ns of PCIe store issue, and against 4 x 3.82 =
// 15.28 ns in GPU memory.
TEST(EntryStore, TheStoresIssueTimeWhenItIsLonger) {
  const std::vector<Picoseconds> t = entry_write_times(nlohmann::json{
      {"entry_store_ns", 50.0}, {"store_issue_ns", 3.82}, {"pcie_store_issue_ns", 18.0}});
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0], Picoseconds{50000});
  EXPECT_EQ(t[4], Picoseconds{72000});
}

// A warp-uniform 64 B store (outside for_lanes: a BlueFlame doorbell of a
// WQE just loaded) keeps its stores' issue time: 4 x 3.82 ns.
TEST(EntryStore, AWarpUniformStoreOfAnEntryKeepsItsIssueTime) {
  GpuBench bench(nlohmann::json{{"entry_store_ns", 200.0}, {"store_issue_ns", 3.82}});
  const std::uint64_t ring = bench.gpu().allocate(64);
  Picoseconds took = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    const std::uint8_t entry[64] = {};
    const Picoseconds start = p.clock();
    p.store_bytes(ring, entry, 64);
    took = p.clock() - start;
  });
  bench.run();
  EXPECT_EQ(took, Picoseconds{15280});
}

// At 0 the write costs its stores' issue alone: 4 x 3.82 ns.
TEST(EntryStore, ZeroLeavesTheStoresIssueTime) {
  const std::vector<Picoseconds> t = entry_write_times(nlohmann::json{
      {"entry_store_ns", 0.0}, {"store_issue_ns", 3.82}, {"pcie_store_issue_ns", 18.0}});
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0], Picoseconds{15280});
  EXPECT_EQ(t[1], Picoseconds{15280});
  EXPECT_EQ(t[4], Picoseconds{72000});
}

TEST(EntryStore, BadValuesAreRefused) {
  testing::expect_gpu_rejected(nlohmann::json{{"entry_store_ns", -1.0}}, "entry_store_ns",
                               "out of range");
  testing::expect_gpu_rejected(nlohmann::json{{"entry_store_ns", "fast"}}, "entry_store_ns",
                               "expected");
}

}  // namespace
}  // namespace gpunvme
