// The op-profile rows' calls per I/O: measured, the op-profile run's
// calls_per_io of each kind summed over its roles; simulated, the calls the
// simulated warps made of that kind over the case's I/Os.
#include <gtest/gtest.h>

#include <string>

#include "sim/frontend/validate/validate.h"
#include "sim/system/config/run_config.h"

namespace gpunvme {
namespace {

const std::string kOpCallsDir = std::string(GPUNVME_SOURCE_DIR) + "/configs/measurements/";
const std::string kOpCallsRuns = kOpCallsDir + "hw-gpu-target-perrole-h200-2026-11-28.json";

// all_threads at 8 warps on the H200: the op-profile run of instance h200-d
// (the file's last profiled case, which the report takes) counted 0.0809
// atomics, 1.4885 ballots and 1.1433 system fences per I/O, read by hand;
// the simulated warps make one ticket atomic a lane, one ballot per turn
// plus the polls that find none, and one system fence per turn plus one per
// SQE build: the same order of calls.
TEST(OpProfileCalls, MeasuredAndSimulatedCallsPerIo) {
  const nlohmann::json runs = read_json_file(kOpCallsRuns);
  nlohmann::json profiled;
  for (const nlohmann::json& c : runs.at("cases")) {
    if (c.at("strategy") == "all_threads" && c.at("warps") == 8 &&
        c.value("stage_timing", "") == "op_profile") {
      profiled = c;  // the last one, as the report takes it
    }
  }
  ASSERT_TRUE(profiled.is_object());
  const nlohmann::json& hw_calls = profiled.at("op_profile").at("compute").at("calls_per_io");
  const nlohmann::json hw = validate::merge_hardware_results(
      {runs,
       read_json_file(kOpCallsDir + "hw-gpu-target-controller-h200-2026-11-28-perrole.json")});
  validate::Options options;
  options.warps = {8};
  options.strategies = {"all_threads"};
  const nlohmann::json report = validate::correlate(hw, kOpCallsRuns, options);
  ASSERT_EQ(report.at("cases").size(), 1u);
  const nlohmann::json& rows = report.at("cases").at(0).at("op_profile_ns_per_io");
  for (const char* kind : {"atomic", "ballot", "fence_system"}) {
    SCOPED_TRACE(kind);
    const nlohmann::json& calls = rows.at(kind).at("calls_per_io");
    EXPECT_DOUBLE_EQ(calls.at("measured").get<double>(), hw_calls.at(kind).get<double>());
    EXPECT_GT(calls.at("simulated").get<double>(), 0.5 * hw_calls.at(kind).get<double>());
    EXPECT_LT(calls.at("simulated").get<double>(), 1.5 * hw_calls.at(kind).get<double>());
  }
  // The warps' own code has no count on the hardware.
  EXPECT_FALSE(rows.at("own_code").contains("calls_per_io"));
}

}  // namespace
}  // namespace gpunvme
