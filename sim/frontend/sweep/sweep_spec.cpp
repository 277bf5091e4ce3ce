#include "sim/frontend/sweep/sweep_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sim/kernel/build_info.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/system/run/run.h"

namespace gpunvme::sweep {

namespace {

std::string folder_of(const std::string& file) {
  const auto slash = file.find_last_of('/');
  return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// A path in the spec is taken relative to the spec's folder if a file is
// there, else as given (relative to the working directory).
std::string locate(const std::string& spec_file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const std::string beside = folder_of(spec_file) + path;
  return exists(beside) ? beside : path;
}

std::string render(const nlohmann::ordered_json& v) { return v.dump(); }

constexpr std::size_t kMaxRangeValues = 100000;

ConfigError too_many_values(const std::string& file, const std::string& where,
                            const nlohmann::ordered_json& r) {
  return ConfigError(
      file, where, render(r),
      fmt::format("more than {} values; a range gives at most that many", kMaxRangeValues));
}

// An integer range bound as a 64-bit signed integer, the type its values
// take; a bound beyond it (an unsigned literal from 2^63 on) is an error of
// that bound rather than a value that wraps.
std::int64_t integer_bound(const nlohmann::ordered_json& r, const char* key,
                           const std::string& file, const std::string& where) {
  const nlohmann::ordered_json& bound = r[key];
  if (bound.is_number_unsigned() &&
      bound.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw ConfigError(file, where + "." + key, render(bound),
                      fmt::format("an integer range's bounds are 64-bit signed integers, {} to {}",
                                  std::numeric_limits<std::int64_t>::min(),
                                  std::numeric_limits<std::int64_t>::max()));
  }
  return bound.get<std::int64_t>();
}

// {start, stop, step} or {start, stop, factor} of integers, in integer
// arithmetic (exact at every magnitude, where a double is not past 2^53).
// Returns the number of values; appends them to `out` unless it is null.
std::uint64_t integer_range(const nlohmann::ordered_json& r, const std::string& file,
                            const std::string& where, std::vector<nlohmann::json>* out) {
  const std::int64_t start = integer_bound(r, "start", file, where);
  const std::int64_t stop = integer_bound(r, "stop", file, where);
  if (r.contains("step")) {
    const std::int64_t step = integer_bound(r, "step", file, where);
    if (step == 0 || (step > 0 ? stop < start : stop > start)) {
      throw ConfigError(file, where + ".step", render(r["step"]),
                        "must be non-zero and lead from start towards stop");
    }
    // Distances in unsigned arithmetic: stop - start can exceed INT64_MAX.
    const auto ustart = static_cast<std::uint64_t>(start);
    const auto ustep = static_cast<std::uint64_t>(step);
    const std::uint64_t span = step > 0 ? static_cast<std::uint64_t>(stop) - ustart
                                        : ustart - static_cast<std::uint64_t>(stop);
    const std::uint64_t stride = step > 0 ? ustep : std::uint64_t{0} - ustep;
    const std::uint64_t last = span / stride;  // values are start + step * 0..last
    if (last >= kMaxRangeValues) throw too_many_values(file, where, r);
    if (out != nullptr) {
      for (std::uint64_t i = 0; i <= last; ++i) {
        // start + step * i lies between start and stop, so it fits; computed
        // modulo 2^64 and converted back.
        out->emplace_back(static_cast<std::int64_t>(ustart + ustep * i));
      }
    }
    return last + 1;
  }
  const std::int64_t factor = integer_bound(r, "factor", file, where);
  if (factor <= 1 || start <= 0 || stop < start) {
    throw ConfigError(file, where + ".factor", render(r["factor"]),
                      "a geometric range needs factor > 1 and 0 < start <= stop");
  }
  std::uint64_t count = 0;
  for (std::int64_t v = start; v <= stop;) {
    if (count == kMaxRangeValues) throw too_many_values(file, where, r);
    ++count;
    if (out != nullptr) out->emplace_back(v);
    if (v > stop / factor) break;  // the next value passes stop (or INT64_MAX)
    v *= factor;
  }
  return count;
}

// {start, stop, step} (stop included) or {start, stop, factor}: the number
// of values, appended to `out` unless it is null.
std::uint64_t range_values(const nlohmann::ordered_json& r, const std::string& file,
                           const std::string& where, std::vector<nlohmann::json>* out) {
  for (const auto& [key, value] : r.items()) {
    if (key != "start" && key != "stop" && key != "step" && key != "factor") {
      throw ConfigError(file, where + "." + key, render(value),
                        "a range has start, stop and step (or factor)");
    }
    if (!value.is_number()) {
      throw ConfigError(file, where + "." + key, render(value), "expected a number");
    }
    if (value.is_number_float() && !std::isfinite(value.get<double>())) {
      throw ConfigError(file, where + "." + key, render(value), "expected a finite number");
    }
  }
  if (!r.contains("start") || !r.contains("stop") || (r.contains("step") == r.contains("factor"))) {
    throw ConfigError(file, where, render(r),
                      "a range needs start, stop and one of step (arithmetic) or factor "
                      "(geometric)");
  }
  const bool integral =
      r["start"].is_number_integer() && r["stop"].is_number_integer() &&
      (r.contains("step") ? r["step"].is_number_integer() : r["factor"].is_number_integer());
  if (integral) return integer_range(r, file, where, out);
  const double start = r["start"].get<double>();
  const double stop = r["stop"].get<double>();
  if (r.contains("step")) {
    const double step = r["step"].get<double>();
    if (step == 0 || (stop - start) / step < 0) {
      throw ConfigError(file, where + ".step", render(r["step"]),
                        "must be non-zero and lead from start towards stop");
    }
    // Also false for an infinite quotient (a span beyond the largest double).
    const double n = std::floor((stop - start) / step + 1e-9);
    if (!(n < static_cast<double>(kMaxRangeValues))) throw too_many_values(file, where, r);
    const auto last = static_cast<std::int64_t>(n);
    if (out != nullptr) {
      for (std::int64_t i = 0; i <= last; ++i) {
        out->emplace_back(start + step * static_cast<double>(i));
      }
    }
    return static_cast<std::uint64_t>(last) + 1;
  }
  const double factor = r["factor"].get<double>();
  if (factor <= 1.0 || start <= 0 || stop < start) {
    throw ConfigError(file, where + ".factor", render(r["factor"]),
                      "a geometric range needs factor > 1 and 0 < start <= stop");
  }
  std::uint64_t count = 0;
  for (double v = start; v <= stop * (1 + 1e-9); v *= factor) {
    if (count == kMaxRangeValues) throw too_many_values(file, where, r);
    ++count;
    if (out != nullptr) out->emplace_back(v);
  }
  return count;
}

// Checks a swept path and its values (a list, or a range) and returns how
// many values it has, without expanding a range: a sweep already past
// kMaxSweepPoints expands no more of its ranges.
std::uint64_t axis_size(const std::string& path, const nlohmann::ordered_json& value,
                        const std::string& file, const std::string& where) {
  if (path != "seed" && path.rfind("scenario.", 0) != 0 && path.rfind("topology.", 0) != 0) {
    throw ConfigError(file, where, "",
                      "a swept path starts with 'scenario.' or 'topology.', or is 'seed'");
  }
  if (value.is_array()) {
    if (value.empty()) throw ConfigError(file, where, "[]", "expected at least one value");
    return value.size();
  }
  if (value.is_object()) return range_values(value, file, where, nullptr);
  throw ConfigError(file, where, render(value),
                    "expected a list of values or a range {start, stop, step}");
}

// The axis of a path whose values axis_size accepted.
Axis parse_axis(const std::string& path, const nlohmann::ordered_json& value,
                const std::string& file, const std::string& where) {
  Axis axis;
  axis.path = path;
  if (value.is_array()) {
    axis.values.reserve(value.size());
    for (const auto& v : value) axis.values.emplace_back(nlohmann::json::parse(v.dump()));
  } else {
    range_values(value, file, where, &axis.values);
  }
  if (path == "seed") {
    for (const auto& v : axis.values) {
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
        throw ConfigError(file, where, v.dump(), "seeds are non-negative integers");
      }
    }
  }
  return axis;
}

// A group whose values repeat (for a zip group: whose combination of values
// repeats) would run one point twice, under two indices and one key. Values
// compare as JSON does: 4096 and 4096.0 are the same value.
void reject_repeats(const Group& group, const nlohmann::ordered_json& source,
                    const std::string& file, const std::string& where) {
  std::map<std::vector<nlohmann::json>, std::size_t> first_at;
  for (std::size_t i = 0; i < group.size(); ++i) {
    std::vector<nlohmann::json> combination;
    combination.reserve(group.axes.size());
    for (const Axis& axis : group.axes) combination.push_back(axis.values[i]);
    const auto [seen, inserted] = first_at.emplace(std::move(combination), i);
    if (inserted) continue;
    const std::size_t first = seen->second;
    if (group.axes.size() > 1) {
      nlohmann::ordered_json tuple = nlohmann::ordered_json::object();
      for (const Axis& axis : group.axes) {
        tuple[axis.path] = nlohmann::ordered_json::parse(axis.values[i].dump());
      }
      throw ConfigError(file, where, tuple.dump(),
                        fmt::format("the zipped lists give this combination at positions {} and "
                                    "{}; each combination is swept once",
                                    first, i));
    }
    const std::string value = group.axes.front().values[i].dump();
    if (source.is_array()) {
      throw ConfigError(
          file, index_path(where, i), value,
          fmt::format("repeats {}; a swept path takes each value once", index_path(where, first)));
    }
    throw ConfigError(file, where, render(source),
                      fmt::format("the range gives {} at positions {} and {} (its step is below "
                                  "the precision of its numbers); a swept path takes each value "
                                  "once",
                                  value, first, i));
  }
}

// Arrays and objects nested deeper than this are refused before anything
// recursive (copying, printing, comparing) walks the document.
constexpr std::size_t kMaxNesting = 64;

std::string nesting_problem() {
  return fmt::format("arrays and objects nest at most {} deep in a sweep spec", kMaxNesting);
}

void reject_deep_nesting(const nlohmann::ordered_json& doc, const std::string& file) {
  struct Node {
    const nlohmann::ordered_json* value;
    std::string path;
    std::size_t depth;
  };
  std::vector<Node> pending{{&doc, "$", 1}};
  while (!pending.empty()) {
    Node node = std::move(pending.back());
    pending.pop_back();
    if (node.depth > kMaxNesting) {
      throw ConfigError(file, node.path, "", nesting_problem());
    }
    if (node.value->is_array()) {
      for (std::size_t i = 0; i < node.value->size(); ++i) {
        const auto& child = (*node.value)[i];
        if (child.is_structured()) {
          pending.push_back({&child, index_path(node.path, i), node.depth + 1});
        }
      }
    } else if (node.value->is_object()) {
      for (const auto& [key, child] : node.value->items()) {
        if (child.is_structured())
          pending.push_back({&child, node.path + "." + key, node.depth + 1});
      }
    }
  }
}

// The product of the group sizes, or nothing when it exceeds 2^64 - 1.
std::optional<std::uint64_t> exact_product(const std::vector<std::uint64_t>& sizes) {
  std::uint64_t count = 1;
  for (const std::uint64_t size : sizes) {
    if (size != 0 && count > std::numeric_limits<std::uint64_t>::max() / size) return std::nullopt;
    count *= size;
  }
  return count;
}

std::vector<std::uint64_t> group_sizes(const SweepSpec& spec) {
  std::vector<std::uint64_t> sizes;
  for (const Group& g : spec.groups) sizes.push_back(g.size());
  return sizes;
}

// The sweep's point count, or a ConfigError naming it (exactly, or as past
// 2^64 - 1) when it passes kMaxSweepPoints.
std::uint64_t checked_point_count(const std::string& file,
                                  const std::vector<std::uint64_t>& sizes) {
  const std::optional<std::uint64_t> count = exact_product(sizes);
  if (count && *count <= kMaxSweepPoints) return *count;
  std::string factors;
  for (const std::uint64_t size : sizes) {
    factors += (factors.empty() ? "" : " x ") + std::to_string(size);
  }
  const std::string points =
      count ? fmt::format("{} points", *count)
            : fmt::format("more than {} points", std::numeric_limits<std::uint64_t>::max());
  throw ConfigError(
      file, "$.sweep", fmt::format("{} ({})", points, factors),
      fmt::format("a sweep has at most {} points; narrow its ranges or split it", kMaxSweepPoints));
}

// The --set text of one assignment.
std::string assignment(const std::string& path, const nlohmann::json& value) {
  if (path == "seed") return "seed=" + value.dump();
  return path + "=" + value.dump();
}

// The --set path of an assignment (what precedes its first '=').
std::string assigned_path(const std::string& assignment) {
  return assignment.substr(0, assignment.find('='));
}

// "refine": {"metric": PATH, "goal": "max" | "min", "keep": K}, checked
// against the parsed spec (its metrics, its point count, and that nothing
// else sets the fidelity each stage sets: its "set", or its "sweep" object,
// whose paths the spec's parse accepted).
Refine parse_refine(const nlohmann::ordered_json& value, const nlohmann::ordered_json& axes,
                    const SweepSpec& spec, std::uint64_t points, const std::string& file) {
  const std::string where = "$.refine";
  if (!value.is_object()) {
    throw ConfigError(file, where, render(value),
                      "expected {\"metric\": PATH, \"goal\": \"max\" or \"min\", \"keep\": K}");
  }
  const std::vector<std::string> known{"metric", "goal", "keep"};
  for (const auto& [key, item] : value.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      const std::string hint = nearest_name(key, known);
      throw ConfigError(file, where + "." + key, render(item),
                        "unknown field of refine (metric, goal, keep)" +
                            (hint.empty() ? std::string() : "; did you mean '" + hint + "'?"));
    }
  }
  for (const std::string& key : known) {
    if (!value.contains(key))
      throw ConfigError(file, where + "." + key, "", "missing required field");
  }
  Refine refine;
  const nlohmann::ordered_json& metric = value["metric"];
  const bool listed =
      metric.is_string() && std::find(spec.metrics.begin(), spec.metrics.end(),
                                      metric.get<std::string>()) != spec.metrics.end();
  const bool summary_path =
      metric.is_string() && metric.get<std::string>().rfind("summary.", 0) == 0 &&
      metric.get<std::string>().size() > 8 && metric.get<std::string>().back() != '.';
  if (!listed && !summary_path) {
    throw ConfigError(file, where + ".metric", render(metric),
                      "a result path holding a number: summary.FIELD (summary.iops, "
                      "summary.latency_ns.p99) or one of the spec's metrics");
  }
  refine.metric = metric.get<std::string>();
  const nlohmann::ordered_json& goal = value["goal"];
  if (goal != "max" && goal != "min") {
    throw ConfigError(file, where + ".goal", render(goal),
                      "\"max\" (keep the largest values) or \"min\" (the smallest)");
  }
  refine.goal = goal == "max" ? RefineGoal::max : RefineGoal::min;
  const nlohmann::ordered_json& keep = value["keep"];
  const bool whole =
      keep.is_number_unsigned() || (keep.is_number_integer() && keep.get<std::int64_t>() >= 1);
  if (!whole || keep.get<std::uint64_t>() < 1 || keep.get<std::uint64_t>() > points) {
    throw ConfigError(file, where + ".keep", render(keep),
                      fmt::format("an integer from 1 to the sweep's {} points: how many of the "
                                  "best fast-mode points run again in exact mode",
                                  points));
  }
  refine.keep = static_cast<std::size_t>(keep.get<std::uint64_t>());
  // Each stage sets the fidelity; a spec that sets it too would run both
  // stages in one mode or be overridden unseen.
  constexpr const char* kFidelity = "scenario.fidelity";
  const char* const stages_set_it =
      "a sweep with refine sets the fidelity of each stage (fast, then exact); remove this "
      "assignment or the refine";
  for (std::size_t i = 0; i < spec.base_overrides.size(); ++i) {
    if (assigned_path(spec.base_overrides[i]) == kFidelity) {
      throw ConfigError(file, index_path("$.set", i), render(spec.base_overrides[i]),
                        stages_set_it);
    }
  }
  if (axes.contains(kFidelity)) {
    throw ConfigError(file, std::string("$.sweep.") + kFidelity, "", stages_set_it);
  }
  if (axes.contains("zip") && axes["zip"].is_array()) {
    for (std::size_t i = 0; i < axes["zip"].size(); ++i) {
      if (axes["zip"][i].is_object() && axes["zip"][i].contains(kFidelity)) {
        throw ConfigError(file, index_path("$.sweep.zip", i) + "." + kFidelity, "", stages_set_it);
      }
    }
  }
  return refine;
}

}  // namespace

