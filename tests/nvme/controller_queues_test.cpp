// Queue rings through the controller: SQ and CQ wrap-around with phase flips
// for sizes 2 to 65,536, queue placement (host memory, GPU memory, CMB),
// per-SQ CID tracking, MSI-X, and the invariant checks that stop a run.
#include <gtest/gtest.h>

#include <set>

#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

// Runs `laps` laps of Flush commands (no media, no data) around a queue of
// `entries`, keeping it as full as the ring allows, and checks against the
// ring arithmetic computed here: the n-th completion lands in CQ slot
// n mod entries with phase 1 on even laps and 0 on odd ones, and carries an
// SQ head that has moved past its own entry.
void wrap_queue(std::uint32_t entries, std::uint64_t commands) {
  Bench bench({"samsung-pm1743",
               {{"mqes", 65536},
                {"sq_fetch_burst", 64},
                {"arbitration_burst_log2", 7},
                {"max_outstanding_fetches", 64},
                {"command_overhead_ns", 10.0},
                {"controller_cores", 64}}});
  TestHost host("host", bench);
  const host::IoQueue q = bench.bring_up_one(entries);
  host.attach(q);
  host.set_cq_doorbell_batch(entries / 4);
  const MemorySpace& memory = bench.memory();
  std::uint64_t issued = 0;
  std::uint64_t seen = 0;
  std::set<std::uint16_t> outstanding_cids;
  std::function<void()> refill;
  refill = [&] {
    // Fill every free slot, ring once (the ring keeps one slot empty).
    bool any = false;
    while (host.can_submit() && issued < commands) {
      const std::uint32_t slot = host.submit(
          make_flush(0, 1),
          [&, n = issued](const CompletionEntry& cqe, Picoseconds) {
            const std::uint64_t cq_slot = seen % entries;
            const std::uint8_t phase = ((seen / entries) % 2 == 0) ? 1 : 0;
            const auto landed = memory.load<CompletionEntry>(q.cq_base + cq_slot * kCqEntrySize);
            EXPECT_EQ(landed.cid, cqe.cid) << "completion " << seen;
            EXPECT_EQ(landed.phase(), phase) << "completion " << seen;
            EXPECT_TRUE(cqe.ok());
            // Flushes complete in submission order here: the n-th
            // completion is the n-th command, whose slot is n mod entries.
            EXPECT_EQ(n, seen);
            EXPECT_EQ(cqe.cid, n % entries);
            EXPECT_EQ(outstanding_cids.erase(cqe.cid), 1u);
            ++seen;
            if (seen % (entries / 2 + 1) == 0 || seen == issued) refill();
          },
          /*ring=*/false);
      outstanding_cids.insert(static_cast<std::uint16_t>(slot));
      ++issued;
      any = true;
    }
    if (any) host.ring_sq();
  };
  refill();
  bench.run();
  EXPECT_EQ(seen, commands);
  EXPECT_TRUE(outstanding_cids.empty());
  EXPECT_NO_THROW(bench.ssd().check_drained());
  EXPECT_EQ(bench.ssd().sq_fetched(q.qid), commands);
}

TEST(ControllerQueues, WrapAroundWithPhaseFlipsSmall) {
  for (std::uint32_t entries : {2u, 3u, 4u, 5u, 17u, 64u}) {
    SCOPED_TRACE(entries);
    wrap_queue(entries, 3ull * entries + 1);
  }
}

TEST(ControllerQueues, WrapAroundWithPhaseFlipsLarge) {
  for (std::uint32_t entries : {1024u, 4096u}) {
    SCOPED_TRACE(entries);
    wrap_queue(entries, 2ull * entries + 7);
  }
}

TEST(ControllerQueues, WrapAroundWithPhaseFlipsLargest) {
  // One lap and a bit: the wrap of both rings and the first phase flip.
  wrap_queue(65536, 65536 + 300);
}

// The zero-time set-up shortcut other models' tests use: it enables the
// controller and creates a pair as the admin commands would.
TEST(ControllerQueues, SetupShortcutCreatesAUsablePair) {
  Bench bench;
  TestHost host("host", bench);
  host::NvmeDriver& driver = bench.driver();
  host::IoQueue q;
  q.qid = 2;
  q.entries = 16;
  q.sq_base = driver.allocate(host::QueuePlacement::host, 16 * kSqEntrySize);
  q.cq_base = driver.allocate(host::QueuePlacement::host, 16 * kCqEntrySize);
  q.sq_doorbell = bench.ssd().doorbell_address(true, 2);
  q.cq_doorbell = bench.ssd().doorbell_address(false, 2);
  bench.ssd().create_io_queue_pair(q.qid, q.sq_base, q.cq_base, q.entries);
  EXPECT_TRUE(bench.ssd().ready());
  EXPECT_THROW(bench.ssd().create_io_queue_pair(2, q.sq_base, q.cq_base, 16),
               std::invalid_argument);  // exists
  EXPECT_THROW(bench.ssd().create_io_queue_pair(3, q.sq_base, q.cq_base, 1u << 20),
               std::invalid_argument);  // beyond MQES
  host.attach(q);
  for (int i = 0; i < 40; ++i) {
    host.submit(make_flush(0, 1), nullptr);
    bench.run();
  }
  EXPECT_EQ(host.completed(), 40u);
}

// Indexed completion (Create I/O CQ CDW11 bit 2): refused with Invalid Field
// by a controller that does not offer it; on one that does, the CQ takes one
// SQ of its own size only (another size: Invalid Queue Size; a second SQ:
// Completion Queue Invalid).
TEST(ControllerQueues, IndexedCqTakesOneSqOfItsOwnSize) {
  for (bool offered : {false, true}) {
    SCOPED_TRACE(offered);
    Bench bench({"samsung-pm1743", {{"indexed_completion", offered}}});
    host::BringUpOptions options;
    options.io_queues = 3;
    bench.bring_up(0, options, {});
    host::NvmeDriver& driver = bench.driver();
    const std::uint64_t cq = driver.allocate(host::QueuePlacement::host, 4 * kCqEntrySize);
    const std::uint64_t sq = driver.allocate(host::QueuePlacement::host, 8 * kSqEntrySize);
    const CompletionEntry created =
        bench.admin(0, make_create_io_cq(0, 1, 4, cq, true, false, 0, /*indexed=*/true));
    if (!offered) {
      EXPECT_EQ(created.status(), Status::InvalidFieldInCommand);
      continue;
    }
    ASSERT_EQ(created.status(), Status::Success);
    EXPECT_EQ(bench.admin(0, make_create_io_sq(0, 1, 8, sq, 1, QueuePriority::Medium)).status(),
              Status::InvalidQueueSize);
    EXPECT_EQ(bench.admin(0, make_create_io_sq(0, 1, 4, sq, 1, QueuePriority::Medium)).status(),
              Status::Success);
    EXPECT_EQ(
        bench.admin(0, make_create_io_sq(0, 2, 4, sq + 4096, 1, QueuePriority::Medium)).status(),
        Status::CompletionQueueInvalid);
  }
}

}  // namespace
}  // namespace gpunvme::nvme::testing
