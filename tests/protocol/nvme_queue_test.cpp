// Queue ring arithmetic and phase tags (NVMe Base Specification 1.4, sections
// 4.1 and 4.6) and the shadow doorbell EventIdx test. The oracles count
// entries independently: entry k of a queue of N entries sits in slot k mod N
// and carries phase tag 1 on even laps (k / N even) and 0 on odd laps.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/core/protocol/nvme.h"

namespace gpunvme::nvme {
namespace {

std::uint8_t expected_phase(std::uint64_t k, std::uint32_t size) {
  return ((k / size) % 2 == 0) ? 1 : 0;
}

class QueueSizes : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(QueueSizes, SubmissionQueueFillDrainLaps) {
  const std::uint32_t size = GetParam();
  SqRing host = make_sq_ring(size);  // host: owns the tail
  SqRing ctrl = make_sq_ring(size);  // controller: owns the head
  std::uint64_t pushed = 0;
  std::uint64_t popped = 0;
  while (pushed < 3ull * size + 1) {
    // Fill until full: exactly size - 1 entries fit.
    std::uint32_t filled = 0;
    std::uint32_t slot = 0;
    while (host.push(&slot)) {
      ASSERT_EQ(slot, pushed % size);
      ++pushed;
      ++filled;
    }
    ASSERT_EQ(filled, size - 1);
    ASSERT_TRUE(host.full());
    ASSERT_EQ(host.free_slots(), 0u);
    ASSERT_EQ(host.occupied(), size - 1);
    ASSERT_EQ((host.tail + 1) % size, host.head);
    // Ring the doorbell, drain on the controller side.
    ASSERT_TRUE(ctrl.set_tail(host.tail));
    ASSERT_EQ(ctrl.occupied(), size - 1);
    while (ctrl.pop(&slot)) {
      ASSERT_EQ(slot, popped % size);
      ++popped;
    }
    ASSERT_TRUE(ctrl.empty());
    ASSERT_EQ(popped, pushed);
    // The host learns the new head from SQHD.
    ASSERT_TRUE(host.set_head(ctrl.head));
    ASSERT_TRUE(host.empty());
    ASSERT_EQ(host.free_slots(), size - 1);
  }
}

TEST_P(QueueSizes, SubmissionQueueOneInOneOut) {
  const std::uint32_t size = GetParam();
  SqRing q = make_sq_ring(size);
  for (std::uint64_t k = 0; k < 3ull * size + 2; ++k) {
    std::uint32_t slot = 0;
    ASSERT_TRUE(q.push(&slot));
    ASSERT_EQ(slot, k % size);
    ASSERT_EQ(q.tail, (k + 1) % size);
    ASSERT_EQ(q.occupied(), 1u);
    ASSERT_TRUE(q.pop(&slot));
    ASSERT_EQ(slot, k % size);
    ASSERT_TRUE(q.empty());
    ASSERT_FALSE(q.pop(&slot));
  }
}

TEST_P(QueueSizes, CompletionQueuePhaseFlipsExactlyAtWrap) {
  const std::uint32_t size = GetParam();
  std::vector<CompletionEntry> cq(size);  // zeroed by the host: all P = 0
  CqProducer ctrl = make_cq_producer(size);
  CqConsumer host = make_cq_consumer(size);
  std::uint64_t posted = 0;
  std::uint64_t consumed = 0;
  const std::uint64_t total = 3ull * size + 1;
  while (consumed < total) {
    // Controller posts until the CQ is full (size - 1 entries outstanding).
    std::uint32_t burst = 0;
    std::uint32_t slot = 0;
    std::uint8_t phase = 0;
    while (posted < total && ctrl.post(&slot, &phase)) {
      ASSERT_EQ(slot, posted % size);
      ASSERT_EQ(phase, expected_phase(posted, size)) << "entry " << posted;
      // Before the write, the slot still holds last lap's (or the zeroed)
      // entry, which a host waiting on that slot must not take as new.
      if (host.head == slot) {
        ASSERT_FALSE(host.is_new(cq[slot]));
      }
      cq[slot].cid = static_cast<std::uint16_t>(posted & 0xFFFF);
      cq[slot].set_status(Status::Success, phase != 0);
      ++posted;
      ++burst;
    }
    if (posted < total) {
      ASSERT_EQ(burst, size - 1);
      ASSERT_TRUE(ctrl.full());
      ASSERT_EQ(ctrl.free_slots(), 0u);
    }
    // Host consumes everything that is new, then stops at the first stale
    // entry.
    while (host.is_new(cq[host.head])) {
      ASSERT_EQ(host.phase, expected_phase(consumed, size)) << "entry " << consumed;
      ASSERT_EQ(host.head, consumed % size);
      ASSERT_EQ(cq[host.head].cid, consumed & 0xFFFF);
      const std::uint32_t before = host.head;
      host.advance();
      ++consumed;
      // The expected phase flips exactly when the head wraps to 0.
      ASSERT_EQ(host.phase, expected_phase(consumed, size));
      ASSERT_EQ(host.head == 0, before == size - 1);
    }
    ASSERT_EQ(consumed, posted);
    // CQ head doorbell.
    ASSERT_TRUE(ctrl.set_head(host.head));
    ASSERT_EQ(ctrl.occupied(), 0u);
  }
  EXPECT_EQ(host.phase, expected_phase(total, size));
  EXPECT_EQ(ctrl.phase, expected_phase(total, size));
}

INSTANTIATE_TEST_SUITE_P(Sizes, QueueSizes,
                         ::testing::Values(2u, 3u, 4u, 7u, 64u, 1024u, 4096u, 65536u));

TEST(NvmeQueue, RingArithmeticLiterals) {
  EXPECT_EQ(ring_next(7, 8), 0u);
  EXPECT_EQ(ring_next(3, 8), 4u);
  EXPECT_EQ(ring_advance(6, 5, 8), 3u);
  EXPECT_EQ(ring_advance(65535, 1, 65536), 0u);
  EXPECT_EQ(ring_occupied(6, 2, 8), 4u);
  EXPECT_EQ(ring_free_slots(6, 2, 8), 3u);
  EXPECT_TRUE(ring_full(3, 2, 8));
  EXPECT_TRUE(ring_full(0, 7, 8));
  EXPECT_FALSE(ring_full(0, 6, 8));
  EXPECT_TRUE(ring_empty(5, 5));
  EXPECT_TRUE(ring_full(0, 1, 2));
  EXPECT_EQ(ring_free_slots(0, 0, 65536), 65535u);
  EXPECT_TRUE(valid_queue_entries(2));
  EXPECT_TRUE(valid_queue_entries(65536));
  EXPECT_FALSE(valid_queue_entries(1));
  EXPECT_FALSE(valid_queue_entries(65537));
}

TEST(NvmeQueue, DoorbellAndHeadValidation) {
  EXPECT_TRUE(doorbell_value_valid(7, 8));
  EXPECT_FALSE(doorbell_value_valid(8, 8));
  // Head 6, tail 2 on 8 entries: heads 6, 7, 0, 1, 2 are reachable.
  EXPECT_TRUE(head_update_valid(6, 6, 2, 8));
  EXPECT_TRUE(head_update_valid(6, 0, 2, 8));
  EXPECT_TRUE(head_update_valid(6, 2, 2, 8));
  EXPECT_FALSE(head_update_valid(6, 3, 2, 8));
  EXPECT_FALSE(head_update_valid(6, 5, 2, 8));
  EXPECT_FALSE(head_update_valid(6, 8, 2, 8));
  SqRing q = make_sq_ring(4);
  EXPECT_FALSE(q.set_tail(4));
  EXPECT_TRUE(q.advance_tail(3));
  EXPECT_FALSE(q.advance_tail(1));
  EXPECT_TRUE(q.full());
  std::uint32_t slot = 0;
  EXPECT_FALSE(q.push(&slot));
  EXPECT_EQ(q.tail, 3u);
  CqProducer p = make_cq_producer(4);
  std::uint8_t phase = 0;
  ASSERT_TRUE(p.post(&slot, &phase));
  EXPECT_FALSE(p.set_head(2));  // past the one entry posted
  EXPECT_TRUE(p.set_head(1));
}

TEST(NvmeQueue, ConsumerMultiAdvanceMatchesSingleSteps) {
  for (std::uint32_t size : {2u, 3u, 64u, 1000u}) {
    CqConsumer a = make_cq_consumer(size);
    CqConsumer b = make_cq_consumer(size);
    std::uint32_t step = 1;
    for (int i = 0; i < 200; ++i) {
      step = (step * 7 + 3) % (2 * size + 1);
      a.advance(step);
      for (std::uint32_t j = 0; j < step; ++j) b.advance();
      ASSERT_EQ(a.head, b.head);
      ASSERT_EQ(a.phase, b.phase);
    }
  }
}

TEST(NvmeQueue, IsNewOnRawStatus) {
  CompletionEntry c{};
  EXPECT_FALSE(is_new(c, 1));  // zeroed memory is not a completion
  EXPECT_TRUE(is_new(c, 0));
  c.set_status(Status::Success, true);
  EXPECT_TRUE(is_new(c, 1));
  EXPECT_TRUE(is_new_status_field(static_cast<std::uint16_t>(c.dw3() >> 16), 1));
  EXPECT_FALSE(is_new_status_field(0x8204, 1));  // error status, phase 0
}

// EventIdx: moving an index from old to new steps over old, old+1, ...,
// new-1 (mod 2^16). The controller asked to be notified when the index moves
// past event_idx, so a notification is due iff event_idx is one of them.
std::vector<bool> stepped_over(std::uint16_t new_idx, std::uint16_t old_idx) {
  std::vector<bool> over(65536, false);
  for (std::uint16_t i = old_idx; i != new_idx; i = static_cast<std::uint16_t>(i + 1)) {
    over[i] = true;
  }
  return over;
}

bool steps_over(std::uint16_t event_idx, std::uint16_t new_idx, std::uint16_t old_idx) {
  return stepped_over(new_idx, old_idx)[event_idx];
}

TEST(NvmeQueue, NeedEventLiterals) {
  EXPECT_TRUE(need_event(5, 6, 5));   // moved past the requested index
  EXPECT_FALSE(need_event(6, 6, 5));  // not yet
  EXPECT_TRUE(need_event(5, 9, 2));   // inside a batch
  EXPECT_FALSE(need_event(1, 9, 2));  // behind the batch
  EXPECT_FALSE(need_event(5, 5, 5));  // no movement, no doorbell
  // 16-bit wrap: 65534 -> 2 steps over 65534, 65535, 0, 1.
  EXPECT_TRUE(need_event(65535, 2, 65534));
  EXPECT_TRUE(need_event(0, 2, 65534));
  EXPECT_TRUE(need_event(1, 2, 65534));
  EXPECT_FALSE(need_event(2, 2, 65534));
  EXPECT_FALSE(need_event(65533, 2, 65534));
  EXPECT_TRUE(steps_over(65535, 2, 65534));
  EXPECT_FALSE(steps_over(2, 2, 65534));
}

TEST(NvmeQueue, NeedEventExhaustiveOverEventIdx) {
  const std::uint16_t windows[][2] = {
      {0, 1},       {0, 100},       {100, 101},
      {65535, 0},   {65530, 5},     {40000, 39999} /* nearly a full turn */,
      {1234, 1234}, {65535, 65534},
  };
  for (const auto& w : windows) {
    const std::uint16_t old_idx = w[0];
    const std::uint16_t new_idx = w[1];
    const std::vector<bool> over = stepped_over(new_idx, old_idx);
    for (std::uint32_t e = 0; e <= 0xFFFF; ++e) {
      const std::uint16_t ev = static_cast<std::uint16_t>(e);
      ASSERT_EQ(need_event(ev, new_idx, old_idx), over[ev])
          << "event " << e << " old " << old_idx << " new " << new_idx;
    }
  }
}

}  // namespace
}  // namespace gpunvme::nvme