namespace {

SweepSpec parse_checked_spec(const nlohmann::ordered_json& doc, const std::string& file) {
  if (!doc.is_object()) throw ConfigError(file, "$", "", "a sweep spec is a JSON object");
  SweepSpec spec;
  spec.file = file;
  std::vector<std::uint64_t> sizes;  // of every group, expanded or not
  for (const auto& [key, value] : doc.items()) {
    const std::string where = "$." + key;
    if (key == "topology" || key == "scenario") {
      if (!value.is_string()) throw ConfigError(file, where, render(value), "expected a file name");
      (key == "topology" ? spec.topology_file : spec.scenario_file) =
          locate(file, value.get<std::string>());
    } else if (key == "seed") {
      if (!value.is_number_unsigned() &&
          !(value.is_number_integer() && value.get<std::int64_t>() >= 0)) {
        throw ConfigError(file, where, render(value), "expected a non-negative integer");
      }
      spec.seed = value.get<std::uint64_t>();
    } else if (key == "set" || key == "metrics") {
      if (!value.is_array()) throw ConfigError(file, where, render(value), "expected a list");
      for (const auto& item : value) {
        if (!item.is_string()) throw ConfigError(file, where, render(item), "expected strings");
        (key == "set" ? spec.base_overrides : spec.metrics).push_back(item.get<std::string>());
      }
    } else if (key == "sweep") {
      if (!value.is_object()) {
        throw ConfigError(file, where, render(value), "expected an object of paths to values");
      }
      // Groups are expanded while the points stay within kMaxSweepPoints;
      // past it only their sizes are counted, for the error.
      auto within_cap = [&sizes](std::uint64_t size) {
        sizes.push_back(size);
        const std::optional<std::uint64_t> count = exact_product(sizes);
        return count && *count <= kMaxSweepPoints;
      };
      for (const auto& [path, values] : value.items()) {
        if (path == "zip") {
          if (!values.is_array()) {
            throw ConfigError(file, "$.sweep.zip", render(values),
                              "expected a list of objects, each a group of paths advancing "
                              "together");
          }
          for (std::size_t i = 0; i < values.size(); ++i) {
            const std::string zip_where = index_path("$.sweep.zip", i);
            if (!values[i].is_object() || values[i].empty()) {
              throw ConfigError(file, zip_where, render(values[i]),
                                "expected an object of paths to equally long lists");
            }
            std::uint64_t size = 0;
            for (const auto& [zpath, zvalues] : values[i].items()) {
              const std::uint64_t n = axis_size(zpath, zvalues, file, zip_where + "." + zpath);
              if (size == 0) size = n;
              if (n != size) {
                throw ConfigError(
                    file, zip_where + "." + zpath, "",
                    fmt::format("has {} values; the group's first path has {}", n, size));
              }
            }
            if (!within_cap(size)) continue;
            Group group;
            for (const auto& [zpath, zvalues] : values[i].items()) {
              group.axes.push_back(parse_axis(zpath, zvalues, file, zip_where + "." + zpath));
            }
            if (group.axes.size() == 1) {
              reject_repeats(group, values[i].begin().value(), file,
                             zip_where + "." + group.axes.front().path);
            } else {
              reject_repeats(group, values[i], file, zip_where);
            }
            spec.groups.push_back(std::move(group));
          }
          continue;
        }
        const std::string where_path = "$.sweep." + path;
        if (!within_cap(axis_size(path, values, file, where_path))) continue;
        Group group;
        group.axes.push_back(parse_axis(path, values, file, where_path));
        reject_repeats(group, values, file, where_path);
        spec.groups.push_back(std::move(group));
      }
    } else if (key == "refine") {
      continue;  // checked below, against the whole spec
    } else if (key == "name" || key == "doc") {
      continue;
    } else {
      std::vector<std::string> known{"topology", "scenario", "seed", "set", "sweep",
                                     "metrics",  "refine",   "name", "doc"};
      const std::string hint = nearest_name(key, known);
      throw ConfigError(file, where, "",
                        "unknown field of a sweep spec" +
                            (hint.empty() ? std::string() : "; did you mean '" + hint + "'?"));
    }
  }
  if (!doc.contains("sweep")) throw ConfigError(file, "$.sweep", "", "missing required field");
  // Every path appears once.
  std::set<std::string> seen;
  for (const Group& g : spec.groups) {
    for (const Axis& a : g.axes) {
      if (!seen.insert(a.path).second) {
        throw ConfigError(file, "$.sweep", "\"" + a.path + "\"", "a path is swept only once");
      }
    }
  }
  const std::uint64_t points = checked_point_count(file, sizes);
  if (doc.contains("refine")) {
    spec.refine = parse_refine(doc["refine"], doc["sweep"], spec, points, file);
  }
  return spec;
}

}  // namespace

