// cq_scan_co_waiter_ns against hand-computed cases: a warp whose completion
// policy scans the CQ notices its write at the poll after it, as every
// waiter does, and then one cq_scan_co_waiter_ns later for each other such
// warp of its SM still waiting; warps of other SMs, warps of other
// completion policies and a profile without the calibration add nothing.
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <string>

#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

// When a waiter whose wait started at 0 sees a write landing at `write_at`
// with no co-waiters: polls every load latency from 0, and the first at or
// after the write returns one load latency later (SimWarpPolls' oracle).
Picoseconds noticed(const gpu::GpuCosts& c, Picoseconds write_at) {
  const Picoseconds period = c.load_latency;
  return (write_at + period - 1) / period * period + c.load_latency;
}

struct Waiter {
  std::uint32_t sm;
  bool cq_scan;
};

// Each waiter waits from 0 for its own word, written 10 us apart by a warp
// of SM 100 in the waiters' order; returns when each saw its write.
template <std::size_t N>
std::array<Picoseconds, N> run_waiters(GpuBench& bench, const std::array<Waiter, N>& waiters,
                                       Picoseconds step) {
  const std::uint64_t words = bench.gpu().allocate(N * 128, 128);
  std::array<Picoseconds, N> seen{};
  for (std::size_t i = 0; i < N; ++i) {
    bench.spawn({waiters[i].sm, static_cast<std::uint32_t>(i % 4)}, [&, i](platform::SimWarp& p) {
      p.set_cq_scan_waits(waiters[i].cq_scan);
      const std::uint64_t mine = words + i * 128;
      p.wait_until([&] { return p.load_u32(mine) != 0; }, mine, 4);
      seen[i] = p.clock();
    });
  }
  bench.spawn({100, 0}, [&](platform::SimWarp& p) {
    for (std::size_t i = 0; i < N; ++i) {
      GpuBench::idle_for(step);
      p.store_u32(words + i * 128, 1);
    }
  });
  bench.run();
  return seen;
}

TEST(CqScanCoWaiters, EachOtherWaiterOfTheSmAddsTheCostOnce) {
  GpuBench bench(nlohmann::json{{"cq_scan_co_waiter_ns", 1000.0}});
  const gpu::GpuCosts c = bench.gpu().costs();
  ASSERT_EQ(c.cq_scan_co_waiter, ns_to_ps(1000.0));
  // Three CQ-scan waiters on SM 0, written first, second and third; a fourth
  // warp on SM 0 waits with another completion policy (not counted), and a
  // CQ-scan waiter on SM 1 (another SM: not counted), written fourth and
  // fifth.
  const Picoseconds step = ns_to_ps(10000);
  const auto seen = run_waiters<5>(
      bench, {Waiter{0, true}, Waiter{0, true}, Waiter{0, true}, Waiter{0, false}, Waiter{1, true}},
      step);
  // The first: two others of SM 0 still wait (the non-CQ-scan warp does not
  // count); the second: one; the third: none.
  EXPECT_EQ(seen[0], noticed(c, 1 * step) + 2 * ns_to_ps(1000.0));
  EXPECT_EQ(seen[1], noticed(c, 2 * step) + 1 * ns_to_ps(1000.0));
  EXPECT_EQ(seen[2], noticed(c, 3 * step));
  EXPECT_EQ(seen[3], noticed(c, 4 * step));
  EXPECT_EQ(seen[4], noticed(c, 5 * step));
}

TEST(CqScanCoWaiters, NothingWithoutTheCalibration) {
  // The parameter's default (0): the same waiters notice their writes at the
  // poll after them, whoever else waits.
  GpuBench bench;
  const gpu::GpuCosts c = bench.gpu().costs();
  ASSERT_EQ(c.cq_scan_co_waiter, 0u);
  const Picoseconds step = ns_to_ps(10000);
  const auto seen =
      run_waiters<3>(bench, {Waiter{0, true}, Waiter{0, true}, Waiter{0, true}}, step);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(seen[i], noticed(c, (i + 1) * step)) << i;
}

TEST(CqScanCoWaiters, TheH200ProfileChargesEightWaitersOfAnSm) {
  // configs/gpu/h200-sxm.json's figure (the calibration from the
  // controller-only feeder runs; tests/python/test_feeder_packing.py derives
  // it from the data). Eight CQ-scan waiters on one SM: the first written
  // waits 7 x that beyond its poll, the last nothing.
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) + "/configs/gpu/h200-sxm.json");
  const double co_waiter_ns =
      nlohmann::json::parse(in)["params"]["cq_scan_co_waiter_ns"]["value"].get<double>();
  ASSERT_GT(co_waiter_ns, 0.0);
  GpuBench bench(nlohmann::json{{"cq_scan_co_waiter_ns", co_waiter_ns}});
  const gpu::GpuCosts c = bench.gpu().costs();
  const Picoseconds step = ns_to_ps(20000);
  std::array<Waiter, 8> waiters{};
  waiters.fill(Waiter{5, true});
  const auto seen = run_waiters<8>(bench, waiters, step);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(seen[i], noticed(c, (i + 1) * step) + (7 - i) * ns_to_ps(co_waiter_ns)) << i;
  }
}

}  // namespace
}  // namespace gpunvme
