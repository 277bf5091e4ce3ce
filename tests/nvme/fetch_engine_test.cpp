// The controller's fetch engine, driven directly (no simulation): a clock the
// test sets, reads that arrive when the test says, and a controller stand-in
// that takes the delivered entries in (moves the SQ's head, starts one
// command per I/O entry). Reads, turns, slot counts and the slot statistics
// are checked against values worked out by hand.
#include "models/nvme/fetch_engine.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace gpunvme::nvme {
namespace {

constexpr std::uint64_t kAdminBase = 0x0;
constexpr std::uint64_t kSq1Base = 0x10000;
constexpr std::uint64_t kSq2Base = 0x20000;

struct Read {
  std::uint64_t addr;
  std::uint32_t len;
  FetchHooks::ReadDone done;
};

// A policy whose answers the test sets, logging what it hears.
class ScriptedPolicy : public ProcessorPolicy {
 public:
  explicit ScriptedPolicy(std::vector<std::string>& log) : log_(log) {}

  std::uint32_t fetch_turn(std::uint16_t qid, std::uint32_t turn, std::uint32_t fetch_burst,
                           Picoseconds) override {
    log_.push_back("offer " + std::to_string(qid) + " " + std::to_string(turn));
    return hold ? 0 : std::min(turn, fetch_burst);
  }
  bool one_read_per_turn() const override { return true; }
  void read_arrived(std::uint16_t qid) override {
    log_.push_back("arrived " + std::to_string(qid));
  }
  void read_dispatched(std::uint16_t qid, Picoseconds now) override {
    log_.push_back("dispatched " + std::to_string(qid) + " @" + std::to_string(now));
  }
  FetchedWork fetched(std::uint16_t, const std::uint8_t*, std::uint32_t, Picoseconds) override {
    return {};
  }
  Picoseconds processed(const std::optional<Picoseconds>&, std::uint64_t,
                        Picoseconds now) override {
    return now;
  }
  void command_done(BatchHold*, Picoseconds) override {}
  void forget_queue(std::uint16_t) override {}
  void reset() override {}
  std::optional<std::vector<CoreStats>> per_core() const override { return std::nullopt; }

  bool hold = false;

 private:
  std::vector<std::string>& log_;
};

class FetchEngineTest : public ::testing::Test {
 protected:
  FetchEngineTest() : queues_(2), cores_(1, {}), per_command_(cores_, CommandCost{}) {
    queues_.sq(0).open(kAdminBase, 4);
    queues_.sq(1).open(kSq1Base, 16);
    queues_.sq(2).open(kSq2Base, 8);
  }

  // An engine over SQs 0 (admin), 1 and 2, all round robin.
  FetchEngine& make(FetchLimits limits, std::uint8_t burst_log2,
                    ProcessorPolicy* policy = nullptr) {
    FetchHooks hooks;
    hooks.now = [this] { return now_; };
    hooks.read = [this](std::uint64_t addr, std::uint32_t len, FetchHooks::ReadDone done) {
      reads_.push_back({addr, len, std::move(done)});
    };
    hooks.deliver = [this](std::uint16_t qid, std::uint32_t first, const std::uint8_t*,
                           std::uint32_t count, std::uint64_t generation) {
      log_.push_back("deliver " + std::to_string(qid) + " " + std::to_string(first) + "+" +
                     std::to_string(count));
      if (generation != generation_) return;  // dropped, as the controller drops them
      SubmissionQueue& sq = queues_.sq(qid);
      sq.head = ring_advance(sq.head, count, sq.entries);
      sq.fetching -= count;
      if (qid != kAdminQueueId) {
        for (std::uint32_t i = 0; i < count; ++i) engine_->command_started();
      }
    };
    hooks.generation = [this] { return generation_; };
    engine_ = std::make_unique<FetchEngine>(queues_, policy ? *policy : per_command_, limits,
                                            burst_log2, std::move(hooks));
    engine_->arbiter().add_queue(0, QueuePriority::Urgent);
    engine_->arbiter().add_queue(1, QueuePriority::Medium);
    engine_->arbiter().add_queue(2, QueuePriority::Medium);
    return *engine_;
  }

  // The host rings SQ `qid`'s tail doorbell with `tail`.
  void ring(std::uint16_t qid, std::uint32_t tail) {
    queues_.sq(qid).tail = tail;
    engine_->mark_ready(qid);
  }

  // Read `i` arrives now.
  void arrive(std::size_t i) {
    std::vector<std::uint8_t> data(reads_[i].len);
    FetchHooks::ReadDone done = std::move(reads_[i].done);
    done(data.data(), reads_[i].len);
  }

  // The entries read `i` asks for, as (first slot, count) of `base`'s ring.
  static std::pair<std::uint64_t, std::uint32_t> entries(const Read& read, std::uint64_t base) {
    return {(read.addr - base) / kSqEntrySize, read.len / kSqEntrySize};
  }

  using Span = std::pair<std::uint64_t, std::uint32_t>;

