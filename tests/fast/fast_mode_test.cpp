// Fast mode (scenario fidelity = fast) against exact mode, the reference: on a
// matrix of shipped scenarios, strategies and two sizes, throughput within
// 5 %, p50 and p99 of end-to-end latency within 10 %, and the strategies in
// the same order; the same with run-length control stopping the run early;
// and what every fast result says about itself.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/system/run/run.h"
#include "sim/system/workload/run_length.h"
#include "tests/cli/run_cli.h"

namespace gpunvme {
namespace {

struct Figures {
  double iops;
  double p50_ns;
  double p99_ns;
  std::uint64_t warp_steps;
};

Figures figures(const nlohmann::json& result) {
  const nlohmann::json& s = result.at("summary");
  return {s.at("iops").get<double>(), s.at("latency_ns").at("p50").get<double>(),
          s.at("latency_ns").at("p99").get<double>(),
          s.at("events_by_kind").at("warp_steps").get<std::uint64_t>()};
}

nlohmann::json run_case(const std::string& scenario, const std::string& strategy, std::uint64_t ios,
                        bool fast, std::vector<std::string> sets = {}) {
  sets.push_back(fmt::format("scenario.ios={}", ios));
  sets.push_back(fmt::format("scenario.strategy={}", strategy));
  if (fast) sets.push_back("scenario.fidelity=fast");
  const std::string file = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/" + scenario;
  return run(load_config("", file, sets, 1));
}

double relative_error(double fast, double exact) { return std::abs(fast / exact - 1.0); }

constexpr double kThroughputTolerance = 0.05;
constexpr double kLatencyTolerance = 0.10;

// Strategies exact mode tells apart (IOPS more than the throughput tolerance
// apart) come in the same order in fast mode; closer ones are ties.
void expect_same_order(const std::vector<std::string>& strategies, const std::vector<double>& exact,
                       const std::vector<double>& fast, const std::string& where) {
  for (std::size_t a = 0; a < strategies.size(); ++a) {
    for (std::size_t b = 0; b < strategies.size(); ++b) {
      if (exact[a] <= exact[b] * (1.0 + kThroughputTolerance)) continue;
      EXPECT_GT(fast[a], fast[b]) << where << ": " << strategies[a] << " ahead of " << strategies[b]
                                  << " in exact mode";
    }
  }
}

struct MatrixCase {
  std::string scenario;
  std::vector<std::string> sets;
  std::vector<std::string> strategies;
};

TEST(FastMode, AgreesWithExactModeOnTheValidationMatrix) {
  // The shipped scenarios are bound by their SSD, where strategies tie; with
  // 256 threads the strategies' own costs set the throughput and separate
  // them (warp_batch and bam_ticket ahead of io_agents, all_threads last).
  const std::vector<MatrixCase> cases = {
      {"randread-4k.json", {}, {"warp_batch", "bam_ticket", "io_agents"}},
      {"randrw-zipf.json", {}, {"warp_batch", "bam_ticket", "io_agents"}},
      {"randread-4k.json",
       {"scenario.threads=256"},
       {"warp_batch", "bam_ticket", "io_agents", "all_threads"}},
  };
  const std::vector<std::uint64_t> sizes = {1500, 4000};
  int separated_pairs = 0;
  for (const MatrixCase& c : cases) {
    for (const std::uint64_t ios : sizes) {
      std::vector<double> exact_iops, fast_iops;
      for (const std::string& strategy : c.strategies) {
        const Figures exact = figures(run_case(c.scenario, strategy, ios, false, c.sets));
        const Figures fast = figures(run_case(c.scenario, strategy, ios, true, c.sets));
        const std::string where = fmt::format("{} {} {} I/Os {}", c.scenario,
                                              c.sets.empty() ? "" : c.sets[0], ios, strategy);
        EXPECT_LE(relative_error(fast.iops, exact.iops), kThroughputTolerance) << where;
        EXPECT_LE(relative_error(fast.p50_ns, exact.p50_ns), kLatencyTolerance) << where;
        EXPECT_LE(relative_error(fast.p99_ns, exact.p99_ns), kLatencyTolerance) << where;
        // Fast mode decouples: its warps take fewer steps than exact mode's.
        EXPECT_LT(fast.warp_steps, exact.warp_steps) << where;
        exact_iops.push_back(exact.iops);
        fast_iops.push_back(fast.iops);
      }
      expect_same_order(c.strategies, exact_iops, fast_iops,
                        fmt::format("{} {} I/Os", c.scenario, ios));
      for (const double a : exact_iops) {
        for (const double b : exact_iops) separated_pairs += a > b * (1.0 + kThroughputTolerance);
      }
    }
  }
  // The order check has pairs to check.
  EXPECT_GE(separated_pairs, 4);
}

// Run-length control (README, Fast mode) against exact mode at the same
// requested count: 256 threads, where the strategies' own costs set the
// throughput and separate them, at 200,000 I/Os (each case converges after
// 20,000 to 100,000); and the shipped randread-4k, bound by
// its SSD, at 150,000. Fast mode must have stopped early in every case, or
// the comparison would test nothing.
// The sanitizer build, whose purpose is memory and undefined-behaviour
// errors, runs the two strategies furthest apart of the first case (its exact
// runs cost several times the release build's).
TEST(FastMode, RunLengthControlAgreesWithExactMode) {
#if defined(__SANITIZE_ADDRESS__)
  const std::vector<MatrixCase> cases = {
      {"randread-4k.json", {"scenario.threads=256"}, {"warp_batch", "all_threads"}},
  };
  constexpr int kSeparatedPairsWanted = 1;
#else
  const std::vector<MatrixCase> cases = {
      {"randread-4k.json",
       {"scenario.threads=256"},
       {"warp_batch", "bam_ticket", "io_agents", "all_threads", "per_warp_queue"}},
      {"randread-4k.json", {}, {"warp_batch", "io_agents"}},
  };
  constexpr int kSeparatedPairsWanted = 4;
#endif
  const std::vector<std::uint64_t> sizes = {200'000, 150'000};
  int separated_pairs = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const std::uint64_t ios = sizes[c];
    std::vector<double> exact_iops, fast_iops;
    for (const std::string& strategy : cases[c].strategies) {
      const std::string where =
          fmt::format("{} {} {} I/Os {}", cases[c].scenario,
                      cases[c].sets.empty() ? "" : cases[c].sets[0], ios, strategy);
      const nlohmann::json fast_result =
          run_case(cases[c].scenario, strategy, ios, true, cases[c].sets);
      const nlohmann::json& rl = fast_result["summary"]["run_length"];
      ASSERT_TRUE(rl["applied"].get<bool>()) << where << ": " << rl.dump();
      EXPECT_EQ(rl["requested_ios"].get<std::uint64_t>(), ios) << where;
      EXPECT_LT(rl["simulated_ios"].get<std::uint64_t>(), ios) << where;
      EXPECT_EQ(fast_result["summary"]["submitted"], rl["simulated_ios"]) << where;
      EXPECT_LE(rl["ci_half_width"]["iops"].get<double>(), 0.01) << where;
      const Figures exact =
          figures(run_case(cases[c].scenario, strategy, ios, false, cases[c].sets));
      const Figures fast = figures(fast_result);
      EXPECT_LE(relative_error(fast.iops, exact.iops), kThroughputTolerance) << where;
      EXPECT_LE(relative_error(fast.p50_ns, exact.p50_ns), kLatencyTolerance) << where;
      EXPECT_LE(relative_error(fast.p99_ns, exact.p99_ns), kLatencyTolerance) << where;
      exact_iops.push_back(exact.iops);
      fast_iops.push_back(fast.iops);
    }
    expect_same_order(cases[c].strategies, exact_iops, fast_iops,
                      fmt::format("{} {} I/Os", cases[c].scenario, ios));
    for (const double a : exact_iops) {
      for (const double b : exact_iops) separated_pairs += a > b * (1.0 + kThroughputTolerance);
    }
  }
  EXPECT_GE(separated_pairs, kSeparatedPairsWanted);
}

// Where the rest of a run would not be the same as what was simulated,
// fast mode runs every I/O and says why.
TEST(FastMode, RunLengthControlDoesNotApplyWhereTheRunChangesOverTime) {
  const std::string dir = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/";
  auto refusal = [&](const std::string& scenario, std::vector<std::string> sets) {
    sets.push_back("scenario.fidelity=fast");
    return run_length_refusal(load_config("", dir + scenario, sets, 1));
  };
  EXPECT_EQ(refusal("randread-4k.json", {}), "");
  EXPECT_NE(refusal("randread-4k.json", {"scenario.rw=randwrite"}).find("writes"),
            std::string::npos);
  EXPECT_NE(refusal("randrw-zipf.json", {}).find("writes"), std::string::npos);
  EXPECT_NE(refusal("randread-4k.json", {"topology.nodes.ssd0.fault_media_error_rate=0.001"})
                .find("ssd0 injects faults"),
            std::string::npos);
  EXPECT_NE(refusal("randread-4k.json", {"scenario.runtime_us=1000"}).find("runtime_us"),
            std::string::npos);
  EXPECT_NE(refusal("kv-cache-gpu.json", {}).find("kv_cache"), std::string::npos);
  EXPECT_EQ(refusal("randread-4k.json", {"scenario.fast_run_length=false"}),
            "fast_run_length is false");
  // A write run past the point where reads would have stopped: every I/O.
  const nlohmann::json writes = run_case("randread-4k.json", "warp_batch", 60'000, true,
                                         {"scenario.rw=randwrite", "scenario.threads=256"});
  EXPECT_FALSE(writes["summary"]["run_length"]["applied"].get<bool>());
  EXPECT_EQ(writes["summary"]["submitted"].get<std::uint64_t>(), 60'000u);
  // The same run reading stops early.
  const nlohmann::json reads =
      run_case("randread-4k.json", "all_threads", 60'000, true, {"scenario.threads=256"});
  EXPECT_TRUE(reads["summary"]["run_length"]["applied"].get<bool>())
      << reads["summary"]["run_length"].dump();
  EXPECT_LT(reads["summary"]["submitted"].get<std::uint64_t>(), 60'000u);
  EXPECT_NE(summary_table(reads).find("run length: 60000 requested I/Os answered from"),
            std::string::npos)
      << summary_table(reads);
  // Bad rule values are refused like every field.
  const cli_test::Outcome bad = cli_test::gpunvme("check --fast --set scenario.fast_precision=0");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("$.fast_precision"), std::string::npos) << bad.output;
}

TEST(FastMode, EveryFastResultSaysSo) {
  const nlohmann::json fast = run_case("randread-4k.json", "warp_batch", 500, true);
  EXPECT_EQ(fast["summary"]["fidelity"], "fast");
  EXPECT_EQ(fast["summary"]["fast_quantum_ns"].get<double>(), 500.0);
  // What it approximates, one line each (README, Fast mode).
  const nlohmann::json& approximations = fast["summary"]["fast_approximations"];
  ASSERT_TRUE(approximations.is_array());
  EXPECT_EQ(approximations.size(), 4u);
  EXPECT_NE(approximations.dump().find("PCIe burst's arrival"), std::string::npos)
      << approximations.dump();
  EXPECT_EQ(fast["config"]["scenario"]["fidelity"], "fast");
  // Too short for run-length control's minimum share: every I/O, and why.
  EXPECT_FALSE(fast["summary"]["run_length"]["applied"].get<bool>());
  EXPECT_EQ(fast["summary"]["run_length"]["reason"], "not converged");
  EXPECT_NE(summary_table(fast).find("fidelity fast (quantum 500.0 ns)"), std::string::npos)
      << summary_table(fast);
  // Exact mode's summary is as it always was; its config names the mode.
  const nlohmann::json exact = run_case("randread-4k.json", "warp_batch", 500, false);
  EXPECT_FALSE(exact["summary"].contains("fidelity"));
  EXPECT_FALSE(exact["summary"].contains("fast_approximations"));
  EXPECT_FALSE(exact["summary"].contains("run_length"));
  EXPECT_EQ(exact["config"]["scenario"]["fidelity"], "exact");
  EXPECT_EQ(summary_table(exact).find("fidelity"), std::string::npos);
}

TEST(FastMode, SameSeedGivesIdenticalResults) {
  nlohmann::json first = run_case("randread-4k.json", "bam_ticket", 800, true);
  nlohmann::json second = run_case("randread-4k.json", "bam_ticket", 800, true);
  for (const std::string& field : wall_clock_fields()) {
    first["summary"].erase(field);
    second["summary"].erase(field);
  }
  EXPECT_EQ(first.dump(), second.dump());
}

// The smallest quantum allowed (1 ns, shorter than any warp operation)
// leaves almost nothing to run ahead: the figures come within a hair of
// exact mode's.
TEST(FastMode, ASmallQuantumApproachesExactMode) {
  const std::string file = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/randread-4k.json";
  const Figures exact = figures(run(load_config("", file, {"scenario.ios=1000"}, 1)));
  const Figures tight = figures(run(load_config(
      "", file, {"scenario.ios=1000", "scenario.fidelity=fast", "scenario.fast_quantum_ns=1"}, 1)));
  EXPECT_LE(relative_error(tight.iops, exact.iops), 0.005);
  EXPECT_LE(relative_error(tight.p50_ns, exact.p50_ns), 0.01);
}

TEST(FastModeCli, FastFlagAndBadValues) {
  using cli_test::gpunvme;
  const cli_test::Outcome fast = gpunvme("run --fast --set scenario.ios=300");
  EXPECT_EQ(fast.code, 0) << fast.output;
  EXPECT_NE(fast.output.find("fidelity fast"), std::string::npos) << fast.output;
  const cli_test::Outcome bad = gpunvme("check --set scenario.fidelity=quick");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("$.fidelity"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("exact"), std::string::npos) << bad.output;
  const cli_test::Outcome quantum = gpunvme("check --fast --set scenario.fast_quantum_ns=0");
  EXPECT_EQ(quantum.code, 2) << quantum.output;
  EXPECT_NE(quantum.output.find("$.fast_quantum_ns"), std::string::npos) << quantum.output;
}

// Tenants share one machine, and fast mode is validated on single workloads:
// a tenant that asks for it is refused, naming its field.
TEST(FastModeCli, TenantsRefuseFastMode) {
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) + "/scenarios/tenants-gpu-and-host.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["tenants"][0]["scenario"]["fidelity"] = "fast";
  const std::string file =
      (std::filesystem::temp_directory_path() / fmt::format("fast-tenants-{}.json", getpid()))
          .string();
  std::ofstream(file) << doc.dump(1);
  const cli_test::Outcome refused = cli_test::gpunvme("check --scenario " + file);
  std::filesystem::remove(file);
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find("$.tenants[0].scenario.fidelity = \"fast\""), std::string::npos)
      << refused.output;
}

}  // namespace
}  // namespace gpunvme
