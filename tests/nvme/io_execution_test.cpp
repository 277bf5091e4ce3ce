// The controller's I/O execution, driven directly (no simulation): a small
// calendar the test runs, one processor core taking 100 ps per command, a
// data path of 1 ps per byte, and a scripted back end (media reads done
// 1000 ps after processing, buffer writes 300 ps after the data is in,
// flushes 5000 ps, data pointers resolved 2000 ps after processing, DMA
// reads arriving after 50 ps, DMA writes issued after 10 ps). Completion
// times and statuses are worked out by hand.
#include "models/nvme/io_execution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/protocol/nvme_commands.h"

namespace gpunvme::nvme {
namespace {

constexpr std::uint64_t kBuffer = 0x100000;
constexpr Picoseconds kProcess = 100;
constexpr Picoseconds kMedia = 1000;
constexpr Picoseconds kBufferWrite = 300;
constexpr Picoseconds kFlush = 5000;
constexpr Picoseconds kResolve = 2000;

struct Completed {
  std::uint16_t cid;
  Status status;
  bool dnr;
  Picoseconds at;
};

class IoExecutionTest : public ::testing::Test {
 protected:
  IoExecutionTest()
      : queues_(1), cores_(1, {}), processors_(cores_, CommandCost{kProcess, 0, 512}) {
    queues_.sq(1).open(0x10000, 16);
  }

  IoExecution& make() {
    IoLimits limits;
    limits.lba_bytes = 512;
    limits.capacity_lbas = 1000;
    limits.max_transfer_bytes = 8192;
    limits.sgl_supported = false;
    limits.datapath_ps_per_byte = 1.0;
    limits.cost = CommandCost{kProcess, 0, 512};
    IoHooks h;
    h.now = [this] { return now_; };
    h.schedule_at = [this](Picoseconds when, Calendar::Callback callback) {
      calendar_.emplace(when, std::move(callback));
    };
    h.complete = [this](const Command& c, Status status, std::uint32_t, bool dnr) {
      completed_.push_back({c.sqe.cid(), status, dnr, now_});
    };
    h.resolve = [this](CommandPtr, std::uint64_t bytes, bool, Picoseconds start, Resolved done) {
      auto shared = std::make_shared<Resolved>(std::move(done));
      calendar_.emplace(start + kResolve, [shared, bytes] {
        (*shared)(Status::Success, {{kBuffer, bytes, false}});
      });
    };
    h.check_segments = [this](const Command&, const std::vector<Segment>& segments,
                              std::uint64_t bytes) {
      log_.push_back("checked " + std::to_string(segments.size()) + "x" + std::to_string(bytes));
    };
    h.read = [this](std::uint64_t addr, std::uint32_t len, IoHooks::ReadDone done) {
      std::vector<std::uint8_t> bytes(len);
      for (std::uint32_t i = 0; i < len; ++i) bytes[i] = memory_[addr + i];
      calendar_.emplace(now_ + 20, [bytes, done] { done(bytes.data(), bytes.size()); });
    };
    h.write = [](std::uint64_t, std::uint32_t, const void*, std::function<void()>) {
      FAIL() << "no write to the controller's own buffer expected";
    };
    h.dma_write = [this](std::uint64_t addr, std::uint64_t len, pcie::DmaEngine::Done issued,
                         std::uint32_t) {
      log_.push_back("dma_write " + std::to_string(addr) + "+" + std::to_string(len) + " @" +
                     std::to_string(now_));
      auto shared = std::make_shared<pcie::DmaEngine::Done>(std::move(issued));
      calendar_.emplace(now_ + 10, [shared] { (*shared)(); });
    };
    h.dma_read = [this](std::uint64_t addr, std::uint64_t len, pcie::DmaEngine::Done done,
                        std::uint32_t) {
      log_.push_back("dma_read " + std::to_string(addr) + "+" + std::to_string(len) + " @" +
                     std::to_string(now_));
      auto shared = std::make_shared<pcie::DmaEngine::Done>(std::move(done));
      calendar_.emplace(now_ + 50, [shared] { (*shared)(); });
    };
    h.in_own_cmb = [](std::uint64_t, std::uint64_t) { return false; };
    h.observe_dma = [this](const DmaRecord&) { ++observed_; };
    h.device_event = [this](FaultKind kind) {
      log_.push_back("event " + std::to_string(static_cast<int>(kind)));
    };
    h.lose = [this](const CommandPtr& c) { lost_.push_back(c->sqe.cid()); };
    h.generation = [] { return std::uint64_t{0}; };
    h.volatile_cache = [this] { return volatile_cache_; };
    h.media_read = [this](Picoseconds, Picoseconds processed, std::uint64_t offset,
                          std::uint32_t bytes) {
      log_.push_back("media_read " + std::to_string(offset) + "+" + std::to_string(bytes));
      return processed + kMedia;
    };
    h.media_write = [this](Picoseconds in, std::uint64_t offset, std::uint32_t bytes) {
      log_.push_back("media_write " + std::to_string(offset) + "+" + std::to_string(bytes) + " @" +
                     std::to_string(in));
      return in + kBufferWrite;
    };
    h.media_flush = [](Picoseconds, Picoseconds after) { return after + kFlush; };
    h.media_trim = [this](std::uint64_t offset, std::uint64_t bytes) {
      log_.push_back("trim " + std::to_string(offset) + "+" + std::to_string(bytes));
    };
    io_ = std::make_unique<IoExecution>(queues_, processors_, faults_, limits, std::move(h));
    return *io_;
  }

