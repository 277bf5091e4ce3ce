// The controller's shadow doorbells, driven directly (no simulation): a
// memory space holds the two buffers (doorbell stride 4 B, so SQ 1's tail
// sits at +8 and CQ 1's head at +12), the test holds the clock, the poll
// ticks and the reads, and every EventIdx value is worked out by hand.
#include "models/nvme/shadow_doorbells.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <utility>
#include <vector>

namespace gpunvme::nvme {
namespace {

constexpr Picoseconds kPollPeriod = 1000;
constexpr std::uint64_t kPage = 4096;

class ShadowDoorbellsTest : public ::testing::Test {
 protected:
  ShadowDoorbellsTest()
      : queues_(2),
        buffers_(memory_.allocate(2 * kPage, 0, RegionKind::HostMemory, "host", kPage)),
        shadow_base_(buffers_.base),
        event_idx_base_(buffers_.base + kPage),
        shadow_(queues_, memory_, /*dstrd=*/0, kPollPeriod, hooks()) {
    queues_.sq(1).open(0x100000, 16);
    queues_.sq(1).tail = queues_.sq(1).head = 3;
    CompletionQueue& cq = queues_.cq(1);
    cq.exists = true;
    cq.entries = 16;
  }

  ShadowHooks hooks() {
    ShadowHooks h;
    h.now = [this] { return now_; };
    h.schedule_at = [this](Picoseconds when, Calendar::Callback callback) {
      ticks_.push_back({when, std::move(callback)});
    };
    h.read = [this](std::uint64_t addr, std::uint32_t len,
                    std::function<void(const std::uint8_t*, std::uint32_t)> done) {
      EXPECT_EQ(len, 4u);
      reads_.push_back({addr, std::move(done)});
    };
    h.write = [this](std::uint64_t addr, std::uint32_t len, const void* data) {
      EXPECT_EQ(len, 4u);
      std::uint32_t value;
      std::memcpy(&value, data, 4);
      event_idx_.push_back({addr - event_idx_base_, value});
    };
    h.generation = [this] { return generation_; };
    h.apply = [this](DoorbellKind kind, std::uint16_t qid, std::uint32_t value) {
      applied_.push_back({kind, qid, value});
    };
    return h;
  }

  // The host updates a shadow doorbell.
  void host_writes(std::uint64_t offset, std::uint32_t value) {
    memory_.store<std::uint32_t>(shadow_base_ + offset, value);
  }
  // Runs the oldest poll tick, at its time.
  void run_tick() {
    ASSERT_FALSE(ticks_.empty());
    auto tick = std::move(ticks_.front());
    ticks_.erase(ticks_.begin());
    now_ = tick.first;
    tick.second();
  }
  // The oldest read returns what memory holds now.
  void complete_read() {
    ASSERT_FALSE(reads_.empty());
    auto read = std::move(reads_.front());
    reads_.erase(reads_.begin());
    const auto value = memory_.load<std::uint32_t>(read.first);
    read.second(reinterpret_cast<const std::uint8_t*>(&value), 4);
  }

  struct EventIdxWrite {
    std::uint64_t offset;
    std::uint32_t value;
    bool operator==(const EventIdxWrite& o) const { return offset == o.offset && value == o.value; }
  };
  struct Applied {
    DoorbellKind kind;
    std::uint16_t qid;
    std::uint32_t value;
    bool operator==(const Applied& o) const {
      return kind == o.kind && qid == o.qid && value == o.value;
    }
  };

