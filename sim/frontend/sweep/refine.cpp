#include "sim/frontend/sweep/refine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/kernel/params/json_path.h"

namespace gpunvme::sweep {

std::optional<double> metric_value(const nlohmann::ordered_json& row, const std::string& metric) {
  const nlohmann::ordered_json* node = nullptr;
  std::string rest;
  if (metric.rfind("summary.", 0) == 0) {
    const auto summary = row.find("summary");
    if (summary == row.end()) return std::nullopt;
    node = &*summary;
    rest = metric.substr(8);
  } else {
    const auto metrics = row.find("metrics");
    if (metrics == row.end() || !metrics->is_object()) return std::nullopt;
    const auto value = metrics->find(metric);
    if (value == metrics->end()) return std::nullopt;
    node = &*value;
  }
  // Down the dotted path of the summary.
  std::size_t start = 0;
  while (!rest.empty() && start <= rest.size()) {
    const std::size_t dot = rest.find('.', start);
    const std::string part = rest.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!node->is_object()) return std::nullopt;
    const auto child = node->find(part);
    if (child == node->end()) return std::nullopt;
    node = &*child;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!node->is_number()) return std::nullopt;
  const double value = node->get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

namespace {
// The dotted paths of a document's numbers (the names a metric can take).
void number_paths(const nlohmann::ordered_json& v, const std::string& prefix,
                  std::vector<std::string>& out) {
  if (v.is_object()) {
    for (const auto& [key, value] : v.items()) number_paths(value, prefix + "." + key, out);
  } else if (v.is_number()) {
    out.push_back(prefix);
  }
}
}  // namespace

std::optional<ConfigError> metric_problem(const SweepSpec& spec,
                                          const nlohmann::ordered_json& row) {
  if (!row["error"].is_null() || metric_value(row, spec.refine.metric)) return std::nullopt;
  // Name the summary's numbers, the paths a metric can take.
  std::vector<std::string> numbers;
  if (row.contains("summary") && row["summary"].is_object()) {
    number_paths(row["summary"], "summary", numbers);
  }
  const std::string hint = nearest_name(spec.refine.metric, numbers);
  return ConfigError(
      spec.file, "$.refine.metric", "\"" + spec.refine.metric + "\"",
      fmt::format("point {} ({}) holds no number at this path; a refine metric is a summary "
                  "field that holds a number (such as summary.iops or summary.latency_ns.p99) "
                  "or one of the spec's metrics{}",
                  row.value("index", std::size_t{0}), row["key"].get<std::string>(),
                  hint.empty() ? std::string() : "; did you mean '" + hint + "'?"));
}

std::vector<RankedPoint> rank_points(std::vector<RankedPoint> points, RefineGoal goal) {
  std::sort(points.begin(), points.end(), [goal](const RankedPoint& a, const RankedPoint& b) {
    if (a.value != b.value) return goal == RefineGoal::max ? a.value > b.value : a.value < b.value;
    return a.index < b.index;
  });
  return points;
}

std::optional<double> kendall_tau(const std::vector<std::size_t>& rank_a,
                                  const std::vector<std::size_t>& rank_b) {
  const std::size_t n = rank_a.size();
  if (n < 2 || rank_b.size() != n) return std::nullopt;
  long long concordant = 0;
  long long discordant = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const bool a_before = rank_a[i] < rank_a[j];
      const bool b_before = rank_b[i] < rank_b[j];
      (a_before == b_before ? concordant : discordant) += 1;
    }
  }
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1) / 2.0;
  return static_cast<double>(concordant - discordant) / pairs;
}

namespace {

// |fast - exact| / |exact|; nothing where exact is 0 and fast is not.
std::optional<double> relative_difference(double fast, double exact) {
  if (exact == 0) return fast == 0 ? std::optional<double>(0.0) : std::nullopt;
  return std::fabs(fast - exact) / std::fabs(exact);
}

nlohmann::ordered_json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
}

}  // namespace

