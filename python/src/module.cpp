// _gpunvme: the simulator library for Python. A thin layer: documents cross
// the boundary as JSON text, which the pure-Python package `gpunvme` turns
// into dicts, classes and DataFrames. Configuration errors become the
// package's gpunvme.ConfigError with the same fields and message as the CLI.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/nvmf/nvmf.h"
#include "sim/frontend/budgets/budgets.h"
#include "sim/frontend/sweep/refine.h"
#include "sim/frontend/sweep/sweep_spec.h"
#include "sim/kernel/build_info.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/kernel/params/param_spec.h"
#include "sim/system/run/catalog.h"
#include "sim/system/run/run.h"
#include "sim/system/trace/trace_writer.h"

namespace py = pybind11;
using nlohmann::json;

namespace {

using namespace gpunvme;

// Where Python-side documents come from in error messages.
constexpr const char* kPythonOrigin = "<python>";

// SystemC keeps one global kernel context, so simulations in one process run
// one at a time; the GIL is released meanwhile so that other Python threads
// (a Dask worker's heartbeats, a notebook's UI) keep running.
std::mutex& simulation_mutex() {
  static std::mutex m;
  return m;
}

// The Python exception class that ConfigError becomes, registered by the
// package at import (gpunvme/errors.py).
py::object& config_error_class() {
  static py::object* cls = new py::object();
  return *cls;
}

json parse(const std::string& text, const char* what) {
  try {
    return parse_json_text(text, kPythonOrigin);
  } catch (const ConfigError& e) {
    throw ConfigError(kPythonOrigin, "$", "", std::string(what) + ": " + e.problem());
  }
}

// {"topology_file", "topology", "scenario_file", "scenario", "seed"} <-> RawConfig.
RawConfig raw_from_json(const std::string& text) {
  const json doc = parse(text, "configuration");
  if (!doc.is_object()) throw ConfigError(kPythonOrigin, "$", render_value(doc), "expected a dict");
  RawConfig raw;
  for (const char* key : {"topology_file", "scenario_file"}) {
    if (doc.contains(key) && !doc[key].is_string()) {
      throw ConfigError(kPythonOrigin, std::string("$.") + key, render_value(doc[key]),
                        "expected a string");
    }
  }
  raw.topology_file = doc.value("topology_file", std::string(kPythonOrigin));
  raw.scenario_file = doc.value("scenario_file", std::string(kPythonOrigin));
  raw.topology = doc.value("topology", json::object());
  raw.scenario = doc.value("scenario", json::object());
  if (doc.contains("seed")) {
    if (!doc["seed"].is_number_unsigned()) {
      throw ConfigError(kPythonOrigin, "seed", render_value(doc["seed"]),
                        "expected a non-negative integer");
    }
    raw.seed = doc["seed"].get<std::uint64_t>();
  }
  // The fields earlier set() calls changed, so that errors blame those calls.
  if (doc.contains("overrides")) {
    const json& overrides = doc["overrides"];
    auto text = [](const json& o, const char* key) {
      return o.is_object() && o.contains(key) && o[key].is_string();
    };
    if (!overrides.is_array()) {
      throw ConfigError(kPythonOrigin, "$.overrides", render_value(overrides), "expected a list");
    }
    for (std::size_t i = 0; i < overrides.size(); ++i) {
      const json& o = overrides[i];
      if (!text(o, "file") || !text(o, "path") || !text(o, "origin")) {
        throw ConfigError(kPythonOrigin, "$.overrides[" + std::to_string(i) + "]", render_value(o),
                          "expected {\"file\": str, \"path\": str, \"origin\": str}");
      }
      raw.overrides.push_back(OverrideOrigin{o["file"].get<std::string>(),
                                             o["path"].get<std::string>(),
                                             o["origin"].get<std::string>()});
    }
  }
  return raw;
}

std::string raw_to_json(const RawConfig& raw) {
  json doc{{"topology_file", raw.topology_file},
           {"topology", raw.topology},
           {"scenario_file", raw.scenario_file},
           {"scenario", raw.scenario},
           {"seed", raw.seed}};
  if (!raw.overrides.empty()) {
    json overrides = json::array();
    for (const OverrideOrigin& o : raw.overrides) {
      overrides.push_back({{"file", o.file}, {"path", o.path}, {"origin", o.origin}});
    }
    doc["overrides"] = std::move(overrides);
  }
  return doc.dump();
}

json param_json(const ParamSpec& p) {
  json j = {{"name", p.name},          {"type", to_string(p.type)},
            {"unit", p.unit},          {"default", p.default_value},
            {"doc", described_doc(p)}, {"source", p.source}};
  if (!p.kinds.empty()) j["kinds"] = p.kinds;
  if (p.min) j["min"] = *p.min;
  if (p.max) j["max"] = *p.max;
  if (!p.choices.empty()) j["choices"] = p.choices;
  if (!p.allowed.empty()) j["allowed"] = p.allowed;
  return j;
}

json spec_json(const ComponentSpec& spec) {
  json params = json::array();
  for (const ParamSpec& p : spec.params) params.push_back(param_json(p));
  return {{"doc", spec.doc}, {"params", params}};
}

std::string catalog_json() {
  const Catalog& c = catalog();
  json out = json::object();
  for (const ComponentSpec& s : c.node_kinds) out[s.kind] = spec_json(s);
  for (const ComponentSpec* s : {&c.link, &c.topology, &c.scenario}) out[s->kind] = spec_json(*s);
  // The network and remote-storage models, declared apart from the topology's kinds.
  for (const ComponentSpec& s : nvmf::remote_storage_specs()) {
    if (!out.contains(s.kind)) out[s.kind] = spec_json(s);
  }
  return out.dump();
}

// JSON text of a document that holds strings the user gave: bytes that are
// not UTF-8 become U+FFFD instead of failing the call after the work is done.
std::string text_of(const json& document) {
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

json run_locked(const RunConfig& config, const RunOptions& options = RunOptions{}) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(simulation_mutex());
  return run(config, options);
}

// The CLI's --trace, --trace-limit-mb and --trace-window as run()'s
// trace, trace_limit_mb and trace_window (START:END text, as the option takes).
RunOptions trace_options(const std::string& trace_file, double trace_limit_mb,
                         const std::string& trace_window) {
  RunOptions options;
  if (!(trace_limit_mb >= 0.1 && trace_limit_mb <= 1e6)) {
    throw ConfigError(kPythonOrigin, "trace_limit_mb", fmt::format("{}", trace_limit_mb),
                      "expected 0.1 to 1e6 (MB), as --trace-limit-mb");
  }
  if (trace_file.empty() && !trace_window.empty()) {
    throw ConfigError(kPythonOrigin, "trace_window", trace_window,
                      "a trace window needs a trace file (trace=PATH)");
  }
  options.trace_file = trace_file;
  options.trace_limit_bytes = static_cast<std::uint64_t>(trace_limit_mb * 1e6);
  if (!trace_window.empty()) {
    options.trace_window = trace::parse_trace_window(trace_window, kPythonOrigin);
  }
  return options;
}

std::string budget_check(const std::string& file) {
  const budgets::Budget budget = budgets::load_budget(file);
  const json result = run_locked(budgets::budget_config(budget));
  const std::vector<budgets::Check> checks = budgets::check_budget(budget, result);
  json out = {{"name", budget.name}, {"file", budget.file}, {"doc", budget.doc}};
  out["checks"] = json::array();
  bool ok = true;
  for (const budgets::Check& c : checks) {
    out["checks"].push_back(budgets::to_json(c));
    ok = ok && c.ok;
  }
  out["ok"] = ok;
  out["table"] = budgets::check_table(checks, false);
  out["failures_table"] = budgets::check_table(checks, true);
  out["summary"] = result.at("summary");
  out["gpunvme"] = result.at("gpunvme");
  return out.dump();
}

std::string budget_rebaseline(const std::string& file) {
  const budgets::Budget budget = budgets::load_budget(file);
  const json result = run_locked(budgets::budget_config(budget));
  return budgets::rebaseline(budget, result).dump(2) + "\n";
}

// A parsed sweep spec and its points, as the `gpunvme sweep` command expands
// them, so that a sweep from Python has exactly the CLI's points and keys.
std::string sweep_json(const sweep::SweepSpec& spec) {
  nlohmann::ordered_json out;
  out["file"] = spec.file;
  out["topology_file"] = spec.topology_file;
  out["scenario_file"] = spec.scenario_file;
  out["seed"] = spec.seed;
  out["set"] = spec.base_overrides;
  out["metrics"] = spec.metrics;
  if (spec.refine.enabled()) {
    out["refine"] = {{"metric", spec.refine.metric},
                     {"goal", spec.refine.goal == sweep::RefineGoal::max ? "max" : "min"},
                     {"keep", spec.refine.keep}};
  } else {
    out["refine"] = nullptr;
  }
  out["points"] = nlohmann::ordered_json::array();
  for (const sweep::SweepPoint& p : sweep::expand(spec)) {
    out["points"].push_back(
        {{"index", p.index}, {"key", p.key}, {"params", p.params}, {"seed", p.seed}});
  }
  return out.dump();
}

// A refined sweep's settings as sweep_json gives them ({metric, goal, keep}),
// for the ranking and comparison below: the CLI's code ranks Python's rows.
sweep::SweepSpec refine_spec(const std::string& file, const std::string& refine_json) {
  const nlohmann::ordered_json refine = nlohmann::ordered_json::parse(refine_json);
  sweep::SweepSpec spec;
  spec.file = file;
  spec.refine.metric = refine.at("metric").get<std::string>();
  spec.refine.goal = refine.at("goal").get<std::string>() == "min" ? sweep::RefineGoal::min
                                                                   : sweep::RefineGoal::max;
  spec.refine.keep = refine.at("keep").get<std::size_t>();
  return spec;
}

// The fast stage's rows (a JSON array) ranked by the refine metric, best
// first, as [{index, value}]; failed rows are left out. ConfigError (at
// $.refine.metric) for a row that succeeded without a number there.
std::string sweep_refine_rank(const std::string& file, const std::string& refine_json,
                              const std::string& rows_json) {
  const sweep::SweepSpec spec = refine_spec(file, refine_json);
  std::vector<sweep::RankedPoint> points;
  for (const auto& row : nlohmann::ordered_json::parse(rows_json)) {
    if (const std::optional<ConfigError> problem = sweep::metric_problem(spec, row)) {
      throw *problem;
    }
    if (const std::optional<double> value = sweep::metric_value(row, spec.refine.metric)) {
      points.push_back({row.at("index").get<std::size_t>(), *value});
    }
  }
  nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
  for (const sweep::RankedPoint& p : sweep::rank_points(std::move(points), spec.refine.goal)) {
    ranked.push_back({{"index", p.index}, {"value", p.value}});
  }
  return ranked.dump();
}

sweep::Finalist finalist_of(const nlohmann::ordered_json& f) {
  sweep::Finalist finalist;
  finalist.index = f.at("index").get<std::size_t>();
  finalist.key = f.at("key").get<std::string>();
  finalist.fast_rank = f.at("fast_rank").get<std::size_t>();
  finalist.fast = f.at("fast").get<double>();
  if (f.contains("exact") && f["exact"].is_number()) finalist.exact = f["exact"].get<double>();
  return finalist;
}

// PREFIX.refine.json's text (as gpunvme sweep writes it) and the log line.
std::pair<std::string, std::string> sweep_refine_compare(const std::string& refine_json,
                                                         std::size_t points, std::size_t ranked,
                                                         const std::string& finalists_json,
                                                         const std::string& first_pruned_json) {
  const sweep::SweepSpec spec = refine_spec(kPythonOrigin, refine_json);
  std::vector<sweep::Finalist> finalists;
  for (const auto& f : nlohmann::ordered_json::parse(finalists_json)) {
    finalists.push_back(finalist_of(f));
  }
  const nlohmann::ordered_json pruned = nlohmann::ordered_json::parse(first_pruned_json);
  std::optional<sweep::Finalist> first_pruned;
  if (pruned.is_object()) first_pruned = finalist_of(pruned);
  const nlohmann::ordered_json comparison =
      sweep::compare_finalists(spec.refine, points, ranked, finalists, first_pruned);
  return {comparison.dump(2) + "\n", sweep::comparison_line(comparison)};
}

}  // namespace

