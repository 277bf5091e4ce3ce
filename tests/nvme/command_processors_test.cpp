// The controller's command processors, driven directly (no simulation): the
// cores as next-free servers at their own speeds, a command's processor
// time, and the two processor policies, with times worked out by hand.
#include "models/nvme/command_processors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/core/protocol/nvme_commands.h"

namespace gpunvme::nvme {
namespace {

// `count` reads of 8 logical blocks each (NLB is zero-based).
std::vector<std::uint8_t> reads(std::uint32_t count) {
  std::vector<std::uint8_t> bytes(std::size_t{count} * kSqEntrySize);
  for (std::uint32_t i = 0; i < count; ++i) {
    const SubmissionEntry e = make_read(static_cast<std::uint16_t>(i), 1, 8 * i, 7, 0, 0);
    std::memcpy(bytes.data() + std::size_t{i} * kSqEntrySize, &e, kSqEntrySize);
  }
  return bytes;
}

TEST(ProcessorCores, EarliestFreeCoreAtItsOwnSpeed) {
  ProcessorCores cores(2, {1.0, 2.0});            // core 1 takes twice the nominal time
  EXPECT_EQ(cores.book_earliest(0, 100), 100u);   // core 0: 0..100
  EXPECT_EQ(cores.book_earliest(0, 100), 200u);   // core 1 (free at 0): 0..200
  EXPECT_EQ(cores.book_earliest(50, 100), 200u);  // core 0 (free at 100): 100..200
  EXPECT_EQ(cores.book_earliest(0, 10), 210u);    // both free at 200: core 0, 200..210
  EXPECT_EQ(cores.free_at(1), 200u);
  EXPECT_EQ(cores.book(1, 300, 10), 320u);  // idle core 1 starts when ready: 300..320
  cores.hold_until(0, 500);
  EXPECT_EQ(cores.book(0, 0, 1), 501u);
  cores.hold_until(0, 400);  // never earlier than it already is
  EXPECT_EQ(cores.free_at(0), 501u);
  EXPECT_EQ(cores.scaled(3, 1), 6u);
  EXPECT_EQ(ProcessorCores(3, {}).scaled(7, 2), 7u);  // no scale: nominal
}

TEST(CommandCost, OverheadPlusBytes) {
  const CommandCost cost{1000, 0.25, 512};
  const SubmissionEntry read = make_read(1, 1, 0, 7, 0, 0);  // 8 x 512 B
  EXPECT_EQ(cost.data_bytes(read), 4096u);
  EXPECT_EQ(cost.processing_time(4096), 1000u + 1024u);
  SubmissionEntry flush{};
  flush.set_opcode(static_cast<std::uint8_t>(NvmOpcode::Flush));
  EXPECT_EQ(cost.data_bytes(flush), 0u);
  // 4096 / 3 = 1365.33 ps: rounded to the nearest picosecond.
  EXPECT_EQ((CommandCost{0, 1.0 / 3.0, 512}.processing_time(4096)), 1365u);
}

TEST(PerCommandProcessing, EachCommandBooksTheEarliestCore) {
  ProcessorCores cores(2, {});
  PerCommandProcessing policy(cores, CommandCost{100, 0.0, 512});
  EXPECT_FALSE(policy.one_read_per_turn());
  EXPECT_EQ(policy.fetch_turn(1, 9, 4, 0), 9u);  // the whole turn, in reads of any size
  EXPECT_FALSE(policy.fetched(1, nullptr, 0, 0).batch);
  EXPECT_EQ(policy.processed(std::nullopt, 4096, 0), 100u);
  EXPECT_EQ(policy.processed(std::nullopt, 4096, 0), 100u);  // the other core
  EXPECT_EQ(policy.processed(std::nullopt, 4096, 0), 200u);
  EXPECT_FALSE(policy.per_core());
}

// A scripted controller: the policy's wake-ups wait here until the test
// fires them; the queues it offers back and the fetch kicks are recorded.
struct ScriptedController {
  std::vector<std::pair<Picoseconds, std::function<void()>>> scheduled;
  std::vector<std::uint16_t> ready;
  int kicks = 0;
  std::uint64_t generation = 0;

