#include "sim/frontend/budgets/budgets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/system/run/run.h"

namespace gpunvme::budgets {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSchema = "gpunvme.budget/1";

// Figures a new budget bounds when the file names none: whichever of these
// the result's summary reports for its scenario kind. Throughputs and hit
// rates get floors, whole-run times ceilings.
const std::vector<std::string>& default_floor_keys() {
  static const std::vector<std::string> keys{"iops", "bandwidth_gbps", "tokens_per_s",
                                             "lookups_per_s", "cache_hit_rate"};
  return keys;
}
const std::vector<std::string>& default_ceiling_keys() {
  static const std::vector<std::string> keys{"traversal_time_ns", "mean_stall_ns"};
  return keys;
}

std::string resolve_relative(const std::string& budget_file, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(budget_file).parent_path() / path).lexically_normal().string();
}

double number_at(const nlohmann::json& doc, const std::string& file, const std::string& path,
                 bool positive) {
  if (!doc.is_number()) throw ConfigError(file, path, render_value(doc), "expected a number");
  const double v = doc.get<double>();
  if (!std::isfinite(v) || v < 0 || (positive && v == 0)) {
    throw ConfigError(file, path, render_value(doc),
                      positive ? "expected a positive number" : "expected a number >= 0");
  }
  return v;
}

// The value at a dotted path of a result ("summary.iops"), or null.
const nlohmann::json* find_path(const nlohmann::json& doc, const std::string& dotted) {
  const nlohmann::json* at = &doc;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    const std::size_t end = std::min(dotted.find('.', start), dotted.size());
    const std::string key = dotted.substr(start, end - start);
    if (at->is_object()) {
      auto it = at->find(key);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array() && !key.empty() &&
               std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const std::size_t i = std::stoul(key);
      if (i >= at->size()) return nullptr;
      at = &(*at)[i];
    } else {
      return nullptr;
    }
    start = end + 1;
  }
  return at;
}

// Budgets are written with a few significant digits: enough to catch a
// regression, few enough that a diff of a re-baselined file is readable.
double round_significant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * scale) / scale;
}

std::string format_figure(double v) {
  // Whole numbers past a million; one decimal (0.1 ns) below.
  if (std::fabs(v) >= 1e6) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

}  // namespace

double Check::over_budget() const {
  if (budget == 0) return 0;
  return is_floor ? (budget - measured) / budget : (measured - budget) / budget;
}

