// algo::strategy_of: a platform that fixes the strategy at compile time (a
// GPU kernel built for one strategy, gpunvme-hw's per-role compute kernels)
// is run by that strategy whatever the WarpContext says; the simulator's
// platforms, which fix none, run the WarpContext's. The reaping waiter's
// watched ranges are worked out here by hand for one outstanding command.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <utility>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_common.h"

namespace gpunvme::algo {
namespace {

// A platform stand-in that fixes warp_batch with CQ-scan completion (no
// named strategy has this pair, so it cannot be mistaken for a default).
struct FixedCqScanWarpBatch {
  static constexpr Strategy fixed_strategy() {
    Strategy s = named_strategy(NamedStrategy::WarpBatch);
    s.completion = Completion::CqScan;
    return s;
  }
};
struct NoFixedStrategy {};

static_assert(FixesStrategy<FixedCqScanWarpBatch>::value);
static_assert(!FixesStrategy<NoFixedStrategy>::value);
static_assert(!FixesStrategy<void>::value);

TEST(FixedStrategy, AFixingPlatformOverridesTheWarpContext) {
  WarpContext w;
  w.strategy = named_strategy(NamedStrategy::AllThreads);  // PerCommand, Counter, CqScan, PerSm
  const Strategy fixed = strategy_of<FixedCqScanWarpBatch>(w);
  EXPECT_EQ(fixed.submission, Submission::WarpBatch);
  EXPECT_EQ(fixed.completion, Completion::CqScan);
  EXPECT_EQ(fixed.cid, CidScheme::SqSlot);
  EXPECT_EQ(fixed.mapping, QueueMapping::PerWarp);
  const Strategy runtime = strategy_of<NoFixedStrategy>(w);
  EXPECT_EQ(runtime.submission, Submission::PerCommand);
  EXPECT_EQ(runtime.cid, CidScheme::Counter);
  EXPECT_EQ(runtime.mapping, QueueMapping::PerSm);
}

std::set<std::pair<std::uint64_t, std::uint64_t>> ranges(const WaitSet& set) {
  std::set<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::uint32_t i = 0; i < set.count; ++i) out.insert({set.flat[2 * i], set.flat[2 * i + 1]});
  return out;
}

// One queue of 8 entries and 16 CIDs, one outstanding command. CidFlags
// waits on the CQ (8 x 16 B), the drain lock (4 B) and the done flags
// (16 x 4 B); CqScan on the CQ, its consumed marks (8 x 4 B) and the shared
// head (4 B).
TEST(FixedStrategy, TheReapingWaiterWatchesTheFixedStrategysMemory) {
  QueuePair q;
  q.entries = 8;
  q.cid_space = 16;
  q.cq_base = 0x1000;
  q.cq_lock = 0x2000;
  q.done = 0x3000;
  q.cq_marks = 0x4000;
  q.cq_head = 0x5000;
  Lanes<Pending> round;
  round.fill(Pending{});
  round[3].state = kOutstanding;
  round[3].queue = 0;
  WarpContext w;
  w.queues = &q;
  w.queue_count = 1;
  w.rounds = &round;
  w.round_count = 1;
  w.strategy = named_strategy(NamedStrategy::WarpBatch);  // CidFlags
  ASSERT_EQ(w.strategy.completion, Completion::CidFlags);

  WaitSet by_context;
  detail::add_reap_ranges(by_context, w);
  EXPECT_EQ(ranges(by_context), (std::set<std::pair<std::uint64_t, std::uint64_t>>{
                                    {0x1000, 128}, {0x2000, 4}, {0x3000, 64}}));

  WaitSet fixed;
  detail::add_reap_ranges<FixedCqScanWarpBatch>(fixed, w);
  EXPECT_EQ(ranges(fixed), (std::set<std::pair<std::uint64_t, std::uint64_t>>{
                               {0x1000, 128}, {0x4000, 32}, {0x5000, 4}}));
}

}  // namespace
}  // namespace gpunvme::algo
