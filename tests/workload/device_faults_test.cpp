// Faults beyond a command's status, on the GPU path and the host paths:
// lost commands (timeout), a controller reset and a link that goes down and
// retrains. Every run ends, every I/O is accounted for (submitted = ios +
// failed), and the counts match what the schedule injected, counted from the
// schedule itself and from the statuses the SSD posted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "workload_test_util.h"

namespace gpunvme {
namespace {

// One GPU case per GPU workload loop (the microbenchmark's own warps, the
// request-driven GPU path) and both host paths.
struct Case {
  std::string scenario;
  std::vector<std::string> overrides;
};
std::vector<Case> cases() {
  return {{"randread-4k", {"scenario.ios=3000"}},
          {"gather-gpu", {"scenario.lookups=4096"}},
          {"randread-4k-gds", {"scenario.ios=3000"}},
          {"randread-4k-bounce", {"scenario.ios=3000"}}};
}

nlohmann::json run_with(const Case& c, const std::vector<std::string>& faults,
                        std::vector<std::string> more = {}) {
  std::vector<std::string> o = c.overrides;
  o.push_back("topology.nodes.ssd0.fault_schedule=" + nlohmann::json(faults).dump());
  o.insert(o.end(), more.begin(), more.end());
  return run(test::scenario(c.scenario, o));
}

std::uint64_t u64(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

void expect_accounted(const nlohmann::json& r, const std::string& what) {
  const nlohmann::json& s = r["summary"];
  EXPECT_EQ(u64(s["submitted"]), u64(s["ios"]) + u64(s["failed"])) << what;
  // Every failure is one the SSD posted (the host made none up).
  EXPECT_EQ(u64(s["failed"]), u64(r["ssds"]["ssd0"]["errors"])) << what;
  EXPECT_LE(u64(s["timeouts"]) + u64(s["reset_aborted"]), u64(s["failed"])) << what;
}

std::uint64_t status_count(const nlohmann::json& r, const std::string& status) {
  const nlohmann::json& statuses = r["ssds"]["ssd0"]["error_statuses"];
  return statuses.contains(status) ? u64(statuses[status]) : 0;
}

TEST(DeviceFaults, LostCommandsAreAbortedAfterTheTimeoutAndCountedAsTimeouts) {
  const std::vector<std::string> schedule{"timeout@cmd=40", "timeout@cmd=1500"};
  for (const Case& c : cases()) {
    const nlohmann::json r = run_with(c, schedule, {"topology.nodes.ssd0.io_timeout_us=500"});
    const nlohmann::json& s = r["summary"];
    const std::string what = c.scenario;
    expect_accounted(r, what);
    EXPECT_EQ(u64(s["failed"]), schedule.size()) << what;
    EXPECT_EQ(u64(s["timeouts"]), schedule.size()) << what;
    EXPECT_EQ(u64(r["ssds"]["ssd0"]["faults_injected"]["timeout"]), schedule.size()) << what;
    EXPECT_EQ(u64(r["ssds"]["ssd0"]["fault_effects"]["lost_aborted"]), schedule.size()) << what;
    EXPECT_EQ(status_count(r, "Command Abort Requested"), schedule.size()) << what;
    // The requester waited out the timeout for each.
    EXPECT_GE(s["latency_ns"]["max"].get<double>(), 500e3) << what;
  }
}

TEST(DeviceFaults, AResetAbortsWhatIsOutstandingAndTheRunGoesOn) {
  for (const Case& c : cases()) {
    const nlohmann::json r = run_with(c, {"reset@us=150"});
    const nlohmann::json& s = r["summary"];
    const nlohmann::json& effects = r["ssds"]["ssd0"]["fault_effects"];
    const std::string what = c.scenario;
    expect_accounted(r, what);
    EXPECT_EQ(u64(r["ssds"]["ssd0"]["faults_injected"]["reset"]), 1u) << what;
    EXPECT_GT(u64(s["reset_aborted"]), 0u) << what;
    EXPECT_EQ(u64(s["reset_aborted"]), u64(effects["reset_aborted"])) << what;
    EXPECT_EQ(u64(s["reset_aborted"]), status_count(r, "Command Aborted due to SQ Deletion"))
        << what;
    EXPECT_EQ(u64(s["failed"]), u64(s["reset_aborted"])) << what;
    EXPECT_GT(u64(s["ios"]), 0u) << what;  // I/O went on after the controller came back
    EXPECT_GT(effects["reset_recovery_ns"].get<double>(), 0.0) << what;
  }
}

TEST(DeviceFaults, ALinkThatRetrainsDelaysTrafficAndLosesNothing) {
  for (const Case& c : cases()) {
    const nlohmann::json clean = run(test::scenario(c.scenario, c.overrides));
    const nlohmann::json r =
        run_with(c, {"link_down@us=150"}, {"topology.nodes.ssd0.link_retrain_us=300"});
    const nlohmann::json& s = r["summary"];
    const nlohmann::json& effects = r["ssds"]["ssd0"]["fault_effects"];
    const std::string what = c.scenario;
    expect_accounted(r, what);
    EXPECT_EQ(u64(s["failed"]), 0u) << what;
    EXPECT_EQ(effects["link_down_ns"].get<double>(), 300e3) << what;
    EXPECT_GT(u64(effects["link_retrain_waits"]), 0u) << what;
    // Some command was in flight across the whole retrain, and I/Os waited
    // longer on average than without it (the run as a whole need not be
    // longer: a path bound elsewhere absorbs the gap).
    EXPECT_GE(s["latency_ns"]["max"].get<double>(), 300e3) << what;
    EXPECT_GT(s["latency_ns"]["mean"].get<double>(),
              clean["summary"]["latency_ns"]["mean"].get<double>())
        << what;
  }
}

TEST(DeviceFaults, ALateCommandPastTheTimeoutIsNotAbortedIfTheSsdStillHasIt) {
  // The link is down longer than the timeout: the host's Abort finds the
  // commands still being served (not lost), so they complete on their own.
  for (const Case& c : cases()) {
    const nlohmann::json clean = run(test::scenario(c.scenario, c.overrides));
    const nlohmann::json r = run_with(
        c, {"link_down@us=150"},
        {"topology.nodes.ssd0.link_retrain_us=400", "topology.nodes.ssd0.io_timeout_us=200"});
    expect_accounted(r, c.scenario);
    EXPECT_EQ(u64(r["summary"]["failed"]), 0u) << c.scenario;
    EXPECT_EQ(u64(r["summary"]["timeouts"]), 0u) << c.scenario;
    // The host did send Aborts (admin commands beyond the bring-up's); none
    // found a lost command.
    const nlohmann::json& effects = r["ssds"]["ssd0"]["fault_effects"];
    EXPECT_GT(u64(effects["abort_commands"]), 0u) << c.scenario;
    EXPECT_EQ(u64(effects["lost_aborted"]), 0u) << c.scenario;
    EXPECT_EQ(u64(r["ssds"]["ssd0"]["admin_commands"]),
              u64(clean["ssds"]["ssd0"]["admin_commands"]) + u64(effects["abort_commands"]))
        << c.scenario;
  }
}

TEST(DeviceFaults, EveryKindAndPathEndsAndAccountsForEveryIoUnderAllFaults) {
  const std::vector<std::string> schedule{"reset@us=200",  "link_down@us=400", "timeout@cmd=50",
                                          "reset@cmd=700", "timeout@cmd=1200", "media@cmd=30"};
  for (const char* path : {"gpu_initiated", "gds", "bounce"}) {
    for (const Case& kind : std::vector<Case>{{"kv-cache-gpu", {"scenario.context_tokens=1024"}},
                                              {"graph-bfs-gpu", {"scenario.scale=12"}},
                                              {"gather-gpu", {"scenario.lookups=4096"}},
                                              {"randrw-zipf", {"scenario.ios=3000"}}}) {
      Case c = kind;
      c.overrides.push_back(std::string("scenario.path=") + path);
      const std::string& scenario = c.scenario;
      const nlohmann::json r = run_with(c, schedule, {"topology.nodes.ssd0.io_timeout_us=1000"});
      const std::string what = scenario + " " + path;
      expect_accounted(r, what);
      // reset@cmd=700 comes only if the workload issues that many commands (a
      // BFS whose first reads were aborted stops early).
      const bool reached = u64(r["ssds"]["ssd0"]["commands"]) > 700;
      EXPECT_EQ(u64(r["ssds"]["ssd0"]["faults_injected"]["reset"]), reached ? 2u : 1u) << what;
      EXPECT_EQ(u64(r["ssds"]["ssd0"]["faults_injected"]["link_down"]), 1u) << what;
      EXPECT_EQ(u64(r["ssds"]["ssd0"]["fault_effects"]["lost_outstanding"]), 0u) << what;
      if (r["summary"].contains("data_complete")) {
        EXPECT_FALSE(r["summary"]["data_complete"].get<bool>()) << what;
      }
    }
  }
}

TEST(DeviceFaults, SameScheduleSameResult) {
  const Case c{"gather-gpu", {"scenario.path=bounce"}};
  const std::vector<std::string> schedule{"reset@us=200", "link_down@us=400", "timeout@cmd=50"};
  nlohmann::json a = run_with(c, schedule, {"topology.nodes.ssd0.io_timeout_us=1000"});
  nlohmann::json b = run_with(c, schedule, {"topology.nodes.ssd0.io_timeout_us=1000"});
  a["summary"].erase("wall_time_s");
  b["summary"].erase("wall_time_s");
  EXPECT_EQ(a.dump(), b.dump());
}

}  // namespace
}  // namespace gpunvme
