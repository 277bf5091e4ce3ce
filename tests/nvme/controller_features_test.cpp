// Queue placement (host memory, GPU memory, CMB), MSI-X, shadow doorbells
// with EventIdx, the write buffer with Flush and FUA, queue deletion with
// commands in flight, controller reset, several SSDs, and the invariant
// checks that stop a run with a report.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

// --- placement --------------------------------------------------------------

// Round trip of a 64 B read from the SSD to `placement` memory on an idle
// fabric.
Picoseconds fetch_round_trip(host::QueuePlacement placement) {
  Bench bench({"samsung-pm1743", nlohmann::json::object(), 5, 4, 1, /*gpu=*/true});
  const std::uint64_t addr = bench.driver().allocate(placement, 4096);
  Picoseconds done = 0;
  bench.machine().fabric().read(
      bench.ssd().node(), addr, kSqEntrySize,
      [&](const std::uint8_t*, std::uint32_t) { done = Simulation::now(); });
  bench.run();
  return done;
}

struct PlacementRun {
  Picoseconds fetch_wait = 0;
  std::uint64_t ssd_read_requests = 0;
  std::uint64_t ssd_posted_writes = 0;
};

PlacementRun run_flushes(host::QueuePlacement placement) {
  Bench bench({"samsung-pm1743", {{"cmb_mib", 4}}, 5, 4, 1, /*gpu=*/true});
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(64, 1, placement));
  auto by_class = [&](const char* cls) {
    const nlohmann::json links = bench.machine().fabric().statistics(Simulation::now());
    for (const auto& link : links) {
      if (link.at("direction") == "ssd0->rc0")
        return link.at("by_class").at(cls).at("tlps").get<std::uint64_t>();
    }
    return std::uint64_t{0};
  };
  const std::uint64_t reads = by_class("read_request");
  const std::uint64_t writes = by_class("posted_write");
  for (int i = 0; i < 10; ++i) host.submit(make_flush(0, 1), nullptr);
  bench.run();
  EXPECT_EQ(host.completed(), 10u);
  // The first fetch meets idle links: its wait is the unloaded round trip.
  return {bench.ssd().fetch_wait().min(), by_class("read_request") - reads,
          by_class("posted_write") - writes};
}

TEST(ControllerPlacement, EachPlacementCostsItsPath) {
  const PlacementRun host = run_flushes(host::QueuePlacement::host);
  const PlacementRun gpu = run_flushes(host::QueuePlacement::gpu);
  const PlacementRun cmb = run_flushes(host::QueuePlacement::cmb);
  // An SQE fetch is a PCIe read of the memory holding the SQ...
  EXPECT_EQ(host.fetch_wait, fetch_round_trip(host::QueuePlacement::host));
  EXPECT_EQ(gpu.fetch_wait, fetch_round_trip(host::QueuePlacement::gpu));
  EXPECT_GT(gpu.fetch_wait, host.fetch_wait);  // the GPU's BAR adds its access time
  EXPECT_GT(host.ssd_read_requests, 0u);
  EXPECT_GT(gpu.ssd_read_requests, 0u);
  EXPECT_EQ(host.ssd_posted_writes, 10u);  // one CQE each
  // ... and an SQ in the CMB needs none: the controller reads its own
  // memory, and the CQEs in the CMB cross no link either.
  EXPECT_EQ(cmb.fetch_wait, ns_to_ps(100.0));  // cmb_access_ns
  EXPECT_EQ(cmb.ssd_read_requests, 0u);
  EXPECT_EQ(cmb.ssd_posted_writes, 0u);
}

TEST(ControllerPlacement, CmbPlacementNeedsACmb) {
  Bench bench;
  EXPECT_THROW(bench.driver().allocate(host::QueuePlacement::cmb, 4096), std::invalid_argument);
  EXPECT_EQ(host::queue_placement_from_string("gpu"), host::QueuePlacement::gpu);
  EXPECT_STREQ(host::to_string(host::QueuePlacement::cmb), "cmb");
  EXPECT_THROW(host::queue_placement_from_string("nvm"), std::invalid_argument);
}

