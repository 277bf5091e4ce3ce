// The controller's queue set: queue state by id and the index that finds
// the ring a DMA overlaps, with rings laid out by hand (64 B SQ entries,
// 16 B CQ entries).
#include "models/nvme/queue_set.h"

#include <gtest/gtest.h>

namespace gpunvme::nvme {
namespace {

void open_cq(QueueSet& queues, std::uint16_t qid, std::uint64_t base, std::uint32_t entries) {
  CompletionQueue& cq = queues.cq(qid);
  cq.exists = true;
  cq.base = base;
  cq.entries = entries;
  queues.ring_created(qid, /*sq=*/false);
}

TEST(QueueSet, OpensQueuesById) {
  QueueSet queues(4);
  EXPECT_EQ(queues.count(), 5u);  // the admin queue and 4 I/O queues
  queues.sq(2).open(0x30000, 4);
  EXPECT_TRUE(queues.sq_exists(2));
  EXPECT_FALSE(queues.sq_exists(1));
  EXPECT_FALSE(queues.sq_exists(5));  // beyond the set
  EXPECT_FALSE(queues.cq_exists(2));
  EXPECT_EQ(queues.sq(2).rung_at.size(), 4u);
  EXPECT_EQ(queues.sq(2).cids.claim(5), QueueError::None);
  EXPECT_EQ(queues.sq(2).cids.claim(5), QueueError::CidInUse);
}

TEST(QueueSet, FindsTheRingADmaOverlaps) {
  QueueSet queues(4);
  queues.sq(1).open(0x10000, 16);  // 0x10000..0x10400
  queues.ring_created(1, /*sq=*/true);
  open_cq(queues, 1, 0x20000, 16);  // 0x20000..0x20100

  auto hit = queues.ring_overlapping(0x10000 + 3 * 64 + 8, 8);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->qid, 1);
  EXPECT_TRUE(hit->sq);
  EXPECT_EQ(hit->slot, 3u);
  // Starting below the ring: its slot 0 is the first touched.
  hit = queues.ring_overlapping(0xF000, 0x2000);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->slot, 0u);
  hit = queues.ring_overlapping(0x1FFF0, 0x20);
  ASSERT_TRUE(hit);
  EXPECT_FALSE(hit->sq);
  EXPECT_EQ(hit->slot, 0u);
  // Right after a ring, and between rings: nothing.
  EXPECT_FALSE(queues.ring_overlapping(0x20100, 4));
  EXPECT_FALSE(queues.ring_overlapping(0x10400, 0x1000));
  EXPECT_FALSE(queues.ring_overlapping(0xF000, 0x1000));  // ends where the SQ starts

  queues.sq(1) = SubmissionQueue{};
  queues.ring_deleted(0x10000);
  EXPECT_FALSE(queues.ring_overlapping(0x10000, 64));
  EXPECT_TRUE(queues.ring_overlapping(0x20000, 16));
}

// Two rings at one base (a host error the controller does not refuse): the
// later one in queue id order is named, before and after either goes.
TEST(QueueSet, RingsSharingABaseNameTheLaterQueue) {
  QueueSet queues(4);
  queues.sq(2).open(0x30000, 4);  // 0x30000..0x30100
  queues.ring_created(2, /*sq=*/true);
  open_cq(queues, 3, 0x30000, 8);  // 0x30000..0x30080
  auto hit = queues.ring_overlapping(0x30000 + 2 * 16, 1);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->qid, 3);
  EXPECT_FALSE(hit->sq);
  EXPECT_EQ(hit->slot, 2u);
  queues.cq(3) = CompletionQueue{};
  queues.ring_deleted(0x30000);
  hit = queues.ring_overlapping(0x30000 + 2 * 16, 1);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->qid, 2);
  EXPECT_TRUE(hit->sq);
  EXPECT_EQ(hit->slot, 0u);
  hit = queues.ring_overlapping(0x300C0, 1);  // beyond the CQ's end, inside the SQ
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->slot, 3u);
}

}  // namespace
}  // namespace gpunvme::nvme
