// The host-thread target's prediction on each day's own measurements: a set
// of strategy runs, the controller-only runs of the same machine instances
// (its calibration set) and the committed report made from them. Each set
// must hold what the hardware-validation method asks of it (every case at
// least 9 untraced runs over at least two machine instances, every run
// tagged with an instance of the device the file names), and the simulator,
// re-run with the calibration from that set alone, must stay where the
// committed report puts each case, give or take the case's measured noise
// (its IQR over every run and instance).
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/frontend/validate/validate.h"
#include "sim/system/config/run_config.h"
#include "tests/validate/committed_prediction.h"

namespace gpunvme {
namespace {

const std::string kDayDir = std::string(GPUNVME_SOURCE_DIR) + "/configs/measurements/";

struct HostTargetDay {
  std::string strategy_runs;
  std::string controller_runs;
  std::string report;
  std::string gpu_profile;
};

// 2026-11-27: three H100 instances (calls for an H200 that H100s served).
const std::vector<HostTargetDay> kHostTargetDays = {
    {"hw-strategies-h100-2026-11-27.json", "hw-controller-h100-2026-11-27.json",
     "validate-h100-2026-11-27-host-ijk.json", "h100-sxm"}};

// Every case of a file tagged with one of the file's instances, each of
// them the device the file names; returns the instances by id.
std::map<std::string, std::string> instances_of(const nlohmann::json& doc,
                                                const std::string& file) {
  std::map<std::string, std::string> gpu_of;
  const std::string device = doc.at("device").at("name").get<std::string>();
  for (const nlohmann::json& i : doc.at("instances")) {
    gpu_of[i.at("id").get<std::string>()] = i.at("gpu").get<std::string>();
    EXPECT_EQ(i.at("gpu"), device) << file << ": instance " << i.at("id");
    EXPECT_FALSE(i.value("gpu_uuid", "").empty()) << file << ": instance " << i.at("id");
    EXPECT_FALSE(i.value("boot_id", "").empty()) << file << ": instance " << i.at("id");
  }
  for (const nlohmann::json& c : doc.at("cases")) {
    EXPECT_EQ(gpu_of.count(c.value("instance", "")), 1u)
        << file << ": " << c.value("run_file", "a case") << " names no instance of the file";
  }
  return gpu_of;
}

TEST(HostTargetDays, EachCaseHasNineUntracedRunsOverTwoInstances) {
  for (const HostTargetDay& day : kHostTargetDays) {
    const nlohmann::json runs = read_json_file(kDayDir + day.strategy_runs);
    const nlohmann::json controller = read_json_file(kDayDir + day.controller_runs);
    instances_of(runs, day.strategy_runs);
    instances_of(controller, day.controller_runs);
    EXPECT_EQ(runs.at("device").at("name"), controller.at("device").at("name"));
    std::map<std::pair<std::string, unsigned>, std::pair<std::size_t, std::set<std::string>>>
        untraced;
    std::set<std::string> profiled;
    for (const nlohmann::json& c : runs.at("cases")) {
      EXPECT_EQ(c.at("errors"), 0) << c.at("run_file");
      EXPECT_EQ(c.at("data_mismatches"), 0) << c.at("run_file");
      if (c.at("stage_timing") == "op_profile") profiled.insert(c.at("strategy"));
      if (c.at("trace").get<bool>() || c.at("stage_timing") != "none") continue;
      auto& [count, inst] = untraced[{c.at("strategy"), c.at("warps").get<unsigned>()}];
      ++count;
      inst.insert(c.at("instance").get<std::string>());
    }
    EXPECT_EQ(untraced.size(), 30u) << day.strategy_runs << ": six strategies x five warp counts";
    for (const auto& [key, seen] : untraced) {
      EXPECT_GE(seen.first, 9u) << day.strategy_runs << ": " << key.first << " " << key.second;
      EXPECT_GE(seen.second.size(), 2u)
          << day.strategy_runs << ": " << key.first << " " << key.second;
    }
    EXPECT_EQ(profiled.size(), 6u) << day.strategy_runs << ": a 1-warp op profile per strategy";
    // The calibration set: the strategy runs' thread count at every depth.
    std::map<unsigned, std::size_t> at_four_threads;
    for (const nlohmann::json& c : controller.at("cases")) {
      if (c.at("target_threads") == runs.at("target").at("threads")) {
        ++at_four_threads[c.at("depth").get<unsigned>()];
      }
    }
    EXPECT_EQ(at_four_threads.size(), 7u) << day.controller_runs << ": depths 1 to 64";
    for (const auto& [depth, count] : at_four_threads) {
      EXPECT_GE(count, 9u) << day.controller_runs << ": depth " << depth;
    }
  }
}

// The committed prediction of each day: calibration from that day's
// controller-only runs only, the GPU profile of its device, and every re-run
// case no further from the measured median than the committed prediction
// plus the case's measured IQR.
TEST(HostTargetDays, SimulatorStaysWithinMeasuredNoiseOfEachDaysPrediction) {
  for (const HostTargetDay& day : kHostTargetDays) {
    const std::string runs_file = kDayDir + day.strategy_runs;
    const nlohmann::json hw = validate::merge_hardware_results(
        {read_json_file(runs_file), read_json_file(kDayDir + day.controller_runs)});
    const nlohmann::json committed = read_json_file(kDayDir + day.report);
    EXPECT_EQ(committed.at("mode"), "prediction");
    EXPECT_EQ(committed.at("gpu_profile"), day.gpu_profile);
    validate::Options options;
    options.warps.push_back(1);  // the six 1-warp cases: the whole set takes minutes
    const nlohmann::json now = validate::correlate(hw, runs_file, options);
    EXPECT_EQ(now.at("gpu_profile"), day.gpu_profile);
    EXPECT_EQ(now.at("calibration").at("parameters"), committed.at("calibration").at("parameters"));
    EXPECT_EQ(test::expect_as_committed(now, committed), 6u) << day.report;
  }
}

}  // namespace
}  // namespace gpunvme