// --- interrupts -----------------------------------------------------------------

TEST(ControllerInterrupts, MsixMessagePerCompletion) {
  Bench bench;
  TestHost host("host", bench);
  host::BringUpOptions options;
  options.io_queues = 2;
  host::IoQueueSpec spec;
  spec.entries = 64;
  spec.interrupts = true;
  spec.vector = 3;
  const auto created = bench.bring_up(0, options, {spec});
  ASSERT_EQ(created.at(0).status, Status::Success);
  host.attach(created[0]);
  const std::uint64_t before = bench.ssd().interrupts();
  // The message is a posted write of the vector's data to host memory.
  const std::uint64_t target = bench.driver().msix_address(3);
  ASSERT_NE(target, 0u);
  int messages = 0;
  std::function<void()> watch = [&] {
    bench.memory().watch(target, 4, [&] {
      ++messages;
      EXPECT_EQ(bench.memory().load<std::uint32_t>(target), 3u);
      watch();
    });
  };
  watch();
  const std::uint64_t buffer = bench.driver().allocate(host::QueuePlacement::host, 4096);
  for (int i = 0; i < 12; ++i) host.submit(make_read(0, 1, i * 8, 7, buffer, 0), nullptr);
  bench.run();
  EXPECT_EQ(bench.ssd().interrupts() - before, 12u);
  EXPECT_EQ(messages, 12);
  // A vector beyond the table is refused at Create I/O CQ.
  const std::uint64_t cq = bench.driver().allocate(host::QueuePlacement::host, 4096);
  EXPECT_EQ(bench.admin(0, make_create_io_cq(0, 2, 64, cq, true, true, 500)).status(),
            Status::InvalidInterruptVector);
}

// --- shadow doorbells -------------------------------------------------------

struct ShadowBench {
  Bench bench;
  TestHost host;
  host::IoQueue q;
  ShadowBench(std::uint32_t entries, host::QueuePlacement where)
      : bench({"samsung-pm1743",
               {{"shadow_doorbells", true}, {"shadow_poll_ns", 1000.0}},
               5,
               4,
               1,
               true}),
        host("host", bench) {
    host::BringUpOptions options;
    options.shadow_doorbells = true;
    options.shadow_placement = where;
    host::IoQueueSpec spec;
    spec.entries = entries;
    spec.placement = where;
    q = bench.bring_up(0, options, {spec}).at(0);
    EXPECT_EQ(q.status, Status::Success);
    host.attach(q);
    host.use_shadow_doorbells(true);
  }
  std::uint32_t event_idx(DoorbellKind kind) {
    return bench.memory().load<std::uint32_t>(bench.driver().event_idx(kind, q.qid));
  }
};

TEST(ControllerShadowDoorbells, IdleQueueAsksForTheMmioDoorbell) {
  ShadowBench s(64, host::QueuePlacement::host);
  EXPECT_TRUE(s.bench.driver().info().shadow_doorbells);
  const std::uint64_t buffer = s.bench.driver().allocate(host::QueuePlacement::host, 4096);
  // QD1 with the queue idle in between: EventIdx sits at the tail, so every
  // submission rings the MMIO doorbell.
  int done = 0;
  std::function<void()> issue = [&] {
    s.host.submit(make_read(0, 1, 0, 7, buffer, 0), [&](const CompletionEntry& cqe, Picoseconds) {
      EXPECT_TRUE(cqe.ok());
      if (++done < 10) issue();
    });
  };
  issue();
  s.bench.run();
  EXPECT_EQ(done, 10);
  EXPECT_EQ(s.host.mmio_doorbells(), 10u);
  EXPECT_EQ(s.event_idx(DoorbellKind::SqTail), 10u);  // asleep: "ring me at the next update"
  // CQ heads are polled: EventIdx one behind the head, no MMIO needed.
  EXPECT_EQ(s.host.cq_doorbells(), 0u);
  EXPECT_EQ(s.event_idx(DoorbellKind::CqHead), 0xFFFFu);
}