  ProcessorHooks hooks() {
    ProcessorHooks h;
    h.schedule_at = [this](Picoseconds at, std::function<void()> fn) {
      scheduled.emplace_back(at, std::move(fn));
    };
    h.queue_ready = [this](std::uint16_t qid) { ready.push_back(qid); };
    h.kick_fetch = [this] { ++kicks; };
    h.generation = [this] { return generation; };
    return h;
  }
  void fire(std::size_t k) { scheduled.at(k).second(); }
};

// Two cores: queues 1 and 3 on core 0, queue 2 on core 1. A batch costs
// 500 ps plus 100 ps per command; a core rests 50 ps between batches.
TEST(BatchServiceProcessing, OneBatchPerCoreUntilItsCompletionsArePosted) {
  ScriptedController controller;
  ProcessorCores cores(2, {});
  BatchServiceProcessing policy(cores, CommandCost{100, 0.0, 512}, 500, 50, 4, controller.hooks());
  EXPECT_TRUE(policy.one_read_per_turn());
  EXPECT_EQ(policy.processor_of(1), 0u);
  EXPECT_EQ(policy.processor_of(2), 1u);
  EXPECT_EQ(policy.processor_of(3), 0u);

  // Core 0 fetches a batch of queue 1: at most one burst (4).
  EXPECT_EQ(policy.fetch_turn(1, 10, 4, 0), 4u);
  // Queue 3 waits while its core fetches: no wake-up yet (the read's arrival decides).
  EXPECT_EQ(policy.fetch_turn(3, 5, 4, 0), 0u);
  EXPECT_TRUE(controller.scheduled.empty());
  // Queue 2's core is free.
  EXPECT_EQ(policy.fetch_turn(2, 3, 4, 0), 3u);

  // The 4 entries arrive at 10: one job of 500 + 4 x 100 = 900 ps, done at 910.
  policy.read_arrived(1);
  const std::vector<std::uint8_t> entries = reads(4);
  const FetchedWork work = policy.fetched(1, entries.data(), 4, 10);
  ASSERT_TRUE(work.processed);
  EXPECT_EQ(*work.processed, 910u);
  ASSERT_TRUE(work.batch);
  EXPECT_EQ(work.batch->left, 4u);
  policy.read_dispatched(1, 10);
  EXPECT_TRUE(controller.scheduled.empty());  // held by the batch, not by time
  EXPECT_EQ(policy.processed(work.processed, 4096, 10), 910u);

  // Three completions leave the core held; queue 3 still waits at 950.
  for (int i = 0; i < 3; ++i) policy.command_done(work.batch.get(), 950);
  EXPECT_EQ(policy.fetch_turn(3, 5, 4, 950), 0u);
  EXPECT_TRUE(controller.scheduled.empty());
  // The last one at 1000 frees the core 50 ps later: one wake-up at 1050.
  policy.command_done(work.batch.get(), 1000);
  ASSERT_EQ(controller.scheduled.size(), 1u);
  EXPECT_EQ(controller.scheduled[0].first, 1050u);
  EXPECT_EQ(cores.free_at(0), 1050u);
  // Asking again before then neither lists queue 3 twice nor schedules twice.
  EXPECT_EQ(policy.fetch_turn(3, 5, 4, 1020), 0u);
  EXPECT_EQ(controller.scheduled.size(), 1u);
  controller.fire(0);
  EXPECT_EQ(controller.ready, (std::vector<std::uint16_t>{3}));
  EXPECT_EQ(controller.kicks, 1);
  EXPECT_EQ(policy.fetch_turn(3, 2, 4, 1050), 2u);

  const auto stats = policy.per_core();
  ASSERT_TRUE(stats);
  ASSERT_EQ(stats->size(), 2u);
  EXPECT_EQ((*stats)[0].batches, 1u);
  EXPECT_EQ((*stats)[0].commands, 4u);
  EXPECT_EQ((*stats)[0].busy, 1000u);  // fetch started at 0, last completion at 1000
  EXPECT_EQ((*stats)[1].batches, 0u);
}

TEST(BusyScale, LinearBetweenPointsFlatBeyondTheEnds) {
  const BusyScale scale({1, 2, 4}, {0.8, 0.9, 1.0});
  EXPECT_DOUBLE_EQ(scale.at(1), 0.8);
  EXPECT_DOUBLE_EQ(scale.at(2), 0.9);
  EXPECT_DOUBLE_EQ(scale.at(4), 1.0);
  // 3 busy: half way from (2, 0.9) to (4, 1.0): 0.95; 1.5: 0.85.
  EXPECT_DOUBLE_EQ(scale.at(3), 0.95);
  EXPECT_DOUBLE_EQ(scale.at(1.5), 0.85);
  // Beyond the ends: the end points' scales.
  EXPECT_DOUBLE_EQ(scale.at(0.5), 0.8);
  EXPECT_DOUBLE_EQ(scale.at(32), 1.0);
  EXPECT_DOUBLE_EQ(BusyScale({3}, {1.25}).at(1), 1.25);
  EXPECT_TRUE(BusyScale().empty());
  EXPECT_DOUBLE_EQ(BusyScale().at(7), 1.0);
}

// Three cores, a batch of 4 costing 500 + 4 x 100 = 900 ps on the line; the
// scale is 1.0 with one processor busy, 1.2 with two, 1.5 with three.
TEST(BatchServiceProcessing, ABatchsTimeScalesByTheProcessorsBusyAsItStarts) {
  ScriptedController controller;
  ProcessorCores cores(3, {});
  BatchServiceProcessing policy(cores, CommandCost{100, 0.0, 512}, 500, 50, 6, controller.hooks(),
                                BusyScale({1, 2, 3}, {1.0, 1.2, 1.5}));
  const std::vector<std::uint8_t> entries = reads(4);
  // Core 0 alone: 1.0 x 900, done at 900.
  ASSERT_EQ(policy.fetch_turn(1, 4, 4, 0), 4u);
  policy.read_arrived(1);
  const FetchedWork alone = policy.fetched(1, entries.data(), 4, 0);
  EXPECT_EQ(*alone.processed, 900u);
  // Core 1 starts while core 0 holds its batch: 2 busy, 1.2 x 900 = 1080
  // ps, done at 100 + 1080.
  ASSERT_EQ(policy.fetch_turn(2, 4, 4, 100), 4u);
  policy.read_arrived(2);
  const FetchedWork second = policy.fetched(2, entries.data(), 4, 100);
  EXPECT_EQ(*second.processed, 1180u);
  // Core 2 starts while core 0's batch is still held (its completions not
  // all posted) and core 1's too: 3 busy, 1.5 x 900 = 1350, done at 1550.
  ASSERT_EQ(policy.fetch_turn(3, 4, 4, 200), 4u);
  policy.read_arrived(3);
  const FetchedWork third = policy.fetched(3, entries.data(), 4, 200);
  EXPECT_EQ(*third.processed, 1550u);
  // Core 0's batch completes at 1000 and core 1's at 1200: core 0 rests
  // until 1050, core 1 until 1250; at 1300 core 0's next batch starts with
  // core 2 alone busy beside it: 2 busy, 1080 ps, done at 2380.
  for (int i = 0; i < 4; ++i) policy.command_done(alone.batch.get(), 1000);
  for (int i = 0; i < 4; ++i) policy.command_done(second.batch.get(), 1200);
  ASSERT_EQ(policy.fetch_turn(4, 4, 4, 1300), 4u);
  policy.read_arrived(4);
  EXPECT_EQ(*policy.fetched(4, entries.data(), 4, 1300).processed, 2380u);
  // The scale composes with a core's own speed (processor_time_scale).
  ScriptedController other;
  ProcessorCores slow(1, {2.0});
  BatchServiceProcessing one(slow, CommandCost{100, 0.0, 512}, 500, 0, 2, other.hooks(),
                             BusyScale({1}, {0.5}));
  ASSERT_EQ(one.fetch_turn(1, 4, 4, 0), 4u);
  one.read_arrived(1);
  EXPECT_EQ(*one.fetched(1, entries.data(), 4, 0).processed, 900u);  // 900 x 0.5 x 2
}

// `count` reads of 4 KiB each into consecutive GPU buffers from `first`.
std::vector<std::uint8_t> reads_into(std::uint32_t count, std::uint64_t first) {
  std::vector<std::uint8_t> bytes(std::size_t{count} * kSqEntrySize);
  for (std::uint32_t i = 0; i < count; ++i) {
    const SubmissionEntry e =
        make_read(static_cast<std::uint16_t>(i), 1, 8 * i, 7, first + std::uint64_t{i} * 4096, 0);
    std::memcpy(bytes.data() + std::size_t{i} * kSqEntrySize, &e, kSqEntrySize);
  }
  return bytes;
}

TEST(FootprintTerm, CountsDistinctPagesAndChargesBelowTheReference) {
  // 10 ns per MiB per command with one processor busy, 20 with three;
  // calibrated at 1 MiB.
  FootprintTerm term({1, 3}, {10, 20}, 1.0);
  EXPECT_FALSE(term.empty());
  term.address(0, 4096);
  term.address(0, 4096);  // the same page again: still one
  term.address(8191, 2);  // the last byte of page 1 and the first of page 2
  EXPECT_DOUBLE_EQ(term.mib(), 3.0 / 256);
  // 1 busy: 10 x (3/256 - 1) ns; 2 busy: half way, 15 x (3/256 - 1).
  EXPECT_DOUBLE_EQ(term.per_command_ns(1), 10.0 * (3.0 / 256 - 1.0));
  EXPECT_DOUBLE_EQ(term.per_command_ns(2), 15.0 * (3.0 / 256 - 1.0));
  EXPECT_DOUBLE_EQ(term.per_command_ns(8), 20.0 * (3.0 / 256 - 1.0));
  // At or beyond the reference nothing is charged.
  FootprintTerm small({1}, {10}, 2.0 / 256);
  small.address(0, 3 * 4096);
  EXPECT_DOUBLE_EQ(small.mib(), 3.0 / 256);
  EXPECT_DOUBLE_EQ(small.per_command_ns(1), 0.0);
  EXPECT_TRUE(FootprintTerm().empty());
  // Busy counts without times per MiB (a controller with the busy scale
  // alone): no term.
  EXPECT_TRUE(FootprintTerm({1, 4}, {}, 0.0).empty());
  EXPECT_DOUBLE_EQ(FootprintTerm({1, 4}, {}, 0.0).per_command_ns(2), 0.0);
  EXPECT_DOUBLE_EQ(FootprintTerm().per_command_ns(4), 0.0);
}

// Two cores, a batch of 4 reads of 4 KiB costing 500 + 4 x 100 = 900 ns on
// the line; the busy scale 1.0 with one processor busy, 1.2 with two; the
// footprint term 10 ns per MiB per command at one busy, 20 at two,
// calibrated at 1 MiB.
TEST(BatchServiceProcessing, ABatchsTimeFollowsTheBuffersAddressedBelowTheReference) {
  ScriptedController controller;
  ProcessorCores cores(2, {});
  BatchServiceProcessing policy(cores, CommandCost{100000, 0.0, 512}, 500000, 0, 4,
                                controller.hooks(), BusyScale({1, 2}, {1.0, 1.2}),
                                FootprintTerm({1, 2}, {10, 20}, 1.0));
  // Core 0 alone, its 4 buffers the first addressed (4 pages, 1/64 MiB):
  // 900 ns + 4 x 10 x (1/64 - 1) ns = 900 - 39.375 = 860.625 ns.
  ASSERT_EQ(policy.fetch_turn(1, 4, 4, 0), 4u);
  policy.read_arrived(1);
  const std::vector<std::uint8_t> first = reads_into(4, 0);
  EXPECT_EQ(*policy.fetched(1, first.data(), 4, 0).processed, 860625u);
  // Core 1 starts at 100 ns while core 0 holds its batch (2 busy), 4 new
  // buffers (8 pages, 1/32 MiB): 1.2 x 900 + 4 x 20 x (1/32 - 1) = 1080 -
  // 77.5 = 1002.5 ns, done at 1102.5 ns.
  ASSERT_EQ(policy.fetch_turn(2, 4, 4, 100000), 4u);
  policy.read_arrived(2);
  const std::vector<std::uint8_t> second = reads_into(4, 16384);
  EXPECT_EQ(*policy.fetched(2, second.data(), 4, 100000).processed, 1102500u);

  // Beyond the reference (2 pages, 8 addressed): the line's time alone.
  ScriptedController other;
  ProcessorCores one(1, {});
  BatchServiceProcessing beyond(one, CommandCost{100000, 0.0, 512}, 500000, 0, 2, other.hooks(),
                                BusyScale({1}, {1.0}), FootprintTerm({1}, {10}, 2.0 / 256));
  ASSERT_EQ(beyond.fetch_turn(1, 4, 4, 0), 4u);
  beyond.read_arrived(1);
  const std::vector<std::uint8_t> eight = reads_into(8, 0);
  EXPECT_EQ(*beyond.fetched(1, eight.data(), 4, 0).processed, 900000u);
}

// Entries given as (read?, GPU address, blocks of 512 B), in queue order.
std::vector<std::uint8_t> entries_of(
    const std::vector<std::tuple<bool, std::uint64_t, std::uint16_t>>& commands) {
  std::vector<std::uint8_t> bytes(commands.size() * kSqEntrySize);
  for (std::size_t i = 0; i < commands.size(); ++i) {
    const auto& [read, addr, blocks] = commands[i];
    const auto cid = static_cast<std::uint16_t>(i);
    const SubmissionEntry e = read ? make_read(cid, 1, 0, blocks - 1, addr, 0)
                                   : make_write(cid, 1, 0, blocks - 1, addr, 0);
    std::memcpy(bytes.data() + i * kSqEntrySize, &e, kSqEntrySize);
  }
  return bytes;
}

TEST(CopyOperations, ARunContinuesWhileBuffersFollowEachOtherTheSameWay) {
  const CommandCost cost{0, 0.0, 512};
  const std::uint64_t a = 1ull << 40;
  // read a (4 KiB), read a+4K (continues), read a+16K (gap: new), write a+20K
  // (other way: new), write a+24K (continues), read a+8K (goes back: new).
  std::vector<std::uint8_t> e = entries_of({{true, a, 8},
                                            {true, a + 4096, 8},
                                            {true, a + 16384, 8},
                                            {false, a + 20480, 8},
                                            {false, a + 24576, 8},
                                            {true, a + 8192, 8}});
  EXPECT_EQ(copy_operations(e.data(), 6, cost),
            (std::vector<std::uint64_t>{a, a + 16384, a + 20480, a + 8192}));
  // A flush moves no data and breaks no run: the write after it continues
  // the write before it.
  SubmissionEntry flush = make_flush(9, 1);
  std::vector<std::uint8_t> f = entries_of({{false, a, 8}});
  f.resize(3 * kSqEntrySize);
  std::memcpy(f.data() + kSqEntrySize, &flush, kSqEntrySize);
  const SubmissionEntry next = make_write(10, 1, 0, 15, a + 4096, 0);  // 8 KiB
  std::memcpy(f.data() + 2 * kSqEntrySize, &next, kSqEntrySize);
  EXPECT_EQ(copy_operations(f.data(), 3, cost), (std::vector<std::uint64_t>{a}));
  EXPECT_TRUE(copy_operations(f.data() + kSqEntrySize, 1, cost).empty());
}

TEST(BatchServiceProcessing, CopiesOverlapTheBatchsWorkOnASharedCopyEngine) {
  // Two cores; every copy operation is delayed 1000 ps (the GPU's polls);
  // the copy engine serves the cores' copies one after another, from the
  // fetch on, beside the batch's work; the batch ends with the later.
  ScriptedController controller;
  ProcessorHooks hooks = controller.hooks();
  std::vector<std::uint64_t> asked;
  hooks.copy_op_delay = [&](std::uint64_t addr) {
    asked.push_back(addr);
    return Picoseconds{1000};
  };
  ProcessorCores cores(2, {});
  BatchServiceProcessing policy(cores, CommandCost{100, 0.0, 512}, 500, 0, 4, std::move(hooks));
  const std::uint64_t a = 1ull << 40;
  ASSERT_EQ(policy.fetch_turn(1, 3, 4, 0), 3u);
  ASSERT_EQ(policy.fetch_turn(2, 2, 4, 0), 2u);
  // Core 0 at 0: 500 + 3 x 100 = 800 ps of work; two copy operations (a,
  // a+4K continue; a+64K does not): the copy engine 0..2000. Done at 2000.
  const std::vector<std::uint8_t> first =
      entries_of({{true, a, 8}, {true, a + 4096, 8}, {true, a + 65536, 8}});
  policy.read_arrived(1);
  const FetchedWork one = policy.fetched(1, first.data(), 3, 0);
  ASSERT_TRUE(one.processed);
  EXPECT_EQ(*one.processed, 2000u);
  EXPECT_EQ(asked, (std::vector<std::uint64_t>{a, a + 65536}));
  // Core 1 at 100: 700 ps of work (done at 800); one copy operation, behind
  // core 0's: 2000..3000. Done at 3000.
  const std::vector<std::uint8_t> second =
      entries_of({{true, a + 8 * 4096, 8}, {true, a + 9 * 4096, 8}});
  policy.read_arrived(2);
  const FetchedWork two = policy.fetched(2, second.data(), 2, 100);
  ASSERT_TRUE(two.processed);
  EXPECT_EQ(*two.processed, 3000u);
  // A short copy delay ends within the work: the work decides.
  ScriptedController quiet;
  ProcessorHooks short_delay = quiet.hooks();
  short_delay.copy_op_delay = [](std::uint64_t) { return Picoseconds{10}; };
  ProcessorCores one_core(1, {});
  BatchServiceProcessing idle(one_core, CommandCost{100, 0.0, 512}, 500, 0, 4,
                              std::move(short_delay));
  ASSERT_EQ(idle.fetch_turn(1, 3, 4, 0), 3u);
  idle.read_arrived(1);
  EXPECT_EQ(*idle.fetched(1, first.data(), 3, 0).processed, 800u);
}

TEST(BatchServiceProcessing, CrowdedCqLinesCostTheCoreEachCopyOperationPerExtraPoller) {
  // Each copy operation of a batch costs the core copy_op_line_poller per
  // warp polling a CQ line beyond the first on it, counted at the fetch;
  // the core's time, so another core's batch is not held up.
  ScriptedController controller;
  ProcessorHooks hooks = controller.hooks();
  std::uint64_t extra_pollers = 5;
  int asked = 0;
  hooks.cq_line_extra_pollers = [&] {
    ++asked;
    return extra_pollers;
  };
  hooks.copy_op_line_poller = 1000;
  ProcessorCores cores(2, {});
  BatchServiceProcessing policy(cores, CommandCost{100, 0.0, 512}, 500, 0, 4, std::move(hooks));
  const std::uint64_t a = 1ull << 40;
  ASSERT_EQ(policy.fetch_turn(1, 3, 4, 0), 3u);
  ASSERT_EQ(policy.fetch_turn(2, 2, 4, 0), 2u);
  // Core 0 at 0: 500 + 3 x 100 = 800 ps, two copy operations (a and a+4K
  // continue each other; a+64K does not) x 5 warps x 1000 ps = 10,000 ps.
  const std::vector<std::uint8_t> first =
      entries_of({{true, a, 8}, {true, a + 4096, 8}, {true, a + 65536, 8}});
  policy.read_arrived(1);
  const FetchedWork one = policy.fetched(1, first.data(), 3, 0);
  ASSERT_TRUE(one.processed);
  EXPECT_EQ(*one.processed, 10800u);
  EXPECT_EQ(asked, 1);
  // Core 1 at 100, with 2 extra pollers: 500 + 2 x 100 + one operation x 2
  // x 1000 = 2,700 ps, done at 2,800, not behind core 0.
  extra_pollers = 2;
  const std::vector<std::uint8_t> second =
      entries_of({{true, a + 8 * 4096, 8}, {true, a + 9 * 4096, 8}});
  policy.read_arrived(2);
  const FetchedWork two = policy.fetched(2, second.data(), 2, 100);
  ASSERT_TRUE(two.processed);
  EXPECT_EQ(*two.processed, 2800u);
  // One warp per line (no extra pollers): the batch's own work only.
  ScriptedController quiet;
  ProcessorHooks alone = quiet.hooks();
  alone.cq_line_extra_pollers = [] { return std::uint64_t{0}; };
  alone.copy_op_line_poller = 1000;
  ProcessorCores one_core(1, {});
  BatchServiceProcessing idle(one_core, CommandCost{100, 0.0, 512}, 500, 0, 4, std::move(alone));
  ASSERT_EQ(idle.fetch_turn(1, 3, 4, 0), 3u);
  idle.read_arrived(1);
  EXPECT_EQ(*idle.fetched(1, first.data(), 3, 0).processed, 800u);
}

TEST(BatchServiceProcessing, RingSweepersCostEachCopyOperationBesideLinePollers) {
  // copy_op_ring_sweeper per warp sweeping a CQ ring beyond the first on it,
  // per copy operation, added to the line pollers' cost. Hand-worked: 500 +
  // 3 x 100 = 800 ps of work, two copy operations; 3 extra sweepers x 2000
  // ps x 2 = 12,000 ps, 1 extra line poller x 1000 ps x 2 = 2,000 ps:
  // 14,800 ps.
  ScriptedController controller;
  ProcessorHooks hooks = controller.hooks();
  hooks.cq_ring_extra_sweepers = [] { return std::uint64_t{3}; };
  hooks.copy_op_ring_sweeper = 2000;
  hooks.cq_line_extra_pollers = [] { return std::uint64_t{1}; };
  hooks.copy_op_line_poller = 1000;
  ProcessorCores cores(1, {});
  BatchServiceProcessing policy(cores, CommandCost{100, 0.0, 512}, 500, 0, 4, std::move(hooks));
  const std::uint64_t a = 1ull << 40;
  const std::vector<std::uint8_t> batch =
      entries_of({{true, a, 8}, {true, a + 4096, 8}, {true, a + 65536, 8}});
  ASSERT_EQ(policy.fetch_turn(1, 3, 4, 0), 3u);
  policy.read_arrived(1);
  EXPECT_EQ(*policy.fetched(1, batch.data(), 3, 0).processed, 14800u);
  // Without the figure the sweepers cost nothing: 800 + 2,000 ps.
  ScriptedController plain;
  ProcessorHooks unset = plain.hooks();
  unset.cq_ring_extra_sweepers = [] { return std::uint64_t{3}; };
  unset.cq_line_extra_pollers = [] { return std::uint64_t{1}; };
  unset.copy_op_line_poller = 1000;
  ProcessorCores one_core(1, {});
  BatchServiceProcessing idle(one_core, CommandCost{100, 0.0, 512}, 500, 0, 4, std::move(unset));
  ASSERT_EQ(idle.fetch_turn(1, 3, 4, 0), 3u);
  idle.read_arrived(1);
  EXPECT_EQ(*idle.fetched(1, batch.data(), 3, 0).processed, 2800u);
}

TEST(BatchServiceProcessing, AResetDropsWaitingQueuesAndOlderWakeUps) {
  ScriptedController controller;
  ProcessorCores cores(1, {});
  BatchServiceProcessing policy(cores, CommandCost{100, 0.0, 512}, 0, 0, 2, controller.hooks());
  EXPECT_EQ(policy.fetch_turn(1, 1, 4, 0), 1u);
  policy.read_arrived(1);
  const std::vector<std::uint8_t> entries = reads(1);
  const FetchedWork work = policy.fetched(1, entries.data(), 1, 0);  // core busy until 100
  policy.command_done(work.batch.get(), 20);                         // released at 20
  EXPECT_EQ(policy.fetch_turn(2, 1, 4, 20), 0u);                     // busy until 100
  ASSERT_EQ(controller.scheduled.size(), 1u);
  EXPECT_EQ(controller.scheduled[0].first, 100u);
  ++controller.generation;  // the controller was reset
  policy.reset();
  controller.fire(0);
  EXPECT_TRUE(controller.ready.empty());
  EXPECT_EQ(controller.kicks, 0);
  // A batch of the old generation completing frees nothing.
  EXPECT_EQ(policy.fetch_turn(2, 1, 4, 100), 1u);
  const FetchedWork next = policy.fetched(2, entries.data(), 1, 100);
  ++controller.generation;
  policy.reset();
  policy.command_done(next.batch.get(), 300);
  EXPECT_EQ((*policy.per_core())[0].batches, 1u);  // only the first batch counted
}

}  // namespace
}  // namespace gpunvme::nvme
