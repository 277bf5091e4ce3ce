// The host CPU model: cores as next-available-time servers and the per-I/O
// cost formula against hand-computed figures.
#include <gtest/gtest.h>

#include "models/host/cpu_cores.h"
#include "models/host/host_specs.h"
#include "sim/params/resolve.h"

namespace gpunvme {
namespace {

TEST(CpuCores, WorkOnABusyCoreWaitsAndIdleCoresRunInParallel) {
  host::CpuCores cores(2);
  EXPECT_EQ(cores.book(0, 1000, 500), 1500u);
  EXPECT_EQ(cores.book(0, 1200, 500), 2000u);  // queued behind the first
  EXPECT_EQ(cores.book(1, 1200, 500), 1700u);  // the other core is free
  EXPECT_EQ(cores.book(0, 5000, 100), 5100u);  // idle gap
  EXPECT_EQ(cores.busy(0), 1100u);
  const nlohmann::json s = cores.statistics(10000);
  EXPECT_DOUBLE_EQ(s["per_core"][0]["utilization"].get<double>(), 0.11);
  EXPECT_DOUBLE_EQ(s["per_core"][1]["utilization"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(s["mean_utilization"].get<double>(), 0.08);
}

TEST(CpuIoCosts, DefaultsGiveTenMillionIopsPerPollingCoreAndTwoWithDmaMapping) {
  const ParamValues cpu = resolve_params(host::cpu_spec(), nlohmann::json::object(), {"t", "$"});
  const host::CpuIoCosts c = host::cpu_io_costs(cpu);
  // 50 ns submit + 40 ns poll + 300 ns syscall / 32 (rounded down in ps).
  const Picoseconds passthrough = c.per_io(32, false, false, false);
  EXPECT_EQ(passthrough, 50'000u + 40'000u + 300'000u / 32);
  EXPECT_NEAR(1e12 / static_cast<double>(passthrough), 10.06e6, 0.01e6);
  // seed 000: ~2 M IOPS per core with DMA mapping.
  EXPECT_NEAR(1e12 / static_cast<double>(c.per_io(32, true, false, false)), 1.98e6, 0.05e6);
  // Requests from the GPU add taking the request and posting the flag;
  // bounce buffers add a copy launch instead of the flag.
  EXPECT_EQ(c.per_io(1, false, true, false), 50'000u + 300'000u + 40'000u + 50'000u + 20'000u);
  EXPECT_EQ(c.per_io(1, false, true, true), 50'000u + 300'000u + 40'000u + 50'000u + 2'000'000u);
}

}  // namespace
}  // namespace gpunvme