TEST(ControllerShadowDoorbells, BusyQueueIsPolledWithoutMmio) {
  ShadowBench s(16, host::QueuePlacement::gpu);
  const std::uint64_t buffers = s.bench.driver().allocate(host::QueuePlacement::host, 16 * 4096);
  // 200 commands through a 16-entry queue, each submission published alone:
  // only the first rings; the rest, and every CQ head, travel by polling.
  std::uint64_t issued = 0;
  std::function<void()> issue = [&] {
    const std::uint64_t i = issued++;
    s.host.submit(make_read(0, 1, i * 8, 7, buffers + (i % 16) * 4096, 0),
                  [&](const CompletionEntry& cqe, Picoseconds) {
                    EXPECT_TRUE(cqe.ok());
                    if (issued < 200) issue();
                  });
  };
  for (int d = 0; d < 8; ++d) issue();
  s.bench.run();
  EXPECT_EQ(s.host.completed(), 200u);
  // The EventIdx test works on ring indices, so an update that wraps the
  // ring always rings (as with Linux's dbbuf): about one MMIO per lap.
  const std::uint64_t laps = 200 / 16 + 1;
  EXPECT_LE(s.host.mmio_doorbells(), laps + 1);
  EXPECT_LE(s.host.cq_doorbells(), laps + 1);
  EXPECT_GT(s.bench.ssd().shadow_doorbell_reads(), 150u);
  EXPECT_NO_THROW(s.bench.ssd().check_drained());
}

// Time from issue to arrival of a `len`-byte posted write from the SSD to
// host memory, and of an SSD read of host memory, on an idle fabric of the
// shadow bench's topology.
Picoseconds idle_leg(bool read, std::uint32_t len) {
  Bench bench({"samsung-pm1743", nlohmann::json::object(), 5, 4, 1, true});
  const std::uint64_t addr = bench.driver().allocate(host::QueuePlacement::host, 4096);
  Picoseconds t = 0;
  if (read) {
    bench.machine().fabric().read(
        bench.ssd().node(), addr, len,
        [&](const std::uint8_t*, std::uint32_t) { t = Simulation::now(); });
  } else {
    bench.machine().fabric().write(bench.ssd().node(), addr, len, nullptr,
                                   [&] { t = Simulation::now(); });
  }
  bench.run();
  return t;
}

