// Sweeps: expansion of lists, ranges and zipped groups; a sweep of 8 points
// gives 8 rows; a sweep stopped half-way (by a point limit, or by SIGTERM or
// SIGKILL to its process group) completes only the rest when run again, and
// only for the same spec; rows say how to rerun their point; a failing
// point is recorded and the sweep goes on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "sim/frontend/sweep/sweep_runner.h"
#include "sim/kernel/params/config_error.h"
#include "tests/sweep/stop_sweep_process.h"

namespace gpunvme::sweep {
namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gpunvme_sweep_test_" + name)).string();
}

SweepSpec spec_of(const std::string& text) {
  return parse_sweep_spec(nlohmann::ordered_json::parse(text), "spec.json");
}

TEST(SweepSpec, ListsRangesAndZipExpandToTheCartesianProduct) {
  const SweepSpec spec = spec_of(R"({
    "set": ["scenario.ios=100"],
    "sweep": {
      "scenario.threads": {"start": 32, "stop": 96, "step": 32},
      "zip": [{"scenario.bs": [4096, 8192], "scenario.queues": [4, 8]}],
      "seed": [1, 2]
    }})");
  const std::vector<SweepPoint> points = expand(spec);
  ASSERT_EQ(points.size(), 3u * 2 * 2);
  // The first group varies slowest, zipped paths advance together.
  EXPECT_EQ(points[0].key,
            R"({"scenario.threads":32,"scenario.bs":4096,"scenario.queues":4,"seed":1})");
  EXPECT_EQ(points[1].key,
            R"({"scenario.threads":32,"scenario.bs":4096,"scenario.queues":4,"seed":2})");
  EXPECT_EQ(points[2].key,
            R"({"scenario.threads":32,"scenario.bs":8192,"scenario.queues":8,"seed":1})");
  EXPECT_EQ(points[11].key,
            R"({"scenario.threads":96,"scenario.bs":8192,"scenario.queues":8,"seed":2})");
  EXPECT_EQ(points[3].seed, 2u);
  EXPECT_EQ(points[3].overrides,
            (std::vector<std::string>{"scenario.ios=100", "scenario.threads=32", "scenario.bs=8192",
                                      "scenario.queues=8"}));
  std::set<std::string> keys;
  for (const auto& p : points) keys.insert(p.key);
  EXPECT_EQ(keys.size(), points.size());
}

TEST(SweepSpec, GeometricAndFractionalRanges) {
  const SweepSpec spec = spec_of(R"({"sweep": {
    "topology.nodes.cpu0.cores": {"start": 1, "stop": 16, "factor": 2},
    "scenario.span_gib": {"start": 0.5, "stop": 1.5, "step": 0.5}}})");
  ASSERT_EQ(spec.groups.size(), 2u);
  EXPECT_EQ(spec.groups[0].axes[0].values, (std::vector<nlohmann::json>{1, 2, 4, 8, 16}));
  EXPECT_EQ(spec.groups[1].axes[0].values, (std::vector<nlohmann::json>{0.5, 1.0, 1.5}));
}

TEST(SweepSpec, BadSpecsNameTheField) {
  auto path_of = [](const std::string& text) {
    try {
      spec_of(text);
    } catch (const ConfigError& e) {
      return e.path();
    }
    return std::string("no error");
  };
  EXPECT_EQ(path_of(R"({"sweep": {"threads": [1]}})"), "$.sweep.threads");
  EXPECT_EQ(path_of(R"({"sweep": {"scenario.threads": []}})"), "$.sweep.scenario.threads");
  EXPECT_EQ(path_of(R"({"sweep": {"zip": [{"scenario.bs": [1, 2], "scenario.queues": [1]}]}})"),
            "$.sweep.zip[0].scenario.queues");
  EXPECT_EQ(path_of(R"({"sweep": {"scenario.threads": {"start": 1, "stop": 4, "step": -1}}})"),
            "$.sweep.scenario.threads.step");
  EXPECT_EQ(path_of(R"({"swep": {}})"), "$.swep");
}

// 8 points of 150 I/Os each (2 paths x 4 thread counts).
std::string eight_point_spec() {
  const std::string file = temp("eight.json");
  std::ofstream(file) << R"({
    "set": ["scenario.ios=150"],
    "sweep": {"scenario.path": ["gpu_initiated", "gds"],
              "scenario.threads": [32, 64, 96, 128]}})";
  return file;
}

void clean(const std::string& prefix) {
  std::filesystem::remove(prefix + ".jsonl");
  std::filesystem::remove(prefix + ".csv");
}

std::size_t csv_rows(const std::string& prefix) {
  std::ifstream in(prefix + ".csv");
  std::size_t lines = 0;
  std::string line;
  while (std::getline(in, line)) ++lines;
  return lines - 1;  // header
}

