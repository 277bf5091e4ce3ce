// Warp doorbells (a proposed NVMe extension, sim/core/protocol/
// nvme_warp_doorbell.h) through the controller: queue creation, runs
// announced out of order, the 32-entry fetch and the firmware time.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "sim/core/protocol/nvme_warp_doorbell.h"
#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

// A queue of 64 entries created with WDB on a controller whose own fetch
// would take 2 entries per read and per arbitration turn.
struct WarpBench {
  explicit WarpBench(double cost_ns)
      : bench({"samsung-pm1743",
               {{"warp_doorbells", true},
                {"warp_doorbell_ns", cost_ns},
                {"sq_fetch_burst", 2},
                {"arbitration_burst_log2", 1}}}),
        host("host", bench) {
    host::BringUpOptions options;
    options.io_queues = 1;
    host::IoQueueSpec spec;
    spec.entries = 64;
    spec.warp_doorbells = true;
    auto created = bench.bring_up(0, options, {spec});
    EXPECT_EQ(created.at(0).status, Status::Success) << status_name(created.at(0).status);
    q = created.at(0);
    host.attach(q);
    bench.ssd().observe_commands([this](const CommandSteps& s) { steps.push_back(s); });
  }
  void submit(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) {
      host.submit(
          make_flush(0, 1), [](const CompletionEntry& c, Picoseconds) { EXPECT_TRUE(c.ok()); },
          /*ring=*/false);
    }
  }
  void announce(std::uint32_t first, std::uint32_t count) {
    const std::uint32_t value = encode_warp_doorbell(first, count);
    bench.machine().fabric().write(bench.cpu_node(), q.sq_doorbell, 4, &value, nullptr);
    bench.run();
  }
  Bench bench;
  TestHost host;
  host::IoQueue q;
  std::vector<CommandSteps> steps;
};

// A controller without the option refuses Create I/O SQ with WDB (Invalid
// Field in Command); one with it accepts it.
TEST(WarpDoorbell, CreateSqWithWdbNeedsTheOption) {
  for (bool offered : {false, true}) {
    SCOPED_TRACE(offered);
    Bench bench({"samsung-pm1743", {{"warp_doorbells", offered}}});
    host::BringUpOptions options;
    options.io_queues = 1;
    bench.bring_up(0, options, {});
    host::NvmeDriver& driver = bench.driver();
    const std::uint64_t cq = driver.allocate(host::QueuePlacement::host, 8 * kCqEntrySize);
    const std::uint64_t sq = driver.allocate(host::QueuePlacement::host, 8 * kSqEntrySize);
    ASSERT_EQ(bench.admin(0, make_create_io_cq(0, 1, 8, cq, true, false, 0)).status(),
              Status::Success);
    const SubmissionEntry create =
        make_create_io_sq(0, 1, 8, sq, 1, QueuePriority::Medium, true, /*warp_doorbells=*/true);
    EXPECT_EQ(decode_create_io_sq(create).warp_doorbells, true);
    // WDB bit 3, QPRIO 2:1 = 10b (medium), PC bit 0: 1101b.
    EXPECT_EQ(create.cdw11 & 0xFFFFu, 0xDu);
    EXPECT_EQ(bench.admin(0, create).status(),
              offered ? Status::Success : Status::InvalidFieldInCommand);
  }
}

// Entries 0..7 filled; the run 4..7 is announced first: the tail stays at 0
// and nothing is fetched. Then the run 0..3: the tail moves over both runs at
// once, so all eight are rung at that moment, and they are fetched in one
// read (one fetch time), although the controller's own burst is 2 entries.
TEST(WarpDoorbell, RunsAnnouncedOutOfOrderAreFetchedInSlotOrderInOneRead) {
  WarpBench w(0.0);
  w.submit(8);
  w.announce(4, 4);
  EXPECT_EQ(w.bench.ssd().sq_fetched(w.q.qid), 0u);
  EXPECT_EQ(w.host.completed(), 0u);
  w.announce(0, 4);
  ASSERT_EQ(w.host.completed(), 8u);
  ASSERT_EQ(w.steps.size(), 8u);
  std::set<Picoseconds> rung;
  std::set<Picoseconds> fetched;
  for (const CommandSteps& s : w.steps) {
    rung.insert(s.rung);
    fetched.insert(s.fetched);
  }
  EXPECT_EQ(rung.size(), 1u);
  EXPECT_EQ(fetched.size(), 1u);
  EXPECT_EQ(w.bench.ssd().sq_fetched(w.q.qid), 8u);
}

// One command, one run of one entry: with the controller idle, the tail
// moves warp_doorbell_ns after the doorbell arrives, so 5 us of firmware
// time makes the command's doorbell (and everything after it) exactly 5 us
// later than none.
TEST(WarpDoorbell, FirmwareTimeDelaysTheTailByItsCost) {
  auto rung_at = [](double cost_ns) {
    WarpBench w(cost_ns);
    w.submit(1);
    w.announce(0, 1);
    EXPECT_EQ(w.host.completed(), 1u);
    EXPECT_EQ(w.steps.size(), 1u);
    return w.steps.empty() ? Picoseconds{0} : w.steps[0].rung;
  };
  EXPECT_EQ(rung_at(5000.0) - rung_at(0.0), Picoseconds{5000000});
}

}  // namespace
}  // namespace gpunvme::nvme::testing