nlohmann::ordered_json compare_finalists(const Refine& refine, std::size_t points,
                                         std::size_t ranked, const std::vector<Finalist>& finalists,
                                         const std::optional<Finalist>& first_pruned) {
  nlohmann::ordered_json doc;
  doc["metric"] = refine.metric;
  doc["goal"] = refine.goal == RefineGoal::max ? "max" : "min";
  doc["keep"] = refine.keep;
  doc["points"] = points;
  doc["ranked"] = ranked;  // fast rows that succeeded with a value
  // The finalists whose exact re-run gave a value, ranked among themselves.
  std::vector<RankedPoint> exact_values;
  for (const Finalist& f : finalists) {
    if (f.exact) exact_values.push_back({f.index, *f.exact});
  }
  const std::vector<RankedPoint> exact_order = rank_points(exact_values, refine.goal);
  auto exact_rank_of = [&](std::size_t index) -> std::optional<std::size_t> {
    for (std::size_t r = 0; r < exact_order.size(); ++r) {
      if (exact_order[r].index == index) return r + 1;
    }
    return std::nullopt;
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<std::size_t> fast_ranks, exact_ranks;  // of the finalists with both values
  std::optional<double> largest;
  std::optional<std::size_t> largest_at;
  bool undefined_difference = false;
  for (const Finalist& f : finalists) {
    nlohmann::ordered_json row;
    row["index"] = f.index;
    row["key"] = f.key;
    row["fast_rank"] = f.fast_rank;
    row["fast"] = f.fast;
    row["exact"] = optional_json(f.exact);
    const std::optional<std::size_t> exact_rank = f.exact ? exact_rank_of(f.index) : std::nullopt;
    row["exact_rank"] = exact_rank ? nlohmann::ordered_json(*exact_rank) : nlohmann::ordered_json();
    std::optional<double> difference;
    if (f.exact) {
      difference = relative_difference(f.fast, *f.exact);
      if (!difference) undefined_difference = true;
      if (difference && (!largest || *difference > *largest)) {
        largest = difference;
        largest_at = f.index;
      }
      fast_ranks.push_back(fast_ranks.size());  // finalists come in fast order
      exact_ranks.push_back(*exact_rank - 1);
    }
    row["relative_difference"] = optional_json(difference);
    rows.push_back(std::move(row));
  }
  doc["finalists"] = std::move(rows);
  doc["exact_failed"] = static_cast<std::size_t>(std::count_if(
      finalists.begin(), finalists.end(), [](const Finalist& f) { return !f.exact; }));
  nlohmann::ordered_json agreement;
  const bool all_exact = !finalists.empty() && exact_values.size() == finalists.size();
  agreement["same_best"] =
      all_exact ? nlohmann::ordered_json(exact_order.front().index == finalists.front().index)
                : nlohmann::ordered_json();
  bool same_order = all_exact;
  for (std::size_t i = 0; same_order && i < finalists.size(); ++i) {
    same_order = exact_order[i].index == finalists[i].index;
  }
  agreement["same_order"] =
      all_exact ? nlohmann::ordered_json(same_order) : nlohmann::ordered_json();
  agreement["kendall_tau"] = optional_json(kendall_tau(fast_ranks, exact_ranks));
  agreement["max_relative_difference"] = optional_json(largest);
  agreement["max_relative_difference_index"] =
      largest_at ? nlohmann::ordered_json(*largest_at) : nlohmann::ordered_json();
  // An exact value of 0 against a fast one that is not: no relative figure.
  agreement["undefined_difference"] = undefined_difference;
  doc["agreement"] = std::move(agreement);
  if (first_pruned && !finalists.empty()) {
    nlohmann::ordered_json pruned;
    pruned["index"] = first_pruned->index;
    pruned["key"] = first_pruned->key;
    pruned["fast_rank"] = first_pruned->fast_rank;
    pruned["fast"] = first_pruned->fast;
    // How far it trails the last finalist in fast mode, relative to that
    // finalist's fast value: pruning is safe where this exceeds the fast-exact
    // differences seen on the finalists.
    pruned["relative_gap"] =
        optional_json(relative_difference(first_pruned->fast, finalists.back().fast));
    doc["first_pruned"] = std::move(pruned);
  } else {
    doc["first_pruned"] = nullptr;
  }
  return doc;
}

namespace {
std::string percent(const nlohmann::ordered_json& fraction) {
  return fraction.is_number() ? fmt::format("{:.2f} %", 100.0 * fraction.get<double>()) : "n/a";
}
std::string yes_no(const nlohmann::ordered_json& flag) {
  return flag.is_boolean() ? (flag.get<bool>() ? "yes" : "no") : "n/a";
}
}  // namespace

std::string comparison_line(const nlohmann::ordered_json& c) {
  const nlohmann::ordered_json& a = c["agreement"];
  std::string line = fmt::format(
      "refine: {} finalists of {} ranked points by {} ({}); exact against fast: same best {}, "
      "same order {}, Kendall tau {}, largest relative difference {}",
      c["finalists"].size(), c["ranked"].get<std::size_t>(), c["metric"].get<std::string>(),
      c["goal"].get<std::string>(), yes_no(a["same_best"]), yes_no(a["same_order"]),
      a["kendall_tau"].is_number() ? fmt::format("{:.3f}", a["kendall_tau"].get<double>()) : "n/a",
      percent(a["max_relative_difference"]));
  if (a["max_relative_difference_index"].is_number()) {
    line += fmt::format(" (point {})", a["max_relative_difference_index"].get<std::size_t>());
  }
  if (c["first_pruned"].is_object()) {
    line += fmt::format(
        "; the first pruned point (index {}) trails the last finalist by {} in "
        "fast mode",
        c["first_pruned"]["index"].get<std::size_t>(), percent(c["first_pruned"]["relative_gap"]));
  }
  if (c["exact_failed"].get<std::size_t>() != 0) {
    line += fmt::format("; {} exact re-runs failed", c["exact_failed"].get<std::size_t>());
  }
  return line;
}

}  // namespace gpunvme::sweep
