// Refined sweeps ("refine" in a sweep spec): every point in fast mode, the
// best `keep` by a metric again in exact mode. Bad refine settings are
// refused with their JSON path (exit code 2 from the command line); the
// ranking breaks ties by index; the comparison of fast and exact is checked
// against hand-computed cases; a real sweep re-runs exactly its fast-mode
// finalists, and each exact row equals a plain exact sweep's row of the same
// point (wall-clock fields aside); a sweep stopped inside either stage or
// between them, or killed, completes both stages when run again without
// redoing a finished row.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "sim/frontend/sweep/refine.h"
#include "sim/frontend/sweep/sweep_runner.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"  // wall_clock_fields
#include "tests/sweep/stop_sweep_process.h"

namespace gpunvme::sweep::refine_test {
namespace {

std::string scratch(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gpunvme_sweep_refine_test_" + name)).string();
}

void remove_outputs(const std::string& prefix) {
  for (const char* suffix : {".jsonl", ".csv", ".refine.json", ".jsonl.tmp", ".log", ".err"}) {
    std::remove((prefix + suffix).c_str());
  }
}

SweepSpec parse(const std::string& text) {
  return parse_sweep_spec(nlohmann::ordered_json::parse(text), "spec.json");
}

// The ConfigError a spec gives, or a failure when it gives none.
ConfigError refusal(const std::string& text) {
  try {
    parse(text);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << text;
  return ConfigError("", "", "", "");
}

// A spec of four points with `refine` (a JSON object's text) and `extra`
// fields.
std::string four_points(const std::string& refine, const std::string& extra = "") {
  return R"({"set": ["scenario.ios=150"], "sweep": {"scenario.threads": [32, 64, 96, 128]})" +
         extra + R"(, "refine": )" + refine + "}";
}

TEST(RefineSpec, BadSettingsAreRefusedWithTheirPathValueAndWhatIsAllowed) {
  struct Case {
    std::string spec;
    std::string path;
    std::string value;
    std::string allowed;  // a part of the problem's text
  };
  const std::vector<Case> cases{
      {four_points("3"), "$.refine", "3", "\"metric\""},
      {four_points(R"({"metric": "summary.iops", "goal": "max"})"), "$.refine.keep", "", "missing"},
      {four_points(R"({"metric": "summary.iops", "goal": "max", "keep": 0})"), "$.refine.keep", "0",
       "from 1 to the sweep's 4 points"},
      {four_points(R"({"metric": "summary.iops", "goal": "max", "keep": -1})"), "$.refine.keep",
       "-1", "from 1"},
      {four_points(R"({"metric": "summary.iops", "goal": "max", "keep": 2.5})"), "$.refine.keep",
       "2.5", "integer"},
      {four_points(R"({"metric": "summary.iops", "goal": "max", "keep": 5})"), "$.refine.keep", "5",
       "4 points"},
      {four_points(R"({"metric": "summary.iops", "goal": "best", "keep": 2})"), "$.refine.goal",
       "\"best\"", "\"max\""},
      {four_points(R"({"metric": "iops", "goal": "max", "keep": 2})"), "$.refine.metric",
       "\"iops\"", "summary.FIELD"},
      {four_points(R"({"metric": "summary.", "goal": "max", "keep": 2})"), "$.refine.metric",
       "\"summary.\"", "summary.FIELD"},
      {four_points(R"({"metric": 7, "goal": "max", "keep": 2})"), "$.refine.metric", "7",
       "summary.FIELD"},
      {four_points(R"({"metric": "summary.iops", "goal": "max", "kep": 2})"), "$.refine.kep", "2",
       "did you mean 'keep'"},
      // Each stage sets the fidelity; a spec may not.
      {R"({"set": ["scenario.ios=150", "scenario.fidelity=fast"],
           "sweep": {"scenario.threads": [32, 64]},
           "refine": {"metric": "summary.iops", "goal": "max", "keep": 1}})",
       "$.set[1]", "\"scenario.fidelity=fast\"", "sets the fidelity of each stage"},
      {R"({"sweep": {"scenario.threads": [32, 64], "scenario.fidelity": ["fast", "exact"]},
           "refine": {"metric": "summary.iops", "goal": "max", "keep": 1}})",
       "$.sweep.scenario.fidelity", "", "sets the fidelity of each stage"},
      {R"({"sweep": {"scenario.threads": [32, 64],
                     "zip": [{"scenario.bs": [4096, 8192], "scenario.fidelity": ["fast", "exact"]}]},
           "refine": {"metric": "summary.iops", "goal": "max", "keep": 1}})",
       "$.sweep.zip[0].scenario.fidelity", "", "sets the fidelity of each stage"},
  };
  for (const Case& c : cases) {
    const ConfigError e = refusal(c.spec);
    EXPECT_EQ(e.file(), "spec.json") << c.spec;
    EXPECT_EQ(e.path(), c.path) << c.spec << "\n" << e.what();
    EXPECT_EQ(e.value(), c.value) << c.spec << "\n" << e.what();
    EXPECT_NE(e.problem().find(c.allowed), std::string::npos) << c.spec << "\n" << e.what();
  }
}

