// What a failed I/O does to the result: it is accounted for (submitted = ios
// + failed, exactly, on every kind and path) but moves no data, so it counts
// in no throughput figure, and a workload whose data did not all arrive says
// so. The faults come from the SSD's fault injector; the expected counts from
// the schedule's own length.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "workload_test_util.h"

namespace gpunvme {
namespace {

struct FailedIoCase {
  std::string scenario;
  std::vector<std::string> overrides;
};

// Every kind on every path, kept short.
std::vector<FailedIoCase> every_kind_and_path() {
  std::vector<FailedIoCase> cases;
  for (const char* path : {"gpu_initiated", "gds", "bounce"}) {
    const std::string p = std::string("scenario.path=") + path;
    cases.push_back({"randread-4k", {p, "scenario.ios=2000"}});
    cases.push_back({"randrw-zipf", {p, "scenario.ios=2000"}});
    cases.push_back({"kv-cache-gpu", {p}});
    cases.push_back({"graph-bfs-gpu", {p, "scenario.scale=12"}});
    cases.push_back({"gather-gpu", {p, "scenario.lookups=4096"}});
  }
  return cases;
}

std::string label(const FailedIoCase& c) { return c.scenario + " " + c.overrides.front(); }

void expect_identity(const nlohmann::json& s, const std::string& what) {
  const auto submitted = s.at("submitted").get<std::uint64_t>();
  const auto ios = s.at("ios").get<std::uint64_t>();
  const auto failed = s.at("failed").get<std::uint64_t>();
  EXPECT_EQ(submitted, ios + failed) << what;
  EXPECT_EQ(s.at("errors").get<std::uint64_t>(), failed) << what;
}

// The figures a workload reports for its own kind, which must be zero (or
// say the data is incomplete) when no I/O succeeded.
void expect_nothing_delivered(const nlohmann::json& r, const std::string& what) {
  const nlohmann::json& s = r.at("summary");
  if (s.contains("tokens_per_s")) {
    EXPECT_EQ(s["tokens_per_s"].get<double>(), 0.0) << what;
    EXPECT_FALSE(s.at("data_complete").get<bool>()) << what;
    EXPECT_EQ(r["kv_cache"]["bytes"]["nvme_to_hbm"].get<std::uint64_t>(), 0u) << what;
  }
  if (r.contains("graph")) {
    const nlohmann::json& g = r["graph"];
    EXPECT_FALSE(g["matches_reference_bfs"].get<bool>()) << what;
    EXPECT_FALSE(g["data_complete"].get<bool>()) << what;
    EXPECT_EQ(g["ios"].get<std::uint64_t>(), 0u) << what;
    EXPECT_EQ(g["iops"].get<double>(), 0.0) << what;
    EXPECT_EQ(g["teps"].get<double>(), 0.0) << what;
    EXPECT_EQ(g["failed_ios"].get<std::uint64_t>(), g["submitted_ios"].get<std::uint64_t>())
        << what;
  }
  if (r.contains("gather")) {
    const nlohmann::json& g = r["gather"];
    EXPECT_EQ(s["lookups_per_s"].get<double>(), 0.0) << what;
    EXPECT_EQ(g["useful_bytes"].get<std::uint64_t>(), 0u) << what;
    EXPECT_EQ(g["bytes_read"].get<std::uint64_t>(), 0u) << what;
    EXPECT_EQ(g["failed_lookups"].get<std::uint64_t>(), g["lookups"].get<std::uint64_t>()) << what;
    EXPECT_FALSE(g["data_complete"].get<bool>()) << what;
  }
}

TEST(FailedIo, EveryCommandFailingMovesNothingOnEveryKindAndPath) {
  for (const FailedIoCase& c : every_kind_and_path()) {
    std::vector<std::string> o = c.overrides;
    o.push_back("topology.nodes.ssd0.fault_command_error_rate=1");
    const nlohmann::json r = run(test::scenario(c.scenario, o));
    const nlohmann::json& s = r.at("summary");
    const std::string what = label(c);
    expect_identity(s, what);
    EXPECT_GT(s["submitted"].get<std::uint64_t>(), 0u) << what;
    EXPECT_EQ(s["ios"].get<std::uint64_t>(), 0u) << what;
    EXPECT_EQ(s["iops"].get<double>(), 0.0) << what;
    EXPECT_EQ(s["bandwidth_gbps"].get<double>(), 0.0) << what;
    expect_nothing_delivered(r, what);
  }
}

TEST(FailedIo, ScheduledFaultsAreExactlyTheFailedIosAndLeaveThroughput) {
  const std::vector<std::string> schedule{"command@cmd=3", "media@cmd=10", "command@cmd=25"};
  nlohmann::json entries = schedule;
  for (const FailedIoCase& c : every_kind_and_path()) {
    const std::string what = label(c);
    const nlohmann::json clean = run(test::scenario(c.scenario, c.overrides));
    std::vector<std::string> o = c.overrides;
    o.push_back("topology.nodes.ssd0.fault_schedule=" + entries.dump());
    const nlohmann::json r = run(test::scenario(c.scenario, o));
    const nlohmann::json& s = r.at("summary");
    expect_identity(s, what);
    EXPECT_EQ(s["failed"].get<std::uint64_t>(), schedule.size()) << what;
    EXPECT_EQ(r["ssds"]["ssd0"]["errors"].get<std::uint64_t>(), schedule.size()) << what;
    // iops and bandwidth count the successful I/Os only, over the I/O window.
    const double seconds = s["io_time_ns"].get<double>() * 1e-9;
    const double iops = static_cast<double>(s["ios"].get<std::uint64_t>()) / seconds;
    EXPECT_NEAR(s["iops"].get<double>(), iops, iops * 1e-6 + 0.01) << what;
    // The data is incomplete and the kind's own figures say so.
    if (r.contains("kv_cache")) {
      const nlohmann::json& k = r["kv_cache"];
      EXPECT_FALSE(k["data_complete"].get<bool>()) << what;
      EXPECT_GT(k["failed_block_reads"].get<std::uint64_t>() +
                    k["failed_block_writes"].get<std::uint64_t>() +
                    k["reload"]["failed_blocks"].get<std::uint64_t>(),
                0u)
          << what;
      EXPECT_LE(s["tokens_per_s"].get<double>(), clean["summary"]["tokens_per_s"].get<double>())
          << what;
      EXPECT_LT(k["bytes"]["nvme_to_hbm"].get<std::uint64_t>() +
                    k["bytes"]["hbm_to_nvme"].get<std::uint64_t>(),
                clean["kv_cache"]["bytes"]["nvme_to_hbm"].get<std::uint64_t>() +
                    clean["kv_cache"]["bytes"]["hbm_to_nvme"].get<std::uint64_t>())
          << what;
    }
    if (r.contains("graph")) {
      const nlohmann::json& g = r["graph"];
      EXPECT_TRUE(clean["graph"]["matches_reference_bfs"].get<bool>()) << what;
      EXPECT_FALSE(g["matches_reference_bfs"].get<bool>()) << what;
      EXPECT_FALSE(g["data_complete"].get<bool>()) << what;
      EXPECT_EQ(g["failed_ios"].get<std::uint64_t>(), schedule.size()) << what;
      EXPECT_GT(g["edges_unread"].get<std::uint64_t>(), 0u) << what;
    }
    if (r.contains("gather")) {
      const nlohmann::json& g = r["gather"];
      EXPECT_EQ(g["failed_ios"].get<std::uint64_t>(), schedule.size()) << what;
      EXPECT_GE(g["failed_lookups"].get<std::uint64_t>(), schedule.size()) << what;
      EXPECT_EQ(g["useful_bytes"].get<std::uint64_t>(),
                (g["lookups"].get<std::uint64_t>() - g["failed_lookups"].get<std::uint64_t>()) *
                    r["config"]["scenario"]["row_bytes"].get<std::uint64_t>())
          << what;
      EXPECT_FALSE(g["data_complete"].get<bool>()) << what;
    }
    if (!r.contains("kv_cache") && !r.contains("graph") && !r.contains("gather")) {
      // A fixed-size microbenchmark: bandwidth is the successful I/Os' bytes.
      const double bytes = static_cast<double>(s["ios"].get<std::uint64_t>()) *
                           r["config"]["scenario"]["bs"].get<double>();
      EXPECT_NEAR(s["bandwidth_gbps"].get<double>(), bytes / seconds / 1e9, 1e-5) << what;
    }
  }
}

}  // namespace
}  // namespace gpunvme