TEST(ControllerShadowDoorbells, PolledUpdateWaitsForThePollTick) {
  const Picoseconds shadow_read = idle_leg(true, 4);
  const Picoseconds sqe_read = idle_leg(true, kSqEntrySize);
  const Picoseconds cqe_write = idle_leg(false, kCqEntrySize);
  // Without the MMIO doorbell, a submission is seen at the next poll tick
  // (a multiple of shadow_poll_ns), then read from the shadow buffer.
  ShadowBench s(64, host::QueuePlacement::host);
  const std::uint64_t buffer = s.bench.driver().allocate(host::QueuePlacement::host, 4096);
  // A read keeps the queue awake (45 us on the media) while a flush follows.
  s.host.submit(make_read(0, 1, 0, 7, buffer, 0), nullptr);
  s.bench.run(us_to_ps(5.3));
  const std::uint64_t mmio_before = s.host.mmio_doorbells();
  const Picoseconds submitted = Simulation::now();
  const Picoseconds tick = (submitted + 999'999) / 1'000'000 * 1'000'000;
  Picoseconds latency = 0;
  s.host.submit(make_flush(0, 1), [&](const CompletionEntry& cqe, Picoseconds l) {
    EXPECT_TRUE(cqe.ok());
    latency = l;
  });
  s.bench.run();
  EXPECT_EQ(s.host.mmio_doorbells(), mmio_before);  // awake: no MMIO
  EXPECT_EQ(s.host.completed(), 2u);
  const Picoseconds processing = ns_to_ps(3200.0);  // the profile's command_overhead_ns
  EXPECT_EQ(latency, (tick - submitted) + shadow_read + sqe_read + processing + cqe_write);
}

TEST(ControllerShadowDoorbells, ConfigRejectsBadBuffers) {
  Bench bench({"samsung-pm1743", {{"shadow_doorbells", true}}});
  bench.bring_up(0, {}, {});
  const std::uint64_t page = bench.driver().allocate(host::QueuePlacement::host, 8192);
  EXPECT_EQ(bench.admin(0, make_doorbell_buffer_config(0, page + 64, page + 4096)).status(),
            Status::InvalidFieldInCommand);
  EXPECT_EQ(bench.admin(0, make_doorbell_buffer_config(0, page, 0)).status(),
            Status::InvalidFieldInCommand);
  EXPECT_EQ(bench.admin(0, make_doorbell_buffer_config(0, page, page + 4096)).status(),
            Status::Success);
}

// --- write buffer, Flush, FUA --------------------------------------------------

Picoseconds single(const char* profile, const SubmissionEntry& sqe) {
  Bench bench({profile, nlohmann::json::object(), 4, 4});
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(64));
  Picoseconds latency = 0;
  SubmissionEntry e = sqe;
  e.prp1 = bench.driver().allocate(host::QueuePlacement::host, 8192);
  e.prp2 = e.prp1 + 4096;
  // A write first, so that the buffer holds data, then the command measured.
  host.submit(make_write(0, 1, 0, 15, e.prp1, e.prp2), nullptr);
  bench.run();
  host.submit(e, [&](const CompletionEntry& cqe, Picoseconds l) {
    EXPECT_TRUE(cqe.ok()) << status_name(cqe.status());
    latency = l;
  });
  bench.run();
  return latency;
}

TEST(ControllerWriteBuffer, FlushAndFuaWaitForTheMediaOnlyWithAVolatileCache) {
  const Picoseconds program = us_to_ps(450.0);  // both Samsung profiles' program_us
  // 980 PRO: volatile write cache. Flush programs the buffered data.
  EXPECT_GT(single("samsung-980-pro", make_flush(0, 1)), program);
  SubmissionEntry fua = make_write(0, 1, 64, 15, 0, 0);
  fua.cdw12 |= kRwForceUnitAccess;
  EXPECT_GT(single("samsung-980-pro", fua), program);
  // A plain write completes once the buffer holds it.
  EXPECT_LT(single("samsung-980-pro", make_write(0, 1, 64, 15, 0, 0)), us_to_ps(20.0));
  // PM1743: power-loss protected buffer; Flush and FUA do not wait.
  EXPECT_LT(single("samsung-pm1743", make_flush(0, 1)), us_to_ps(20.0));
  EXPECT_LT(single("samsung-pm1743", fua), us_to_ps(20.0));
}

// --- deletion and reset ---------------------------------------------------------

TEST(ControllerQueueLifecycle, DeleteWaitsForItsCommandsAndAbortsTheRest) {
  Bench bench({"samsung-pm1743", {{"max_active_commands", 4}}});
  TestHost host("host", bench);
  const host::IoQueue q = bench.bring_up_one(64);
  host.attach(q);
  const std::uint64_t buffer = bench.driver().allocate(host::QueuePlacement::host, 4096);
  int ok = 0, aborted = 0;
  for (int i = 0; i < 30; ++i) {
    host.submit(make_read(0, 1, i * 8, 7, buffer, 0), [&](const CompletionEntry& cqe, Picoseconds) {
      if (cqe.ok()) ++ok;
      if (cqe.status() == Status::AbortedSqDeletion) ++aborted;
    });
  }
  Status deleted = Status::InternalError;
  bench.driver().delete_io_queue_pair(q.qid, [&](Status s) { deleted = s; });
  bench.run();
  EXPECT_EQ(deleted, Status::Success);
  EXPECT_EQ(ok + aborted, 30);  // each exactly once (the host checks CIDs)
  EXPECT_GT(ok, 0);
  EXPECT_GT(aborted, 0);
  EXPECT_EQ(host.completed(), 30u);
}

