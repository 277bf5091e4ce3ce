// Hardware correlation (gpunvme validate): each case the hardware backend
// measured (sim/hardware, gpunvme-hw) is re-run in the simulator on a
// topology that places things as the hardware did (rings in pinned host
// memory behind the root complex, counters and data buffers in GPU memory,
// the software controller's measured service time as the SSD's service
// time), and the two are compared per metric in the manner of Accel-Sim's
// correlation plots: per-case relative error, mean absolute error %,
// aggregate error and Pearson r over the cases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpunvme::validate {

struct Options {
  // The simulated placement (default: configs/topologies/hw-soft-controller.json).
  std::string topology_file;
  // GPU profile for the simulated GPU ("" = from the measured device's name:
  // H100 -> h100-sxm, H200 -> h200-sxm).
  std::string gpu_profile;
  std::vector<std::string> overrides;  // --set paths, applied to every case
  std::uint64_t seed = 1;
  // Only these cases ("" = every one): strategy names, warp counts.
  std::vector<std::string> strategies;
  std::vector<std::uint32_t> warps;
  // Relative error a calibrated metric may have (0.10 = 10 %).
  double tolerance = 0.10;
};

// The metrics compared per case. `calibrated` ones are held to the
// tolerance (the report's `within_tolerance`); the others are reported.
struct Metric {
  std::string name;
  std::string unit;
  bool calibrated;
  std::string doc;
};
const std::vector<Metric>& metrics();

// Hardware results: a gpunvme-hw JSON document, or several merged (their
// `cases` concatenated; device and target taken from the first).
nlohmann::json merge_hardware_results(const std::vector<nlohmann::json>& docs);

// Runs the simulator for every selected case of `hw` and returns the
// correlation report (schema gpunvme.validate/1). `hw_file` names the source
// in the report and in error messages. ConfigError on malformed input.
nlohmann::json correlate(const nlohmann::json& hw, const std::string& hw_file,
                         const Options& options);

// Accel-Sim style scatter plot of a report: simulated against measured per
// metric, log-log axes, the y = x line and the tolerance band. SVG text, no
// dependencies.
std::string correlation_svg(const nlohmann::json& report);

// The GPU microbenchmarks (tests/hardware/gpu_microbench.cu, schema
// gpunvme.gpu_microbench/1) against the same loops on simulated warps of GPU
// profile `profile`: per figure measured, simulated, error % and whether it
// is within `tolerance` (sim/validate/microbench.cpp).
nlohmann::json correlate_microbenchmarks(const nlohmann::json& microbench, const std::string& file,
                                         const std::string& profile, double tolerance);

// A short text table of a report.
std::string report_table(const nlohmann::json& report);

}  // namespace gpunvme::validate
