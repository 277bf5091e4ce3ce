// The simulated platform's polls and lane loads against hand-computed
// cases: a waiting warp's predicate is evaluated again only when a write
// touches a line it read, and wakes at the poll after the write to its own
// word; a lane's load inside for_lanes costs one load latency on its path,
// after the lane's PCIe reads have returned, and counts to the instruction's
// op profile, not to "load".
#include <gtest/gtest.h>

#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

TEST(SimWarpPolls, AWaiterIsReevaluatedOnlyForWritesToTheLinesItRead) {
  // The waiter watches a whole page (as a reaper watches a queue's flag
  // array) but its predicate reads one word. A second warp writes, 1 us
  // apart: a word of another line of the page, a neighbour in the waiter's
  // own line, then the waiter's word.
  GpuBench bench;
  const gpu::GpuCosts c = bench.gpu().costs();
  const std::uint64_t page = bench.gpu().allocate(4096, 4096);
  const std::uint64_t mine = page + 2 * MemorySpace::kLineBytes + 8;
  const std::uint64_t neighbour = mine + 4;                             // the same 64 B line
  const std::uint64_t elsewhere = page + 40 * MemorySpace::kLineBytes;  // the same page
  int evaluations = 0;
  Picoseconds seen = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    p.wait_until(
        [&] {
          ++evaluations;
          return p.load_u32(mine) != 0;
        },
        page, 4096);
    seen = p.clock();
  });
  const Picoseconds step = ns_to_ps(1000);
  bench.spawn({1, 0}, [&](platform::SimWarp& p) {
    GpuBench::idle_for(step);
    p.store_u32(elsewhere, 1);
    GpuBench::idle_for(step);
    p.store_u32(neighbour, 1);
    GpuBench::idle_for(step);
    p.store_u32(mine, 1);
  });
  bench.run();
  // Each store lands when it issues: its warp is idle by then.
  const Picoseconds mine_at = 3 * step;
  // Polls every load latency from the wait's start (0): the first issued at
  // or after the write sees it, one load latency later.
  const Picoseconds period = c.load_latency;
  EXPECT_EQ(seen, (mine_at + period - 1) / period * period + c.load_latency);
  // At the wait's start; after the neighbour's write (its line was read);
  // after the waiter's own write. The other line's write and the wake-up
  // find nothing read written since and keep the last answer.
  EXPECT_EQ(evaluations, 3);
}

TEST(SimWarpPolls, APredicateReadingSeveralLinesSeesAWriteToAnyOfThem) {
  // A predicate over 40 words, one per line (more lines than a wait state
  // keeps): it must still see the write to the last one.
  GpuBench bench;
  const gpu::GpuCosts c = bench.gpu().costs();
  const std::uint64_t base = bench.gpu().allocate(64 * 64);
  Picoseconds seen = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    p.wait_until(
        [&] {
          std::uint32_t sum = 0;
          for (std::uint64_t i = 0; i < 40; ++i) sum += p.load_u32(base + i * 64);
          return sum != 0;
        },
        base, 64 * 64);
    seen = p.clock();
  });
  const Picoseconds write_at = ns_to_ps(2000);
  bench.spawn({1, 0}, [&](platform::SimWarp& p) {
    GpuBench::idle_for(write_at);
    p.store_u32(base + 39 * 64, 1);
  });
  bench.run();
  const Picoseconds period = c.load_latency;
  EXPECT_EQ(seen, (write_at + period - 1) / period * period + c.load_latency);
}

TEST(SimWarpPolls, ALaneLoadCostsOneLoadLatencyAndCountsToItsInstruction) {
  GpuBench bench;
  const gpu::GpuCosts c = bench.gpu().costs();
  const std::uint64_t words = bench.gpu().allocate(4096);
  Picoseconds one = 0, two = 0;
  std::uint32_t sum = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    p.store_u32(words + 4 * 31, 5);
    p.fence_gpu();
    Picoseconds t = p.clock();
    p.for_lanes(algo::kAllLanes, [&](int lane) { sum += p.load_u32(words + 4 * lane); });
    one = p.clock() - t;
    t = p.clock();
    // Two dependent loads per lane: one after the other on the lane's path.
    p.for_lanes(algo::kAllLanes, [&](int lane) {
      p.load_u32(words + 4 * lane);
      p.load_u32(words + 128 + 4 * lane);
    });
    two = p.clock() - t;
  });
  bench.run();
  EXPECT_EQ(sum, 5u);
  EXPECT_EQ(one, c.load_latency);
  EXPECT_EQ(two, 2 * c.load_latency);
  const int load = static_cast<int>(platform::ProfiledOp::kLoad);
  const int lanes = static_cast<int>(platform::ProfiledOp::kForLanes);
  EXPECT_EQ(bench.counters().op_calls[load], 0u);
  EXPECT_EQ(bench.counters().op_calls[lanes], 2u);
  EXPECT_EQ(bench.counters().op_ps[lanes], 3 * c.load_latency);
}

TEST(SimWarpPolls, ALaneLoadOfGpuMemoryWaitsForTheLanesPcieRead) {
  // A lane reads host memory, then GPU memory: the GPU load issues once the
  // read is back, so the instruction takes the read's time plus one load
  // latency. Oracle: the same instruction with the host read alone.
  Picoseconds read_alone = 0, read_then_load = 0;
  for (bool then_load : {false, true}) {
    GpuBench bench;
    const std::uint64_t local = bench.gpu().allocate(4096);
    const std::uint64_t host = GpuBench::host_memory() + 4096;
    bench.spawn({0, 0}, [&](platform::SimWarp& p) {
      const Picoseconds t = p.clock();
      p.for_lanes(0x1u, [&](int) {
        p.load_u32(host);
        if (then_load) p.load_u32(local);
      });
      (then_load ? read_then_load : read_alone) = p.clock() - t;
    });
    bench.run();
    if (then_load) {
      EXPECT_EQ(read_then_load, read_alone + bench.gpu().costs().load_latency);
    }
  }
  EXPECT_GT(read_alone, Picoseconds{0});
}

}  // namespace
}  // namespace gpunvme
