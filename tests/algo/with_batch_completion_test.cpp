// Batch completion notification (completion = cid_bitmap on SSDs with
// batch_completion, a proposed NVMe extension) through whole runs: every
// shared-queue submission and CID scheme on wrapping queues, one command by
// hand (stages, MMIO stores, the window and the firmware time), and failed
// commands through the ring and the error path.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/system/run/run.h"

namespace gpunvme::bitmap_runs {
namespace {

nlohmann::json run_bitmap(std::vector<std::string> sets) {
  sets.insert(sets.begin(),
              {"topology.nodes.ssd0.batch_completion=true", "scenario.completion=cid_bitmap"});
  return run(load_config(default_topology_file(), default_scenario_file(), sets, 1));
}

std::uint64_t u64(const nlohmann::json& j) { return j.get<std::uint64_t>(); }

// Every I/O completed once without error, and every stage saw it.
void expect_clean(const nlohmann::json& r, std::uint64_t ios, const std::string& what) {
  EXPECT_EQ(u64(r["summary"]["ios"]), ios) << what;
  EXPECT_EQ(u64(r["summary"]["errors"]), 0u) << what;
  EXPECT_EQ(u64(r["ssds"]["ssd0"]["commands"]), ios) << what;
  EXPECT_EQ(u64(r["ssds"]["ssd0"]["cid_conflicts"]), 0u) << what;
  for (const char* stage :
       {"cid_allocation", "sqe_construction", "sq_tail_sync", "doorbell", "completion_wait",
        "completion_polling", "cq_head_sync", "delivery", "end_to_end"}) {
    EXPECT_EQ(u64(r["stages"][stage]["count"]), ios) << what << " " << stage;
  }
}

// Every shared-queue submission x three CID schemes x one and eight queues,
// on 8-entry queues that wrap many times (CIDs come back, so bits flip back
// and forth): every I/O completes once, cleanly.
TEST(BatchCompletionRuns, EverySharedSubmissionAndCidSchemeKeepsTheInvariants) {
  const std::uint64_t ios = 256;
  for (const char* submission : {"per_command", "ticket_ready", "warp_batch"}) {
    for (const char* cid : {"sq_slot", "counter", "thread_pool"}) {
      for (const char* queues : {"1", "8"}) {
        const std::string what = std::string(submission) + "/" + cid + " queues=" + queues;
        expect_clean(run_bitmap({std::string("scenario.submission=") + submission,
                                 std::string("scenario.cid_scheme=") + cid,
                                 std::string("scenario.queues=") + queues,
                                 "scenario.queue_entries=8", "scenario.threads=64",
                                 "scenario.iodepth=2", "scenario.ios=" + std::to_string(ios)}),
                     ios, what);
      }
    }
  }
}

// One command by hand. The requester's read of its bitmap word is the whole
// of the completion step: no CQ head (cq_head_sync 0), no CQ head doorbell
// (one MMIO store, the SQ doorbell), delivery the acquire fence alone. On
// the SSD's side the batch of one waits for no window (batch_completion_max
// 1) and books batch_completion_ns on an idle processor: 10 us of it is
// exactly 5 us slower than 5 us. With batches of 32 the lone completion
// waits for the window to close: a 20 us window is exactly 10 us slower than
// a 10 us one.
TEST(BatchCompletionRuns, OneCommandByHand) {
  auto one = [](const char* max, const char* window_ns, const char* cost_ns) {
    return run_bitmap({"scenario.strategy=warp_batch", "scenario.threads=1", "scenario.ios=1",
                       "scenario.queues=1", "scenario.queue_entries=16",
                       "topology.nodes.gpu0.lane_loop_iteration_ns=0",
                       std::string("topology.nodes.ssd0.batch_completion_max=") + max,
                       std::string("topology.nodes.ssd0.batch_completion_window_ns=") + window_ns,
                       std::string("topology.nodes.ssd0.batch_completion_ns=") + cost_ns});
  };
  const nlohmann::json at_once = one("1", "1000", "0");
  const nlohmann::json cost_5us = one("1", "1000", "5000");
  const nlohmann::json cost_10us = one("1", "1000", "10000");
  const nlohmann::json window_10us = one("32", "10000", "0");
  const nlohmann::json window_20us = one("32", "20000", "0");
  expect_clean(at_once, 1, "at once");
  auto param = [](const nlohmann::json& r, const char* name) {
    for (const nlohmann::json& node : r["config"]["topology"]["nodes"]) {
      if (node["id"] == "gpu0") return node["params"][name].get<double>();
    }
    ADD_FAILURE() << "no gpu0";
    return 0.0;
  };
  auto stage_ps = [](const nlohmann::json& r, const char* name) {
    EXPECT_EQ(r["stages"][name]["count"].get<int>(), 1) << name;
    return std::llround(r["stages"][name]["mean"].get<double>() * 1000.0);
  };
  const long long fence = std::llround(
      (param(at_once, "fence_system_ns") + param(at_once, "fence_l1_reload_ns")) * 1000.0);
  EXPECT_EQ(stage_ps(at_once, "cq_head_sync"), 0);
  EXPECT_EQ(stage_ps(at_once, "delivery"), fence);
  EXPECT_EQ(at_once["gpus"]["gpu0"]["mmio_stores"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(stage_ps(cost_10us, "completion_wait") - stage_ps(cost_5us, "completion_wait"),
            5000000);
  EXPECT_EQ(stage_ps(window_20us, "completion_wait") - stage_ps(window_10us, "completion_wait"),
            10000000);
}

// Failed commands come as full entries in the CQ's ring, drained into the
// per-CID flags: with the host's error policy "fail" each of the three
// scheduled faults is one failed I/O with its error signalled to the host,
// and the other 197 I/Os succeed through the bitmap; nothing is lost or
// completed twice.
TEST(BatchCompletionRuns, FailedCommandsReachTheErrorPath) {
  const std::vector<std::string> schedule = {"media@cmd=3", "command@cmd=40", "command@cmd=41"};
  const nlohmann::json r = run_bitmap(
      {"scenario.threads=64", "scenario.ios=200", "scenario.queues=1", "scenario.error_policy=fail",
       "topology.nodes.ssd0.fault_schedule=" + nlohmann::json(schedule).dump()});
  const nlohmann::json& s = r["summary"];
  EXPECT_EQ(u64(s["failed"]), schedule.size());
  EXPECT_EQ(u64(s["ios"]), 200u - schedule.size());
  EXPECT_EQ(u64(s["submitted"]), 200u);
  EXPECT_EQ(u64(s["error_handling"]["signalled"]), schedule.size());
  EXPECT_EQ(u64(r["ssds"]["ssd0"]["commands"]), 200u);
  EXPECT_EQ(u64(r["ssds"]["ssd0"]["cid_conflicts"]), 0u);
}

}  // namespace
}  // namespace gpunvme::bitmap_runs