TEST(ControllerQueueLifecycle, BringUpAgainResetsTheController) {
  Bench bench;
  const host::IoQueue first = bench.bring_up_one(64, 2);
  EXPECT_EQ(first.status, Status::Success);
  // The second bring-up finds CC.EN = 1, disables, waits for RDY = 0 and
  // enables again: the I/O queues are gone, so qid 1 can be created anew.
  host::IoQueueSpec spec;
  spec.entries = 32;
  const auto again = bench.bring_up(0, {}, {spec});
  EXPECT_EQ(again.at(0).status, Status::Success);
  EXPECT_TRUE(bench.ssd().ready());
}

// --- several SSDs -----------------------------------------------------------------

TEST(ControllerTopology, SeveralSsdsWithBothLbaFormats) {
  BenchOptions options{"generic-gen5-tlc"};
  options.ssds = 2;
  Bench bench(options);  // 4 KiB LBAs on both
  TestHost a("a", bench), b("b", bench);
  host::IoQueueSpec spec;
  spec.entries = 64;
  a.attach(bench.bring_up(0, {}, {spec}).at(0), 0);
  b.attach(bench.bring_up(1, {}, {spec}).at(0), 1);
  EXPECT_NE(bench.ssd(0).registers().base, bench.ssd(1).registers().base);
  EXPECT_EQ(bench.driver(1).info().lba_bytes, 4096u);
  const std::uint64_t buffer = bench.driver(0).allocate(host::QueuePlacement::host, 4096);
  for (int i = 0; i < 8; ++i) {
    a.submit(make_read(0, 1, i, 0, buffer, 0), nullptr);
    b.submit(make_read(0, 1, i, 0, buffer, 0), nullptr);
  }
  bench.run();
  EXPECT_EQ(bench.ssd(0).commands_completed(), 8u);
  EXPECT_EQ(bench.ssd(1).commands_completed(), 8u);
}

// --- invariants -------------------------------------------------------------------

// Runs the bench and returns the report of the violation that stopped it.
std::string violation_of(Bench& bench) {
  try {
    bench.run();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ControllerInvariants, SqOverrunStopsTheRun) {
  Bench bench;
  const host::IoQueue q = bench.bring_up_one(8);
  pcie::Fabric& fabric = bench.machine().fabric();
  // Tail 0 -> 7 fills the ring; -> 0 then adds an eighth entry.
  const std::uint32_t seven = 7, zero = 0;
  fabric.write(bench.cpu_node(), q.sq_doorbell, 4, &seven, nullptr);
  fabric.write(bench.cpu_node(), q.sq_doorbell, 4, &zero, nullptr);
  const std::string report = violation_of(bench);
  EXPECT_NE(report.find("invariant violated at"), std::string::npos) << report;
  EXPECT_NE(report.find("SQ overrun"), std::string::npos) << report;
  // A doorbell carries a value, not a command: no slot or CID to name.
  EXPECT_NE(report.find("(queue 1, slot n/a, CID n/a)"), std::string::npos) << report;
}

TEST(ControllerInvariants, DoorbellChecks) {
  {
    Bench bench;
    const host::IoQueue q = bench.bring_up_one(8);
    const std::uint32_t three = 3;
    bench.machine().fabric().write(bench.cpu_node(), q.cq_doorbell, 4, &three, nullptr);
    const std::string report = violation_of(bench);
    EXPECT_NE(report.find("passes the tail"), std::string::npos) << report;
    EXPECT_NE(report.find("(queue 1, slot n/a, CID n/a)"), std::string::npos) << report;
  }
  {
    Bench bench;
    const host::IoQueue q = bench.bring_up_one(8);
    const std::uint32_t nine = 9;
    bench.machine().fabric().write(bench.cpu_node(), q.sq_doorbell, 4, &nine, nullptr);
    EXPECT_NE(violation_of(bench).find("for a queue of 8 entries"), std::string::npos);
  }
  {
    Bench bench;
    bench.bring_up_one(8);
    const std::uint32_t one = 1;
    bench.machine().fabric().write(bench.cpu_node(), bench.ssd().doorbell_address(true, 5), 4, &one,
                                   nullptr);
    EXPECT_NE(violation_of(bench).find("does not exist"), std::string::npos);
  }
}

TEST(ControllerInvariants, DataDmaOutsideMemoryStopsTheRun) {
  Bench bench;
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(8));
  // PRP1 pointing into the SSD's own registers.
  host.submit(make_read(0, 1, 0, 7, bench.ssd().registers().base, 0), nullptr);
  const std::string report = violation_of(bench);
  EXPECT_NE(report.find("data DMA of 4096 B"), std::string::npos) << report;
  EXPECT_NE(report.find("(queue 1, slot 0, CID 0)"), std::string::npos) << report;
}