SweepSpec parse_sweep_spec(const nlohmann::ordered_json& doc, const std::string& file) {
  reject_deep_nesting(doc, file);
  try {
    return parse_checked_spec(doc, file);
  } catch (const nlohmann::json::exception& e) {
    // Not reached by a document parsed from text; one built in code may hold
    // what text cannot (a string that is not UTF-8, which cannot be printed).
    throw ConfigError(file, "$", "", std::string("not a valid sweep spec: ") + e.what());
  }
}

SweepSpec parse_sweep_spec_text(const std::string& text, const std::string& file) {
  // NUL bytes, bad UTF-8 and deep nesting are refused before parsing, as for
  // every JSON input; parse_sweep_spec holds the spec itself to kMaxNesting.
  check_json_text(text, file);
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e400).
    throw ConfigError(file, "", "", std::string("not valid JSON: ") + e.what());
  }
  return parse_sweep_spec(doc, file);
}

SweepSpec load_sweep_spec(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file, "", "", "cannot open sweep spec");
  std::stringstream text;
  text << in.rdbuf();
  return parse_sweep_spec_text(text.str(), file);
}

std::size_t point_count(const SweepSpec& spec) {
  // A spec from parse_sweep_spec has at most kMaxSweepPoints; one assembled
  // in code is held to the same bound rather than wrapping.
  return static_cast<std::size_t>(checked_point_count(spec.file, group_sizes(spec)));
}

