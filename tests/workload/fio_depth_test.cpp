// fio's iodepth loop (fio_depth.h) on a queue-depth timeline worked by hand:
// one thread, iodepth 4, eight I/Os whose device latencies are fixed by
// their issue order (10, 20, 30, 40, 10, 20, 30, 40 time units). A tiny
// event loop stands in for the device: an I/O issued at t completes at
// t + its latency; completions at the same time run in the order they were
// issued.
#include "sim/system/workload/fio_depth.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <queue>
#include <tuple>
#include <vector>

namespace gpunvme {
namespace {

struct Timeline {
  std::vector<std::uint64_t> issued_at;     // by I/O, in issue order
  std::vector<std::uint64_t> completed_at;  // by I/O
  std::vector<std::uint32_t> slot;          // by I/O
  std::uint64_t finished_at = 0;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> in_flight;  // (time, count) after each step
};

Timeline run_thread(FioBatching batching, std::uint64_t ios) {
  const std::vector<std::uint64_t> latency = {10, 20, 30, 40, 10, 20, 30, 40};
  FioDepth depth(batching, ios);
  Timeline t;
  // (completion time, issue sequence, I/O)
  using Event = std::tuple<std::uint64_t, std::uint64_t, std::size_t>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  auto issue = [&](std::uint64_t now) {
    for (const std::uint32_t s : depth.step()) {
      const std::size_t io = t.issued_at.size();
      t.issued_at.push_back(now);
      t.completed_at.push_back(0);
      t.slot.push_back(s);
      events.emplace(now + latency[io % latency.size()], io, io);
    }
    t.in_flight.emplace_back(now, depth.in_flight());
  };
  issue(0);
  while (!events.empty()) {
    const auto [when, sequence, io] = events.top();
    events.pop();
    t.completed_at[io] = when;
    depth.completed(t.slot[io]);
    issue(when);
    if (depth.finished()) t.finished_at = when;
  }
  EXPECT_TRUE(depth.finished());
  return t;
}

using Times = std::vector<std::uint64_t>;
using Slots = std::vector<std::uint32_t>;

// fio's defaults: each completion is reaped at once and its slot refilled.
TEST(FioDepth, RefillKeepsIodepthInFlight) {
  const Timeline t = run_thread(FioBatching::resolve(4, 1, 1, 0), 8);
  // t=10: I0 done, I4 into its slot. t=20: I1 then I4 done: I5 (slot 1),
  // I6 (slot 0). t=30: I2 done, I7 into slot 2. Then nothing is left.
  EXPECT_EQ(t.issued_at, (Times{0, 0, 0, 0, 10, 20, 20, 30}));
  EXPECT_EQ(t.completed_at, (Times{10, 20, 30, 40, 20, 40, 50, 70}));
  EXPECT_EQ(t.slot, (Slots{0, 1, 2, 3, 0, 1, 0, 2}));
  EXPECT_EQ(t.finished_at, 70u);
  // Four in flight until the last I/O is issued (t=30), then the drain:
  // two after t=40 (I6, I7), one after t=50.
  for (const auto& [when, count] : t.in_flight) {
    if (when <= 30) {
      EXPECT_EQ(count, 4u) << when;
    }
  }
  EXPECT_EQ(t.in_flight.back(), (std::pair<std::uint64_t, std::uint32_t>{70, 0}));
}

// iodepth_batch_submit = iodepth_batch_complete_min = iodepth: submit four,
// wait for all four, repeat.
TEST(FioDepth, BatchSubmitsAllAndWaitsForAll) {
  const FioBatching batch = FioBatching::resolve(4, 4, 4, 0);
  EXPECT_TRUE(batch.waits_for_all());
  const Timeline t = run_thread(batch, 8);
  EXPECT_EQ(t.issued_at, (Times{0, 0, 0, 0, 40, 40, 40, 40}));
  EXPECT_EQ(t.completed_at, (Times{10, 20, 30, 40, 50, 60, 70, 80}));
  EXPECT_EQ(t.slot, (Slots{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(t.finished_at, 80u);
  // 0 for iodepth_batch_submit means iodepth, as in fio.
  EXPECT_EQ(FioBatching::resolve(4, 0, 4, 0).submit, 4u);
}

// complete_min 2: the thread reaps in pairs. t=20: I0, I1 -> I4 (slot 0),
// I5 (slot 1). t=30: I2, I4 -> I6 (slot 0), I7 (slot 2). t=40: I3, I5
// reaped; then it waits for both of I6 and I7 (t=70).
TEST(FioDepth, CompleteMinWaitsForThatManyCompletions) {
  const Timeline t = run_thread(FioBatching::resolve(4, 1, 2, 0), 8);
  EXPECT_EQ(t.issued_at, (Times{0, 0, 0, 0, 20, 20, 30, 30}));
  EXPECT_EQ(t.completed_at, (Times{10, 20, 30, 40, 30, 40, 60, 70}));
  EXPECT_EQ(t.slot, (Slots{0, 1, 2, 3, 0, 1, 0, 2}));
  EXPECT_EQ(t.finished_at, 70u);
}

// A thread that takes no time reaps the moment its wait ends, when exactly
// complete_min I/Os are done, so a complete_max above complete_min changes
// nothing on this timeline (it binds where a wait can find more done, as a
// warp's scan of its rounds can).
TEST(FioDepth, CompleteMaxAboveCompleteMinReapsWhatTheWaitFound) {
  const Timeline t = run_thread(FioBatching::resolve(4, 1, 2, 4), 8);
  EXPECT_EQ(t.issued_at, (Times{0, 0, 0, 0, 20, 20, 30, 30}));
  EXPECT_EQ(t.completed_at, (Times{10, 20, 30, 40, 30, 40, 60, 70}));
  EXPECT_EQ(t.slot, (Slots{0, 1, 2, 3, 0, 1, 0, 2}));
}

TEST(FioDepth, ResolvesFiosZerosAndCaps) {
  const FioBatching b = FioBatching::resolve(8, 64, 0, 0);
  EXPECT_EQ(b.submit, 8u);        // capped at iodepth
  EXPECT_EQ(b.complete_min, 1u);  // 0 polls: one completion ends the wait
  EXPECT_EQ(b.complete_max, 1u);  // 0: the same as complete_min
  EXPECT_EQ(FioBatching::resolve(8, 1, 3, 0).complete_max, 3u);
  EXPECT_FALSE(b.waits_for_all());
  // With iodepth 1 both semantics are the same loop.
  EXPECT_TRUE(FioBatching::resolve(1, 1, 1, 0).waits_for_all());
}

// Fewer I/Os than iodepth: all go at once, and the thread ends when they are
// done.
TEST(FioDepth, FewerIosThanIodepth) {
  const Timeline t = run_thread(FioBatching::resolve(4, 1, 1, 0), 3);
  EXPECT_EQ(t.issued_at, (Times{0, 0, 0}));
  EXPECT_EQ(t.finished_at, 30u);
}

}  // namespace
}  // namespace gpunvme