TEST(SweepRunner, EightPointsGiveEightRows) {
  const std::string prefix = temp("eight");
  clean(prefix);
  std::ostringstream log;
  const RunnerReport report =
      run_sweep(load_sweep_spec(eight_point_spec()), {2, 0, prefix, false}, log);
  EXPECT_EQ(report.total, 8u);
  EXPECT_EQ(report.ran, 8u);
  EXPECT_EQ(report.failed, 0u) << log.str();
  const auto rows = read_rows(prefix + ".jsonl");
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(csv_rows(prefix), 8u);
  for (const auto& row : rows) {
    EXPECT_TRUE(row["error"].is_null());
    EXPECT_EQ(row["summary"]["ios"].get<int>(), 150);
    EXPECT_EQ(row["summary"]["path"], row["params"]["scenario.path"]);
    EXPECT_EQ(row["config"]["threads"], row["params"]["scenario.threads"]);
  }
  // The CSV carries the parameters and the summary of every row, the
  // summary's fields by their own names (as Python's sweep frames name them).
  std::ifstream csv(prefix + ".csv");
  std::string header;
  std::getline(csv, header);
  std::set<std::string> columns;
  std::istringstream cells(header);
  for (std::string cell; std::getline(cells, cell, ',');) columns.insert(cell);
  for (const char* column :
       {"scenario.path", "scenario.threads", "iops", "latency_ns.p99", "error", "key"}) {
    EXPECT_EQ(columns.count(column), 1u) << column << " in " << header;
  }
  EXPECT_EQ(columns.count("summary.iops"), 0u) << header;
  EXPECT_EQ(header.rfind("index,key,error,scenario.path,scenario.threads,seed,", 0), 0u) << header;
}

TEST(SweepRunner, AStoppedSweepResumesWithTheRestOnly) {
  const std::string prefix = temp("resume");
  clean(prefix);
  const SweepSpec spec = load_sweep_spec(eight_point_spec());
  std::ostringstream log;
  const RunnerReport first = run_sweep(spec, {2, 3, prefix, false}, log);
  EXPECT_EQ(first.ran, 3u);
  EXPECT_EQ(read_rows(prefix + ".jsonl").size(), 3u);
  // A line cut short by a kill is dropped and its point runs again.
  std::ofstream(prefix + ".jsonl", std::ios::app) << R"({"index": 7, "key": "{\"scen)";
  const RunnerReport second = run_sweep(spec, {2, 0, prefix, false}, log);
  EXPECT_EQ(second.skipped, 3u);
  EXPECT_EQ(second.ran, 5u);
  const auto rows = read_rows(prefix + ".jsonl");
  std::set<std::string> keys;
  for (const auto& row : rows) keys.insert(row["key"].get<std::string>());
  EXPECT_EQ(rows.size(), 8u);
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_EQ(csv_rows(prefix), 8u);
}

// Starts `gpunvme sweep` in a process group of its own, waits for its first
// two rows, sends `sig` to the whole group (the sweep and its point
// processes), then reruns the sweep: it must complete exactly the rest.
void stop_then_resume(const std::string& name, int sig) {
  const std::string prefix = temp(name);
  clean(prefix);
  // Points long enough (1,500 I/Os, tens of ms each) that the sweep is still
  // running when the first two rows are in and the signal follows.
  const std::string spec = temp(name + ".json");
  std::ofstream(spec) << R"({
    "set": ["scenario.ios=1500"],
    "sweep": {"scenario.path": ["gpu_initiated", "gds"],
              "scenario.threads": [32, 64, 96, 128]}})";
  // Wait for the first rows, then stop the sweep and its point processes.
  const int status = test::stop_sweep_after_rows(spec, prefix, 2, sig, std::chrono::seconds(60));
  const std::size_t before = read_rows(prefix + ".jsonl").size();
  EXPECT_GE(before, 2u);
  EXPECT_LT(before, 8u);
  if (sig == SIGKILL) {
    // No handler runs: the sweep dies where it stood.
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  } else {
    EXPECT_TRUE(WIFEXITED(status) || WIFSIGNALED(status));
  }
  std::ostringstream log;
  const RunnerReport rerun = run_sweep(load_sweep_spec(spec), {2, 0, prefix, false}, log);
  EXPECT_EQ(rerun.skipped, before);
  EXPECT_EQ(rerun.ran, 8u - before);
  std::set<std::string> keys;
  for (const auto& row : read_rows(prefix + ".jsonl")) keys.insert(row["key"].get<std::string>());
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_EQ(read_rows(prefix + ".jsonl").size(), 8u);
  EXPECT_EQ(csv_rows(prefix), 8u);
}

TEST(SweepRunner, SigtermToTheProcessGroupThenRerunCompletesTheRest) {
  stop_then_resume("sigterm", SIGTERM);
}

TEST(SweepRunner, SigkillToTheProcessGroupThenRerunCompletesTheRest) {
  stop_then_resume("sigkill", SIGKILL);
}