namespace {
// FNV-1a, 64 bits: stable across runs and platforms (std::hash is not).
std::uint64_t fnv1a(const std::string& text, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (const unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// A file's contents, hashed; "" when there is no file to read (the shipped
// default topology is named by "").
std::string file_hash(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return fmt::format("{:016x}", fnv1a(text.str()));
}
}  // namespace

nlohmann::ordered_json spec_identity(const SweepSpec& spec) {
  nlohmann::ordered_json id;
  id["scenario"] = spec.scenario_file;
  id["scenario_hash"] = file_hash(spec.scenario_file);
  id["topology"] = spec.topology_file;
  id["topology_hash"] = file_hash(spec.topology_file);
  id["set"] = spec.base_overrides;
  id["seed"] = spec.seed;
  return id;
}

std::string spec_id(const SweepSpec& spec) {
  return fmt::format("{:016x}", fnv1a(spec_identity(spec).dump()));
}

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::fast: return "fast";
    case Stage::exact: return "exact";
    case Stage::plain: break;
  }
  return "";
}

std::string stage_spec_id(const SweepSpec& spec, Stage stage) {
  if (stage == Stage::plain) return spec_id(spec);
  nlohmann::ordered_json id = spec_identity(spec);
  id["refine_stage"] = stage_name(stage);
  return fmt::format("{:016x}", fnv1a(id.dump()));
}

