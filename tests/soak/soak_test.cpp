// Random valid configurations of every kind and path, each run through every
// result invariant (sim/system/run/invariants.h). The configurations come from a
// fixed list of seeds, so a failure reproduces; its message carries the
// equivalent `gpunvme run` command line.
//
// GPUNVME_SOAK_CONFIGS sets how many valid configurations run (default 600;
// 96 in AddressSanitizer builds, whose Debug runs take ~20x longer).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/invariants.h"
#include "sim/system/run/run.h"
#include "tests/soak/config_generator.h"

namespace gpunvme::soak {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kDefaultConfigs = 96;
#else
constexpr std::size_t kDefaultConfigs = 600;
#endif

std::size_t configs_wanted() {
  if (const char* env = std::getenv("GPUNVME_SOAK_CONFIGS")) {
    return static_cast<std::size_t>(std::stoul(env));
  }
  return kDefaultConfigs;
}

TEST(Soak, RandomValidConfigurationsKeepEveryInvariant) {
  const std::size_t wanted = configs_wanted();
  const std::size_t combinations = kinds().size() * paths().size();
  // Every configuration is drawn and validated before any runs: a refused
  // draw is a thrown ConfigError, and AddressSanitizer misreads exceptions
  // thrown once SystemC has run threads in the process.
  std::vector<std::pair<GeneratedConfig, RunConfig>> valid;
  std::size_t refused = 0;
  for (std::size_t i = 0; i < wanted; ++i) {
    // Kind and path cycle, so every combination runs wanted / 12 times; the
    // rest is drawn. A refused draw is retried with the next seed.
    const int kind = static_cast<int>(i % kinds().size());
    const int path = static_cast<int>(i / kinds().size() % paths().size());
    bool found = false;
    for (std::uint64_t attempt = 0; attempt < 50 && !found; ++attempt) {
      RandomChoices choices(i * 1000 + attempt);
      GeneratedConfig generated = generate(choices, kind, path);
      try {
        RunConfig config = generated.load();
        valid.emplace_back(std::move(generated), std::move(config));
        found = true;
      } catch (const ConfigError&) {
        ++refused;
      }
    }
    EXPECT_TRUE(found) << "no valid configuration in 50 draws for config " << i;
  }
  std::map<std::string, std::size_t> runs;  // per kind/path
  for (const auto& [generated, config] : valid) {
    nlohmann::json result;
    try {
      result = run(config);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "run failed: " << e.what() << "\n  " << generated.command_line();
      continue;
    }
    const auto violations = check_result(generated, result);
    EXPECT_TRUE(violations.empty())
        << invariants::describe(violations) << "  " << generated.command_line();
    ++runs[generated.kind + "/" + generated.path];
  }
  if (wanted >= combinations) {
    for (const std::string& k : kinds()) {
      for (const std::string& p : paths()) EXPECT_GT(runs[k + "/" + p], 0u) << k << "/" << p;
    }
  }
  std::size_t total = 0;
  for (const auto& [combination, n] : runs) total += n;
  RecordProperty("configurations", static_cast<int>(total));
  RecordProperty("refused_draws", static_cast<int>(refused));
}

}  // namespace
}  // namespace gpunvme::soak
