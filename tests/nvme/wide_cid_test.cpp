// Wide CIDs (a proposed NVMe extension, sim/core/protocol/nvme_wide_cid.h)
// through the controller: queue creation, commands told apart by all 32
// bits and echoed in the completion, and the firmware time.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "sim/core/protocol/nvme_wide_cid.h"
#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

// One I/O queue of 64 entries, created with WCID when `wide`.
struct WideBench {
  WideBench(bool wide, double cost_ns)
      : bench({"samsung-pm1743", {{"wide_cids", true}, {"wide_cid_ns", cost_ns}}}),
        host("host", bench) {
    host::BringUpOptions options;
    options.io_queues = 1;
    host::IoQueueSpec spec;
    spec.entries = 64;
    spec.wide_cids = wide;
    auto created = bench.bring_up(0, options, {spec});
    EXPECT_EQ(created.at(0).status, Status::Success) << status_name(created.at(0).status);
    q = created.at(0);
    host.attach(q);
  }
  // A Flush carrying `cid` (all 32 bits on a WCID queue, else its low 16).
  void submit(std::uint32_t cid, bool wide) {
    SubmissionEntry e = make_flush(static_cast<std::uint16_t>(cid), 1);
    if (wide) set_wide_cid(e, cid);
    host.submit(
        e,
        [this](const CompletionEntry& c, Picoseconds latency) {
          entries.push_back(c);
          latencies.push_back(latency);
        },
        /*ring=*/true, /*keep_cid=*/true);
  }
  Bench bench;
  TestHost host;
  host::IoQueue q;
  std::vector<CompletionEntry> entries;
  std::vector<Picoseconds> latencies;
};

// A controller without the option refuses Create I/O SQ with WCID (Invalid
// Field in Command); one with it accepts it.
TEST(WideCid, CreateSqWithWcidNeedsTheOption) {
  for (bool offered : {false, true}) {
    SCOPED_TRACE(offered);
    Bench bench({"samsung-pm1743", {{"wide_cids", offered}}});
    host::BringUpOptions options;
    options.io_queues = 1;
    bench.bring_up(0, options, {});
    host::NvmeDriver& driver = bench.driver();
    const std::uint64_t cq = driver.allocate(host::QueuePlacement::host, 8 * kCqEntrySize);
    const std::uint64_t sq = driver.allocate(host::QueuePlacement::host, 8 * kSqEntrySize);
    ASSERT_EQ(bench.admin(0, make_create_io_cq(0, 1, 8, cq, true, false, 0)).status(),
              Status::Success);
    const SubmissionEntry create = make_create_io_sq(0, 1, 8, sq, 1, QueuePriority::Medium, true,
                                                     /*warp_doorbells=*/false, /*wide_cids=*/true);
    EXPECT_TRUE(decode_create_io_sq(create).wide_cids);
    EXPECT_FALSE(decode_create_io_sq(create).warp_doorbells);
    // WCID bit 4, QPRIO 2:1 = 10b (medium), PC bit 0: 10101b.
    EXPECT_EQ(create.cdw11 & 0xFFFFu, 0x15u);
    EXPECT_EQ(bench.admin(0, create).status(),
              offered ? Status::Success : Status::InvalidFieldInCommand);
  }
}

// Two commands whose CIDs share the low 16 bits (0x0005) are outstanding
// together. On a WCID queue they are two commands: both succeed, and each
// completion carries its own 32-bit CID in DW1 and 0x0005 in its CID field.
// On a 16-bit queue they are one CID used twice: the second completes with
// Command ID Conflict.
TEST(WideCid, ControllerTellsCommandsApartByAll32BitsAndEchoesThem) {
  {
    WideBench w(/*wide=*/true, 0.0);
    w.submit(0x00010005u, true);
    w.submit(0x00020005u, true);
    w.bench.run();
    ASSERT_EQ(w.entries.size(), 2u);
    std::set<std::uint32_t> echoed;
    for (const CompletionEntry& c : w.entries) {
      EXPECT_EQ(c.status(), Status::Success) << status_name(c.status());
      EXPECT_EQ(c.cid, 0x0005u);
      echoed.insert(wide_cid(c));
    }
    EXPECT_EQ(echoed, (std::set<std::uint32_t>{0x00010005u, 0x00020005u}));
    EXPECT_EQ(w.bench.ssd().statistics(1).at("cid_conflicts"), 0);
  }
  {
    WideBench w(/*wide=*/false, 0.0);
    w.submit(0x00010005u, false);
    w.submit(0x00020005u, false);
    w.bench.run();
    ASSERT_EQ(w.entries.size(), 2u);
    std::multiset<Status> statuses;
    for (const CompletionEntry& c : w.entries) {
      statuses.insert(c.status());
      EXPECT_EQ(c.dw1, 0u);  // nothing echoed on a 16-bit queue
    }
    EXPECT_EQ(statuses, (std::multiset<Status>{Status::Success, Status::CommandIdConflict}));
  }
}

// All 32 bits repeated while the first is outstanding: Command ID Conflict,
// echoing the CID.
TEST(WideCid, ARepeated32BitCidIsAConflict) {
  WideBench w(/*wide=*/true, 0.0);
  w.submit(0x7FFF0001u, true);
  w.submit(0x7FFF0001u, true);
  w.bench.run();
  ASSERT_EQ(w.entries.size(), 2u);
  std::multiset<Status> statuses;
  for (const CompletionEntry& c : w.entries) {
    statuses.insert(c.status());
    EXPECT_EQ(wide_cid(c), 0x7FFF0001u);
  }
  EXPECT_EQ(statuses, (std::multiset<Status>{Status::Success, Status::CommandIdConflict}));
}

// One command on an idle controller: wide_cid_ns is booked on an idle
// processor before the completion entry is written, so 5 us of firmware
// time makes the host see the entry exactly 5 us later than none does.
TEST(WideCid, FirmwareTimeDelaysTheCompletionByItsCost) {
  auto latency = [](double cost_ns) {
    WideBench w(/*wide=*/true, cost_ns);
    w.submit(0x00ABCDEFu, true);
    w.bench.run();
    EXPECT_EQ(w.latencies.size(), 1u);
    EXPECT_EQ(w.entries.empty() ? 0u : wide_cid(w.entries[0]), 0x00ABCDEFu);
    return w.latencies.empty() ? Picoseconds{0} : w.latencies[0];
  };
  EXPECT_EQ(latency(5000.0) - latency(0.0), Picoseconds{5000000});
  // A 16-bit queue on the same controller pays nothing for the option.
  auto short_latency = [](double cost_ns) {
    WideBench w(/*wide=*/false, cost_ns);
    w.submit(7, false);
    w.bench.run();
    return w.latencies.empty() ? Picoseconds{0} : w.latencies[0];
  };
  EXPECT_EQ(short_latency(5000.0), short_latency(0.0));
}

}  // namespace
}  // namespace gpunvme::nvme::testing