PYBIND11_MODULE(_gpunvme, m) {
  m.doc() =
      "gpunvme's C++ library (configuration, validation, runs, budgets) with JSON text in and "
      "out; use the gpunvme package, which wraps it in dicts and DataFrames.";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigError& e) {
      py::object& cls = config_error_class();
      if (!cls) {
        PyErr_SetString(PyExc_ValueError, e.what());
        return;
      }
      py::object error = cls(e.file(), e.path(), e.value(), e.problem(), e.what());
      PyErr_SetObject(cls.ptr(), error.ptr());
    }
  });

  m.def(
      "_register_config_error", [](py::object cls) { config_error_class() = std::move(cls); },
      "Sets the Python class that configuration errors are raised as; called with "
      "gpunvme.ConfigError by the package at import. The class is called as "
      "cls(file, path, value, problem, message).",
      py::arg("cls"));
  m.attr("__version__") = build_version();
  m.def(
      "build_info", [] { return build_info_json().dump(); },
      "The build's version and git commit, as JSON text {version, commit}: the \"gpunvme\" "
      "block of every result.");
  m.def("data_dir", &data_dir,
        "The shipped data (configs/, scenarios/): $GPUNVME_DATA_DIR, else share/gpunvme "
        "in the nearest folder above this module (the install prefix, or the build tree).");
  m.def("source_dir", &data_dir, "The same folder as data_dir().");
  m.def("default_topology_file", &default_topology_file, "Path of the shipped default topology.");
  m.def("default_scenario_file", &default_scenario_file, "Path of the shipped default scenario.");
  m.def(
      "load_raw",
      [](const std::string& topology_file, const std::string& scenario_file) {
        return raw_to_json(load_raw_config(topology_file, scenario_file));
      },
      "Reads a topology and a scenario file (empty: the shipped defaults) into a raw "
      "configuration, as JSON text {topology_file, topology, scenario_file, scenario, seed}.",
      py::arg("topology_file") = "", py::arg("scenario_file") = "");
  m.def(
      "apply_set",
      [](const std::string& raw_json, const std::string& assignment) {
        RawConfig raw = raw_from_json(raw_json);
        apply_set(raw, assignment);
        return raw_to_json(raw);
      },
      "Applies one `topology.PATH=V`, `scenario.PATH=V` or `seed=N` assignment (the CLI's "
      "--set) to a raw configuration given as JSON text; returns the new JSON text, whose "
      "`overrides` list the fields set so far: a value one of them set that fails validation "
      "is blamed on it (`--set scenario.iodepth=0`), as on the command line.",
      py::arg("raw_json"), py::arg("assignment"));
  m.def(
      "resolve",
      [](const std::string& raw_json) {
        return text_of(resolve_config(raw_from_json(raw_json)).to_json());
      },
      "Validates a raw configuration (JSON text) and returns the fully resolved configuration "
      "as JSON text, as every result records it.",
      py::arg("raw_json"));
  m.def(
      "run",
      [](const std::string& raw_json, const std::string& trace_file, double trace_limit_mb,
         const std::string& trace_window) {
        const RunOptions options = trace_options(trace_file, trace_limit_mb, trace_window);
        const RunConfig config = resolve_config(raw_from_json(raw_json));
        return text_of(run_locked(config, options));
      },
      "Validates and runs a raw configuration (JSON text); returns the result as JSON text. "
      "trace_file, trace_limit_mb and trace_window (\"START:END\" in microseconds) are the "
      "CLI's --trace, --trace-limit-mb and --trace-window. Runs in one process are "
      "serialized; the GIL is released while one runs.",
      py::arg("raw_json"), py::arg("trace_file") = "", py::arg("trace_limit_mb") = 64.0,
      py::arg("trace_window") = "");
  m.def(
      "summary_table",
      [](const std::string& result_json) { return summary_table(parse(result_json, "result")); },
      "The CLI's human-readable summary of a result given as JSON text.", py::arg("result_json"));
  m.def("catalog", &catalog_json,
        "Every component kind with its declared parameters (name, type, unit, default, range, "
        "doc, source), as JSON text.");
  m.def("wall_clock_fields", &wall_clock_fields,
        "Keys of result.summary that depend on the host machine, not on the simulation.");
  m.def(
      "sweep_spec",
      [](const std::string& spec_json, const std::string& file) {
        return sweep_json(sweep::parse_sweep_spec_text(spec_json, file));
      },
      "Parses a sweep spec given as JSON text (`file` names it in errors and anchors its "
      "relative paths) and expands it; returns JSON text {file, topology_file, scenario_file, "
      "seed, set, metrics, points: [{index, key, params, seed}]}.",
      py::arg("spec_json"), py::arg("file") = kPythonOrigin);
  m.def(
      "sweep_load_spec",
      [](const std::string& file) { return sweep_json(sweep::load_sweep_spec(file)); },
      "Reads a sweep spec file and expands it; returns JSON text as sweep_spec does.",
      py::arg("file"));
  m.def("sweep_refine_rank", &sweep_refine_rank,
        "Ranks a refined sweep's fast rows (JSON text, a list) by its refine settings (JSON "
        "text {metric, goal, keep}) as gpunvme sweep does; returns JSON text [{index, value}], "
        "best first. ConfigError at $.refine.metric (naming `file`) for a row that succeeded "
        "without a number at the metric.",
        py::arg("file"), py::arg("refine_json"), py::arg("rows_json"));
  m.def("sweep_refine_compare", &sweep_refine_compare,
        "A refined sweep's comparison of its finalists' fast and exact values: (the text of "
        "PREFIX.refine.json as gpunvme sweep writes it, its refine: log line). Finalists are "
        "JSON text [{index, key, fast_rank, fast, exact}] in fast order; first_pruned_json is "
        "one such object (without exact) or null.",
        py::arg("refine_json"), py::arg("points"), py::arg("ranked"), py::arg("finalists_json"),
        py::arg("first_pruned_json"));
  m.def(
      "budget_files",
      [](const std::string& dir) {
        return dir.empty() ? budgets::shipped_budget_files() : budgets::budget_files_in(dir);
      },
      "Budget files of a folder, sorted (empty: the shipped scenarios/budgets/).",
      py::arg("dir") = "");
  m.def(
      "budget_load",
      [](const std::string& file) { return budgets::load_budget(file).document.dump(); },
      "Reads and validates a budget file; returns its document as JSON text.", py::arg("file"));
  m.def("budget_check", &budget_check,
        "Runs a budget file's scenario and compares it with the budget; returns JSON text "
        "{name, file, doc, ok, checks, table, failures_table, summary}.",
        py::arg("file"));
  m.def("budget_rebaseline", &budget_rebaseline,
        "Runs a budget file's scenario and returns the re-baselined budget document as JSON "
        "text (the file itself is not written).",
        py::arg("file"));
}
