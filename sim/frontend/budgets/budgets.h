// Latency budgets: per scenario, ceilings on per-stage latency percentiles and
// floors on throughput figures, each with a tolerance, kept in JSON files
// beside the scenarios (scenarios/budgets/*.json). CI runs every budgeted
// scenario and reports what exceeded its budget and by how much;
// `gpunvme budgets --update` re-baselines a file from a fresh run.
//
// A budget file:
//   {
//     "schema": "gpunvme.budget/1",
//     "doc": "what the budget guards",
//     "topology": "../../configs/topologies/default.json",   (optional)
//     "scenario": "../randread-4k.json",
//     "set": ["scenario.ios=4000"],                           (optional)
//     "seed": 1,                                              (optional)
//     "tolerance": {"relative": 0.10, "absolute_ns": 25},     (optional)
//     "floors": {"summary.iops": 2.3e6},
//     "ceilings": {"summary.traversal_time_ns": 6.3e6},      (optional)
//     "latency_ns": {"end_to_end": {"p50": 410.2, "p99": 980.5}}
//   }
// File paths are relative to the budget file. `floors` and `ceilings` map a
// dotted path in the result to its minimum or maximum; `latency_ns` maps a
// stage of result.stages to ceilings on its percentiles (any key of a stage
// summary: p50, p99, mean...).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/system/config/run_config.h"

namespace gpunvme::budgets {

struct Tolerance {
  // A ceiling allows max(budget * (1 + relative), budget + absolute_ns); a
  // floor allows budget * (1 - relative). The absolute slack keeps stages of a
  // few nanoseconds from failing on sub-nanosecond model changes.
  double relative = 0.10;
  double absolute_ns = 25.0;
};

struct Budget {
  std::string file;  // the budget file as given
  std::string name;  // its stem: the name shown in reports
  std::string doc;
  RawConfig raw;  // topology and scenario documents with `set` and `seed` applied
  std::vector<std::string> overrides;
  Tolerance tolerance;
  std::map<std::string, std::map<std::string, double>> latency_ns;  // stage -> key -> ceiling
  std::map<std::string, double> floors;                             // result path -> minimum
  std::map<std::string, double> ceilings;                           // result path -> maximum
  nlohmann::json document;  // the file as read, kept for re-baselining
};

// One comparison of a measured figure against its budget.
struct Check {
  std::string metric;  // "stages.end_to_end.p99" or a floor's result path
  bool is_floor = false;
  double budget = 0;
  double limit = 0;  // budget with the tolerance applied
  double measured = 0;
  bool ok = true;
  std::string note;  // why a figure could not be measured, if it could not
  // Signed excess over the budget as a fraction of it (positive = worse).
  double over_budget() const;
};

// How far a check's figure is from its budget, for the table: "0.2 % inside"
// on the good side of it, "+15.0 % over" past it (over_budget is the
// signed fraction of Check::over_budget).
std::string budget_margin_text(double over_budget);

// Reads and validates a budget file (ConfigError naming the field otherwise).
Budget load_budget(const std::string& file);

// The validated run configuration of a budget.
RunConfig budget_config(const Budget& budget);

// Compares a result of the budget's scenario with the budget.
std::vector<Check> check_budget(const Budget& budget, const nlohmann::json& result);

// A readable table of checks: metric, budget, limit, measured, over budget.
std::string check_table(const std::vector<Check>& checks, bool failures_only);

nlohmann::json to_json(const Check& check);

// The budget document re-baselined on `result`: the same scenario, overrides,
// seed and tolerance; every stage with data gets the percentile keys the file
// used (p50 and p99 when it had none); floors and ceilings keep their paths
// (when the file had none: the result's throughput figures as floors, its
// whole-run times as ceilings).
nlohmann::ordered_json rebaseline(const Budget& budget, const nlohmann::json& result);

// Budget files shipped with the project, sorted: scenarios/budgets/*.json.
std::vector<std::string> shipped_budget_files();

// Budget files of a folder, sorted.
std::vector<std::string> budget_files_in(const std::string& dir);

}  // namespace gpunvme::budgets
