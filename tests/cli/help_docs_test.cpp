// What the help texts and the README tell a user: every shipped file they
// name exists, the exit codes are listed, and a sweep's default outputs land
// where the help says.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/system/config/input_file.h"
#include "tests/cli/run_cli.h"

namespace {

using gpunvme::cli_test::gpunvme;
using gpunvme::cli_test::Outcome;

const std::filesystem::path kSourceRoot = GPUNVME_SOURCE_DIR;

// Paths under configs/ or scenarios/ named in a text; globs are left out.
std::set<std::string> shipped_paths_in(const std::string& text) {
  static const std::regex path_pattern(R"(\b(configs|scenarios)/[A-Za-z0-9_./*-]*[A-Za-z0-9_*])");
  std::set<std::string> paths;
  for (std::sregex_iterator it(text.begin(), text.end(), path_pattern), end; it != end; ++it) {
    const std::string path = it->str();
    if (path.find('*') == std::string::npos) paths.insert(path);
  }
  return paths;
}

// The text of the README's fenced code blocks.
std::string readme_code_blocks() {
  std::ifstream in(kSourceRoot / "README.md");
  std::string line, blocks;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      inside = !inside;
    } else if (inside) {
      blocks += line + "\n";
    }
  }
  return blocks;
}

TEST(HelpAndDocs, ThePathScanFindsPathsAndSkipsGlobs) {
  const std::set<std::string> found = shipped_paths_in(
      "gpunvme run --scenario scenarios/randread-4k.json, see configs/measurements/x.json.\n"
      "every scenarios/budgets/*.json and a/configs/topologies/default.json");
  EXPECT_EQ(found,
            (std::set<std::string>{"scenarios/randread-4k.json", "configs/measurements/x.json",
                                   "configs/topologies/default.json"}));
}

TEST(HelpAndDocs, EveryFileTheHelpNamesExists) {
  std::string help;
  for (const char* command :
       {"", "run", "check", "sweep", "budgets", "describe", "topo", "validate"}) {
    const Outcome out = gpunvme(std::string(command) + " --help");
    ASSERT_EQ(out.code, 0) << command << ": " << out.output;
    help += out.output;
  }
  const std::set<std::string> paths = shipped_paths_in(help);
  EXPECT_GE(paths.size(), 5u);
  for (const std::string& path : paths) {
    EXPECT_TRUE(gpunvme::input_file_exists((kSourceRoot / path).string())) << "help names " << path;
  }
}

TEST(HelpAndDocs, EveryFileTheReadmeCodeNamesExists) {
  const std::set<std::string> paths = shipped_paths_in(readme_code_blocks());
  EXPECT_GE(paths.size(), 10u);
  for (const std::string& path : paths) {
    // A measurement file stored compressed is named by its uncompressed name.
    EXPECT_TRUE(gpunvme::input_file_exists((kSourceRoot / path).string()))
        << "README names " << path;
  }
}

TEST(HelpAndDocs, HelpAndReadmeListTheExitCodes) {
  const Outcome out = gpunvme("--help");
  ASSERT_EQ(out.code, 0);
  for (const char* code : {"0 success", "1 a simulation error", "2 bad input", "130 a sweep"}) {
    EXPECT_NE(out.output.find(code), std::string::npos) << code << " in\n" << out.output;
  }
  std::ifstream in(kSourceRoot / "README.md");
  std::stringstream readme;
  readme << in.rdbuf();
  EXPECT_NE(readme.str().find("| 130 | a sweep stopped by SIGINT"), std::string::npos);
}

TEST(HelpAndDocs, SweepOutputsDefaultToTheCurrentDirectoryAndResumeThere) {
  const auto dir = std::filesystem::temp_directory_path() / "gpunvme_help_docs_sweep";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "specs");
  std::filesystem::create_directories(dir / "work");
  {
    std::ofstream spec(dir / "specs" / "tiny.json");
    spec << R"({"topology": ")" << (kSourceRoot / "configs/topologies/default.json").string()
         << R"(", "scenario": ")" << (kSourceRoot / "scenarios/randread-4k.json").string()
         << R"(", "set": ["scenario.ios=200"], "sweep": {"scenario.queues": [1, 2]}})";
  }
  const std::string sweep = "sh -c 'cd " + (dir / "work").string() +
                            " && " + std::string(GPUNVME_CLI) + " sweep ../specs/tiny.json --jobs 1'";
  const std::string command = sweep + " 2>&1";
  auto run = [&command]() {
    FILE* pipe = popen(command.c_str(), "r");
    std::string output;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    return std::make_pair(pclose(pipe), output);
  };
  const auto first = run();
  ASSERT_EQ(first.first, 0) << first.second;
  EXPECT_TRUE(std::filesystem::exists(dir / "work" / "tiny.csv")) << first.second;
  EXPECT_TRUE(std::filesystem::exists(dir / "work" / "tiny.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir / "specs" / "tiny.csv"));
  EXPECT_FALSE(std::filesystem::exists(dir / "specs" / "tiny.jsonl"));
  const auto second = run();
  ASSERT_EQ(second.first, 0) << second.second;
  EXPECT_NE(second.second.find("2 points, 2 already done, running 0"), std::string::npos)
      << second.second;
  std::filesystem::remove_all(dir);
}

TEST(HelpAndDocs, AMisspeltScenarioChoiceGetsTheNearestOne) {
  const Outcome out = gpunvme("check --set scenario.strategy=warp_bach");
  EXPECT_EQ(out.code, 2) << out.output;
  EXPECT_NE(out.output.find("$.strategy = \"warp_bach\": expected one of: warp_batch, "),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("; did you mean 'warp_batch'?"), std::string::npos) << out.output;
}

TEST(HelpAndDocs, AMisspeltTopologyChoiceGetsTheNearestOne) {
  const Outcome out = gpunvme("check --set topology.nodes.rc0.iommu=pasthrough");
  EXPECT_EQ(out.code, 2) << out.output;
  EXPECT_NE(out.output.find("expected one of: off, passthrough, translate; did you mean "
                            "'passthrough'?"),
            std::string::npos)
      << out.output;
}

TEST(HelpAndDocs, AChoiceFarFromEveryOneGetsNoGuess) {
  const Outcome out = gpunvme("check --set topology.nodes.rc0.iommu=zzzzzzzzzzzz");
  EXPECT_EQ(out.code, 2) << out.output;
  EXPECT_NE(out.output.find("expected one of: off, passthrough, translate"), std::string::npos)
      << out.output;
  EXPECT_EQ(out.output.find("did you mean"), std::string::npos) << out.output;
}

}  // namespace