TEST(SweepRunner, RowsCarryTheBaseOverridesAndTheTopologyChanges) {
  const std::string file = temp("context.json");
  std::ofstream(file) << R"({
    "set": ["scenario.ios=100", "topology.links.0.width=8"],
    "sweep": {"topology.nodes.cpu0.cores": [2, 4], "scenario.path": ["gds"]}})";
  const SweepSpec spec = load_sweep_spec(file);
  const std::vector<SweepPoint> points = expand(spec);
  ASSERT_EQ(points.size(), 2u);
  const nlohmann::ordered_json row = run_point(spec, points[1]);
  ASSERT_TRUE(row["error"].is_null()) << row["error"];
  EXPECT_EQ(row["set"], (nlohmann::ordered_json{"scenario.ios=100", "topology.links.0.width=8"}));
  EXPECT_EQ(row["topology_overrides"],
            (nlohmann::ordered_json{"topology.links.0.width=8", "topology.nodes.cpu0.cores=4"}));
  EXPECT_EQ(row["spec_id"], spec_id(spec));
  EXPECT_EQ(row["spec_id"].get<std::string>().size(), 16u);
  EXPECT_EQ(row["summary"]["ios"].get<int>(), 100);
}

TEST(SweepSpec, TheSpecIdChangesWithSetTopologyScenarioAndSeed) {
  const std::string scenario = temp("identity-scenario.json");
  std::ofstream(scenario) << R"({"kind": "microbenchmark", "ios": 100})";
  auto id_of = [&](const std::string& text) { return spec_id(spec_of(text)); };
  const std::string base = id_of(R"({"set": ["scenario.ios=100"], "sweep": {"seed": [1]}})");
  EXPECT_EQ(base, id_of(R"({"set": ["scenario.ios=100"], "sweep": {"seed": [1, 2]}})"))
      << "the swept values are the key's business, not the spec id's";
  EXPECT_NE(base, id_of(R"({"set": ["scenario.ios=200"], "sweep": {"seed": [1]}})"));
  EXPECT_NE(base, id_of(R"({"set": ["scenario.ios=100"], "seed": 2, "sweep": {"seed": [1]}})"));
  EXPECT_NE(base, id_of(R"({"set": ["scenario.ios=100"],
                            "topology": "configs/topologies/acs-on.json", "sweep": {"seed": [1]}})"));
  const std::string with_scenario =
      R"({"scenario": ")" + scenario + R"(", "sweep": {"seed": [1]}})";
  const std::string before_edit = id_of(with_scenario);
  EXPECT_NE(base, before_edit);
  // Editing the scenario file changes the id too: its results would differ.
  std::ofstream(scenario) << R"({"kind": "microbenchmark", "ios": 300})";
  EXPECT_NE(before_edit, id_of(with_scenario));
}

TEST(SweepRunner, AChangedSpecDoesNotSkipPointsOfTheOldOne) {
  const std::string prefix = temp("changed");
  clean(prefix);
  const std::string file = temp("changed.json");
  std::ofstream(file) << R"({"set": ["scenario.ios=100"],
                            "sweep": {"scenario.threads": [32, 64]}})";
  std::ostringstream log;
  EXPECT_EQ(run_sweep(load_sweep_spec(file), {2, 0, prefix, false}, log).ran, 2u);
  // Same params, same file: everything is skipped.
  const RunnerReport same = run_sweep(load_sweep_spec(file), {2, 0, prefix, false}, log);
  EXPECT_EQ(same.skipped, 2u);
  EXPECT_EQ(same.ran, 0u);
  // Same swept params under a different base "set": both points run again.
  std::ofstream(file) << R"({"set": ["scenario.ios=120"],
                            "sweep": {"scenario.threads": [32, 64]}})";
  const RunnerReport changed = run_sweep(load_sweep_spec(file), {2, 0, prefix, false}, log);
  EXPECT_EQ(changed.skipped, 0u);
  EXPECT_EQ(changed.ran, 2u);
  std::size_t with_120 = 0;
  for (const auto& row : read_rows(prefix + ".jsonl")) {
    if (row["summary"]["ios"] == 120) ++with_120;
  }
  EXPECT_EQ(with_120, 2u);
}

TEST(SweepRunner, AFailingPointIsRecordedAndTheSweepGoesOn) {
  const std::string file = temp("failing.json");
  std::ofstream(file) << R"({"set": ["scenario.ios=100"],
                            "sweep": {"scenario.queues": [4, 100000, 8]}})";
  const std::string prefix = temp("failing");
  clean(prefix);
  std::ostringstream log;
  const RunnerReport report = run_sweep(load_sweep_spec(file), {2, 0, prefix, false}, log);
  EXPECT_EQ(report.ran, 3u);
  EXPECT_EQ(report.failed, 1u);
  const auto rows = read_rows(prefix + ".jsonl");
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) {
    const bool bad = row["params"]["scenario.queues"] == 100000;
    EXPECT_EQ(row["error"].is_string(), bad);
    if (bad) {
      EXPECT_NE(row["error"].get<std::string>().find("queues"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gpunvme::sweep
