// The host CPU model: cores as next-available-time servers and the per-I/O
// cost formula against hand-computed figures.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "models/host/cpu_cores.h"
#include "models/host/host_specs.h"
#include "models/host/interrupt_coalescing.h"
#include "sim/kernel/params/resolve.h"

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

TEST(CpuIoCosts, DefaultsAddTheStackStageByStage) {
  const ParamValues cpu = resolve_params(host::cpu_spec(), nlohmann::json::object(), {"t", "$"});
  const host::CpuIoCosts c = host::cpu_io_costs(cpu);
  EXPECT_TRUE(c.interrupts);  // Linux's default
  // The kernel's share, fitted to fio's 1.40 us of system time per 4 KiB
  // read (4 I/Os per submit call and per reap): driver submit 550 + 300 / 4
  // syscall + completion 400 + 1500 / 4 interrupt.
  EXPECT_EQ(c.submit + c.syscall / 4 + c.complete_irq + c.interrupt / 4, 1'400'000u);
  // A gds read from the GPU: + file system 450, cuFile 1000, buffer look-up
  // 200, request 50, flag 80.
  EXPECT_EQ(c.per_io(4, 4, false, true, false),
            1'400'000u + 450'000u + 1'000'000u + 200'000u + 50'000u + 80'000u);
  // A bounce read from the host: + file system, copy launch 2200 and sync 330.
  EXPECT_EQ(c.per_io(1, 1, false, false, true),
            550'000u + 300'000u + 400'000u + 1'500'000u + 450'000u + 2'200'000u + 330'000u);
  // DMA mapping adds 400 ns; polling replaces the interrupt and its
  // completion with a 40 ns reap.
  EXPECT_EQ(c.per_io(1, 1, true, false, true) - c.per_io(1, 1, false, false, true), 400'000u);
  host::CpuIoCosts polled = c;
  polled.interrupts = false;
  EXPECT_EQ(c.per_io(1, 1, false, false, false) - polled.per_io(1, 1, false, false, false),
            400'000u + 1'500'000u - 40'000u);
  // Half a poll period joins the cache-line transfer of a GPU request.
  EXPECT_EQ(c.request_wait(), 280'000u);
  polled.poll_period = 1'000'000;
  EXPECT_EQ(polled.request_wait(), 780'000u);
}

TEST(HostCostLedger, ReportsNanosecondsPerIoForEachStageThatCostSomething) {
  host::HostCostLedger ledger;
  ledger.add(host::HostCost::cufile, 4'500'000, 10);
  ledger.add(host::HostCost::syscall, 300'000, 3);
  const nlohmann::json j = ledger.per_io_ns(10);
  EXPECT_DOUBLE_EQ(j["cufile"].get<double>(), 4500.0);
  EXPECT_DOUBLE_EQ(j["syscall"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(j["total"].get<double>(), 4590.0);
  EXPECT_FALSE(j.contains("interrupt"));
}

// NVMe Interrupt Coalescing, threshold 4 entries, aggregation time 100 us,
// entries landing at 0, 10, 20, 30, 50, 60, 200, 210, 220, 230 and 400 us.
// By hand: the 4th entry (30 us) reaches the threshold; 50 and 60 wait for
// the time, 100 us after 50 = 150 us; 200..230 reach the threshold at 230;
// 400 waits until 500. Four interrupts: 30 (4 entries), 150 (2, by time),
// 230 (4), 500 (1, by time).
struct Delivery {
  std::vector<double> interrupt_us;
  std::vector<std::uint32_t> entries;
  std::vector<double> delivered_us;  // per completion, in landing order
};
Delivery drive(host::InterruptCoalescer& c, const std::vector<double>& landings_us) {
  Delivery d;
  // Entries fire in landing order: an interrupt delivers the n oldest.
  auto fired = [&](Picoseconds at, std::uint32_t n) {
    const double us = ps_to_ns(at) / 1000.0;
    d.interrupt_us.push_back(us);
    d.entries.push_back(n);
    d.delivered_us.insert(d.delivered_us.end(), n, us);
  };
  for (double us : landings_us) {
    const Picoseconds at = us_to_ps(us);
    while (c.deadline() <= at) {
      const Picoseconds when = c.deadline();
      fired(when, c.expire(when));
    }
    if (c.post(at)) fired(at, c.fired());
  }
  if (c.pending() > 0) {
    const Picoseconds when = c.deadline();
    fired(when, c.expire(when));
  }
  return d;
}

TEST(InterruptCoalescer, ThresholdFourTimeOneHundredMicrosecondsByHand) {
  host::InterruptCoalescer c(4, 1);
  EXPECT_TRUE(c.coalescing());
  const Delivery d = drive(c, {0, 10, 20, 30, 50, 60, 200, 210, 220, 230, 400});
  EXPECT_EQ(d.interrupt_us, (std::vector<double>{30, 150, 230, 500}));
  EXPECT_EQ(d.entries, (std::vector<std::uint32_t>{4, 2, 4, 1}));
  EXPECT_EQ(d.delivered_us,
            (std::vector<double>{30, 30, 30, 30, 150, 150, 230, 230, 230, 230, 500}));
  EXPECT_EQ(c.interrupts(), 4u);
  EXPECT_EQ(c.by_threshold(), 2u);
  EXPECT_EQ(c.by_time(), 2u);
  EXPECT_EQ(c.entries(), 11u);
}

TEST(InterruptCoalescer, OffAtResetValuesAndWithZeroTime) {
  for (const auto& [threshold, time] :
       {std::pair<std::uint32_t, std::uint32_t>{1, 0}, {4, 0}, {1, 3}}) {
    host::InterruptCoalescer c(threshold, time);
    EXPECT_FALSE(c.coalescing());
    const Delivery d = drive(c, {0, 10, 20});
    EXPECT_EQ(d.interrupt_us, (std::vector<double>{0, 10, 20}));
    EXPECT_EQ(d.delivered_us, (std::vector<double>{0, 10, 20}));
    EXPECT_EQ(c.by_threshold() + c.by_time(), 0u);
  }
}

TEST(InterruptCoalescer, TheTimeRunsFromTheOldestPendingEntry) {
  host::InterruptCoalescer c(8, 2);  // 200 us
  EXPECT_FALSE(c.post(us_to_ps(5)));
  EXPECT_EQ(c.deadline(), us_to_ps(205));
  EXPECT_FALSE(c.post(us_to_ps(150)));
  EXPECT_EQ(c.deadline(), us_to_ps(205));  // not restarted by a younger entry
  EXPECT_EQ(c.expire(us_to_ps(204)), 0u);  // too early: nothing fires
  EXPECT_EQ(c.expire(us_to_ps(205)), 2u);
  EXPECT_EQ(c.deadline(), host::InterruptCoalescer::kNoDeadline);
}

}  // namespace
}  // namespace gpunvme
