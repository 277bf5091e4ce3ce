// The gpunvme program: exit codes and what each subcommand prints or writes.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/cli/run_cli.h"

namespace {

using gpunvme::cli_test::gpunvme;
using gpunvme::cli_test::Outcome;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gpunvme_cli_test_" + name)).string();
}

TEST(Cli, RunPrintsASummaryAndWritesTheResult) {
  const std::string out = temp_path("result.json");
  Outcome o = gpunvme("run --set scenario.ios=500 --out " + out);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("KIOPS"), std::string::npos);
  std::ifstream in(out);
  nlohmann::json result = nlohmann::json::parse(in);
  EXPECT_EQ(result["summary"]["ios"].get<int>(), 500);
  EXPECT_TRUE(result.contains("config"));
  EXPECT_TRUE(result.contains("stages"));
  std::filesystem::remove(out);
}

TEST(Cli, BadInputExitsWithTwoAndNamesFileAndPath) {
  const std::string scenario = temp_path("bad.json");
  std::ofstream(scenario) << R"({"rw": "randread", "iodepth": 0})";
  Outcome o = gpunvme("run --scenario " + scenario);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find(scenario + ": $.iodepth = 0: out of range"), std::string::npos)
      << o.output;
  std::filesystem::remove(scenario);
}

TEST(Cli, MalformedJsonAndMissingFilesExitWithTwo) {
  const std::string broken = temp_path("broken.json");
  std::ofstream(broken) << "{\"rw\": ";
  Outcome o = gpunvme("check --scenario " + broken);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("not valid JSON"), std::string::npos) << o.output;
  EXPECT_EQ(gpunvme("check --topology /nonexistent.json").code, 2);
  std::filesystem::remove(broken);
}

TEST(Cli, CheckAcceptsTheDefaults) {
  Outcome o = gpunvme("check");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("are valid"), std::string::npos);
}

// validate correlates hardware results with the simulator; without a GPU it
// needs --measured, and bad results files are input errors (exit 2).
TEST(Cli, ValidateNeedsHardwareResults) {
  const std::string bad = temp_path("not-hw.json");
  std::ofstream(bad) << "{\"schema\": \"gpunvme.result/1\"}";
  Outcome o = gpunvme("validate --measured " + bad + " --out " + temp_path("v.json"));
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("$.schema"), std::string::npos) << o.output;
  EXPECT_EQ(gpunvme("validate --measured /nonexistent.json").code, 2);
  EXPECT_EQ(gpunvme("validate --hw /nonexistent-gpunvme-hw").code, 2);
  std::filesystem::remove(bad);
}

// Per-instance calibration refuses, as bad input, a set where an instance
// has strategy runs but no controller-only runs, naming the instance; an
// unknown --calibrate value is bad input too.
TEST(Cli, ValidatePerInstanceNamesAnInstanceWithoutCalibrationRuns) {
  const std::string dir = std::string(GPUNVME_SOURCE_DIR) + "/configs/measurements/";
  nlohmann::json controller =
      nlohmann::json::parse(std::ifstream(dir + "hw-controller-h100-2026-11-27.json"));
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& c : controller.at("cases")) {
    if (c.at("instance") != "h100-j") kept.push_back(c);
  }
  controller["cases"] = kept;
  const std::string partial = temp_path("controller-without-j.json");
  std::ofstream(partial) << controller.dump();
  const std::string measured =
      "validate --measured " + dir + "hw-strategies-h100-2026-11-27.json --measured " + partial;
  Outcome o =
      gpunvme(measured + " --calibrate per-instance --warps 1 --out " + temp_path("v.json"));
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("h100-j has strategy runs but no controller-only runs"),
            std::string::npos)
      << o.output;
  EXPECT_EQ(gpunvme(measured + " --calibrate by-day").code, 2);
  std::filesystem::remove(partial);
}

TEST(Cli, DescribeListsParametersWithSources) {
  Outcome all = gpunvme("describe");
  EXPECT_EQ(all.code, 0);
  EXPECT_NE(all.output.find("nvme_ssd"), std::string::npos);
  Outcome ssd = gpunvme("describe nvme_ssd");
  EXPECT_EQ(ssd.code, 0);
  EXPECT_NE(ssd.output.find("mqes"), std::string::npos);
  EXPECT_NE(ssd.output.find("source:"), std::string::npos);
  EXPECT_EQ(gpunvme("describe flux_capacitor").code, 2);
}

TEST(Cli, TopoPrintsTheTreeAndWritesDot) {
  const std::string dot = temp_path("topo.dot");
  Outcome o = gpunvme(std::string("topo ") + GPUNVME_SOURCE_DIR +
                      "/configs/topologies/default.json --dot " + dot);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("ssd0 (nvme_ssd, samsung-pm1743)"), std::string::npos) << o.output;
  std::ifstream in(dot);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("graph G"), std::string::npos);
  std::filesystem::remove(dot);
}

TEST(Cli, HelpShowsExamplesAndUnknownCommandsFail) {
  Outcome help = gpunvme("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.output.find("Examples"), std::string::npos);
  Outcome run_help = gpunvme("run --help");
  EXPECT_NE(run_help.output.find("--set"), std::string::npos);
  EXPECT_EQ(gpunvme("frobnicate").code, 2);
}

}  // namespace
