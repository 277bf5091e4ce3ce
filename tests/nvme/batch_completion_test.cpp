// Batch completion notification (a proposed NVMe extension,
// sim/core/protocol/nvme_batch_completion.h) through the controller: queue
// creation, a batch posted as one write of its changed words, the window,
// failed commands as full entries in the ring, and the firmware time.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/core/protocol/nvme_batch_completion.h"
#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

constexpr std::uint32_t kBitmapCids = 128;  // 4 words

// A queue of 64 entries on a batch-notified CQ whose bitmap (in host
// memory) covers 128 CIDs. Every write that lands in the bitmap is recorded
// with its time and the bitmap's words after it.
struct BatchBench {
  BatchBench(std::uint32_t max_completions, double window_ns, double cost_ns)
      : bench({"samsung-pm1743",
               {{"batch_completion", true},
                {"batch_completion_max", max_completions},
                {"batch_completion_window_ns", window_ns},
                {"batch_completion_ns", cost_ns}}}),
        host("host", bench) {
    host::BringUpOptions options;
    options.io_queues = 1;
    bench.bring_up(0, options, {});
    bitmap = bench.driver().allocate(host::QueuePlacement::host,
                                     batch_bitmap_words(kBitmapCids) * kBatchBitmapWordBytes, 64);
    buffer = bench.driver().allocate(host::QueuePlacement::host, 4096);
    host::IoQueueSpec spec;
    spec.entries = 64;
    spec.completion_bitmap = bitmap;
    spec.bitmap_cids = kBitmapCids;
    std::vector<host::IoQueue> created;
    bench.driver().create_io_queues({spec},
                                    [&](std::vector<host::IoQueue> q) { created = std::move(q); });
    bench.run();
    EXPECT_EQ(created.size(), 1u);
    EXPECT_EQ(created.at(0).status, Status::Success) << status_name(created.at(0).status);
    q = created.at(0);
    host.attach(q);
    bench.ssd().observe_commands([this](const CommandSteps& s) { steps.push_back(s); });
    watch();
  }
  void watch() {
    bench.memory().watch(bitmap, batch_bitmap_words(kBitmapCids) * kBatchBitmapWordBytes, [this] {
      Landing l{Simulation::now(), {}};
      for (std::uint32_t i = 0; i < batch_bitmap_words(kBitmapCids); ++i) {
        l.words.push_back(bench.memory().load<std::uint32_t>(bitmap + 4ull * i));
      }
      landed.push_back(l);
      watch();
    });
  }
  // A flush with CID `cid`: it completes successfully.
  void flush(std::uint16_t cid) {
    host.submit(make_flush(cid, 1), nullptr, /*ring=*/false, /*keep_cid=*/true);
  }
  struct Landing {
    Picoseconds at;
    std::vector<std::uint32_t> words;
  };
  Bench bench;
  TestHost host;
  host::IoQueue q;
  std::uint64_t bitmap = 0;
  std::uint64_t buffer = 0;
  std::vector<CommandSteps> steps;
  std::vector<Landing> landed;
};

// Create I/O CQ with BCN: CDW11 bit 3, PRP2 the bitmap, CDW12 words - 1.
// Refused (Invalid Field in Command) by a controller without the option,
// with a bitmap not 64 B aligned, or together with indexed completion.
TEST(BatchCompletion, CreateCqWithBcnNeedsTheOptionAndAnAlignedBitmap) {
  for (bool offered : {false, true}) {
    SCOPED_TRACE(offered);
    Bench bench({"samsung-pm1743", {{"batch_completion", offered}, {"indexed_completion", true}}});
    host::BringUpOptions options;
    options.io_queues = 3;
    bench.bring_up(0, options, {});
    host::NvmeDriver& driver = bench.driver();
    const std::uint64_t cq = driver.allocate(host::QueuePlacement::host, 8 * kCqEntrySize);
    const std::uint64_t bitmap = driver.allocate(host::QueuePlacement::host, 256);
    const SubmissionEntry create =
        with_batch_completion(make_create_io_cq(0, 1, 8, cq, true, false, 0), bitmap, 64);
    // BCN bit 3 and PC bit 0: 1001b; two words: CDW12 = 1.
    EXPECT_EQ(create.cdw11 & 0xFFFFu, 0x9u);
    EXPECT_EQ(create.cdw12, 1u);
    EXPECT_EQ(create.prp2, bitmap);
    EXPECT_EQ(bench.admin(0, create).status(),
              offered ? Status::Success : Status::InvalidFieldInCommand);
    EXPECT_EQ(
        bench
            .admin(0, with_batch_completion(make_create_io_cq(0, 2, 8, cq + 4096, true, false, 0),
                                            bitmap + 32, 64))
            .status(),
        Status::InvalidFieldInCommand);
    EXPECT_EQ(bench
                  .admin(0, with_batch_completion(make_create_io_cq(0, 3, 8, cq + 8192, true, false,
                                                                    0, /*indexed=*/true),
                                                  bitmap, 64))
                  .status(),
              Status::InvalidFieldInCommand);
  }
}