SweepPoint stage_point(SweepPoint point, Stage stage, const std::string& stage_id) {
  if (stage == Stage::plain) return point;
  // Last, so that it holds over the scenario file's own fidelity.
  point.overrides.push_back(std::string("scenario.fidelity=") + stage_name(stage));
  point.spec_id = stage_id;
  point.stage = stage;
  return point;
}

std::string resume_key(const std::string& key, const std::string& spec_id) {
  return spec_id + " " + key;
}

SweepPoints::SweepPoints(const SweepSpec& spec)
    : spec_(spec), count_(point_count(spec)), spec_id_(spec_id(spec)) {}

SweepPoint SweepPoints::operator[](std::size_t index) const {
  SweepPoint p;
  p.index = index;
  p.seed = spec_.seed;
  p.params = nlohmann::ordered_json::object();
  p.overrides = spec_.base_overrides;
  // Mixed radix over the group sizes, the last group varying fastest.
  std::vector<std::size_t> position(spec_.groups.size());
  std::size_t rest = index;
  for (std::size_t g = spec_.groups.size(); g-- > 0;) {
    position[g] = rest % spec_.groups[g].size();
    rest /= spec_.groups[g].size();
  }
  for (std::size_t g = 0; g < spec_.groups.size(); ++g) {
    for (const Axis& axis : spec_.groups[g].axes) {
      const nlohmann::json& value = axis.values[position[g]];
      p.params[axis.path] = value;
      if (axis.path == "seed") {
        p.seed = value.get<std::uint64_t>();
      } else {
        p.overrides.push_back(assignment(axis.path, value));
      }
    }
  }
  p.key = p.params.dump();
  p.spec_id = spec_id_;
  return p;
}

