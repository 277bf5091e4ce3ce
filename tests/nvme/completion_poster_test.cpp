// The controller's completion posting, driven directly (no simulation): CQ
// 1 of 4 slots at 0x1000 in a byte map standing for memory, entries and
// MSI-X messages checked against values worked out by hand.
#include "models/nvme/completion_poster.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "sim/core/protocol/nvme_status.h"

namespace gpunvme::nvme {
namespace {

constexpr std::uint64_t kCqBase = 0x1000;
constexpr std::uint64_t kMsixAddress = 0xFEE00000;

struct Write {
  std::uint64_t addr;
  std::uint32_t len;
};

class CompletionPosterTest : public ::testing::Test {
 protected:
  CompletionPosterTest() : queues_(2), poster_(queues_, 3, hooks()) {
    queues_.sq(1).open(0x8000, 8);
    queues_.sq(1).head = 5;
    CompletionQueue& cq = queues_.cq(1);
    cq.exists = true;
    cq.base = kCqBase;
    cq.entries = 4;
  }

  CompletionHooks hooks() {
    CompletionHooks h;
    h.load_status = [this](std::uint64_t addr) {
      return static_cast<std::uint16_t>(memory_[addr] | (memory_[addr + 1] << 8));
    };
    h.write = [this](std::uint64_t addr, std::uint32_t len, const void* data) {
      writes_.push_back({addr, len});
      const auto* bytes = static_cast<const std::uint8_t*>(data);
      for (std::uint32_t i = 0; i < len; ++i) memory_[addr + i] = bytes[i];
    };
    h.slot_not_consumed = [this](std::uint16_t cqid, std::uint32_t slot,
                                 const CompletionEntry& entry) {
      refused_.push_back({cqid, slot, entry.cid});
    };
    return h;
  }

  // The entry in CQ 1's slot `slot`, as the host would read it.
  CompletionEntry slot(std::uint32_t index) {
    std::uint8_t bytes[16];
    for (std::uint64_t i = 0; i < 16; ++i) bytes[i] = memory_[kCqBase + 16 * index + i];
    CompletionEntry entry{};
    std::memcpy(&entry, bytes, sizeof entry);
    return entry;
  }

  static CompletionEntry completed(std::uint16_t cid, Status status = Status::Success,
                                   bool dnr = false) {
    CompletionEntry entry{};
    entry.dw0 = 0xABCD0000u + cid;
    entry.sqid = 1;
    entry.cid = cid;
    entry.set_status(status, false, dnr);
    return entry;
  }

  struct Refusal {
    std::uint16_t cqid;
    std::uint32_t slot;
    std::uint16_t cid;
  };