  QueueSet queues_;
  ProcessorCores cores_;
  PerCommandProcessing per_command_;
  std::unique_ptr<FetchEngine> engine_;
  Picoseconds now_ = 0;
  std::uint64_t generation_ = 0;
  std::vector<Read> reads_;
  std::vector<std::string> log_;
};

// Nine entries rung from slot 10 of a 16-entry ring, turns of 8, reads of 4:
// the first turn reads slots 10-13, 14-15 (the ring's end) and 0-1; the SQ
// is ready again for its ninth entry, slot 2.
TEST_F(FetchEngineTest, ReadsTheTurnInBurstsThatStopAtTheRingsEnd) {
  FetchEngine& engine = make({/*fetch_burst=*/4, /*max_fetches=*/8, /*max_active=*/64}, 3);
  queues_.sq(1).head = queues_.sq(1).tail = 10;
  ring(1, 3);
  engine.kick();
  ASSERT_EQ(reads_.size(), 4u);
  EXPECT_EQ(entries(reads_[0], kSq1Base), Span(10, 4));
  EXPECT_EQ(entries(reads_[1], kSq1Base), Span(14, 2));
  EXPECT_EQ(entries(reads_[2], kSq1Base), Span(0, 2));
  EXPECT_EQ(entries(reads_[3], kSq1Base), Span(2, 1));
  EXPECT_EQ(queues_.sq(1).fetching, 9u);
  EXPECT_EQ(engine.entries_fetching(), 9u);
  EXPECT_EQ(engine.reads_in_flight(), 4u);
  EXPECT_EQ(unfetched(queues_.sq(1)), 0u);

  for (std::size_t i = 0; i < 4; ++i) arrive(i);
  EXPECT_EQ(log_, (std::vector<std::string>{"deliver 1 10+4", "deliver 1 14+2", "deliver 1 0+2",
                                            "deliver 1 2+1"}));
  EXPECT_EQ(queues_.sq(1).head, 3u);
  EXPECT_EQ(engine.active(), 9u);
  EXPECT_EQ(engine.entries_fetching(), 0u);
  EXPECT_EQ(engine.reads_in_flight(), 0u);
  EXPECT_EQ(reads_.size(), 4u);  // nothing left to read
}

// Two SQs with three entries each and a burst of two: round robin serves
// SQ 1 (2), SQ 2 (2), SQ 1 (1), SQ 2 (1).
TEST_F(FetchEngineTest, SqsTakeTurnsOfTheArbitrationBurst) {
  FetchEngine& engine = make({8, 8, 64}, /*burst_log2=*/1);
  ring(1, 3);
  ring(2, 3);
  engine.kick();
  ASSERT_EQ(reads_.size(), 4u);
  EXPECT_EQ(reads_[0].addr, kSq1Base);
  EXPECT_EQ(reads_[0].len, 2 * kSqEntrySize);
  EXPECT_EQ(reads_[1].addr, kSq2Base);
  EXPECT_EQ(reads_[1].len, 2 * kSqEntrySize);
  EXPECT_EQ(reads_[2].addr, kSq1Base + 2 * kSqEntrySize);
  EXPECT_EQ(reads_[2].len, kSqEntrySize);
  EXPECT_EQ(reads_[3].addr, kSq2Base + 2 * kSqEntrySize);
  EXPECT_EQ(reads_[3].len, kSqEntrySize);
}

// At most two reads in flight: six entries in reads of two wait for the
// first read to arrive before the third is issued.
TEST_F(FetchEngineTest, KeepsAtMostMaxFetchesReadsInFlight) {
  FetchEngine& engine = make({/*fetch_burst=*/2, /*max_fetches=*/2, 64}, 3);
  ring(1, 6);
  engine.kick();
  ASSERT_EQ(reads_.size(), 2u);
  EXPECT_EQ(entries(reads_[1], kSq1Base), Span(2, 2));
  arrive(0);
  ASSERT_EQ(reads_.size(), 3u);
  EXPECT_EQ(entries(reads_[2], kSq1Base), Span(4, 2));
  EXPECT_EQ(engine.reads_in_flight(), 2u);
}

// Five slots, nine I/O entries rung at t = 0: five are read (one turn cut
// to the free slots), the rest wait for a slot while the admin SQ is still
// served. The entries arrive at 1000 ps; one command ends at 3000 ps and its
// slot takes the sixth entry at once; the SQ waits again from then on.
//   slots reserved or active: 5 over 0..4000 ps            -> busy_mean 5
//   active: 0 over 0..1000, 5 over 1000..3000, 4 to 4000    -> 14000 / 4000
//   stalls: 0..3000 (closed) and 3000..4000 (open at 4000)  -> 2, 4 ns
TEST_F(FetchEngineTest, CommandSlotsHoldIoBackAndAreAccountedOverTime) {
  FetchEngine& engine = make({/*fetch_burst=*/4, 8, /*max_active=*/5}, 3);
  ring(1, 9);
  engine.kick();
  ASSERT_EQ(reads_.size(), 2u);
  EXPECT_EQ(entries(reads_[0], kSq1Base), Span(0, 4));
  EXPECT_EQ(entries(reads_[1], kSq1Base), Span(4, 1));
  EXPECT_TRUE(engine.slots_full());

  ring(0, 2);  // the admin SQ needs no slot
  engine.kick();
  ASSERT_EQ(reads_.size(), 3u);
  EXPECT_EQ(reads_[2].addr, kAdminBase);
  EXPECT_EQ(reads_[2].len, 2 * kSqEntrySize);
  EXPECT_EQ(engine.entries_fetching(), 5u);  // I/O entries only

  now_ = 1000;
  arrive(0);
  arrive(1);
  arrive(2);
  EXPECT_EQ(engine.active(), 5u);
  EXPECT_EQ(reads_.size(), 3u);  // still full

  now_ = 3000;
  engine.command_ended();
  EXPECT_FALSE(engine.slots_full());
  engine.kick();
  ASSERT_EQ(reads_.size(), 4u);
  EXPECT_EQ(entries(reads_[3], kSq1Base), Span(5, 1));

  now_ = 4000;
  const nlohmann::json slots = engine.slot_statistics(/*io_span=*/4000);
  EXPECT_EQ(slots.at("count").get<std::uint32_t>(), 5u);
  EXPECT_EQ(slots.at("busy_max").get<std::uint32_t>(), 5u);
  EXPECT_DOUBLE_EQ(slots.at("busy_mean").get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(slots.at("commands_mean").get<double>(), 3.5);
  EXPECT_EQ(slots.at("fetch_stalls").get<std::uint64_t>(), 2u);
  EXPECT_DOUBLE_EQ(slots.at("stalled_ns").get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(engine.slot_statistics(0).at("busy_mean").get<double>(), 0.0);
}

// A slot freed and taken in the same instant held nothing back: no stall.
TEST_F(FetchEngineTest, AStallOfNoTimeIsNotCounted) {
  FetchEngine& engine = make({4, 8, /*max_active=*/1}, 3);
  ring(1, 2);
  engine.kick();
  arrive(0);
  engine.command_ended();
  engine.kick();
  ASSERT_EQ(reads_.size(), 2u);
  const nlohmann::json slots = engine.slot_statistics(1);
  EXPECT_EQ(slots.at("fetch_stalls").get<std::uint64_t>(), 0u);
  EXPECT_EQ(slots.at("stalled_ns").get<double>(), 0.0);
}

TEST_F(FetchEngineTest, FetchesNothingWhilePaused) {
  FetchEngine& engine = make({4, 8, 64}, 3);
  engine.pause_until(500);
  engine.pause_until(200);  // never earlier than it already is
  EXPECT_EQ(engine.paused_until(), 500u);
  now_ = 100;
  ring(1, 2);
  engine.kick();
  EXPECT_TRUE(reads_.empty());
  now_ = 500;
  engine.kick();
  ASSERT_EQ(reads_.size(), 1u);
  EXPECT_EQ(entries(reads_[0], kSq1Base), Span(0, 2));
}

// A policy that polls takes one read per turn and may hold its SQ back; it
// hears each read of the current generation arrive around the delivery.
TEST_F(FetchEngineTest, APolicyShortensOrHoldsTurnsAndHearsItsReads) {
  ScriptedPolicy policy(log_);
  FetchEngine& engine = make({/*fetch_burst=*/4, 8, 64}, 3, &policy);
  ring(1, 9);
  engine.kick();
  // Turns of 8 become one read of 4; the SQ is ready again and gets a second
  // turn, then a third for the last entry.
  ASSERT_EQ(reads_.size(), 3u);
  EXPECT_EQ(entries(reads_[1], kSq1Base), Span(4, 4));
  EXPECT_EQ(entries(reads_[2], kSq1Base), Span(8, 1));
  EXPECT_EQ(log_, (std::vector<std::string>{"offer 1 8", "offer 1 5", "offer 1 1"}));

  log_.clear();
  now_ = 700;
  arrive(0);
  EXPECT_EQ(log_, (std::vector<std::string>{"arrived 1", "deliver 1 0+4", "dispatched 1 @700"}));

  // Held back: the SQ leaves the turn order until the policy offers it again.
  log_.clear();
  policy.hold = true;
  ring(1, 12);
  engine.kick();
  EXPECT_EQ(log_, (std::vector<std::string>{"offer 1 3"}));
  EXPECT_EQ(reads_.size(), 3u);
  engine.kick();
  EXPECT_EQ(log_.size(), 1u);  // not offered again by itself
  policy.hold = false;
  engine.mark_ready(1);
  engine.kick();
  ASSERT_EQ(reads_.size(), 4u);
  EXPECT_EQ(entries(reads_[3], kSq1Base), Span(9, 3));

  // A read from before a controller reset is delivered (the controller drops
  // it) without the policy hearing of it.
  log_.clear();
  ++generation_;
  arrive(1);
  EXPECT_EQ(log_, (std::vector<std::string>{"deliver 1 4+4"}));
}

}  // namespace
}  // namespace gpunvme::nvme
