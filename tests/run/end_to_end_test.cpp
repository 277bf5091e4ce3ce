// The first end-to-end path: GPU threads issue NVMe reads to an SSD through a
// switch, and the result document carries the schema the README documents.
#include <gtest/gtest.h>

#include "sim/run/run.h"

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
  // IOPS and bandwidth agree with the I/O count and simulated time.
  const double seconds = s["simulated_time_ns"].get<double>() * 1e-9;
  EXPECT_NEAR(s["iops"].get<double>(), 2000.0 / seconds, 1e-3 * 2000.0 / seconds);
  EXPECT_NEAR(s["bandwidth_gbps"].get<double>(), s["iops"].get<double>() * 4096 / 1e9, 1e-3);
  for (const char* stage : {"cid_allocation", "sqe_construction", "sq_tail_sync", "doorbell",
                            "completion_wait", "cq_head_sync", "end_to_end", "ssd_service"}) {
    EXPECT_EQ(r["stages"][stage]["count"].get<std::uint64_t>(), 2000u) << stage;
  }
  EXPECT_EQ(r["config"]["scenario"]["ios"].get<std::uint64_t>(), 2000u);
  EXPECT_EQ(r["paths"][0]["kind"], "PIX");
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
  nlohmann::json r = run(load_config("", "", {"scenario.ios=64", "scenario.bs=65536",
                                              "scenario.threads=32"}, 1));
  EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 64u);
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
