// gpunvme: the command line over the simulator library.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "models/nvmf/nvmf.h"
#include "models/topology/topology_graph.h"
#include "sim/frontend/budgets/budgets.h"
#include "sim/frontend/sweep/sweep_runner.h"
#include "sim/frontend/validate/validate.h"
#include "sim/kernel/build_info.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/param_spec.h"
#include "sim/system/config/config_schema.h"
#include "sim/system/config/resource_limits.h"
#include "sim/system/run/catalog.h"
#include "sim/system/run/run.h"
#include "sim/system/run/setup_checks.h"
#include "sim/system/run/tenants.h"

namespace {

using namespace gpunvme;

constexpr int kBadInput = 2;

void print_spec(const ComponentSpec& spec) {
  std::cout << spec.kind << ": " << spec.doc << "\n";
  for (const ParamSpec& p : spec.params) {
    std::string range;
    if (!p.allowed.empty()) {
      for (auto a : p.allowed) range += (range.empty() ? "" : "|") + std::to_string(a);
    } else if (!p.choices.empty()) {
      for (const auto& c : p.choices) range += (range.empty() ? "" : "|") + c;
    } else if (p.min && p.max) {
      range = fmt::format("{}..{}", *p.min, *p.max);
    }
    std::cout << fmt::format("  {:<26} {:<8} {:<6} default {}{}\n", p.name, to_string(p.type),
                             p.unit,
                             p.default_value.is_null() ? "(required)" : p.default_value.dump(),
                             range.empty() ? "" : "  [" + range + "]");
    std::cout << fmt::format("      {}\n      source: {}\n", described_doc(p), p.source);
  }
}

int describe(const std::string& kind, bool json_schema) {
  const Catalog& c = catalog();
  if (json_schema) {
    if (!kind.empty() && kind != "topology" && kind != "scenario") {
      std::cerr << "gpunvme describe --json-schema: '" << kind
                << "' is not a file kind; expected topology, scenario or nothing (either)\n";
      return kBadInput;
    }
    std::cout << config_json_schema(c, kind, &tenants_spec(), &tenant_spec()).dump(2) << "\n";
    return 0;
  }
  std::vector<const ComponentSpec*> all;
  for (const ComponentSpec& s : c.node_kinds) all.push_back(&s);
  all.push_back(&c.link);
  all.push_back(&c.topology);
  all.push_back(&c.scenario);
  static const std::vector<ComponentSpec> remote_kinds = nvmf::remote_storage_specs();
  all.push_back(&tenants_spec());
  all.push_back(&tenant_spec());
  // Kinds that are also topology nodes are listed once, among the nodes.
  const ComponentSpec* first_remote = nullptr;
  for (const ComponentSpec& s : remote_kinds) {
    if (c.node_kind(s.kind) != nullptr) continue;
    if (first_remote == nullptr) first_remote = &s;
    all.push_back(&s);
  }
  if (kind.empty()) {
    std::cout << "Component kinds (gpunvme describe KIND for parameters):\n";
    for (const ComponentSpec* s : all) {
      if (s == first_remote) {
        std::cout << "Network models (network_links of a topology):\n";
      }
      std::cout << fmt::format("  {:<14} {}\n", s->kind, s->doc);
    }
    return 0;
  }
  for (const ComponentSpec* s : all) {
    if (s->kind == kind) {
      print_spec(*s);
      return 0;
    }
  }
  std::string known;
  for (const ComponentSpec* s : all) known += (known.empty() ? "" : ", ") + s->kind;
  std::cerr << "gpunvme describe: unknown kind '" << kind << "'; known: " << known << "\n";
  return kBadInput;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw ConfigError(path, "", "", "cannot write output file");
  out << text;
}

// Runs each budgeted scenario and compares it with its budget, or (update)
// rewrites the budget from the run. Exit 1 when a figure is out of budget.
int check_budgets(std::vector<std::string> files, bool update, bool verbose) {
  if (files.empty()) files = budgets::shipped_budget_files();
  if (files.empty()) {
    std::cerr << "gpunvme budgets: no budget files (scenarios/budgets/*.json)\n";
    return kBadInput;
  }
  int exceeded = 0;
  for (const std::string& file : files) {
    const budgets::Budget budget = budgets::load_budget(file);
    const nlohmann::json result = run(budgets::budget_config(budget));
    if (update) {
      write_file(file, budgets::rebaseline(budget, result).dump(2) + "\n");
      std::cout << fmt::format("budget {}: re-baselined {}\n", budget.name, file);
      continue;
    }
    const std::vector<budgets::Check> checks = budgets::check_budget(budget, result);
    const auto failed =
        std::count_if(checks.begin(), checks.end(), [](const budgets::Check& c) { return !c.ok; });
    if (failed == 0) {
      std::cout << fmt::format("budget {}: ok ({} checks)\n", budget.name, checks.size());
    } else {
      ++exceeded;
      std::cout << fmt::format("budget {}: {} of {} checks out of budget ({})\n", budget.name,
                               failed, checks.size(), file);
    }
    if (failed != 0 || verbose) std::cout << budgets::check_table(checks, !verbose);
  }
  if (exceeded != 0) {
    std::cout << fmt::format(
        "{} of {} budgets exceeded; if the change is intended, re-baseline with "
        "gpunvme budgets --update\n",
        exceeded, files.size());
    return 1;
  }
  return 0;
}

// Runs the hardware backend (gpunvme-hw) once per kind of run that gpunvme
// validate uses and returns the results files it wrote: per-I/O stage
// records (--trace 1), stage means (--trace 2), an op profile (--trace 3) and
// `repeats` runs without records (--trace 0), whose median throughput is
// compared. Exit code 77 from it means there is no GPU here.
std::vector<std::string> measure_on_hardware(std::string program, const std::string& args,
                                             int repeats, std::string out,
                                             const std::string& report_file) {
  if (program.empty()) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    std::string dir = ".";
    if (n > 0) {
      self[n] = '\0';
      dir = std::string(self);
      dir = dir.substr(0, dir.find_last_of('/'));
    }
    program = dir + "/gpunvme-hw";
  }
  if (access(program.c_str(), X_OK) != 0) {
    throw ConfigError(program, "", "",
                      "the hardware backend is not there (built when nvcc is found); pass --hw, "
                      "or --measured with earlier gpunvme-hw results");
  }
  if (args.find("--trace") != std::string::npos) {
    throw ConfigError("--hw-args", "", args,
                      "gpunvme validate chooses --trace for each of its runs; leave it out");
  }
  if (out.empty()) {
    out = report_file.size() > 5 && report_file.substr(report_file.size() - 5) == ".json"
              ? report_file.substr(0, report_file.size() - 5) + "-hw"
              : report_file + "-hw";
  } else if (out.size() > 5 && out.substr(out.size() - 5) == ".json") {
    out = out.substr(0, out.size() - 5);
  }
  std::vector<std::pair<int, std::string>> runs = {
      {1, out + "-t1.json"}, {2, out + "-t2.json"}, {3, out + "-t3.json"}};
  for (int r = 1; r <= repeats; ++r)
    runs.emplace_back(0, out + "-t0-" + std::to_string(r) + ".json");
  std::vector<std::string> written;
  for (const auto& [trace, file] : runs) {
    const std::string command =
        "'" + program + "' --out '" + file + "' " + args + " --trace " + std::to_string(trace);
    std::cout << "running " << command << "\n" << std::flush;
    const int status = std::system(command.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code == 77) {
      throw ConfigError(program, "", "",
                        "no CUDA device here: pass --measured with earlier gpunvme-hw results");
    }
    if (code == 2) throw ConfigError("--hw-args", "", args, "gpunvme-hw refused its arguments");
    if (code != 0) {
      std::cerr << "gpunvme validate: gpunvme-hw exited with " << code
                << "; correlating the cases it completed\n";
    }
    if (access(file.c_str(), R_OK) == 0) written.push_back(file);
  }
  if (written.empty()) {
    throw ConfigError(program, "", args, "gpunvme-hw wrote no results in any of its runs");
  }
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gpunvme: cycle-approximate simulator of GPU-initiated NVMe I/O over PCIe.\n"
      "Examples:\n"
      "  gpunvme run                                   default scenario on the default topology\n"
      "  gpunvme run --scenario scenarios/randread-4k.json --set scenario.threads=4096\n"
      "  gpunvme topo configs/topologies/default.json --dot topo.dot\n"
      "  gpunvme describe nvme_ssd\n"
      "  gpunvme check --topology my-topo.json --scenario my-scenario.json\n"
      "  gpunvme validate --measured configs/measurements/hw-strategies-h100-2026-11-26.json\n"
      "  gpunvme budgets                               check the latency budgets\n"
      "  gpunvme sweep scenarios/sweeps/paths.json     run a parameter sweep"};
  app.footer(
      "Exit codes: 0 success; 1 a simulation error, budgets exceeded, a validation outside its "
      "tolerance or a sweep with a failed point; 2 bad input (file, field, --set or option); 130 "
      "a sweep stopped by SIGINT or SIGTERM (its finished rows are kept; rerunning resumes).");
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       fmt::format("gpunvme {} (commit {})", build_version(), build_commit()),
                       "print the version and the git commit of this build, then exit");

  std::string topology_file, scenario_file, out_file;
  std::vector<std::string> overrides;
  // Seeds are read as text and parsed by parse_seed, the rule of --set seed=N:
  // CLI11 would wrap a negative number around to 2^64 - N.
  std::string seed_text = "1";

  auto* run_cmd = app.add_subcommand(
      "run",
      "Run a scenario on a topology and print a summary.\n"
      "Examples:\n"
      "  gpunvme run\n"
      "  gpunvme run --topology configs/topologies/default.json --scenario "
      "scenarios/randread-4k.json --out result.json\n"
      "  gpunvme run --set scenario.queues=32 --set topology.nodes.ssd0.controller_cores=8 "
      "--seed 7");
  auto* check_cmd = app.add_subcommand(
      "check",
      "Check a topology and scenario without running.\n"
      "Example:\n  gpunvme check --topology my-topo.json --scenario my-scenario.json");
  for (auto* cmd : {run_cmd, check_cmd}) {
    cmd->add_option("--topology,-t", topology_file, "topology JSON (default: shipped default)");
    cmd->add_option("--scenario,-s", scenario_file, "scenario JSON (default: shipped default)");
    cmd->add_option("--set", overrides,
                    "override a field: topology.PATH=V, scenario.PATH=V or seed=N; array "
                    "elements by index or id (topology.nodes.ssd0.mqes=1024)");
    cmd->add_option("--seed", seed_text, "random seed, 0 to 2^64 - 1 (default 1)");
  }
  bool fast_mode = false;
  for (auto* cmd : {run_cmd, check_cmd}) {
    cmd->add_flag("--fast", fast_mode,
                  "fast mode (scenario.fidelity=fast): warps run ahead within a quantum; "
                  "approximate, for sweeps (README, Fast mode)");
  }
  // The memory cap: configurations whose estimated memory exceeds it are
  // refused before anything large is allocated (0 = the default).
  double max_memory_gib = 0;
  for (auto* cmd : {run_cmd, check_cmd}) {
    cmd->add_option("--max-memory-gib", max_memory_gib,
                    "refuse configurations estimated to need more memory than this (GiB; "
                    "default half of this machine's memory)")
        ->check(CLI::Range(0.001, 1e9));
  }
  run_cmd->add_option("--out,-o", out_file, "write the result JSON here (- = standard output)");
  std::string output_format = "normal";
  run_cmd
      ->add_option("--output-format", output_format,
                   "what goes to standard output, as fio names it: normal (the summary), json "
                   "(the result JSON) or terse (one ';'-separated line; README lists the fields)")
      ->check(CLI::IsMember({"normal", "json", "terse"}));
  std::string trace_file;
  double trace_limit_mb = 64;
  CLI::Option* trace_option =
      run_cmd->add_option("--trace", trace_file,
                          "write a Chrome trace / Perfetto JSON of the run here (open in "
                          "ui.perfetto.dev or chrome://tracing)");
  run_cmd
      ->add_option("--trace-limit-mb", trace_limit_mb,
                   "stop recording once the trace would pass this size (MB, default 64)")
      ->check(CLI::Range(0.1, 1e6));
  std::string trace_window_text;
  run_cmd
      ->add_option("--trace-window", trace_window_text,
                   "record only events that overlap START:END (microseconds of simulated "
                   "time; either may be left out: 100: or :500); the size limit applies "
                   "within it")
      ->needs(trace_option);

  std::string sweep_file, sweep_out;
  unsigned sweep_jobs = 0;
  std::size_t sweep_limit = 0;
  auto* sweep_cmd = app.add_subcommand(
      "sweep",
      "Run every point of a sweep spec in parallel processes, appending rows to PREFIX.jsonl "
      "and writing PREFIX.csv (PREFIX: --out, else the spec's file name without .json in the "
      "current directory); points already in PREFIX.jsonl are skipped, so a rerun resumes; "
      "SIGINT or SIGTERM stops it with exit code 130. A spec's \"refine\" {metric, goal, keep} "
      "runs every point in fast mode, then the best keep again in exact mode, and writes "
      "PREFIX.refine.json comparing the two rankings (README, Sweeps).\n"
      "Examples:\n  gpunvme sweep scenarios/sweeps/paths.json\n"
      "  gpunvme sweep my-sweep.json --out results/my-sweep --jobs 4");
  sweep_cmd->add_option("spec", sweep_file, "sweep spec JSON")->required();
  sweep_cmd->add_option(
      "--out,-o", sweep_out,
      "output prefix (default: the spec's file name without .json, in the current "
      "directory)");
  sweep_cmd->add_option("--jobs,-j", sweep_jobs, "parallel processes (default: every core)");
  sweep_cmd->add_option("--limit", sweep_limit, "run at most this many new points, then stop");
  sweep_cmd
      ->add_option("--max-memory-gib", max_memory_gib,
                   "refuse points estimated to need more memory than this, each (GiB; default "
                   "half of this machine's memory)")
      ->check(CLI::Range(0.001, 1e9));

  std::vector<std::string> measured_files, validate_overrides, validate_strategies;
  std::vector<std::uint32_t> validate_warps;
  std::vector<std::string> validate_instances;
  std::string hw_program, hw_args, validate_topology, gpu_profile, report_file, plot_file,
      hw_out_file, microbench_file;
  int hw_repeats = 5;
  std::string validate_seed_text = "1";
  double tolerance_pct = 10.0;
  std::string calibration_scope = "pooled";
  bool validate_busy_scale = false;
  std::string validate_busy_count = "at-work";
  bool validate_footprint_scale = false;
  auto* validate_cmd = app.add_subcommand(
      "validate",
      "Correlate the simulator with hardware: run the GPU strategies on this machine's GPU "
      "(gpunvme-hw, next to this program) or read earlier hardware results, and simulate every "
      "case with the same placement. When the results include controller-only runs "
      "(gpunvme-hw --controller-only), the controller is calibrated once from them, every "
      "parameter is frozen and each strategy case is predicted (prediction mode: median and "
      "IQR per case, the order check, leave-one-strategy-out cross-validation); without them, "
      "each case's controller is fitted to its own measured service time (postdiction, a "
      "diagnostic). With --calibrate per-instance each machine instance's controller is "
      "calibrated from that instance's own controller-only runs and each case is predicted "
      "once per instance. Writes the report and an SVG plot; exit 1 when the verdict fails.\n"
      "Examples:\n"
      "  gpunvme validate                       measure on this GPU, then simulate\n"
      "  gpunvme validate --measured configs/measurements/hw-strategies-h100-2026-11-26.json "
      "--measured configs/measurements/hw-controller-h100-2026-11-26.json "
      "--measured configs/measurements/lane-loop-fit-h100-2026-11-24.json --out report.json");
  validate_cmd->add_option("--measured,-m", measured_files,
                           "gpunvme-hw results (one or more, merged) instead of measuring now");
  validate_cmd->add_option("--hw", hw_program,
                           "the hardware backend (default: gpunvme-hw next to this program)");
  validate_cmd->add_option("--hw-args", hw_args,
                           "extra arguments for every gpunvme-hw run, e.g. \"--warps 1,8 --ios "
                           "4096\" (not --trace: each run has its own)");
  validate_cmd
      ->add_option("--hw-repeats", hw_repeats,
                   "gpunvme-hw runs without stage records, whose median throughput is compared "
                   "(default 5), beside one with records, one of stage means and one op profile")
      ->check(CLI::Range(1, 100));
  validate_cmd->add_option("--hw-out", hw_out_file,
                           "name stem of the fresh hardware results, STEM-t1.json, -t2, -t3 and "
                           "-t0-N (default: beside --out)");
  validate_cmd->add_option("--topology,-t", validate_topology,
                           "simulated placement (default: configs/topologies/"
                           "hw-soft-controller.json; hw-gpu-target.json for runs against "
                           "the GPU target)");
  validate_cmd->add_option("--gpu-profile", gpu_profile,
                           "simulated GPU profile (default: from the measured device's name)");
  validate_cmd->add_option("--set", validate_overrides, "override a field of every simulated case");
  validate_cmd->add_option("--seed", validate_seed_text, "simulator seed (default 1)");
  validate_cmd->add_option("--microbench", microbench_file,
                           "gpu_microbench results (configs/measurements/gpu-microbench-*.json): "
                           "also compare the simulated GPU's atomics, fences, loads and round "
                           "trip with them; or lane_loops_and_turns results "
                           "(lane-loops-and-turns-*.json): its ticket turns and lane-loop "
                           "passes, and the turn_pass_ns they calibrate; or shared_queue_reaping "
                           "results (shared-queue-reaping-*.json): all_threads' turns and reaping "
                           "calls on queues shared by 1, 2 or 4 SMs; or agent_pass results "
                           "(agent-pass-*.json): io_agents' agent pass alone against an echo "
                           "warp, and the agent_lane_loop_iteration_ns it calibrates");
  validate_cmd->add_option("--strategies", validate_strategies, "only these strategies")
      ->delimiter(',');
  validate_cmd->add_option("--warps", validate_warps, "only these warp counts")->delimiter(',');
  validate_cmd
      ->add_option("--instances", validate_instances,
                   "prediction mode: only these machine instances' runs (their `instance` "
                   "tags), strategy and controller-only runs alike, e.g. the instances that "
                   "have controller-only runs for --calibrate per-instance")
      ->delimiter(',');
  validate_cmd
      ->add_option("--calibrate", calibration_scope,
                   "prediction mode: where the controller calibration comes from. pooled "
                   "(default): one calibration from every machine instance's controller-only "
                   "runs, each case predicted once against the median of its runs over all "
                   "instances. per-instance: each instance calibrated from its own "
                   "controller-only runs alone, each case predicted once per instance against "
                   "that instance's runs; the verdict's figures (MAE, order check, Kendall tau) "
                   "are on the median of the instances' predictions against the pooled median. "
                   "Needs every strategy run tagged with its instance and controller-only runs "
                   "of each such instance")
      ->check(CLI::IsMember({"pooled", "per-instance"}));
  CLI::Option* busy_scale_flag = validate_cmd->add_flag(
      "--busy-scale", validate_busy_scale,
      "prediction mode: also calibrate how the target's batch time depends on how many of its "
      "serving threads or warps are busy as a batch starts (nvme_ssd batch_time_busy_cores, "
      "batch_time_scale), from the controller-only runs with fewer of them at work than the "
      "strategy runs (with --busy-count at-work: every one started and fewer queues active; "
      "with duty: also fewer target threads started); without it the batch line alone, fitted "
      "with all of them at work, as reports before 2026-11-28 were made");
  validate_cmd
      ->add_option(
          "--busy-count", validate_busy_count,
          "with --busy-scale: the busy count a controller-only run with k serving threads or "
          "warps at work stands for. at-work (default): k, as those runs' batches overlap. "
          "duty: 1 + (k - 1) x the runs' duty cycle (batch time over batch time plus gap), the "
          "mean count busy if the batches were independent, as the -busy reports of "
          "2026-11-27/28 were fitted")
      ->check(CLI::IsMember({"at-work", "duty"}))
      ->needs(busy_scale_flag);
  validate_cmd
      ->add_flag("--footprint-scale", validate_footprint_scale,
                 "with --busy-scale (at-work count): also calibrate the target's batch time by the "
                 "memory footprint of the buffers its commands address (nvme_ssd "
                 "batch_time_footprint_ns_per_mib, batch_time_footprint_mib) from the "
                 "controller-only footprint runs (variant footprint), and move the k sweep's "
                 "points to the line's footprint so the two terms do not both charge it")
      ->needs(busy_scale_flag);
  validate_cmd
      ->add_option("--tolerance-pct", tolerance_pct,
                   "largest error a calibrated metric may have (default 10)")
      ->check(CLI::Range(0.0, 1000.0));
  validate_cmd->add_option("--out,-o", report_file,
                           "correlation report JSON (default: validate-report.json)");
  validate_cmd->add_option("--plot", plot_file,
                           "correlation plot SVG (default: the report's name with .svg)");

  std::string topo_file, dot_file;
  auto* topo_cmd = app.add_subcommand(
      "topo",
      "Print a topology's PCIe tree and write it as Graphviz DOT (one cluster per CPU socket "
      "holding its root complexes, switches and devices; links labelled Gen x width).\n"
      "Example:\n  gpunvme topo configs/topologies/default.json --dot default.dot");
  topo_cmd->add_option("file", topo_file, "topology JSON")->required();
  topo_cmd->add_option("--dot", dot_file, "write Graphviz DOT here");

  std::string kind;
  auto* describe_cmd = app.add_subcommand(
      "describe",
      "List component kinds, or a kind's parameters with units, defaults and sources; or print "
      "a JSON Schema of configuration files for editors.\n"
      "Examples:\n  gpunvme describe\n  gpunvme describe gpu\n"
      "  gpunvme describe --json-schema > gpunvme.schema.json\n"
      "  gpunvme describe topology --json-schema");
  describe_cmd->add_option("kind", kind, "component kind");
  bool describe_json_schema = false;
  describe_cmd->add_flag("--json-schema", describe_json_schema,
                         "print a JSON Schema (draft 2020-12) of topology and scenario files "
                         "(of KIND topology or scenario alone when given)");

  std::vector<std::string> budget_list;
  bool budget_update = false, budget_verbose = false;
  auto* budgets_cmd = app.add_subcommand(
      "budgets",
      "Run each budgeted scenario and compare its per-stage latency and throughput with its "
      "budget (exit 1 when one is exceeded), or re-baseline the budgets.\n"
      "Examples:\n  gpunvme budgets                       every scenarios/budgets/*.json\n"
      "  gpunvme budgets scenarios/budgets/randread-4k.json --verbose\n"
      "  gpunvme budgets --update              re-baseline on purpose after a model change");
  budgets_cmd->add_option("files", budget_list, "budget files (default: scenarios/budgets/*.json)");
  budgets_cmd->add_flag("--update", budget_update, "rewrite the budgets from fresh runs");
  budgets_cmd->add_flag("--verbose,-v", budget_verbose, "print every check, not only failures");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }

  if (max_memory_gib > 0) {
    set_max_memory_bytes(
        static_cast<std::uint64_t>(max_memory_gib * static_cast<double>(1ull << 30)));
  }
  try {
    if (describe_cmd->parsed()) return describe(kind, describe_json_schema);
    if (budgets_cmd->parsed()) return check_budgets(budget_list, budget_update, budget_verbose);
    if (sweep_cmd->parsed()) {
      const sweep::SweepSpec spec = sweep::load_sweep_spec(sweep_file);
      sweep::RunnerOptions options;
      options.jobs = sweep_jobs;
      options.limit = sweep_limit;
      options.terminal = isatty(STDOUT_FILENO) != 0;
      options.out_prefix = sweep_out;
      if (options.out_prefix.empty()) {
        // Outputs go to the current directory, not beside the spec, so that a
        // shipped spec run from a checkout leaves the source tree clean.
        const std::string spec_name = std::filesystem::path(sweep_file).filename().string();
        options.out_prefix =
            spec_name.size() > 5 && spec_name.substr(spec_name.size() - 5) == ".json"
                ? spec_name.substr(0, spec_name.size() - 5)
                : spec_name;
      }
      const sweep::RunnerReport report = sweep::run_sweep(spec, options, std::cout);
      if (report.interrupted) return 130;
      return report.failed == 0 ? 0 : 1;
    }
    if (validate_cmd->parsed()) {
      if (report_file.empty()) report_file = "validate-report.json";
      if (plot_file.empty()) {
        plot_file = report_file.size() > 5 && report_file.substr(report_file.size() - 5) == ".json"
                        ? report_file.substr(0, report_file.size() - 5) + ".svg"
                        : report_file + ".svg";
      }
      std::vector<nlohmann::json> docs;
      std::string source;
      if (measured_files.empty()) {
        measured_files =
            measure_on_hardware(hw_program, hw_args, hw_repeats, hw_out_file, report_file);
      }
      for (const std::string& f : measured_files) {
        docs.push_back(read_json_file(f));
        source += (source.empty() ? "" : " + ") + f;
      }
      validate::Options options;
      options.topology_file = validate_topology;
      options.gpu_profile = gpu_profile;
      options.overrides = validate_overrides;
      options.seed = parse_seed(validate_seed_text, "--seed");
      options.strategies = validate_strategies;
      options.warps = validate_warps;
      options.instances = validate_instances;
      options.tolerance = tolerance_pct / 100.0;
      options.calibration = calibration_scope == "per-instance"
                                ? validate::CalibrationScope::per_instance
                                : validate::CalibrationScope::pooled;
      options.busy_scale = validate_busy_scale;
      options.busy_count = validate_busy_count == "duty" ? validate::BusyCount::duty_weighted
                                                         : validate::BusyCount::at_work;
      options.footprint_scale = validate_footprint_scale;
      nlohmann::json report =
          validate::correlate(validate::merge_hardware_results(docs), source, options);
      if (!microbench_file.empty()) {
        nlohmann::json mb = validate::correlate_microbenchmarks(
            read_json_file(microbench_file), microbench_file,
            report.at("gpu_profile").get<std::string>(), options.tolerance);
        report["microbenchmarks"] = mb;
        for (const nlohmann::json& r : mb.at("figures")) {
          std::cout << fmt::format(
              "microbench {:<36} measured {:>9.2f} simulated {:>9.2f} {:>+7.1f}%\n",
              r.at("name").get<std::string>(), r.at("measured").get<double>(),
              r.at("simulated").get<double>(),
              r.at("error_pct").is_null() ? 0.0 : r.at("error_pct").get<double>());
        }
      }
      write_file(report_file, report.dump(2) + "\n");
      write_file(plot_file, validate::correlation_svg(report));
      std::cout << validate::report_table(report);
      std::cout << "wrote " << report_file << " and " << plot_file << "\n";
      return report.at("calibrated_within_tolerance").get<bool>() ? 0 : 1;
    }
    if (topo_cmd->parsed()) {
      nlohmann::json doc = read_json_file(topo_file);
      TopologyConfig topology = resolve_topology(catalog(), doc, topo_file);
      TopologyGraph graph(topology);
      std::cout << graph.tree_text();
      for (const LinkConfig& link : topology.network_links) {
        const network::NetworkLinkParams p = network::NetworkLinkParams::from(link.params);
        std::cout << link.from << " <-> " << link.to
                  << fmt::format("  [{} {} Gb/s, MTU {}, {} ns]\n", enum_name(p.protocol), p.gbps,
                                 p.mtu_bytes, ps_to_ns(p.latency_ns));
      }
      if (!dot_file.empty()) {
        write_file(dot_file, graph.dot());
        std::cout << "wrote " << dot_file << "\n";
      }
      return 0;
    }
    if (fast_mode) overrides.push_back("scenario.fidelity=fast");
    RunConfig config =
        load_config(topology_file, scenario_file, overrides, parse_seed(seed_text, "--seed"));
    if (check_cmd->parsed()) {
      std::cout << "ok: " << config.topology.file << " and " << config.scenario.file
                << " are valid; estimated memory "
                << (estimate_memory(config).bytes() + (1ull << 20) - 1) / (1ull << 20)
                << " MiB (cap " << (max_memory_bytes() + (1ull << 20) - 1) / (1ull << 20)
                << " MiB)\n";
      return 0;
    }
    RunOptions run_options;
    run_options.trace_file = trace_file;
    run_options.trace_limit_bytes = static_cast<std::uint64_t>(trace_limit_mb * 1e6);
    if (run_cmd->count("--trace-window") != 0) {
      run_options.trace_window = trace::parse_trace_window(trace_window_text, "--trace-window");
    }
    nlohmann::json result = run(config, run_options);
    // Strings the user gave reach the result; should one hold bytes that are
    // not UTF-8, they are written as U+FFFD rather than losing the run.
    const std::string result_json =
        result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    // Standard output carries one document: the JSON when it is asked for
    // there (--output-format json or --out -), and then the report and the
    // file notes go to standard error.
    const bool json_to_stdout = output_format == "json" || out_file == "-";
    std::ostream& report = json_to_stdout ? std::cerr : std::cout;
    if (output_format == "terse") {
      report << terse_line(result);
    } else if (output_format == "normal") {
      report << summary_table(result);
    }
    if (json_to_stdout) std::cout << result_json << std::flush;
    std::ostream& notes = output_format == "normal" && !json_to_stdout ? std::cout : std::cerr;
    if (!trace_file.empty()) notes << "wrote " << trace_file << "\n";
    if (!out_file.empty() && out_file != "-") {
      write_file(out_file, result_json);
      notes << "wrote " << out_file << "\n";
    }
    return 0;
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "simulation error: " << e.what() << "\n";
    return 1;
  }
}