Budget load_budget(const std::string& file) {
  Budget b;
  b.file = file;
  b.name = fs::path(file).stem().string();
  b.document = read_json_file(file);
  const nlohmann::json& doc = b.document;
  if (!doc.is_object()) throw ConfigError(file, "$", render_value(doc), "expected an object");
  const std::vector<std::string> known{"schema", "doc",       "topology",   "scenario", "set",
                                       "seed",   "tolerance", "latency_ns", "floors",   "ceilings"};
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      const std::string hint = nearest_name(it.key(), known);
      throw ConfigError(
          file, child_path("$", it.key()), "",
          "unknown field for a budget" + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
  }
  if (!doc.contains("schema") || !doc["schema"].is_string() ||
      doc["schema"].get<std::string>() != kSchema) {
    throw ConfigError(file, "$.schema", render_value(doc.value("schema", nlohmann::json())),
                      std::string("expected \"") + kSchema + "\"");
  }
  auto string_field = [&](const char* key, bool required) -> std::string {
    if (!doc.contains(key)) {
      if (required) throw ConfigError(file, child_path("$", key), "", "missing required field");
      return "";
    }
    if (!doc[key].is_string()) {
      throw ConfigError(file, child_path("$", key), render_value(doc[key]), "expected a string");
    }
    return doc[key].get<std::string>();
  };
  b.doc = string_field("doc", false);
  const std::string scenario = resolve_relative(file, string_field("scenario", true));
  const std::string topology = resolve_relative(file, string_field("topology", false));
  b.raw = load_raw_config(topology, scenario);

  if (doc.contains("seed")) {
    if (!doc["seed"].is_number_unsigned()) {
      throw ConfigError(file, "$.seed", render_value(doc["seed"]),
                        "expected a non-negative integer");
    }
    b.raw.seed = doc["seed"].get<std::uint64_t>();
  }
  if (doc.contains("set")) {
    if (!doc["set"].is_array()) {
      throw ConfigError(file, "$.set", render_value(doc["set"]),
                        "expected an array of \"PATH=VALUE\" strings, as --set takes");
    }
    for (std::size_t i = 0; i < doc["set"].size(); ++i) {
      const nlohmann::json& s = doc["set"][i];
      if (!s.is_string()) {
        throw ConfigError(file, index_path("$.set", i), render_value(s),
                          "expected a \"PATH=VALUE\" string, as --set takes");
      }
      b.overrides.push_back(s.get<std::string>());
      apply_set(b.raw, b.overrides.back());
    }
  }
  if (doc.contains("tolerance")) {
    const nlohmann::json& t = doc["tolerance"];
    if (!t.is_object()) {
      throw ConfigError(file, "$.tolerance", render_value(t),
                        "expected {\"relative\": FRACTION, \"absolute_ns\": NS}");
    }
    for (auto it = t.begin(); it != t.end(); ++it) {
      const std::string path = child_path("$.tolerance", it.key());
      if (it.key() == "relative") {
        b.tolerance.relative = number_at(it.value(), file, path, false);
        if (b.tolerance.relative >= 1) {
          throw ConfigError(file, path, render_value(it.value()),
                            "expected a fraction in [0, 1) (0.1 = 10 %)");
        }
      } else if (it.key() == "absolute_ns") {
        b.tolerance.absolute_ns = number_at(it.value(), file, path, false);
      } else {
        throw ConfigError(file, path, "", "unknown field; expected relative or absolute_ns");
      }
    }
  }
  if (doc.contains("latency_ns")) {
    const nlohmann::json& stages = doc["latency_ns"];
    if (!stages.is_object()) {
      throw ConfigError(file, "$.latency_ns", render_value(stages),
                        "expected {\"STAGE\": {\"p50\": NS, \"p99\": NS}, ...}");
    }
    for (auto st = stages.begin(); st != stages.end(); ++st) {
      const std::string path = child_path("$.latency_ns", st.key());
      if (!st.value().is_object() || st.value().empty()) {
        throw ConfigError(file, path, render_value(st.value()),
                          "expected a non-empty object of percentile ceilings, e.g. "
                          "{\"p50\": NS, \"p99\": NS}");
      }
      for (auto p = st.value().begin(); p != st.value().end(); ++p) {
        b.latency_ns[st.key()][p.key()] =
            number_at(p.value(), file, child_path(path, p.key()), false);
      }
    }
  }
  for (const char* key : {"floors", "ceilings"}) {
    if (!doc.contains(key)) continue;
    const nlohmann::json& bounds = doc[key];
    const std::string path = child_path("$", key);
    if (!bounds.is_object()) {
      throw ConfigError(file, path, render_value(bounds),
                        "expected {\"RESULT.PATH\": NUMBER, ...}");
    }
    auto& into = std::string(key) == "floors" ? b.floors : b.ceilings;
    for (auto it = bounds.begin(); it != bounds.end(); ++it) {
      into[it.key()] = number_at(it.value(), file, child_path(path, it.key()), false);
    }
  }
  return b;
}

RunConfig budget_config(const Budget& budget) { return resolve_config(budget.raw); }

std::vector<Check> check_budget(const Budget& budget, const nlohmann::json& result) {
  std::vector<Check> checks;
  const Tolerance& tol = budget.tolerance;
  auto ceiling_limit = [&](double ceiling) {
    return std::max(ceiling * (1 + tol.relative), ceiling + tol.absolute_ns);
  };
  auto bound = [&](const std::string& path, double value, bool is_floor) {
    Check c;
    c.metric = path;
    c.is_floor = is_floor;
    c.budget = value;
    c.limit = is_floor ? value * (1 - tol.relative) : ceiling_limit(value);
    const nlohmann::json* v = find_path(result, path);
    if (v == nullptr || !v->is_number()) {
      c.ok = false;
      c.note = "not in the result";
    } else {
      c.measured = v->get<double>();
      c.ok = is_floor ? c.measured >= c.limit : c.measured <= c.limit;
    }
    checks.push_back(c);
  };
  for (const auto& [path, floor] : budget.floors) bound(path, floor, true);
  for (const auto& [path, ceiling] : budget.ceilings) bound(path, ceiling, false);
  const nlohmann::json* stages = find_path(result, "stages");
  for (const auto& [stage, ceilings] : budget.latency_ns) {
    const nlohmann::json* summary =
        stages != nullptr && stages->is_object() && stages->contains(stage) ? &(*stages)[stage]
                                                                            : nullptr;
    for (const auto& [key, ceiling] : ceilings) {
      Check c;
      c.metric = "stages." + stage + "." + key;
      c.budget = ceiling;
      c.limit = ceiling_limit(ceiling);
      if (summary == nullptr || summary->value("count", 0) == 0) {
        c.ok = false;
        c.note = "stage has no samples in the result";
      } else if (!summary->contains(key) || !(*summary)[key].is_number()) {
        c.ok = false;
        c.note = "no '" + key + "' in the stage's summary";
      } else {
        c.measured = (*summary)[key].get<double>();
        c.ok = c.measured <= c.limit;
      }
      checks.push_back(c);
    }
  }
  return checks;
}