  // A command of SQ 1 fetched now; `io_index` its place among I/O commands.
  void submit(const SubmissionEntry& sqe, std::uint64_t io_index = 0) {
    auto command = std::make_shared<Command>();
    command->qid = 1;
    command->sqe = sqe;
    command->io_index = io_index;
    io_->execute(std::move(command));
  }

  void run() {
    while (!calendar_.empty()) {
      auto first = calendar_.begin();
      now_ = first->first;
      Calendar::Callback callback = std::move(first->second);
      calendar_.erase(first);
      callback();
    }
  }

  QueueSet queues_;
  ProcessorCores cores_;
  PerCommandProcessing processors_;
  FaultInjector faults_;
  std::unique_ptr<IoExecution> io_;
  // Equal times keep the order they were scheduled in, as the kernel's
  // calendar does.
  std::multimap<Picoseconds, Calendar::Callback> calendar_;
  std::map<std::uint64_t, std::uint8_t> memory_;
  Picoseconds now_ = 0;
  bool volatile_cache_ = true;
  std::vector<Completed> completed_;
  std::vector<std::string> log_;
  std::vector<std::uint16_t> lost_;
  int observed_ = 0;
};

// Each check fails its command once processed (commands at t = 0 take the
// core in turn: done at 100, 200, ...), with nothing read or moved.
TEST_F(IoExecutionTest, RefusedCommandsCompleteWhenProcessed) {
  make();
  SubmissionEntry bad_opcode{};
  bad_opcode.set_opcode(0x7F);
  bad_opcode.set_cid(1);
  bad_opcode.nsid = 1;
  submit(bad_opcode);
  submit(make_read(2, /*nsid=*/2, 0, 7, kBuffer, 0));
  submit(make_read(3, 1, /*slba=*/996, /*5 blocks=*/4, kBuffer, 0));  // past 1000 LBAs
  submit(make_read(4, 1, 0, /*17 blocks=*/16, kBuffer, 0));           // 8704 B > 8192 (MDTS)
  SubmissionEntry sgl = make_read(5, 1, 0, 7, kBuffer, 0);
  sgl.set_psdt(Psdt::SglContiguousMetadata);  // SGLs not offered
  submit(sgl);
  run();
  ASSERT_EQ(completed_.size(), 5u);
  const Status expected[] = {Status::InvalidCommandOpcode, Status::InvalidNamespaceOrFormat,
                             Status::LbaOutOfRange, Status::InvalidFieldInCommand,
                             Status::InvalidFieldInCommand};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(completed_[i].cid, i + 1);
    EXPECT_EQ(completed_[i].status, expected[i]) << i;
    EXPECT_EQ(completed_[i].at, (i + 1) * kProcess) << i;
  }
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(io_->bytes_read(), 0u);
}

// Two 4 KiB reads at t = 0, processed at 100 and 200. Each waits for its
// media read (1100, 1200) and its data pointer (2100, 2200); the data path
// then takes 4096 ps per read: the first from 2100 to 6196, so the second
// starts at 6196. Each completes when its DMA has been issued, 10 ps later.
TEST_F(IoExecutionTest, AReadJoinsMediaAndDataPointerThenQueuesOnTheDataPath) {
  make();
  submit(make_read(1, 1, 0, 7, kBuffer, 0));
  submit(make_read(2, 1, 8, 7, kBuffer, 0));
  run();
  ASSERT_EQ(completed_.size(), 2u);
  EXPECT_EQ(completed_[0].cid, 1);
  EXPECT_EQ(completed_[0].status, Status::Success);
  EXPECT_EQ(completed_[0].at, 2110u);
  EXPECT_EQ(completed_[1].cid, 2);
  EXPECT_EQ(completed_[1].at, 6206u);
  const std::string buffer = std::to_string(kBuffer);
  EXPECT_EQ(log_,
            (std::vector<std::string>{"media_read 0+4096", "media_read 4096+4096", "checked 1x4096",
                                      "dma_write " + buffer + "+4096 @2100", "checked 1x4096",
                                      "dma_write " + buffer + "+4096 @6196"}));
  EXPECT_EQ(observed_, 2);
  EXPECT_EQ(io_->bytes_read(), 8192u);
}

// A 4 KiB write processed at 100: its data pointer resolves at 2100, its
// data arrives at 2150 and enters the buffer (data path free) at 2150, held
// at 2450. With FUA and a volatile cache it waits for the flush: 7450.
TEST_F(IoExecutionTest, AWriteReadsItsDataIntoTheBuffer) {
  make();
  submit(make_write(1, 1, 16, 7, kBuffer, 0));
  run();
  ASSERT_EQ(completed_.size(), 1u);
  EXPECT_EQ(completed_[0].status, Status::Success);
  EXPECT_EQ(completed_[0].at, 2450u);
  EXPECT_EQ(log_, (std::vector<std::string>{"checked 1x4096",
                                            "dma_read " + std::to_string(kBuffer) + "+4096 @2100",
                                            "media_write 8192+4096 @2150"}));
  EXPECT_EQ(io_->bytes_written(), 4096u);

  completed_.clear();
  now_ = 10000;
  SubmissionEntry fua = make_write(2, 1, 16, 7, kBuffer, 0);
  fua.cdw12 |= 1u << 30;
  submit(fua);  // processed at 10100, resolved 12100, data in 12150, held 12450
  run();
  ASSERT_EQ(completed_.size(), 1u);
  EXPECT_EQ(completed_[0].at, 12450u + kFlush);
}

// A Flush waits for the buffer only behind a volatile cache; one for
// another namespace fails.
TEST_F(IoExecutionTest, AFlushWaitsForTheBufferBehindAVolatileCache) {
  make();
  submit(make_flush(1, 1));
  run();
  volatile_cache_ = false;
  now_ = 10000;
  submit(make_flush(2, 0xFFFFFFFFu));
  submit(make_flush(3, 7));
  run();
  ASSERT_EQ(completed_.size(), 3u);
  EXPECT_EQ(completed_[0].at, kProcess + kFlush);
  EXPECT_EQ(completed_[1].at, 10100u);
  EXPECT_EQ(completed_[1].status, Status::Success);
  EXPECT_EQ(completed_[2].at, 10200u);
  EXPECT_EQ(completed_[2].status, Status::InvalidNamespaceOrFormat);
}

// Scheduled faults by command index: 0 is lost once processed (100), 1
// fails with Internal Error (200), 2 (a read) with Unrecovered Read Error
// after its media read (300 + 1000), 3 raises a reset and otherwise runs
// (processed 500, data pointer 2500, DMA issued 2510). A Flush between
// them draws no fault (processed 400, flushed 5400).
TEST_F(IoExecutionTest, FaultsLoseOrFailTheirCommands) {
  faults_ = FaultInjector(0.0, 0.0, 1,
                          {{FaultKind::Timeout, false, 0, 0},
                           {FaultKind::Command, false, 1, 0},
                           {FaultKind::Media, false, 2, 0},
                           {FaultKind::Reset, false, 3, 0}});
  make();
  submit(make_read(1, 1, 0, 7, kBuffer, 0), 0);
  submit(make_read(2, 1, 0, 7, kBuffer, 0), 1);
  submit(make_read(3, 1, 0, 7, kBuffer, 0), 2);
  submit(make_flush(4, 1), 3);  // a Flush takes no fault of its own
  submit(make_read(5, 1, 0, 7, kBuffer, 0), 3);
  run();
  EXPECT_EQ(lost_, (std::vector<std::uint16_t>{1}));
  ASSERT_EQ(completed_.size(), 4u);
  EXPECT_EQ(completed_[0].cid, 2);
  EXPECT_EQ(completed_[0].status, Status::InternalError);
  EXPECT_EQ(completed_[0].at, 200u);
  EXPECT_EQ(completed_[1].cid, 3);
  EXPECT_EQ(completed_[1].status, Status::UnrecoveredReadError);
  EXPECT_TRUE(completed_[1].dnr);
  EXPECT_EQ(completed_[1].at, 300u + kMedia);
  EXPECT_EQ(completed_[2].cid, 5);
  EXPECT_EQ(completed_[2].status, Status::Success);
  EXPECT_EQ(completed_[2].at, 2510u);
  EXPECT_EQ(completed_[3].cid, 4);
  EXPECT_EQ(completed_[3].at, 400u + kFlush);
  EXPECT_EQ(io_->timeout_faults(), 1u);
  EXPECT_EQ(io_->command_faults(), 1u);
  EXPECT_EQ(io_->media_faults(), 1u);
  EXPECT_EQ(std::count(log_.begin(), log_.end(),
                       "event " + std::to_string(static_cast<int>(FaultKind::Reset))),
            1);
}

TEST_F(IoExecutionTest, ADrainingSqAbortsWhatItStillHands) {
  make();
  queues_.sq(1).on_drained = [] {};
  submit(make_read(1, 1, 0, 7, kBuffer, 0));
  run();
  ASSERT_EQ(completed_.size(), 1u);
  EXPECT_EQ(completed_[0].status, Status::AbortedSqDeletion);
  EXPECT_EQ(completed_[0].at, kProcess);
}

// Dataset Management with Deallocate: two 16 B ranges (8 LBAs at 16, 4 at
// 100) read from the data pointer (resolved 2100, read back 20 ps later),
// each trimmed; a range beyond the namespace stops the command there.
TEST_F(IoExecutionTest, DatasetManagementDeallocatesItsRanges) {
  make();
  auto range = [this](std::uint64_t at, std::uint32_t nlb, std::uint64_t slba) {
    for (int i = 0; i < 4; ++i) memory_[at + 4 + i] = static_cast<std::uint8_t>(nlb >> (8 * i));
    for (int i = 0; i < 8; ++i) memory_[at + 8 + i] = static_cast<std::uint8_t>(slba >> (8 * i));
  };
  range(kBuffer, 8, 16);
  range(kBuffer + 16, 4, 100);
  SubmissionEntry dsm{};
  dsm.set_opcode(static_cast<std::uint8_t>(NvmOpcode::DatasetManagement));
  dsm.set_cid(1);
  dsm.nsid = 1;
  dsm.cdw10 = 1;        // two ranges
  dsm.cdw11 = 1u << 2;  // AD
  submit(dsm);
  run();
  ASSERT_EQ(completed_.size(), 1u);
  EXPECT_EQ(completed_[0].status, Status::Success);
  EXPECT_EQ(completed_[0].at, kProcess + kResolve + 20);
  EXPECT_EQ(log_, (std::vector<std::string>{"checked 1x32", "trim 8192+4096", "trim 51200+2048"}));

  log_.clear();
  completed_.clear();
  range(kBuffer, 8, 996);  // 996..1004: beyond 1000 LBAs
  dsm.set_cid(2);
  submit(dsm);
  run();
  ASSERT_EQ(completed_.size(), 1u);
  EXPECT_EQ(completed_[0].status, Status::LbaOutOfRange);
  EXPECT_EQ(log_, (std::vector<std::string>{"checked 1x32"}));
}

}  // namespace
}  // namespace gpunvme::nvme