// Three successes with CIDs 1, 40 and 70 (words 0, 1 and 2) and a batch of
// at most three: one write of the words 0..2, 12 bytes, landing after the
// third completion; bits 1 of word 0, 8 of word 1 and 6 of word 2 set.
TEST(BatchCompletion, ABatchIsOneWriteOfItsChangedWords) {
  BatchBench b(3, 1e6, 0.0);
  b.flush(1);
  b.flush(40);
  b.flush(70);
  b.host.ring_sq();
  b.bench.run();
  ASSERT_EQ(b.steps.size(), 3u);
  ASSERT_EQ(b.landed.size(), 1u);
  EXPECT_EQ(b.landed[0].words, (std::vector<std::uint32_t>{0x2u, 0x100u, 0x40u, 0x0u}));
  EXPECT_EQ(b.bench.ssd().completion_batches(), 1u);
  EXPECT_EQ(b.bench.ssd().completion_bitmap_bytes(), 12u);
  EXPECT_EQ(b.bench.ssd().bitmap_completions(), 3u);
  Picoseconds last = 0;
  for (const CommandSteps& s : b.steps) last = std::max(last, s.completed);
  EXPECT_GT(b.landed[0].at, last);
  // The ring received nothing.
  EXPECT_EQ(b.host.completed(), 0u);
}

// Two successes in a batch of up to 32: the batch is posted when the window
// closes, so a 10 us window lands it exactly 5 us later than a 5 us one,
// and at least the window after the first completion. One 4-byte write
// (CIDs 1 and 2 share word 0).
TEST(BatchCompletion, AnUnfilledBatchIsPostedWhenItsWindowCloses) {
  auto landing = [](double window_ns) {
    BatchBench b(32, window_ns, 0.0);
    b.flush(1);
    b.flush(2);
    b.host.ring_sq();
    b.bench.run();
    EXPECT_EQ(b.landed.size(), 1u);
    EXPECT_EQ(b.bench.ssd().completion_bitmap_bytes(), 4u);
    if (b.landed.empty() || b.steps.empty()) return Picoseconds{0};
    EXPECT_EQ(b.landed[0].words[0], 0x6u);
    Picoseconds first = b.steps[0].completed;
    for (const CommandSteps& s : b.steps) first = std::min(first, s.completed);
    EXPECT_GE(b.landed[0].at - first, static_cast<Picoseconds>(window_ns * 1000));
    return b.landed[0].at;
  };
  EXPECT_EQ(landing(10000.0) - landing(5000.0), Picoseconds{5000000});
}

// A failed read (LBA out of range, CID 5) and a flush (CID 6), batches of
// one: the read's full entry lands in the ring with its status and no bit;
// the flush flips bit 6 alone.
TEST(BatchCompletion, AFailedCommandIsAFullEntryInTheRing) {
  BatchBench b(1, 1e6, 0.0);
  std::vector<CompletionEntry> ring;
  b.host.submit(
      make_read(5, 1, 1ull << 40, 0, b.buffer, 0),
      [&](const CompletionEntry& c, Picoseconds) { ring.push_back(c); },
      /*ring=*/false, /*keep_cid=*/true);
  b.flush(6);
  b.host.ring_sq();
  b.bench.run();
  ASSERT_EQ(ring.size(), 1u);
  EXPECT_EQ(ring[0].cid, 5u);
  EXPECT_EQ(ring[0].status(), Status::LbaOutOfRange);
  ASSERT_EQ(b.landed.size(), 1u);
  EXPECT_EQ(b.landed[0].words[0], 0x40u);
  EXPECT_EQ(b.bench.ssd().completion_batches(), 1u);
}

// A CID's second completion flips its bit back (the consumer's seen copy
// tells it apart): CID 3 twice, one batch each.
TEST(BatchCompletion, ASecondCompletionOfACidFlipsItsBitBack) {
  BatchBench b(1, 1e6, 0.0);
  b.flush(3);
  b.host.ring_sq();
  b.bench.run();
  b.flush(3);
  b.host.ring_sq();
  b.bench.run();
  ASSERT_EQ(b.landed.size(), 2u);
  EXPECT_EQ(b.landed[0].words[0], 0x8u);
  EXPECT_EQ(b.landed[1].words[0], 0x0u);
}

// One success, batches of one, the controller idle: 3 us of firmware time
// per batch lands the write exactly 3 us later than none.
TEST(BatchCompletion, FirmwareTimeDelaysTheBatchByItsCost) {
  auto landing = [](double cost_ns) {
    BatchBench b(1, 1e6, cost_ns);
    b.flush(9);
    b.host.ring_sq();
    b.bench.run();
    EXPECT_EQ(b.landed.size(), 1u);
    return b.landed.empty() ? Picoseconds{0} : b.landed[0].at;
  };
  EXPECT_EQ(landing(3000.0) - landing(0.0), Picoseconds{3000000});
}

}  // namespace
}  // namespace gpunvme::nvme::testing