  MemorySpace memory_;
  QueueSet queues_;
  const Region& buffers_;
  std::uint64_t shadow_base_;
  std::uint64_t event_idx_base_;
  ShadowDoorbells shadow_;
  Picoseconds now_ = 0;
  std::uint64_t generation_ = 0;
  std::vector<std::pair<Picoseconds, Calendar::Callback>> ticks_;
  std::vector<std::pair<std::uint64_t, std::function<void(const std::uint8_t*, std::uint32_t)>>>
      reads_;
  std::vector<EventIdxWrite> event_idx_;
  std::vector<Applied> applied_;
};

// Configuring watches the existing I/O queues: CQ 1's EventIdx one behind
// its head (0 - 1 = FFFFh, no MMIO needed), SQ 1's at its tail 3 (ring the
// MMIO doorbell on the next update).
TEST_F(ShadowDoorbellsTest, ConfiguringWatchesTheQueuesAndSetsEventIdx) {
  EXPECT_FALSE(shadow_.configured());
  shadow_.update_sq_event_idx(1);  // not configured: nothing
  EXPECT_TRUE(event_idx_.empty());
  shadow_.configure(shadow_base_, event_idx_base_);
  EXPECT_TRUE(shadow_.configured());
  EXPECT_EQ(event_idx_, (std::vector<EventIdxWrite>{{12, 0xFFFF}, {8, 3}}));
  EXPECT_EQ(shadow_.event_idx_writes(), 2u);
  EXPECT_FALSE(queues_.sq(1).shadow_awake);
}

// An update at 2500 ps is read at the next tick (3000). A second update
// while that read is under way is not lost: once the read returns, the
// doorbell is polled again at the next tick.
TEST_F(ShadowDoorbellsTest, AnUpdateIsReadAtTheNextTickAndApplied) {
  shadow_.configure(shadow_base_, event_idx_base_);
  now_ = 2500;
  host_writes(8, 5);
  ASSERT_EQ(ticks_.size(), 1u);
  EXPECT_EQ(ticks_[0].first, 3000u);
  run_tick();
  ASSERT_EQ(reads_.size(), 1u);
  EXPECT_EQ(reads_[0].first, shadow_base_ + 8);
  now_ = 3200;
  host_writes(8, 6);  // read pending: marked, no tick of its own
  EXPECT_TRUE(ticks_.empty());
  complete_read();
  EXPECT_EQ(applied_, (std::vector<Applied>{{DoorbellKind::SqTail, 1, 6}}));
  EXPECT_EQ(shadow_.reads(), 1u);
  ASSERT_EQ(ticks_.size(), 1u);  // polled again for the update that came meanwhile
  EXPECT_EQ(ticks_[0].first, 4000u);
  run_tick();
  complete_read();
  EXPECT_EQ(applied_.size(), 2u);
  EXPECT_TRUE(ticks_.empty());

  now_ = 4000;  // on a tick: read at once
  host_writes(12, 2);
  ASSERT_EQ(ticks_.size(), 1u);
  EXPECT_EQ(ticks_[0].first, 4000u);
  run_tick();
  EXPECT_EQ(reads_[0].first, shadow_base_ + 12);
  complete_read();
  EXPECT_EQ(applied_.back(), (Applied{DoorbellKind::CqHead, 1, 2}));
  EXPECT_EQ(shadow_.reads(), 3u);
}

// A reset between the update and its tick, or while the read is under way,
// drops the poll; a stopped queue's read returns unapplied.
TEST_F(ShadowDoorbellsTest, PollsFromBeforeAResetOrAStopAreDropped) {
  shadow_.configure(shadow_base_, event_idx_base_);
  host_writes(8, 4);
  ++generation_;
  run_tick();
  EXPECT_TRUE(reads_.empty());

  shadow_.configure(shadow_base_, event_idx_base_);  // watched afresh
  host_writes(8, 5);
  run_tick();
  shadow_.stop(DoorbellKind::SqTail, 1);
  complete_read();
  EXPECT_TRUE(applied_.empty());
  EXPECT_EQ(shadow_.reads(), 0u);
  host_writes(8, 6);  // no longer watched
  EXPECT_TRUE(ticks_.empty());

  host_writes(12, 1);
  run_tick();
  ++generation_;
  complete_read();
  EXPECT_TRUE(applied_.empty());
}

TEST_F(ShadowDoorbellsTest, ResetForgetsTheBuffers) {
  shadow_.configure(shadow_base_, event_idx_base_);
  event_idx_.clear();
  shadow_.reset();
  EXPECT_FALSE(shadow_.configured());
  host_writes(8, 4);
  host_writes(12, 1);
  EXPECT_TRUE(ticks_.empty());
  queues_.sq(1).tail = 4;
  shadow_.update_sq_event_idx(1);
  EXPECT_TRUE(event_idx_.empty());
}

// SQ 1's tail moves from 3 to 5: EventIdx one behind the tail (4), so
// further updates need no MMIO doorbell; once idle again, EventIdx at the
// tail (5). The admin SQ has none.
TEST_F(ShadowDoorbellsTest, SqEventIdxFollowsWhetherTheQueueHasWork) {
  shadow_.configure(shadow_base_, event_idx_base_);
  event_idx_.clear();
  SubmissionQueue& sq = queues_.sq(1);
  sq.tail = 5;
  shadow_.update_sq_event_idx(1);
  EXPECT_EQ(event_idx_, (std::vector<EventIdxWrite>{{8, 4}}));
  EXPECT_TRUE(sq.shadow_awake);
  sq.head = 5;
  sq.in_flight = 1;  // fetched, not completed: still busy
  shadow_.update_sq_event_idx(1);
  EXPECT_EQ(event_idx_.size(), 1u);
  sq.in_flight = 0;
  shadow_.update_sq_event_idx(1);
  EXPECT_EQ(event_idx_, (std::vector<EventIdxWrite>{{8, 4}, {8, 5}}));
  EXPECT_FALSE(sq.shadow_awake);
  shadow_.update_sq_event_idx(0);
  EXPECT_EQ(event_idx_.size(), 2u);
  sq.tail = 0;  // wraps below zero: 0 - 1 = FFFFh
  shadow_.update_sq_event_idx(1);
  EXPECT_EQ(event_idx_.back(), (EventIdxWrite{8, 0xFFFF}));
}

// Controller-polled (a proposed extension): configuring puts SQ 1's
// EventIdx one behind its tail 3 (2: no MMIO needed) and it stays there
// whether the queue has work or not; an update is still read at the next
// tick (2500 ps -> 3000) and applied.
TEST_F(ShadowDoorbellsTest, AlwaysPolledQueuesNeverAskForTheMmioDoorbell) {
  shadow_.set_always_polled(true);
  shadow_.configure(shadow_base_, event_idx_base_);
  EXPECT_EQ(event_idx_, (std::vector<EventIdxWrite>{{12, 0xFFFF}, {8, 2}}));
  SubmissionQueue& sq = queues_.sq(1);
  EXPECT_TRUE(sq.shadow_awake);
  sq.tail = 5;
  shadow_.update_sq_event_idx(1);
  sq.head = 5;
  shadow_.update_sq_event_idx(1);  // idle: a sleeping poller would ask for MMIO here
  EXPECT_EQ(event_idx_.size(), 2u);
  now_ = 2500;
  host_writes(8, 6);
  run_tick();
  EXPECT_EQ(now_, 3000u);
  complete_read();
  EXPECT_EQ(applied_, (std::vector<Applied>{{DoorbellKind::SqTail, 1, 6}}));
  EXPECT_EQ(event_idx_.size(), 2u);
}

}  // namespace
}  // namespace gpunvme::nvme
