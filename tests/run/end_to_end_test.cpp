// The first end-to-end path: GPU threads issue NVMe reads to an SSD through a
// switch, and the result document carries the schema the README documents.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>

#include "sim/kernel/simulation.h"
#include "sim/system/machine/machine.h"
#include "sim/system/run/run.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {
namespace {

TEST(EndToEnd, DefaultScenarioCompletesEveryIo) {
  nlohmann::json r = run(load_config("", "", {"scenario.ios=2000"}, 1));
  const auto& s = r["summary"];
  EXPECT_EQ(s["ios"].get<std::uint64_t>(), 2000u);
  EXPECT_EQ(s["errors"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["iops"].get<double>(), 0.0);
  EXPECT_GT(s["events"].get<std::uint64_t>(), 2000u);
  for (const char* key : {"p50", "p90", "p99", "p999", "max"}) {
    EXPECT_TRUE(s["latency_ns"].contains(key)) << key;
  }
  EXPECT_LE(s["latency_ns"]["p50"].get<double>(), s["latency_ns"]["p99"].get<double>());
  EXPECT_LE(s["latency_ns"]["p99"].get<double>(), s["latency_ns"]["max"].get<double>() * 1.0001);
  // IOPS and bandwidth agree with the I/O count and the workload's I/O time,
  // which excludes the bring-up before it.
  const double seconds = s["io_time_ns"].get<double>() * 1e-9;
  EXPECT_GT(s["bring_up_ns"].get<double>(), 0.0);
  EXPECT_LE(s["bring_up_ns"].get<double>() + s["io_time_ns"].get<double>(),
            s["simulated_time_ns"].get<double>() + 1e-3);
  EXPECT_NEAR(s["iops"].get<double>(), 2000.0 / seconds, 1e-3 * 2000.0 / seconds);
  EXPECT_NEAR(s["bandwidth_gbps"].get<double>(), s["iops"].get<double>() * 4096 / 1e9, 1e-3);
  for (const char* stage : {"cid_allocation", "sqe_construction", "sq_tail_sync", "doorbell",
                            "completion_wait", "cq_head_sync", "end_to_end", "ssd_service"}) {
    EXPECT_EQ(r["stages"][stage]["count"].get<std::uint64_t>(), 2000u) << stage;
  }
  EXPECT_EQ(r["config"]["scenario"]["ios"].get<std::uint64_t>(), 2000u);
  EXPECT_EQ(r["paths"][0]["kind"], "PIX");
}

// The summary's IOPS and the SSD's own count (commands between its first I/O
// doorbell and its last I/O completion, measured inside the controller) are
// two views of one window: with one SSD they agree closely. They differ by the
// warps' work before the first doorbell and after the last completion (tens
// of microseconds of submission and reaping code), so the run is long enough
// for that to stay under 1 %.
TEST(EndToEnd, SummaryIopsMatchesTheSsdsIoIopsForOneSsd) {
  nlohmann::json r = run(load_config("", "", {"scenario.ios=20000"}, 1));
  const auto& s = r["summary"];
  ASSERT_EQ(r["ssds"].size(), 1u);
  double ssd_iops = 0.0;
  for (const auto& [id, ssd] : r["ssds"].items()) ssd_iops += ssd["io_iops"].get<double>();
  const double iops = s["iops"].get<double>();
  EXPECT_NEAR(iops, ssd_iops, 0.01 * ssd_iops);
  // Bring-up is its own figure: up to the workload's start, after CSTS.RDY
  // and before the first I/O doorbell reaches the SSD.
  const auto& ssd = r["ssds"].begin().value();
  EXPECT_GT(s["bring_up_ns"].get<double>(), ssd["ready_ns"].get<double>());
  EXPECT_LT(s["bring_up_ns"].get<double>(), ssd["first_io_doorbell_ns"].get<double>());
}

TEST(EndToEnd, OneThreadQd1LatencyIsAtLeastTheMediaReadTime) {
  nlohmann::json r = run(load_config("", "", {"scenario.ios=20", "scenario.threads=1"}, 1));
  // PM1743 profile: tR 45 us; nothing can be faster than sensing the page.
  EXPECT_GT(r["summary"]["latency_ns"]["min"].get<double>(), 45000.0);
  // Unloaded: every I/O sees the same service, so the spread is small.
  EXPECT_LT(r["summary"]["latency_ns"]["max"].get<double>(),
            1.1 * r["summary"]["latency_ns"]["min"].get<double>());
}

TEST(EndToEnd, ReadsOfSeveralPagesUsePrpListsAndComplete) {
  nlohmann::json r =
      run(load_config("", "", {"scenario.ios=64", "scenario.bs=65536", "scenario.threads=32"}, 1));
  EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 64u);
}

// A deliberately broken submitter: once the default scenario (one thread,
// so I/O n lands in slot n of its queue) is past bring-up, the fourth SQE
// written to any I/O SQ has its PRP1 redirected to
// the start of its queue's own CQ ring. Every other check passes (the CQ is
// GPU memory, the length is right), so only the ring check can stop the run,
// and its report must name the queue, the slot, the CID and the time.
TEST(EndToEnd, CorruptedDataPointerStopsTheRunWithAnInvariantReport) {
  // The invariant report is an exception thrown while warps are live; their fibres tell
  // AddressSanitizer of every stack switch, so the sanitizer flavour runs this test too.
  const RunConfig config = load_config("", "", {"scenario.ios=8", "scenario.threads=1"}, 1);
  Simulation simulation;
  Machine machine(config.topology);
  std::unique_ptr<Workload> workload = make_workload(config, machine);
  nvme::Controller& ssd = machine.ssd("ssd0");
  // Run (in steps of 1 us: Simulation::run takes a duration) until the
  // queues exist and the workload has started.
  while (workload->started_at() == 0) simulation.run(us_to_ps(1));
  struct Corrupted {
    std::uint16_t qid = 0;
    std::uint16_t cid = 0;
    Picoseconds at = 0;
  };
  std::optional<Corrupted> corrupted;
  MemorySpace& memory = machine.memory();
  for (std::uint16_t qid = 1; qid <= ssd.max_io_queues() && ssd.sq_base(qid) != 0; ++qid) {
    const std::uint64_t slot3 = ssd.sq_base(qid) + 3 * nvme::kSqEntrySize;
    memory.watch(slot3, nvme::kSqEntrySize, [&, qid, slot3] {
      if (corrupted) return;
      auto sqe = memory.load<nvme::SubmissionEntry>(slot3);
      sqe.prp1 = ssd.cq_base(qid);
      memory.store(slot3, sqe);
      corrupted = Corrupted{qid, sqe.cid(), Simulation::now()};
    });
  }
  std::string report;
  try {
    simulation.run();
  } catch (const std::exception& e) {
    report = e.what();
  }
  ASSERT_TRUE(corrupted.has_value());
  EXPECT_NE(report.find("ssd0: invariant violated at "), std::string::npos) << report;
  EXPECT_NE(report.find(fmt::format("overlaps CQ {}'s ring (its slot 0)", corrupted->qid)),
            std::string::npos)
      << report;
  EXPECT_NE(report.find(fmt::format("(queue {}, slot 3, CID {})", corrupted->qid, corrupted->cid)),
            std::string::npos)
      << report;
  // The time is after the SQE was written (its fetch and processing follow).
  const double at_ns = std::stod(report.substr(report.find(" at ") + 4));
  EXPECT_GT(at_ns, ps_to_ns(corrupted->at));
}

TEST(EndToEnd, SummaryTableNamesTheScenarioAndStages) {
  nlohmann::json r = run(load_config("", "", {"scenario.ios=100"}, 1));
  const std::string table = summary_table(r);
  EXPECT_NE(table.find("randread-4k"), std::string::npos);
  EXPECT_NE(table.find("end_to_end"), std::string::npos);
  EXPECT_NE(table.find("KIOPS"), std::string::npos);
}

}  // namespace
}  // namespace gpunvme
