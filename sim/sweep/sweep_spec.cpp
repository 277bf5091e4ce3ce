#include "sim/sweep/sweep_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/config/config_error.h"
#include "sim/config/json_path.h"
#include "sim/run/run.h"

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

// {start, stop, step} (stop included) or {start, stop, factor}.
std::vector<nlohmann::json> range_values(const nlohmann::ordered_json& r, const std::string& file,
                                         const std::string& where) {
  for (const auto& [key, value] : r.items()) {
    if (key != "start" && key != "stop" && key != "step" && key != "factor") {
      throw ConfigError(file, where + "." + key, render(value),
                        "a range has start, stop and step (or factor)");
    }
    if (!value.is_number()) {
      throw ConfigError(file, where + "." + key, render(value), "expected a number");
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
  const double start = r["start"].get<double>();
  const double stop = r["stop"].get<double>();
  std::vector<nlohmann::json> values;
  auto push = [&](double v) {
    if (integral) {
      values.emplace_back(static_cast<std::int64_t>(std::llround(v)));
    } else {
      values.emplace_back(v);
    }
  };
  constexpr std::size_t kMaxValues = 100000;
  if (r.contains("step")) {
    const double step = r["step"].get<double>();
    if (step == 0 || (stop - start) / step < 0) {
      throw ConfigError(file, where + ".step", render(r["step"]),
                        "must be non-zero and lead from start towards stop");
    }
    const double n = std::floor((stop - start) / step + 1e-9);
    if (n + 1 > kMaxValues) throw ConfigError(file, where, render(r), "more than 100,000 values");
    for (std::int64_t i = 0; i <= static_cast<std::int64_t>(n); ++i) push(start + step * i);
  } else {
    const double factor = r["factor"].get<double>();
    if (factor <= 1.0 || start <= 0 || stop < start) {
      throw ConfigError(file, where + ".factor", render(r["factor"]),
                        "a geometric range needs factor > 1 and 0 < start <= stop");
    }
    for (double v = start; v <= stop * (1 + 1e-9); v *= factor) {
      if (values.size() == kMaxValues) {
        throw ConfigError(file, where, render(r), "more than 100,000 values");
      }
      push(v);
    }
  }
  return values;
}

Axis parse_axis(const std::string& path, const nlohmann::ordered_json& value,
                const std::string& file, const std::string& where) {
  if (path != "seed" && path.rfind("scenario.", 0) != 0 && path.rfind("topology.", 0) != 0) {
    throw ConfigError(file, where, "",
                      "a swept path starts with 'scenario.' or 'topology.', or is 'seed'");
  }
  Axis axis;
  axis.path = path;
  if (value.is_array()) {
    if (value.empty()) throw ConfigError(file, where, "[]", "expected at least one value");
    for (const auto& v : value) axis.values.emplace_back(nlohmann::json::parse(v.dump()));
  } else if (value.is_object()) {
    axis.values = range_values(value, file, where);
  } else {
    throw ConfigError(file, where, render(value),
                      "expected a list of values or a range {start, stop, step}");
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

// The --set text of one assignment.
std::string assignment(const std::string& path, const nlohmann::json& value) {
  if (path == "seed") return "seed=" + value.dump();
  return path + "=" + value.dump();
}

}  // namespace

SweepSpec parse_sweep_spec(const nlohmann::ordered_json& doc, const std::string& file) {
  if (!doc.is_object()) throw ConfigError(file, "$", "", "a sweep spec is a JSON object");
  SweepSpec spec;
  spec.file = file;
  for (const auto& [key, value] : doc.items()) {
    const std::string where = "$." + key;
    if (key == "topology" || key == "scenario") {
      if (!value.is_string()) throw ConfigError(file, where, render(value), "expected a file name");
      (key == "topology" ? spec.topology_file : spec.scenario_file) =
          locate(file, value.get<std::string>());
    } else if (key == "seed") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 0) {
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
            Group group;
            for (const auto& [zpath, zvalues] : values[i].items()) {
              group.axes.push_back(parse_axis(zpath, zvalues, file, zip_where + "." + zpath));
              if (group.axes.back().values.size() != group.axes.front().values.size()) {
                throw ConfigError(
                    file, zip_where + "." + zpath, "",
                    fmt::format("has {} values; the group's first path has {}",
                                group.axes.back().values.size(), group.axes.front().values.size()));
              }
            }
            spec.groups.push_back(std::move(group));
          }
          continue;
        }
        Group group;
        group.axes.push_back(parse_axis(path, values, file, "$.sweep." + path));
        spec.groups.push_back(std::move(group));
      }
    } else if (key == "name" || key == "doc") {
      continue;
    } else {
      std::vector<std::string> known{"topology", "scenario", "seed", "set",
                                     "sweep",    "metrics",  "name", "doc"};
      const std::string hint = nearest_name(key, known);
      throw ConfigError(file, where, "",
                        "unknown field of a sweep spec" +
                            (hint.empty() ? std::string() : "; did you mean '" + hint + "'?"));
    }
  }
  if (!doc.contains("sweep")) throw ConfigError(file, "$.sweep", "", "missing required field");
  // Every path appears once.
  std::vector<std::string> seen;
  for (const Group& g : spec.groups) {
    for (const Axis& a : g.axes) {
      if (std::find(seen.begin(), seen.end(), a.path) != seen.end()) {
        throw ConfigError(file, "$.sweep", "\"" + a.path + "\"", "a path is swept only once");
      }
      seen.push_back(a.path);
    }
  }
  return spec;
}

SweepSpec load_sweep_spec(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw ConfigError(file, "", "", "cannot open sweep spec");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(file, "", "", std::string("not valid JSON: ") + e.what());
  }
  return parse_sweep_spec(doc, file);
}

std::size_t point_count(const SweepSpec& spec) {
  std::size_t n = 1;
  for (const Group& g : spec.groups) n *= g.size();
  return n;
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

std::string resume_key(const std::string& key, const std::string& spec_id) {
  return spec_id + " " + key;
}

std::vector<SweepPoint> expand(const SweepSpec& spec) {
  std::vector<SweepPoint> points;
  const std::string id = spec_id(spec);
  const std::size_t total = point_count(spec);
  points.reserve(total);
  for (std::size_t index = 0; index < total; ++index) {
    SweepPoint p;
    p.index = index;
    p.seed = spec.seed;
    p.params = nlohmann::ordered_json::object();
    p.overrides = spec.base_overrides;
    // The last group varies fastest.
    std::size_t rest = index;
    std::vector<std::size_t> position(spec.groups.size());
    for (std::size_t g = spec.groups.size(); g-- > 0;) {
      position[g] = rest % spec.groups[g].size();
      rest /= spec.groups[g].size();
    }
    for (std::size_t g = 0; g < spec.groups.size(); ++g) {
      for (const Axis& axis : spec.groups[g].axes) {
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
    p.spec_id = id;
    points.push_back(std::move(p));
  }
  return points;
}

namespace {
nlohmann::ordered_json base_row(const SweepSpec& spec, const SweepPoint& point) {
  nlohmann::ordered_json row;
  row["index"] = point.index;
  row["key"] = point.key;
  row["spec_id"] = point.spec_id;
  row["params"] = point.params;
  row["seed"] = point.seed;
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