std::string budget_margin_text(double over_budget) {
  // A figure on the good side of its budget shows its margin; one past the
  // budget (allowed or not by the tolerance) shows how far past. Within
  // 0.05 % reads as on budget, never as a signed zero.
  const double percent = 100.0 * over_budget;
  if (std::fabs(percent) < 0.05) return "0.0 % inside";
  return percent > 0 ? fmt::format("+{:.1f} % over", percent)
                     : fmt::format("{:.1f} % inside", -percent);
}

std::string check_table(const std::vector<Check>& checks, bool failures_only) {
  std::string out = fmt::format("  {:<34} {:>6} {:>12} {:>12} {:>12} {:>14}  {}\n", "metric",
                                "bound", "budget", "limit", "measured", "vs budget", "status");
  for (const Check& c : checks) {
    if (failures_only && c.ok) continue;
    const std::string measured = c.note.empty() ? format_figure(c.measured) : "-";
    out +=
        fmt::format("  {:<34} {:>6} {:>12} {:>12} {:>12} {:>14}  {}\n", c.metric,
                    c.is_floor ? "floor" : "max", format_figure(c.budget), format_figure(c.limit),
                    measured, c.note.empty() ? budget_margin_text(c.over_budget()) : "-",
                    c.ok ? "ok" : (c.note.empty() ? "EXCEEDED" : "MISSING: " + c.note));
  }
  return out;
}

nlohmann::json to_json(const Check& c) {
  nlohmann::json j = {{"metric", c.metric},
                      {"bound", c.is_floor ? "floor" : "max"},
                      {"budget", c.budget},
                      {"limit", c.limit},
                      {"ok", c.ok},
                      {"note", c.note},
                      {"over_budget", c.over_budget()}};
  j["measured"] = c.note.empty() ? nlohmann::json(c.measured) : nlohmann::json();
  return j;
}

nlohmann::ordered_json rebaseline(const Budget& budget, const nlohmann::json& result) {
  const nlohmann::json& old = budget.document;
  nlohmann::ordered_json doc;
  doc["schema"] = kSchema;
  for (const char* key : {"doc", "topology", "scenario", "set", "seed"}) {
    if (old.contains(key)) doc[key] = old[key];
  }
  doc["tolerance"] = {{"relative", budget.tolerance.relative},
                      {"absolute_ns", budget.tolerance.absolute_ns}};

  // Floors and ceilings keep the file's paths, or take the defaults the
  // result reports.
  auto bounds = [&](const std::map<std::string, double>& old_bounds,
                    const std::vector<std::string>& default_keys, const char* field) {
    std::vector<std::string> paths;
    for (const auto& [path, value] : old_bounds) paths.push_back(path);
    if (paths.empty()) {
      for (const std::string& key : default_keys) {
        const nlohmann::json* v = find_path(result, "summary." + key);
        if (v != nullptr && v->is_number() && v->get<double>() > 0) {
          paths.push_back("summary." + key);
        }
      }
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const std::string& path : paths) {
      const nlohmann::json* v = find_path(result, path);
      if (v == nullptr || !v->is_number()) {
        throw ConfigError(budget.file, child_path(std::string("$.") + field, path), "",
                          "the result of the budget's scenario has no number at this path");
      }
      out[path] = round_significant(v->get<double>(), 4);
    }
    return out;
  };
  doc["floors"] = bounds(budget.floors, default_floor_keys(), "floors");
  nlohmann::ordered_json ceilings = bounds(budget.ceilings, default_ceiling_keys(), "ceilings");
  if (!ceilings.empty()) doc["ceilings"] = std::move(ceilings);

  // The percentile keys the file used (all of them, for every stage).
  std::vector<std::string> keys;
  for (const auto& [stage, ceilings] : budget.latency_ns) {
    for (const auto& [key, ceiling] : ceilings) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  if (keys.empty()) keys = {"p50", "p99"};
  nlohmann::ordered_json latency = nlohmann::ordered_json::object();
  const nlohmann::json* stages = find_path(result, "stages");
  if (stages != nullptr && stages->is_object()) {
    for (auto st = stages->begin(); st != stages->end(); ++st) {
      if (st.value().value("count", 0) == 0) continue;
      nlohmann::ordered_json ceilings = nlohmann::ordered_json::object();
      for (const std::string& key : keys) {
        if (st.value().contains(key) && st.value()[key].is_number()) {
          ceilings[key] = std::round(st.value()[key].get<double>() * 10.0) / 10.0;
        }
      }
      if (!ceilings.empty()) latency[st.key()] = std::move(ceilings);
    }
  }
  doc["latency_ns"] = std::move(latency);
  return doc;
}

std::vector<std::string> budget_files_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path().string());
    }
  }
  if (ec) throw ConfigError(dir, "", "", "cannot list budget files: " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> shipped_budget_files() {
  return budget_files_in(data_dir() + "/scenarios/budgets");
}

}  // namespace gpunvme::budgets