std::vector<SweepPoint> expand(const SweepSpec& spec) {
  const SweepPoints sequence(spec);
  std::vector<SweepPoint> points;
  points.reserve(sequence.size());
  for (std::size_t index = 0; index < sequence.size(); ++index) points.push_back(sequence[index]);
  return points;
}

namespace {
nlohmann::ordered_json base_row(const SweepSpec& spec, const SweepPoint& point) {
  nlohmann::ordered_json row;
  row["index"] = point.index;
  row["key"] = point.key;
  row["spec_id"] = point.spec_id;
  if (point.stage != Stage::plain) row["refine"] = {{"stage", stage_name(point.stage)}};
  row["params"] = point.params;
  row["seed"] = point.seed;
  row["gpunvme"] = build_info_json();
  row["topology"] = spec.topology_file;
  row["scenario_file"] = spec.scenario_file;
  // The row alone says how to rerun its point: the base overrides, and the
  // topology's changes (the resolved scenario is in "config"; the topology
  // is the file plus these).
  row["set"] = spec.base_overrides;
  std::vector<std::string> topology_overrides;
  for (const std::string& o : point.overrides) {
    if (o.rfind("topology.", 0) == 0) topology_overrides.push_back(o);
  }
  row["topology_overrides"] = topology_overrides;
  return row;
}

// A value of the result at a dotted path, or null.
nlohmann::json at_path(const nlohmann::json& doc, const std::string& path) {
  const nlohmann::json* node = &doc;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return *node;
}
}  // namespace

nlohmann::ordered_json failed_row(const SweepSpec& spec, const SweepPoint& point,
                                  const std::string& error) {
  nlohmann::ordered_json row = base_row(spec, point);
  row["config"] = nullptr;
  row["summary"] = nullptr;
  row["error"] = error;
  return row;
}

nlohmann::ordered_json run_point(const SweepSpec& spec, const SweepPoint& point) {
  try {
    const RunConfig config =
        load_config(spec.topology_file, spec.scenario_file, point.overrides, point.seed);
    const nlohmann::json result = run(config);
    nlohmann::ordered_json row = base_row(spec, point);
    row["config"] = nlohmann::ordered_json::parse(result["config"]["scenario"].dump());
    row["summary"] = nlohmann::ordered_json::parse(result["summary"].dump());
    if (!spec.metrics.empty()) {
      nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
      for (const std::string& m : spec.metrics) {
        metrics[m] = nlohmann::ordered_json::parse(at_path(result, m).dump());
      }
      row["metrics"] = std::move(metrics);
    }
    row["error"] = nullptr;
    return row;
  } catch (const std::exception& e) {
    return failed_row(spec, point, e.what());
  }
}

}  // namespace gpunvme::sweep
