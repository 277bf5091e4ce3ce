// The library's entry point: run(config) -> results. The command line and the
// Python module are thin layers over these functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/kernel/time.h"
#include "sim/system/config/run_config.h"
#include "sim/system/trace/trace_writer.h"

namespace gpunvme {

// Validates raw documents into a run configuration, including the checks
// that need the devices' parameters and every check that building the
// machine and workload makes (sim/system/run/setup_checks.h), so that a
// configuration it accepts does not fail at setup (ConfigError on bad input).
RunConfig resolve_config(const RawConfig& raw);

// Loads, overrides and validates a configuration (ConfigError on bad input).
RunConfig load_config(const std::string& topology_file, const std::string& scenario_file,
                      const std::vector<std::string>& overrides, std::uint64_t seed);

// Runs one simulation. The result holds the resolved configuration, the
// summary, per-stage latencies and per-device statistics; everything but
// summary.wall_time_s is a pure function of the configuration and seed.
nlohmann::json run(const RunConfig& config);

// What a run records besides its result.
struct RunOptions {
  // Chrome trace / Perfetto JSON of the run ("" = none), at most
  // trace_limit_bytes of the events that overlap trace_window; counters
  // sampled every trace_sample_ns of simulated time.
  std::string trace_file;
  std::uint64_t trace_limit_bytes = 64'000'000;
  trace::TraceWindow trace_window;
  double trace_sample_ns = 1000.0;
};
nlohmann::json run(const RunConfig& config, const RunOptions& options);

// A short human-readable table of a result.
std::string summary_table(const nlohmann::json& result);

// The result as one line of `;`-separated fields (gpunvme run
// --output-format terse; the README lists the fields): a fixed prefix, then
// one "P%=ns" field per clat percentile of the scenario's percentile_list.
std::string terse_line(const nlohmann::json& result);

// The checks resolve_config makes once a configuration is resolved: the
// workload against the devices, the fabric's paths and setup (ConfigError).
void check_resolved(const RunConfig& config);

class Workload;
// std::runtime_error unless every I/O `workload` issued completed and it
// finished (`who` starts the message: "" or "tenant db: "); where fast mode's
// run-length control ended the run at its stop (stopped_before_drain), unless
// that control converged and no more I/Os completed than were issued.
void require_complete(const Workload& workload, const std::string& who);
// One workload's figures after a run that ended at `elapsed`: "summary"
// (I/Os, throughput over its own I/O window, latency, the kind's own keys),
// "stages" (its path's) and "fio".
nlohmann::json workload_figures(const Workload& workload, const RunConfig& config,
                                Picoseconds elapsed);

// Keys of a result that depend on the host machine, not on the simulation.
const std::vector<std::string>& wall_clock_fields();

}  // namespace gpunvme
