// Fast mode's run-length stop: a run whose steady state converged ends
// there, and the I/Os then in flight are counted, not simulated to
// completion (README, Fast mode). Runs that did not converge, and exact
// runs, still drain every I/O and still fail loudly when one is left.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/system/run/invariants.h"
#include "sim/system/run/run.h"
#include "sim/system/workload/fio_latency.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {
namespace {

nlohmann::json stop_run(std::uint64_t ios, bool fast, std::vector<std::string> sets) {
  sets.push_back(fmt::format("scenario.ios={}", ios));
  if (fast) sets.push_back("scenario.fidelity=fast");
  return run(
      load_config("", std::string(GPUNVME_SOURCE_DIR) + "/scenarios/randread-4k.json", sets, 1));
}

std::uint64_t count_of(const nlohmann::json& value) { return value.get<std::uint64_t>(); }

TEST(RunLengthStop, AConvergedRunEndsAtItsStopAndCountsWhatWasInFlight) {
  constexpr std::uint64_t kThreads = 256;  // iodepth 1: at most one I/O in flight each
  const nlohmann::json result =
      stop_run(60'000, true,
               {fmt::format("scenario.threads={}", kThreads), "scenario.strategy=all_threads"});
  const nlohmann::json& s = result["summary"];
  const nlohmann::json& rl = s["run_length"];
  ASSERT_TRUE(rl["applied"].get<bool>()) << rl.dump();
  EXPECT_EQ(rl["drain"], "not simulated");
  const std::uint64_t submitted = count_of(s["submitted"]);
  const std::uint64_t in_flight = count_of(rl["in_flight_at_stop"]);
  // Every issued I/O either completed before the stop or is counted in flight.
  EXPECT_EQ(in_flight, submitted - count_of(s["ios"]) - count_of(s["errors"]));
  EXPECT_GT(in_flight, 0u);
  EXPECT_LE(in_flight, kThreads);
  EXPECT_EQ(count_of(rl["simulated_ios"]), submitted);
  EXPECT_LT(submitted, 60'000u);
  // The run ends at the stop: where the rule held, within the quantum a warp's
  // clock (which timed the last completion it saw) runs ahead of the kernel's.
  const double quantum_ns = s["fast_quantum_ns"].get<double>();
  EXPECT_NEAR(rl["stopped_at_ns"].get<double>(), rl["stop_time_ns"].get<double>(), quantum_ns);
  EXPECT_EQ(s["simulated_time_ns"].get<double>(), rl["stopped_at_ns"].get<double>());
  // Each figure is rounded to 0.001 ns, so their sum may exceed the total by
  // that much (27,659,440.293 + 69,804.438 against 27,729,244.731 in doubles).
  EXPECT_LE(s["io_time_ns"].get<double>() + s["bring_up_ns"].get<double>(),
            rl["stopped_at_ns"].get<double>() + 0.001);
  // What each SSD held at the stop is part of the I/Os in flight.
  std::uint64_t held = 0;
  for (const auto& [id, ssd] : result["ssds"].items()) {
    ASSERT_TRUE(ssd.contains("undrained_at_stop")) << id;
    held += count_of(ssd["undrained_at_stop"]["fetched"]) +
            count_of(ssd["undrained_at_stop"]["rung_not_fetched"]);
  }
  EXPECT_GT(held, 0u);
  EXPECT_LE(held, in_flight);
  // The segment's completions are what the stages and fio count.
  EXPECT_EQ(count_of(result["stages"]["end_to_end"]["count"]), count_of(s["ios"]));
  EXPECT_NE(summary_table(result).find(fmt::format("{} I/Os in flight at the stop", in_flight)),
            std::string::npos)
      << summary_table(result);
  // The result keeps every invariant, the in-flight I/Os accounted for ...
  const std::vector<invariants::Violation> violations = invariants::check(result);
  EXPECT_TRUE(violations.empty()) << (violations.empty() ? "" : violations[0].to_string());
  // ... and an I/O lost from that account breaks one.
  nlohmann::json lost = result;
  lost["summary"]["run_length"]["in_flight_at_stop"] = in_flight - 1;
  bool caught = false;
  for (const invariants::Violation& v : invariants::check(lost)) {
    caught |= v.invariant == "io_accounting";
  }
  EXPECT_TRUE(caught);
}

TEST(RunLengthStop, RunsThatDoNotConvergeAndExactRunsDrain) {
  for (const bool fast : {true, false}) {
    const nlohmann::json result = stop_run(500, fast, {});
    const nlohmann::json& s = result["summary"];
    EXPECT_EQ(count_of(s["submitted"]), 500u) << fast;
    EXPECT_EQ(count_of(s["ios"]) + count_of(s["errors"]), 500u) << fast;
    if (fast) {
      EXPECT_FALSE(s["run_length"]["applied"].get<bool>());
      EXPECT_FALSE(s["run_length"].contains("drain"));
      EXPECT_FALSE(s["run_length"].contains("in_flight_at_stop"));
    } else {
      EXPECT_FALSE(s.contains("run_length"));
    }
    for (const auto& [id, ssd] : result["ssds"].items()) {
      EXPECT_FALSE(ssd.contains("undrained_at_stop")) << id;
    }
    EXPECT_TRUE(invariants::check(result).empty());
  }
}

// A workload that ended with `completed` of `issued` I/Os done.
class EndedWorkload : public Workload {
 public:
  EndedWorkload(std::uint64_t issued, std::uint64_t completed, bool stopped)
      : issued_(issued), completed_(completed), stopped_(stopped) {}
  std::string path() const override { return "gpu_initiated"; }
  std::string strategy() const override { return "warp_batch"; }
  std::uint64_t ios() const override { return issued_; }
  std::uint64_t completed() const override { return completed_; }
  std::uint64_t errors() const override { return 0; }
  std::uint64_t bytes() const override { return 0; }
  std::uint64_t timeouts() const override { return 0; }
  std::uint64_t reset_aborted() const override { return 0; }
  const LatencyHistogram& end_to_end() const override { return latency_; }
  nlohmann::json stages() const override { return nlohmann::json::object(); }
  std::vector<std::string> stage_order() const override { return {}; }
  const FioLatency& fio_latency() const override { return fio_; }
  const platform::WarpCounters& counters() const override { return counters_; }
  bool finished() const override { return completed_ == issued_; }
  Picoseconds started_at() const override { return 0; }
  Picoseconds finished_at() const override { return 0; }
  bool stopped_before_drain() const override { return stopped_; }

 private:
  std::uint64_t issued_, completed_;
  bool stopped_;
  LatencyHistogram latency_;
  FioLatency fio_;
  platform::WarpCounters counters_;
};

TEST(RunLengthStop, AnUndrainedRunWithoutAConvergedStopFailsLoudly) {
  EXPECT_NO_THROW(require_complete(EndedWorkload(10, 10, false), ""));
  // An I/O left in flight where nothing stopped the run early.
  try {
    require_complete(EndedWorkload(10, 9, false), "");
    ADD_FAILURE() << "an undrained run passed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("9 of 10 I/Os complete"), std::string::npos) << e.what();
  }
  // A stop before the drain with no converged run-length control behind it.
  try {
    require_complete(EndedWorkload(10, 9, true), "");
    ADD_FAILURE() << "a stop without a converged controller passed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("had not converged"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpunvme
