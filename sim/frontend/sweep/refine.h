// The ranking and comparison of a refined sweep ("refine" in a sweep spec):
// fast-mode rows ranked by a metric, the best re-run in exact mode, and how
// the exact finalists' order and values compare with the fast ones, so that
// a user sees whether pruning with fast mode was safe.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/frontend/sweep/sweep_spec.h"
#include "sim/kernel/params/config_error.h"

namespace gpunvme::sweep {

// The number a row holds at a refine metric's path: summary.X in the row's
// summary, any other path in its metrics. Nothing when the path is absent or
// holds no finite number.
std::optional<double> metric_value(const nlohmann::ordered_json& row, const std::string& metric);

// Nothing when a fast row failed or holds a number at the spec's refine
// metric; else the spec's error at $.refine.metric, naming the point and the
// summary's number nearest the metric (an unknown path, or one that holds no
// number, stops a refined sweep: nothing could be ranked by it).
std::optional<ConfigError> metric_problem(const SweepSpec& spec, const nlohmann::ordered_json& row);

struct RankedPoint {
  std::size_t index = 0;  // the point's index in the sweep
  double value = 0;
};

// Best first by `goal`; equal values in index order, so that a ranking is
// the same whatever order the rows arrived in.
std::vector<RankedPoint> rank_points(std::vector<RankedPoint> points, RefineGoal goal);

// Kendall's tau (tau-a) between two strict orders of the same n items, each
// given as every item's rank (0 to n-1): (concordant - discordant pairs) /
// (n (n - 1) / 2), 1 when they agree, -1 when one reverses the other.
// Nothing for fewer than two items.
std::optional<double> kendall_tau(const std::vector<std::size_t>& rank_a,
                                  const std::vector<std::size_t>& rank_b);

// A finalist's two results.
struct Finalist {
  std::size_t index = 0;
  std::string key;
  std::size_t fast_rank = 0;    // 1 = best
  double fast = 0;              // the metric in fast mode
  std::optional<double> exact;  // in exact mode; nothing when the re-run failed
};

// What PREFIX.refine.json holds: the settings, how many points ranked, each
// finalist's fast and exact value, rank and relative difference
// (|fast - exact| / |exact|), the rank agreement (same best, same order,
// Kendall's tau over the finalists whose re-run succeeded), the largest
// relative difference, and the first pruned point's fast value with its
// relative gap to the last finalist's.
nlohmann::ordered_json compare_finalists(const Refine& refine, std::size_t points,
                                         std::size_t ranked, const std::vector<Finalist>& finalists,
                                         const std::optional<Finalist>& first_pruned);

// One line for the sweep's log from compare_finalists' document.
std::string comparison_line(const nlohmann::ordered_json& comparison);

}  // namespace gpunvme::sweep