  QueueSet queues_;
  CompletionPoster poster_;
  std::map<std::uint64_t, std::uint8_t> memory_;  // unwritten bytes read as zero
  std::vector<Write> writes_;
  std::vector<Refusal> refused_;
};

TEST_F(CompletionPosterTest, PostsAtTheTailWithThePhaseAndTheSqHead) {
  poster_.post(1, completed(7, Status::CommandIdConflict, /*dnr=*/true));
  ASSERT_EQ(writes_.size(), 1u);
  EXPECT_EQ(writes_[0].addr, kCqBase);
  EXPECT_EQ(writes_[0].len, 16u);
  const CompletionEntry e = slot(0);
  EXPECT_EQ(e.dw0, 0xABCD0007u);
  EXPECT_EQ(e.sqid, 1);
  EXPECT_EQ(e.cid, 7);
  EXPECT_EQ(e.sqhd, 5);  // the SQ's head when posted
  EXPECT_EQ(e.phase(), 1);
  EXPECT_EQ(e.status(), Status::CommandIdConflict);
  EXPECT_TRUE(e.dnr());
  EXPECT_EQ(queues_.cq(1).tail, 1u);

  queues_.sq(1).head = 6;
  poster_.post(1, completed(8));
  EXPECT_EQ(writes_[1].addr, kCqBase + 16);
  EXPECT_EQ(slot(1).sqhd, 6);
  EXPECT_EQ(slot(1).status(), Status::Success);
  EXPECT_FALSE(slot(1).dnr());
  EXPECT_EQ(poster_.interrupts(), 0u);  // interrupts not enabled on CQ 1
}

// 4 slots with the head at 0: slots 0..2 take entries, the fourth is held
// (one slot stays empty) until the host frees slots; then it goes to slot
// 3, the tail wraps and the phase flips, and the second lap's slot 0 (phase
// 1 from the first lap) takes an entry of phase 0.
TEST_F(CompletionPosterTest, HoldsEntriesWhileFullAndReleasesThemOldestFirst) {
  for (std::uint16_t cid = 0; cid < 5; ++cid) poster_.post(1, completed(cid));
  EXPECT_EQ(writes_.size(), 3u);
  EXPECT_EQ(poster_.cq_full_stalls(), 2u);
  ASSERT_EQ(queues_.cq(1).waiting.size(), 2u);
  EXPECT_EQ(queues_.cq(1).tail, 3u);

  queues_.cq(1).head = 1;  // the host consumed slot 0: room for one
  poster_.release_held(1);
  EXPECT_EQ(writes_.size(), 4u);
  EXPECT_EQ(writes_[3].addr, kCqBase + 3 * 16);
  EXPECT_EQ(slot(3).cid, 3);  // the older held entry
  EXPECT_EQ(slot(3).phase(), 1);
  EXPECT_EQ(queues_.cq(1).tail, 0u);
  EXPECT_FALSE(queues_.cq(1).phase);
  ASSERT_EQ(queues_.cq(1).waiting.size(), 1u);

  queues_.cq(1).head = 3;
  poster_.release_held(1);
  EXPECT_EQ(writes_.size(), 5u);
  EXPECT_EQ(writes_[4].addr, kCqBase);
  EXPECT_EQ(slot(0).cid, 4);
  EXPECT_EQ(slot(0).phase(), 0);
  EXPECT_TRUE(queues_.cq(1).waiting.empty());
  EXPECT_EQ(poster_.cq_full_stalls(), 2u);
  EXPECT_TRUE(refused_.empty());
}

// A slot that still holds an entry of the phase being written was never
// consumed: nothing is written and the tail stays.
TEST_F(CompletionPosterTest, RefusesASlotHoldingAnEntryOfTheCurrentPhase) {
  memory_[kCqBase + 16 + 14] = 0x01;  // slot 1's status field, phase 1
  poster_.post(1, completed(2));
  poster_.post(1, completed(3));
  ASSERT_EQ(refused_.size(), 1u);
  EXPECT_EQ(refused_[0].cqid, 1);
  EXPECT_EQ(refused_[0].slot, 1u);
  EXPECT_EQ(refused_[0].cid, 3);
  EXPECT_EQ(writes_.size(), 1u);
  EXPECT_EQ(queues_.cq(1).tail, 1u);
}

TEST_F(CompletionPosterTest, SendsTheVectorsMessageBehindTheEntry) {
  EXPECT_EQ(poster_.vectors(), 3u);
  CompletionQueue& cq = queues_.cq(1);
  cq.irq_enabled = true;
  cq.vector = 2;
  poster_.post(1, completed(1));  // vector 2 not programmed: no message
  EXPECT_EQ(writes_.size(), 1u);
  poster_.set_vector(2, kMsixAddress, 0x41);
  poster_.post(1, completed(2));
  ASSERT_EQ(writes_.size(), 3u);
  EXPECT_EQ(writes_[1].addr, kCqBase + 16);  // the entry first
  EXPECT_EQ(writes_[2].addr, kMsixAddress);
  EXPECT_EQ(writes_[2].len, 4u);
  EXPECT_EQ(memory_[kMsixAddress], 0x41);
  EXPECT_EQ(poster_.interrupts(), 1u);
  cq.vector = 3;  // beyond the table of 3
  poster_.post(1, completed(3));
  EXPECT_EQ(writes_.size(), 4u);
  EXPECT_EQ(poster_.interrupts(), 1u);
}

// Indexed completion: the 4-slot CQ is indexed, its head stays 0 (the host
// never rings it). Commands fetched from SQ slots 2, 0, 3 and 1 in lap 0
// complete in that order: each entry lands at its own slot with phase 1, none
// is held although four entries exceed the three a ring CQ of 4 would take,
// and the tail never moves. Slot 0's next lap (phase 0) is accepted; a
// second lap-0 entry at slot 2 (phase 1 again: its first one was never
// consumed) is refused.
TEST_F(CompletionPosterTest, IndexedEntriesLandAtTheirSqSlotsWithTheLapsPhase) {
  queues_.cq(1).indexed = true;
  const std::uint32_t slots[] = {2, 0, 3, 1};
  for (std::uint16_t i = 0; i < 4; ++i) poster_.post_at_slot(1, completed(10 + i), slots[i], true);
  ASSERT_EQ(writes_.size(), 4u);
  for (std::uint16_t i = 0; i < 4; ++i) {
    EXPECT_EQ(writes_[i].addr, kCqBase + 16 * slots[i]);
    EXPECT_EQ(slot(slots[i]).cid, 10 + i);
    EXPECT_EQ(slot(slots[i]).phase(), 1);
    EXPECT_EQ(slot(slots[i]).sqhd, 5);
  }
  EXPECT_EQ(poster_.cq_full_stalls(), 0u);
  EXPECT_EQ(queues_.cq(1).tail, 0u);
  EXPECT_TRUE(queues_.cq(1).phase);

  poster_.post_at_slot(1, completed(20), 0, false);  // lap 1 of SQ slot 0
  EXPECT_EQ(slot(0).cid, 20);
  EXPECT_EQ(slot(0).phase(), 0);
  EXPECT_TRUE(refused_.empty());

  poster_.post_at_slot(1, completed(21), 2, true);
  ASSERT_EQ(refused_.size(), 1u);
  EXPECT_EQ(refused_[0].slot, 2u);
  EXPECT_EQ(refused_[0].cid, 21);
  EXPECT_EQ(slot(2).cid, 10);
  EXPECT_EQ(writes_.size(), 5u);
}

}  // namespace
}  // namespace gpunvme::nvme