TEST(RefineSpec, AMetricMayBeASummaryPathOrOneOfTheSpecsMetrics) {
  const SweepSpec summary = parse(four_points(R"({"metric": "summary.latency_ns.p99",
                                                  "goal": "min", "keep": 4})"));
  EXPECT_EQ(summary.refine.metric, "summary.latency_ns.p99");
  EXPECT_EQ(summary.refine.goal, RefineGoal::min);
  EXPECT_EQ(summary.refine.keep, 4u);
  const SweepSpec listed =
      parse(four_points(R"({"metric": "cpu.max_utilization", "goal": "max", "keep": 1})",
                        R"(, "metrics": ["cpu.max_utilization"])"));
  EXPECT_EQ(listed.refine.metric, "cpu.max_utilization");
  // Without refine a spec is a plain sweep, its spec_id unchanged by the
  // stages' ids.
  const SweepSpec plain = parse(R"({"set": ["scenario.ios=150"],
                                    "sweep": {"scenario.threads": [32, 64, 96, 128]}})");
  EXPECT_FALSE(plain.refine.enabled());
  EXPECT_EQ(stage_spec_id(summary, Stage::plain), spec_id(plain));
  std::set<std::string> ids{spec_id(plain), stage_spec_id(summary, Stage::fast),
                            stage_spec_id(summary, Stage::exact)};
  EXPECT_EQ(ids.size(), 3u);
  // The refine settings are not part of a stage's identity: changing the
  // metric, goal or keep reuses the rows already computed.
  EXPECT_EQ(stage_spec_id(summary, Stage::fast), stage_spec_id(listed, Stage::fast));
}

TEST(RefineRanking, TiesAreBrokenByIndexWhateverTheOrderOfTheRows) {
  const std::vector<RankedPoint> rows{{3, 7.0}, {0, 5.0}, {2, 7.0}, {1, 3.0}, {4, 5.0}};
  auto indices = [](const std::vector<RankedPoint>& ranked) {
    std::vector<std::size_t> out;
    for (const RankedPoint& r : ranked) out.push_back(r.index);
    return out;
  };
  EXPECT_EQ(indices(rank_points(rows, RefineGoal::max)), (std::vector<std::size_t>{2, 3, 0, 4, 1}));
  EXPECT_EQ(indices(rank_points(rows, RefineGoal::min)), (std::vector<std::size_t>{1, 0, 4, 2, 3}));
  std::vector<RankedPoint> reversed(rows.rbegin(), rows.rend());
  EXPECT_EQ(indices(rank_points(reversed, RefineGoal::max)),
            (std::vector<std::size_t>{2, 3, 0, 4, 1}));
}