// A PRP that points into a queue ring passes the memory and length checks
// (the ring is ordinary host memory) and must still stop the run.
TEST(ControllerInvariants, DataDmaIntoAQueueRingStopsTheRun) {
  for (const bool into_sq : {true, false}) {
    Bench bench;
    TestHost host("host", bench);
    host.attach(bench.bring_up_one(64));  // rings of 4 KiB and 1 KiB
    host.submit(make_flush(0, 1), nullptr);
    bench.run();
    const host::IoQueue& q = host.queue();
    // A one-LBA read starting at the ring's slot 2; PRP2 takes what crosses
    // into the next page when LBAs are 4 KiB.
    const std::uint64_t target =
        into_sq ? q.sq_base + 2 * kSqEntrySize : q.cq_base + 2 * kCqEntrySize;
    const std::uint64_t spill = bench.driver().allocate(host::QueuePlacement::host, 4096);
    host.submit(make_read(9, 1, 0, 0, target, spill), nullptr, true, true);
    const std::string report = violation_of(bench);
    const std::uint64_t first_segment =
        std::min<std::uint64_t>(bench.ssd().lba_bytes(), 4096 - target % 4096);
    EXPECT_NE(report.find(fmt::format("data DMA of {} B at 0x{:x} overlaps {} 1's ring (its slot 2)",
                                      first_segment, target, into_sq ? "SQ" : "CQ")),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("(queue 1, slot 1, CID 9)"), std::string::npos) << report;
    EXPECT_NE(report.find("invariant violated at "), std::string::npos) << report;
  }
}

