// Per-instance calibration's refusals (gpunvme validate --calibrate
// per-instance): a measured set it cannot calibrate instance by instance is
// named, with the file, the JSON path and the instance, before anything is
// simulated. (This file runs first in its folder: under AddressSanitizer a
// throw after SystemC's coroutines ran in the process is misreported.)
#include <gtest/gtest.h>

#include <string>

#include "sim/frontend/validate/validate.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/config/run_config.h"

namespace gpunvme {
namespace {

const std::string kInstanceDayDir = std::string(GPUNVME_SOURCE_DIR) + "/configs/measurements/";
const std::string kInstanceStrategyRuns = kInstanceDayDir + "hw-strategies-h100-2026-11-27.json";
const std::string kInstanceControllerRuns = kInstanceDayDir + "hw-controller-h100-2026-11-27.json";

// The 2026-11-27 host-thread target's strategy runs (instances h100-i, -j,
// -k) with its controller-only runs less those of `dropped`.
nlohmann::json day_without_controller_runs_of(const std::string& dropped) {
  nlohmann::json controller = read_json_file(kInstanceControllerRuns);
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& c : controller.at("cases")) {
    if (c.at("instance") != dropped) kept.push_back(c);
  }
  controller["cases"] = kept;
  return validate::merge_hardware_results({read_json_file(kInstanceStrategyRuns), controller});
}

validate::Options per_instance_at_one_warp() {
  validate::Options options;
  options.calibration = validate::CalibrationScope::per_instance;
  options.warps = {1};
  options.strategies = {"warp_batch"};
  return options;
}

// Refuses and returns the message, or "" (with a failure) when it did not.
std::string refusal(const nlohmann::json& hw, const validate::Options& options) {
  try {
    validate::correlate(hw, kInstanceStrategyRuns, options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "per-instance calibration accepted the set";
  return "";
}

TEST(PerInstanceCalibration, InstanceWithoutControllerRunsIsNamed) {
  const std::string what =
      refusal(day_without_controller_runs_of("h100-k"), per_instance_at_one_warp());
  EXPECT_NE(what.find("hw-strategies-h100-2026-11-27.json"), std::string::npos) << what;
  EXPECT_NE(what.find("$.controller_only"), std::string::npos) << what;
  EXPECT_NE(what.find("h100-k has strategy runs but no controller-only runs"), std::string::npos)
      << what;
  EXPECT_NE(what.find("--calibrate pooled"), std::string::npos) << what;
}

// Only the selected cases' instances need a calibration set: with h100-k's
// strategy runs of warp_batch at 1 warp removed too, h100-k is not asked
// for (refused here for another reason: the controller-only runs of h100-j
// lack the strategy runs' thread count, which names h100-j).
TEST(PerInstanceCalibration, InstanceWhoseRunsLackTheThreadCountIsNamed) {
  nlohmann::json hw = day_without_controller_runs_of("h100-k");
  nlohmann::json cases = nlohmann::json::array();
  for (const nlohmann::json& c : hw.at("cases")) {
    if (c.at("instance") != "h100-k") cases.push_back(c);
  }
  hw["cases"] = cases;
  nlohmann::json controller = nlohmann::json::array();
  for (const nlohmann::json& c : hw.at("controller_only")) {
    if (c.at("instance") == "h100-i" || c.at("target_threads") != 4) controller.push_back(c);
  }
  hw["controller_only"] = controller;
  const std::string what = refusal(hw, per_instance_at_one_warp());
  EXPECT_NE(what.find("machine instance h100-j: no controller-only run with 4 target threads"),
            std::string::npos)
      << what;
}

TEST(PerInstanceCalibration, UntaggedStrategyRunIsNamed) {
  nlohmann::json hw = day_without_controller_runs_of("none");
  std::size_t untagged = 0;
  for (std::size_t i = 0; i < hw.at("cases").size(); ++i) {
    nlohmann::json& c = hw["cases"][i];
    if (c.at("strategy") == "warp_batch" && c.at("warps") == 1 && !c.at("trace").get<bool>() &&
        c.at("stage_timing") == "none") {
      c.erase("instance");
      untagged = i;
      break;
    }
  }
  const std::string what = refusal(hw, per_instance_at_one_warp());
  EXPECT_NE(what.find("$.cases[" + std::to_string(untagged) + "].instance"), std::string::npos)
      << what;
  EXPECT_NE(what.find("tagged with the machine instance"), std::string::npos) << what;
}

TEST(PerInstanceCalibration, NonStringInstanceIsNamed) {
  nlohmann::json hw = day_without_controller_runs_of("none");
  hw["controller_only"][3]["instance"] = 7;
  const std::string what = refusal(hw, per_instance_at_one_warp());
  EXPECT_NE(what.find("$.controller_only[3].instance"), std::string::npos) << what;
  EXPECT_NE(what.find("expected a string"), std::string::npos) << what;
}

// Without controller-only runs validate postdicts, where neither
// per-instance calibration nor a selection of instances means anything.
TEST(PerInstanceCalibration, NeedsControllerOnlyRuns) {
  const nlohmann::json hw = read_json_file(kInstanceStrategyRuns);
  std::string what = refusal(hw, per_instance_at_one_warp());
  EXPECT_NE(what.find("per-instance calibration needs controller-only runs"), std::string::npos)
      << what;
  validate::Options selected = per_instance_at_one_warp();
  selected.calibration = validate::CalibrationScope::pooled;
  selected.instances = {"h100-i"};
  what = refusal(hw, selected);
  EXPECT_NE(what.find("(--instances) is for prediction mode"), std::string::npos) << what;
}

// A selection of instances none of whose controller-only runs has the
// strategy runs' thread count is named, with the instances.
TEST(PerInstanceCalibration, SelectionWithoutCalibrationRunsIsNamed) {
  validate::Options selected = per_instance_at_one_warp();
  selected.calibration = validate::CalibrationScope::pooled;
  selected.instances = {"h100-k", "h100-z"};
  const std::string what = refusal(day_without_controller_runs_of("h100-k"), selected);
  EXPECT_NE(what.find("machine instances [\"h100-k\",\"h100-z\"]: no controller-only run"),
            std::string::npos)
      << what;
}

}  // namespace
}  // namespace gpunvme