TEST(RefineComparison, KendallTauOfHandCountedPairs) {
  EXPECT_DOUBLE_EQ(*kendall_tau({0, 1, 2, 3}, {0, 1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(*kendall_tau({0, 1, 2, 3}, {3, 2, 1, 0}), -1.0);
  // One swapped neighbour pair of three: 2 concordant, 1 discordant.
  EXPECT_DOUBLE_EQ(*kendall_tau({0, 1, 2}, {1, 0, 2}), 1.0 / 3.0);
  EXPECT_FALSE(kendall_tau({0}, {0}).has_value());
}

TEST(RefineComparison, FinalistsAgainstAHandComputedCase) {
  Refine refine{"summary.iops", RefineGoal::max, 3};
  // Fast order 4, 1, 2; exact values 95, 99, 70 put 1 first.
  const std::vector<Finalist> finalists{
      {4, "k4", 1, 100.0, 95.0}, {1, "k1", 2, 90.0, 99.0}, {2, "k2", 3, 80.0, 70.0}};
  const Finalist pruned{0, "k0", 4, 60.0, std::nullopt};
  const nlohmann::ordered_json c = compare_finalists(refine, 6, 5, finalists, pruned);
  EXPECT_EQ(c["points"], 6);
  EXPECT_EQ(c["ranked"], 5);
  EXPECT_EQ(c["finalists"][0]["exact_rank"], 2);
  EXPECT_EQ(c["finalists"][1]["exact_rank"], 1);
  EXPECT_EQ(c["finalists"][2]["exact_rank"], 3);
  EXPECT_DOUBLE_EQ(c["finalists"][0]["relative_difference"].get<double>(), 5.0 / 95.0);
  EXPECT_DOUBLE_EQ(c["finalists"][1]["relative_difference"].get<double>(), 9.0 / 99.0);
  EXPECT_DOUBLE_EQ(c["finalists"][2]["relative_difference"].get<double>(), 10.0 / 70.0);
  EXPECT_EQ(c["agreement"]["same_best"], false);
  EXPECT_EQ(c["agreement"]["same_order"], false);
  EXPECT_DOUBLE_EQ(c["agreement"]["kendall_tau"].get<double>(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(c["agreement"]["max_relative_difference"].get<double>(), 10.0 / 70.0);
  EXPECT_EQ(c["agreement"]["max_relative_difference_index"], 2);
  EXPECT_EQ(c["first_pruned"]["index"], 0);
  EXPECT_DOUBLE_EQ(c["first_pruned"]["relative_gap"].get<double>(), 20.0 / 80.0);
  EXPECT_EQ(c["exact_failed"], 0);
  // A failed exact re-run leaves its finalist unranked and the order
  // undecided; the rest are still compared.
  std::vector<Finalist> one_failed = finalists;
  one_failed[2].exact.reset();
  const nlohmann::ordered_json f = compare_finalists(refine, 6, 5, one_failed, pruned);
  EXPECT_EQ(f["exact_failed"], 1);
  EXPECT_TRUE(f["finalists"][2]["exact_rank"].is_null());
  EXPECT_TRUE(f["agreement"]["same_order"].is_null());
  EXPECT_DOUBLE_EQ(f["agreement"]["kendall_tau"].get<double>(), -1.0);
  EXPECT_DOUBLE_EQ(f["agreement"]["max_relative_difference"].get<double>(), 9.0 / 99.0);
}

TEST(RefineComparison, MetricValuesComeFromTheSummaryOrTheMetrics) {
  const auto row = nlohmann::ordered_json::parse(
      R"({"summary": {"iops": 5.5, "latency_ns": {"p99": 12}, "path": "gds"},
          "metrics": {"cpu.max_utilization": 0.25, "x": null}})");
  EXPECT_EQ(metric_value(row, "summary.iops"), 5.5);
  EXPECT_EQ(metric_value(row, "summary.latency_ns.p99"), 12.0);
  EXPECT_EQ(metric_value(row, "cpu.max_utilization"), 0.25);
  EXPECT_FALSE(metric_value(row, "summary.path").has_value());
  EXPECT_FALSE(metric_value(row, "summary.latency_ns").has_value());
  EXPECT_FALSE(metric_value(row, "summary.iopz").has_value());
  EXPECT_FALSE(metric_value(row, "x").has_value());
}

// Six points of three strategies and two thread counts on the default
// topology, 2,000 I/Os each: fast mode, then the best two by IOPS exact.
constexpr const char* kStrategies = R"({
  "set": ["scenario.ios=2000"],
  "sweep": {"scenario.strategy": ["warp_batch", "io_agents", "all_threads"],
            "scenario.threads": [128, 256]},
  "refine": {"metric": "summary.iops", "goal": "max", "keep": 2}})";

nlohmann::ordered_json without_wall_clock(nlohmann::ordered_json summary) {
  for (const std::string& field : wall_clock_fields()) summary.erase(field);
  return summary;
}

std::vector<std::string> csv_lines(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A CSV line's cells, quoted cells unquoted.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

TEST(RefineSweep, TheFastFinalistsRunAgainExactAndEqualAPlainExactRun) {
  const std::string prefix = scratch("strategies");
  remove_outputs(prefix);
  const SweepSpec spec = parse(kStrategies);
  std::ostringstream log;
  const RunnerReport report = run_sweep(spec, {2, 0, prefix, false}, log);
  EXPECT_EQ(report.ran, 8u) << log.str();
  EXPECT_EQ(report.failed, 0u) << log.str();
  const auto rows = read_rows(prefix + ".jsonl");
  ASSERT_EQ(rows.size(), 8u);
  std::vector<RankedPoint> fast;
  std::map<std::size_t, nlohmann::ordered_json> exact;  // by index
  for (const auto& row : rows) {
    const std::string stage = row["refine"]["stage"];
    EXPECT_EQ(row["config"]["fidelity"], stage);
    if (stage == "fast") {
      EXPECT_EQ(row["summary"]["fidelity"], "fast");
      EXPECT_EQ(row["spec_id"], stage_spec_id(spec, Stage::fast));
      fast.push_back({row["index"].get<std::size_t>(), row["summary"]["iops"].get<double>()});
    } else {
      EXPECT_EQ(stage, "exact");
      EXPECT_FALSE(row["summary"].contains("fidelity"));
      EXPECT_EQ(row["spec_id"], stage_spec_id(spec, Stage::exact));
      exact[row["index"].get<std::size_t>()] = row;
    }
  }
  ASSERT_EQ(fast.size(), 6u);
  ASSERT_EQ(exact.size(), 2u);
  // The finalists are the fast ranking's best two, computed here from the
  // rows by hand.
  std::sort(fast.begin(), fast.end(), [](const RankedPoint& a, const RankedPoint& b) {
    return a.value != b.value ? a.value > b.value : a.index < b.index;
  });
  EXPECT_EQ(exact.count(fast[0].index), 1u);
  EXPECT_EQ(exact.count(fast[1].index), 1u);
  // Each exact row is the row of a plain exact sweep's run of its point (run
  // by the runner in point processes: this test program runs no simulation
  // itself, so that later tests' exceptions are not misreported under
  // AddressSanitizer, google/sanitizers#189).
  const SweepSpec plain = parse(R"({
    "set": ["scenario.ios=2000"],
    "sweep": {"scenario.strategy": ["warp_batch", "io_agents", "all_threads"],
              "scenario.threads": [128, 256]}})");
  const std::string plain_prefix = scratch("strategies_plain");
  remove_outputs(plain_prefix);
  std::ostringstream plain_log;
  EXPECT_EQ(run_sweep(plain, {2, 0, plain_prefix, false}, plain_log).failed, 0u);
  std::map<std::size_t, nlohmann::ordered_json> reference;  // by index
  for (const auto& row : read_rows(plain_prefix + ".jsonl")) {
    reference[row["index"].get<std::size_t>()] = row;
  }
  ASSERT_EQ(reference.size(), 6u);
  for (const auto& [index, row] : exact) {
    const nlohmann::ordered_json& plain_row = reference[index];
    EXPECT_FALSE(plain_row.contains("refine"));
    EXPECT_EQ(row["key"], plain_row["key"]);
    EXPECT_EQ(row["params"].dump(), plain_row["params"].dump());
    EXPECT_EQ(row["config"].dump(), plain_row["config"].dump());
    EXPECT_EQ(without_wall_clock(row["summary"]).dump(),
              without_wall_clock(plain_row["summary"]).dump());
  }
  // The comparison file and the log line.
  std::ifstream comparison_file(prefix + ".refine.json");
  ASSERT_TRUE(comparison_file.good());
  const auto comparison = nlohmann::ordered_json::parse(comparison_file);
  EXPECT_EQ(comparison["ranked"], 6);
  ASSERT_EQ(comparison["finalists"].size(), 2u);
  EXPECT_EQ(comparison["finalists"][0]["index"], fast[0].index);
  EXPECT_DOUBLE_EQ(comparison["finalists"][0]["fast"].get<double>(), fast[0].value);
  EXPECT_DOUBLE_EQ(comparison["finalists"][0]["exact"].get<double>(),
                   exact[fast[0].index]["summary"]["iops"].get<double>());
  EXPECT_EQ(comparison["first_pruned"]["index"], fast[2].index);
  EXPECT_NE(log.str().find("refine: 2 finalists of 6 ranked points by summary.iops (max)"),
            std::string::npos)
      << log.str();
  // The CSV: every row with its stage, rank and whether it is a finalist.
  const std::vector<std::string> lines = csv_lines(prefix + ".csv");
  ASSERT_EQ(lines.size(), 9u);
  EXPECT_EQ(lines[0].rfind("index,key,error,refine.stage,refine.fast_rank,refine.finalist,"
                           "refine.exact_rank,scenario.strategy,scenario.threads,",
                           0),
            0u)
      << lines[0];
  std::size_t finalist_rows = 0;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = cells_of(lines[i]);
    if (cells[5] == "true") ++finalist_rows;
    const std::size_t rank = std::stoul(cells[4]);
    EXPECT_EQ(fast[rank - 1].index, std::stoul(cells[0])) << lines[i];
  }
  EXPECT_EQ(finalist_rows, 4u);  // two points, each a fast and an exact row
  // Run again: nothing left to do, the same comparison.
  std::ostringstream again;
  const RunnerReport rerun = run_sweep(spec, {2, 0, prefix, false}, again);
  EXPECT_EQ(rerun.ran, 0u);
  EXPECT_EQ(rerun.skipped, 8u);
  std::ifstream second_file(prefix + ".refine.json");
  EXPECT_EQ(nlohmann::ordered_json::parse(second_file).dump(), comparison.dump());
}

TEST(RefineSweep, StoppedInEitherStageOrBetweenThemItCompletesWithoutRedoingARow) {
  const std::string prefix = scratch("resume");
  remove_outputs(prefix);
  const SweepSpec spec = parse(four_points(R"({"metric": "summary.iops", "goal": "max",
                                               "keep": 2})"));
  std::ostringstream log;
  // Inside the fast stage.
  RunnerReport r = run_sweep(spec, {2, 2, prefix, false}, log);
  EXPECT_EQ(r.ran, 2u);
  EXPECT_FALSE(std::ifstream(prefix + ".refine.json").good());
  // The rest of the fast stage: stopped between the stages.
  r = run_sweep(spec, {2, 2, prefix, false}, log);
  EXPECT_EQ(r.skipped, 2u);
  EXPECT_EQ(r.ran, 2u);
  EXPECT_EQ(read_rows(prefix + ".jsonl").size(), 4u);
  // One exact re-run: stopped inside the exact stage.
  r = run_sweep(spec, {2, 1, prefix, false}, log);
  EXPECT_EQ(r.skipped, 4u);
  EXPECT_EQ(r.ran, 1u);
  EXPECT_FALSE(std::ifstream(prefix + ".refine.json").good());
  // A line cut short by a kill while the last row was written.
  std::ofstream(prefix + ".jsonl", std::ios::app) << R"({"index": 2, "key": "{\"scen)";
  r = run_sweep(spec, {2, 0, prefix, false}, log);
  EXPECT_EQ(r.skipped, 5u) << log.str();
  EXPECT_EQ(r.ran, 1u);
  const auto rows = read_rows(prefix + ".jsonl");
  ASSERT_EQ(rows.size(), 6u);
  std::set<std::string> resume_keys;
  for (const auto& row : rows) {
    resume_keys.insert(resume_key(row["key"], row["spec_id"]));
  }
  EXPECT_EQ(resume_keys.size(), 6u);
  EXPECT_TRUE(std::ifstream(prefix + ".refine.json").good());
  // The same finalists as a sweep run in one go.
  const std::string whole = scratch("resume_whole");
  remove_outputs(whole);
  run_sweep(spec, {2, 0, whole, false}, log);
  std::ifstream a(prefix + ".refine.json"), b(whole + ".refine.json");
  const auto resumed = nlohmann::ordered_json::parse(a);
  const auto in_one_go = nlohmann::ordered_json::parse(b);
  ASSERT_EQ(resumed["finalists"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(resumed["finalists"][i]["index"], in_one_go["finalists"][i]["index"]);
    EXPECT_EQ(resumed["finalists"][i]["fast"], in_one_go["finalists"][i]["fast"]);
    EXPECT_EQ(resumed["finalists"][i]["exact"], in_one_go["finalists"][i]["exact"]);
  }
  // A changed keep reuses both stages' rows and runs only the new finalist.
  const SweepSpec keep3 = parse(four_points(R"({"metric": "summary.iops", "goal": "max",
                                                "keep": 3})"));
  r = run_sweep(keep3, {2, 0, prefix, false}, log);
  EXPECT_EQ(r.skipped, 6u);
  EXPECT_EQ(r.ran, 1u);
}

TEST(RefineSweep, AKilledSweepCompletesBothStagesWhenRunAgain) {
  const std::string prefix = scratch("sigkill");
  remove_outputs(prefix);
  const std::string spec_file = scratch("sigkill.json");
  std::ofstream(spec_file) << R"({
    "set": ["scenario.ios=20000"],
    "sweep": {"scenario.path": ["gpu_initiated", "gds"], "scenario.threads": [32, 64, 96]},
    "refine": {"metric": "summary.iops", "goal": "max", "keep": 4}})";
  // Kill the sweep and its point processes once the exact stage has begun
  // (points of 20,000 I/Os take tens of milliseconds or more, so the kill
  // lands before the last exact re-run is written).
  test::stop_sweep_after_rows(spec_file, prefix, 7, SIGKILL, std::chrono::seconds(120));
  const std::size_t before = read_rows(prefix + ".jsonl").size();
  EXPECT_GE(before, 7u);
  EXPECT_LT(before, 10u);
  std::ostringstream log;
  const RunnerReport rerun = run_sweep(load_sweep_spec(spec_file), {2, 0, prefix, false}, log);
  EXPECT_EQ(rerun.skipped, before);
  EXPECT_EQ(rerun.ran, 10u - before);
  std::size_t exact_rows = 0;
  std::set<std::string> resume_keys;
  for (const auto& row : read_rows(prefix + ".jsonl")) {
    resume_keys.insert(resume_key(row["key"], row["spec_id"]));
    if (row["refine"]["stage"] == "exact") ++exact_rows;
  }
  EXPECT_EQ(resume_keys.size(), 10u);
  EXPECT_EQ(exact_rows, 4u);
  EXPECT_TRUE(std::ifstream(prefix + ".refine.json").good());
}

// The command line's exit code and message for a refine the spec refuses,
// and for a metric that the rows turn out not to hold.
int run_cli(const std::string& spec_file, const std::string& prefix, std::string& errors) {
  const std::string command = std::string(GPUNVME_CLI) + " sweep " + spec_file + " --out " +
                              prefix + " --jobs 2 > " + prefix + ".log 2> " + prefix + ".err";
  const int status = std::system(command.c_str());
  std::ifstream err(prefix + ".err");
  std::stringstream text;
  text << err.rdbuf();
  errors = text.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RefineCommandLine, ABadRefineExitsWith2NamingTheFilePathAndValue) {
  const std::string prefix = scratch("cli_bad");
  remove_outputs(prefix);
  const std::string spec_file = scratch("cli_bad.json");
  std::ofstream(spec_file) << four_points(R"({"metric": "summary.iops", "goal": "max",
                                              "keep": 0})");
  std::string errors;
  EXPECT_EQ(run_cli(spec_file, prefix, errors), 2);
  EXPECT_NE(errors.find(spec_file), std::string::npos) << errors;
  EXPECT_NE(errors.find("$.refine.keep"), std::string::npos) << errors;
  EXPECT_FALSE(std::ifstream(prefix + ".jsonl").good());
}

TEST(RefineCommandLine, AMetricTheRowsDoNotHoldStopsTheSweepWithExitCode2) {
  const std::string prefix = scratch("cli_metric");
  remove_outputs(prefix);
  const std::string spec_file = scratch("cli_metric.json");
  std::ofstream(spec_file) << four_points(R"({"metric": "summary.iopz", "goal": "max",
                                              "keep": 2})");
  std::string errors;
  EXPECT_EQ(run_cli(spec_file, prefix, errors), 2);
  EXPECT_NE(errors.find(spec_file), std::string::npos) << errors;
  EXPECT_NE(errors.find("$.refine.metric"), std::string::npos) << errors;
  EXPECT_NE(errors.find("\"summary.iopz\""), std::string::npos) << errors;
  EXPECT_NE(errors.find("did you mean 'summary.iops'"), std::string::npos) << errors;
  // The sweep stopped at the first fast row: no exact stage ran.
  for (const auto& row : read_rows(prefix + ".jsonl")) EXPECT_EQ(row["refine"]["stage"], "fast");
  EXPECT_LT(read_rows(prefix + ".jsonl").size(), 4u);
}

}  // namespace
}  // namespace gpunvme::sweep::refine_test
