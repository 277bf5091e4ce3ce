// The queue-invariant checker against hand-worked cases: ring positions
// worked out on paper for small rings (NVMe Base Specification 1.4, 4.1: a
// ring of N entries holds N - 1), and the statuses and asynchronous events
// of 5.2.1 (Figure 146), 5.3, 5.4 and 4.6.1.2.1.
#include "sim/core/protocol/queue_invariants.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpunvme::nvme {
namespace {

TEST(SqTailCheck, AcceptsTailsThatFitTheFreePart) {
  // 8 entries, nothing rung: the tail may move 7 slots at most.
  EXPECT_EQ(check_sq_tail(0, 0, 7, 8).error, QueueError::None);
  EXPECT_EQ(check_sq_tail(0, 0, 7, 8).added, 7u);
  // Head 5, tail 7 (2 unfetched): tail 7 -> 4 wraps over 0 and adds 5 (7 in all).
  const SqTailCheck wrap = check_sq_tail(5, 7, 4, 8);
  EXPECT_EQ(wrap.error, QueueError::None);
  EXPECT_EQ(wrap.unfetched, 2u);
  EXPECT_EQ(wrap.added, 5u);
  // Same tail again: nothing added, nothing wrong.
  EXPECT_EQ(check_sq_tail(3, 6, 6, 8).error, QueueError::None);
  EXPECT_EQ(check_sq_tail(3, 6, 6, 8).added, 0u);
}

TEST(SqTailCheck, RefusesOverrunsAndValuesBeyondTheRing) {
  // Head 5, tail 7: tail 7 -> 5 would add 6 to 2 unfetched, 8 > 7.
  const SqTailCheck overrun = check_sq_tail(5, 7, 5, 8);
  EXPECT_EQ(overrun.error, QueueError::SqOverrun);
  EXPECT_EQ(overrun.unfetched, 2u);
  EXPECT_EQ(overrun.added, 6u);
  // A full ring (head 2, tail 1: 7 of 8) takes no more.
  EXPECT_EQ(check_sq_tail(2, 1, 2, 8).error, QueueError::SqOverrun);
  // 8 is no index of an 8-entry ring.
  const SqTailCheck beyond = check_sq_tail(0, 0, 8, 8);
  EXPECT_EQ(beyond.error, QueueError::ValueBeyondRing);
  EXPECT_EQ(beyond.added, 0u);
  EXPECT_EQ(check_sq_tail(0, 0, 0xFFFFu, 1024).error, QueueError::ValueBeyondRing);
}

TEST(CqHeadCheck, HeadMayReleaseOnlyPostedEntries) {
  // 4 entries, head 3, tail 1: slots 3 and 0 posted.
  EXPECT_EQ(check_cq_head(3, 1, 0, 4).error, QueueError::None);
  EXPECT_EQ(check_cq_head(3, 1, 0, 4).released, 1u);
  EXPECT_EQ(check_cq_head(3, 1, 1, 4).error, QueueError::None);
  EXPECT_EQ(check_cq_head(3, 1, 1, 4).posted, 2u);
  // Head 3 -> 2 would release 3 entries of the 2 posted.
  const CqHeadCheck passes = check_cq_head(3, 1, 2, 4);
  EXPECT_EQ(passes.error, QueueError::CqHeadPassesTail);
  EXPECT_EQ(passes.released, 3u);
  // An empty CQ releases nothing.
  EXPECT_EQ(check_cq_head(2, 2, 3, 4).error, QueueError::CqHeadPassesTail);
  EXPECT_EQ(check_cq_head(2, 2, 4, 4).error, QueueError::ValueBeyondRing);
}

TEST(QueueCreateCheck, IdentifierThenSize) {
  // Queues 1..4 granted, CAP.MQES + 1 = 1024.
  EXPECT_EQ(check_queue_create(1, 4, false, 2, 1024), QueueError::None);
  EXPECT_EQ(check_queue_create(4, 4, false, 1024, 1024), QueueError::None);
  EXPECT_EQ(check_queue_create(0, 4, false, 64, 1024), QueueError::InvalidQueueId);
  EXPECT_EQ(check_queue_create(5, 4, false, 64, 1024), QueueError::InvalidQueueId);
  EXPECT_EQ(check_queue_create(2, 4, true, 64, 1024), QueueError::InvalidQueueId);
  EXPECT_EQ(check_queue_create(2, 4, false, 1, 1024), QueueError::InvalidQueueSize);
  EXPECT_EQ(check_queue_create(2, 4, false, 1025, 1024), QueueError::InvalidQueueSize);
  // A bad identifier is reported before a bad size (5.3, 5.4 list it first).
  EXPECT_EQ(check_queue_create(0, 4, false, 1, 1024), QueueError::InvalidQueueId);
}

TEST(CqPostCheck, SlotMustHoldThePreviousLapsPhase) {
  // First lap (phase 1): the host zeroed the ring, P = 0 is free.
  EXPECT_EQ(check_cq_post(0x0000, true), QueueError::None);
  EXPECT_EQ(check_cq_post(0x0001, true), QueueError::CqSlotNotConsumed);
  // Second lap (phase 0): the first lap left P = 1 with a status above it.
  EXPECT_EQ(check_cq_post(0x4003, false), QueueError::None);  // P = 1, SC 01h
  EXPECT_EQ(check_cq_post(0x4002, false), QueueError::CqSlotNotConsumed);
}

TEST(QueueErrorReport, StatusesAndAsyncEventsOfTheSpec) {
  EXPECT_EQ(async_event_for(QueueError::NoSuchQueue),
            AsyncErrorEvent::WriteToInvalidDoorbellRegister);
  EXPECT_EQ(static_cast<int>(AsyncErrorEvent::WriteToInvalidDoorbellRegister), 0x00);
  EXPECT_EQ(static_cast<int>(AsyncErrorEvent::InvalidDoorbellWriteValue), 0x01);
  for (QueueError e :
       {QueueError::ValueBeyondRing, QueueError::SqOverrun, QueueError::CqHeadPassesTail}) {
    EXPECT_EQ(async_event_for(e), AsyncErrorEvent::InvalidDoorbellWriteValue);
    EXPECT_EQ(status_for(e), Status::Success);  // no command carries it
  }
  EXPECT_EQ(status_for(QueueError::InvalidQueueId), Status::InvalidQueueIdentifier);
  EXPECT_EQ(status_for(QueueError::InvalidQueueSize), Status::InvalidQueueSize);
  EXPECT_EQ(status_for(QueueError::CidInUse), Status::CommandIdConflict);
  // Generic status 03h, Command Specific 01h and 02h (4.6.1.2.1, 5.3).
  EXPECT_EQ(static_cast<int>(Status::CommandIdConflict) & 0xFF, 0x03);
  EXPECT_EQ(static_cast<int>(Status::InvalidQueueIdentifier) & 0xFF, 0x01);
  EXPECT_EQ(static_cast<int>(Status::InvalidQueueSize) & 0xFF, 0x02);
  EXPECT_EQ(async_event_for(QueueError::CidInUse), AsyncErrorEvent::None);
  EXPECT_EQ(async_event_for(QueueError::None), AsyncErrorEvent::None);
}

TEST(OutstandingCids, ClaimReleaseAndReuse) {
  OutstandingCids cids;
  cids.open();
  EXPECT_EQ(cids.claim(7), QueueError::None);
  EXPECT_EQ(cids.claim(65535), QueueError::None);
  EXPECT_EQ(cids.claim(64), QueueError::None);
  EXPECT_EQ(cids.claim(7), QueueError::CidInUse);  // reused while outstanding
  EXPECT_TRUE(cids.outstanding(64));
  EXPECT_FALSE(cids.outstanding(63));
  std::vector<std::uint16_t> seen;
  cids.for_each([&](std::uint16_t cid) { seen.push_back(cid); });
  EXPECT_EQ(seen, (std::vector<std::uint16_t>{7, 64, 65535}));
  EXPECT_EQ(cids.release(7), QueueError::None);
  EXPECT_EQ(cids.release(7), QueueError::CidNotOutstanding);  // completed twice
  EXPECT_EQ(cids.claim(7), QueueError::None);                 // free again after completion
  cids.close();
  EXPECT_FALSE(cids.outstanding(64));
  seen.clear();
  cids.for_each([&](std::uint16_t cid) { seen.push_back(cid); });
  EXPECT_TRUE(seen.empty());
}

}  // namespace
}  // namespace gpunvme::nvme
