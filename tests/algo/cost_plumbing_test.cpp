// The algorithms say what they do, and the platforms decide what it costs:
// no read twins for wait predicates (a load inside a wait is the
// platform's business), one loop over lanes that tells the platform
// (for_each_lane(p, ...)), and the bare iteration left to the platforms.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Lines of `text` matching `pattern`, as "file:line: text".
std::vector<std::string> matches(const std::filesystem::path& path, const std::regex& pattern) {
  std::vector<std::string> found;
  std::istringstream lines(read(path));
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (std::regex_search(line, pattern)) {
      found.push_back(path.filename().string() + ":" + std::to_string(n) + ": " + line);
    }
  }
  return found;
}

const std::filesystem::path kSource = GPUNVME_SOURCE_DIR;

TEST(CostPlumbing, AlgorithmsLoopOverLanesOnlyThroughThePlatformAndHaveNoPeekTwins) {
  const std::regex peek(R"(peek)");
  const std::regex bare_loop(R"(\bfor_each_lane\((?!p,)|\bvisit_lanes\()");
  std::vector<std::string> found;
  int headers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "sim/core/algo")) {
    if (entry.path().extension() != ".h") continue;
    ++headers;
    for (const std::string& m : matches(entry.path(), peek)) found.push_back(m);
    if (entry.path().filename() == "lanes.h") continue;  // where the loops are defined
    for (const std::string& m : matches(entry.path(), bare_loop)) found.push_back(m);
  }
  EXPECT_GE(headers, 10);
  for (const std::string& m : found) ADD_FAILURE() << m;
}

TEST(CostPlumbing, PlatformsOfferNoPeek) {
  const std::regex peek(R"(\bpeek(_u32)?\s*[(<])");
  for (const char* file : {"sim/system/machine/sim_warp.h", "sim/core/platform/host_threads.h",
                           "sim/core/platform/cuda_warp.cuh", "sim/core/platform/scripted.h"}) {
    const std::filesystem::path path = kSource / file;
    ASSERT_TRUE(std::filesystem::exists(path)) << file;
    for (const std::string& m : matches(path, peek)) ADD_FAILURE() << m;
  }
}

}  // namespace