// The ring index follows queues as they are created and deleted. Two CQs may
// start at one address (the controller does not reject it): the higher queue
// id is named, as a rebuild of the index in queue order names it, then the
// other once that one is deleted; once both are deleted, or a queue of its
// own is, its ring is ordinary memory again and data may land there.
TEST(ControllerInvariants, RingIndexFollowsQueueCreationAndDeletion) {
  for (int step = 0; step < 4; ++step) {
    Bench bench;
    TestHost host("host", bench);
    host.attach(bench.bring_up_one(64, /*io_queues=*/4));
    const std::uint64_t shared = bench.driver().allocate(host::QueuePlacement::host, 4096);
    const std::uint64_t own = bench.driver().allocate(host::QueuePlacement::host, 4096);
    const auto status = [&](const SubmissionEntry& sqe) { return bench.admin(0, sqe).status(); };
    ASSERT_EQ(status(make_create_io_cq(0, 2, 64, shared, true, false, 0)), Status::Success);
    ASSERT_EQ(status(make_create_io_cq(0, 3, 64, shared, true, false, 0)), Status::Success);
    ASSERT_EQ(status(make_create_io_cq(0, 4, 64, own, true, false, 0)), Status::Success);
    // Step 1 deletes queue 3, step 2 queues 3 and 2, step 3 all three.
    for (const std::uint16_t qid : {3, 2, 4}) {
      if (qid == 3 ? step < 1 : qid == 2 ? step < 2 : step < 3) continue;
      ASSERT_EQ(status(make_delete_io_cq(0, qid)), Status::Success) << "step " << step;
    }
    // A one-LBA read into slot 2 of the shared ring (step 3: of queue 4's).
    const std::uint64_t target = (step == 3 ? own : shared) + 2 * kCqEntrySize;
    const std::uint64_t spill = bench.driver().allocate(host::QueuePlacement::host, 4096);
    bool completed = false;
    host.submit(make_read(9, 1, 0, 0, target, spill), [&](const CompletionEntry& c, Picoseconds) {
      completed = c.status() == Status::Success;
    });
    const std::string report = violation_of(bench);
    const std::uint64_t bytes = std::min<std::uint64_t>(bench.ssd().lba_bytes(), 4096 - 2 * 16);
    const std::string overlap =
        fmt::format("data DMA of {} B at 0x{:x} overlaps CQ ", bytes, target);
    if (step < 2) {
      const std::string named = step == 0 ? "3's ring (its slot 2)" : "2's ring (its slot 2)";
      EXPECT_NE(report.find(overlap + named), std::string::npos) << report;
    } else {
      EXPECT_EQ(report, "") << "step " << step;
      EXPECT_TRUE(completed) << "step " << step;
    }
  }
}

// With the host not consuming, the CQ fills (entries - 1 entries) and the
// controller holds further completions back instead of overwriting; once the
// CQ head doorbell frees room they are posted in order, with the phase tag of
// the lap each slot is on.
TEST(ControllerInvariants, CompletionsWaitWhileTheCqIsFull) {
  Bench bench;
  const host::IoQueue q = bench.bring_up_one(8);
  pcie::Fabric& fabric = bench.machine().fabric();
  auto place = [&](std::uint32_t slot, std::uint16_t cid) {
    bench.memory().store(q.sq_base + std::uint64_t{slot} * kSqEntrySize, make_flush(cid, 1));
  };
  for (std::uint16_t i = 0; i < 7; ++i) place(i, i);
  const std::uint32_t seven = 7;
  fabric.write(bench.cpu_node(), q.sq_doorbell, 4, &seven, nullptr);
  bench.run();
  EXPECT_EQ(bench.ssd().statistics(0)["cq_full_stalls"].get<std::uint64_t>(), 0u);
  // The SQ is empty again (all fetched); the CQ holds 7 unconsumed entries.
  place(7, 7);
  place(0, 8);
  place(1, 9);
  const std::uint32_t two = 2;
  fabric.write(bench.cpu_node(), q.sq_doorbell, 4, &two, nullptr);
  bench.run();
  EXPECT_EQ(bench.ssd().commands_completed(), 10u);
  EXPECT_EQ(bench.ssd().statistics(0)["cq_full_stalls"].get<std::uint64_t>(), 3u);
  auto cqe = [&](std::uint32_t slot) {
    return bench.memory().load<CompletionEntry>(q.cq_base + std::uint64_t{slot} * kCqEntrySize);
  };
  // Slot 7 was never written; slot 0 still holds the first lap's CID 0.
  EXPECT_EQ(cqe(7).status_field, 0u);
  EXPECT_EQ(cqe(0).cid, 0u);
  EXPECT_TRUE(cqe(0).phase());
  // The host consumes all 7: the held three go to slots 7 (lap 1, phase 1),
  // 0 and 1 (lap 2, phase 0).
  fabric.write(bench.cpu_node(), q.cq_doorbell, 4, &seven, nullptr);
  bench.run();
  EXPECT_EQ(cqe(7).cid, 7u);
  EXPECT_TRUE(cqe(7).phase());
  EXPECT_EQ(cqe(0).cid, 8u);
  EXPECT_FALSE(cqe(0).phase());
  EXPECT_EQ(cqe(1).cid, 9u);
  EXPECT_FALSE(cqe(1).phase());
  EXPECT_EQ(cqe(1).sqhd, 2u);
  EXPECT_NO_THROW(bench.ssd().check_drained());
}

