// The soak test's long run: N random configurations (default 10,000) from
// the same generator, every kind and path, each result through every
// invariant. Not a test (CTest does not run it); it prints per kind and path
// how many ran, were refused and broke an invariant, and every failure with
// its command line. Exit 1 when any run failed or broke an invariant.
//
//   build/tests/soak/soak_bench [configurations] [first seed] [--refusals]
//
// --refusals prints why each refused configuration was refused.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/invariants.h"
#include "sim/system/run/run.h"
#include "tests/soak/config_generator.h"

using namespace gpunvme;

int main(int argc, char** argv) {
  const std::uint64_t wanted = argc > 1 ? std::stoull(argv[1]) : 10000;
  const std::uint64_t first_seed = argc > 2 ? std::stoull(argv[2]) : 1;
  const bool show_refusals = argc > 3 && std::string(argv[3]) == "--refusals";
  struct Tally {
    std::uint64_t runs = 0, refused = 0, failed = 0, ios = 0;
  };
  std::map<std::string, Tally> tally;
  std::map<std::string, std::uint64_t> by_invariant;
  std::uint64_t failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < wanted; ++i) {
    soak::RandomChoices choices(first_seed + i);
    const soak::GeneratedConfig generated = soak::generate(choices);
    Tally& t = tally[generated.kind + "/" + generated.path];
    RunConfig config;
    try {
      config = generated.load();
    } catch (const ConfigError& e) {
      ++t.refused;
      if (show_refusals) std::printf("refused: %s\n", e.what());
      continue;
    }
    ++t.runs;
    std::string problem;
    try {
      const nlohmann::json result = run(config);
      t.ios += result["summary"]["ios"].get<std::uint64_t>();
      const auto violations = soak::check_result(generated, result);
      for (const auto& v : violations) ++by_invariant[v.invariant];
      problem = invariants::describe(violations);
    } catch (const std::exception& e) {
      ++by_invariant["run_failed"];
      problem = std::string("run failed: ") + e.what() + "\n";
    }
    if (!problem.empty()) {
      ++t.failed;
      ++failures;
      std::printf("seed %llu: %s  %s\n", static_cast<unsigned long long>(first_seed + i),
                  problem.c_str(), generated.command_line().c_str());
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-28s %8s %8s %8s %10s\n", "kind/path", "runs", "refused", "failed", "ios");
  Tally all;
  for (const auto& [name, t] : tally) {
    std::printf("%-28s %8llu %8llu %8llu %10llu\n", name.c_str(),
                static_cast<unsigned long long>(t.runs), static_cast<unsigned long long>(t.refused),
                static_cast<unsigned long long>(t.failed), static_cast<unsigned long long>(t.ios));
    all.runs += t.runs;
    all.refused += t.refused;
    all.failed += t.failed;
    all.ios += t.ios;
  }
  std::printf(
      "%-28s %8llu %8llu %8llu %10llu\n", "total", static_cast<unsigned long long>(all.runs),
      static_cast<unsigned long long>(all.refused), static_cast<unsigned long long>(all.failed),
      static_cast<unsigned long long>(all.ios));
  for (const auto& [name, n] : by_invariant) {
    std::printf("  %s: %llu\n", name.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("%.1f s, %.1f configurations/s\n", seconds,
              seconds > 0 ? static_cast<double>(wanted) / seconds : 0.0);
  return failures == 0 ? 0 : 1;
}