TEST(ControllerInvariants, CqMemoryNotZeroedIsCaught) {
  Bench bench;
  TestHost host("host", bench);
  host::IoQueueSpec spec;
  spec.entries = 8;
  spec.cq_base = bench.driver().allocate(host::QueuePlacement::host, 8 * kCqEntrySize);
  // A stale entry with phase 1 where the first completion will go.
  CompletionEntry stale{};
  stale.set_status(Status::Success, true);
  bench.memory().store(spec.cq_base, stale);
  host.attach(bench.bring_up(0, {}, {spec}).at(0));
  SubmissionEntry flush = make_flush(0, 1);
  const std::uint64_t sq = host.queue().sq_base;
  flush.set_cid(0);
  bench.memory().store(sq, flush);
  const std::uint32_t one = 1;
  bench.machine().fabric().write(bench.cpu_node(), host.queue().sq_doorbell, 4, &one, nullptr);
  const std::string report = violation_of(bench);
  EXPECT_NE(report.find("still holds an entry of the current phase"), std::string::npos) << report;
}

TEST(ControllerInvariants, UncompletedCommandIsReported) {
  Bench bench;
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(8));
  const std::uint64_t buffer = bench.driver().allocate(host::QueuePlacement::host, 4096);
  // Three flushes first, so that the read sits in slot 3; its CID is chosen
  // apart from the slot, so the report cannot confuse the two.
  for (int i = 0; i < 3; ++i) host.submit(make_flush(0, 1), nullptr);
  bench.run();
  const Picoseconds submitted = Simulation::now();
  EXPECT_EQ(host.submit(make_read(42, 1, 0, 7, buffer, 0), nullptr, true, true), 3u);
  bench.run(us_to_ps(5));  // fetched, not yet read from the media
  try {
    bench.ssd().check_drained();
    ADD_FAILURE() << "no violation";
  } catch (const InvariantViolation& e) {
    const std::string report = e.what();
    EXPECT_NE(report.find("command never completed, fetched at "), std::string::npos) << report;
    EXPECT_NE(report.find("(queue 1, slot 3, CID 42)"), std::string::npos) << report;
    // The fetch time lies between the doorbell and the check.
    const auto at = report.find("fetched at ") + 11;
    const double fetched_ns = std::stod(report.substr(at));
    EXPECT_GT(fetched_ns, ps_to_ns(submitted));
    EXPECT_LT(fetched_ns, ps_to_ns(submitted + us_to_ps(5)));
  }
  bench.run();
  EXPECT_NO_THROW(bench.ssd().check_drained());
}

TEST(ControllerInvariants, ReusedCidCompletesWithConflict) {
  Bench bench;
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(8));
  const std::uint64_t buffer = bench.driver().allocate(host::QueuePlacement::host, 4096);
  Status first = Status::InternalError, second = Status::InternalError;
  host.submit(
      make_read(7, 1, 0, 7, buffer, 0),
      [&](const CompletionEntry& c, Picoseconds) { first = c.status(); }, true, true);
  host.submit(
      make_read(7, 1, 8, 7, buffer, 0),
      [&](const CompletionEntry& c, Picoseconds) { second = c.status(); }, true, true);
  bench.run();
  // The host pairs completions with CIDs in arrival order: the conflict
  // comes back first (it needs no media read).
  EXPECT_EQ(first, Status::CommandIdConflict);
  EXPECT_EQ(second, Status::Success);
  EXPECT_NO_THROW(bench.ssd().check_drained());
  // The result counts the host's rule broken once.
  EXPECT_EQ(bench.ssd().statistics(Simulation::now()).at("cid_conflicts"), 1u);
}

}  // namespace
}  // namespace gpunvme::nvme::testing
