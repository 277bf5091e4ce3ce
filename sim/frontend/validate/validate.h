// Hardware correlation (gpunvme validate): each case the hardware backend
// measured (sim/frontend/hardware, gpunvme-hw) is re-run in the simulator on a
// topology that places things as the hardware did (rings in pinned host
// memory behind the root complex, counters and data buffers in GPU memory,
// the software controller's measured service time as the SSD's service
// time), and the two are compared per metric in the manner of Accel-Sim's
// correlation plots: per-case relative error, mean absolute error %,
// aggregate error and Pearson r over the cases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpunvme::validate {

// Where a prediction's controller calibration comes from: every machine
// instance's controller-only runs pooled into one calibration, or each
// instance's own runs for that instance's strategy runs.
enum class CalibrationScope { pooled, per_instance };

// How a controller-only run with k of the target's processors at work counts
// in the busy-scale calibration (Options::busy_count).
enum class BusyCount { at_work, duty_weighted };

struct Options {
  // The simulated placement (default: configs/topologies/hw-soft-controller.json,
  // or hw-gpu-target.json when the runs' target is the GPU-resident one).
  std::string topology_file;
  // GPU profile for the simulated GPU ("" = from the measured device's name:
  // H100 -> h100-sxm, H200 -> h200-sxm).
  std::string gpu_profile;
  std::vector<std::string> overrides;  // --set paths, applied to every case
  std::uint64_t seed = 1;
  // Only these cases ("" = every one): strategy names, warp counts.
  std::vector<std::string> strategies;
  std::vector<std::uint32_t> warps;
  // Prediction mode only: only these machine instances' runs, strategy and
  // controller-only alike ("" = every instance).
  std::vector<std::string> instances;
  // Relative error a calibrated metric may have (0.10 = 10 %).
  double tolerance = 0.10;
  // Prediction mode only: pooled (one calibration for all instances) or per
  // machine instance (each case simulated once per instance with that
  // instance's calibration; every strategy run must carry an instance and
  // every such instance needs controller-only runs).
  CalibrationScope calibration = CalibrationScope::pooled;
  // Prediction mode only: also calibrate the target's batch time by the
  // processors busy as a batch starts (nvme_ssd batch_time_busy_cores and
  // batch_time_scale) from the controller-only runs with fewer of the
  // target's processors at work than the strategy runs' (fewer active
  // queues with every thread started; with the duty-weighted count also
  // fewer target threads started); off: the batch line alone.
  bool busy_scale = false;
  // With busy_scale: the busy count a run with k processors at work stands
  // for. at_work (default): k, as the controller-only runs' batches overlap
  // (every one of the k processors holds a batch while any does, at every
  // depth measured). duty_weighted: 1 + (k - 1) x duty, the mean count busy
  // if the processors' batches were independent of each other (how reports
  // made before 2026-11-28's -load reports were fitted; kept to re-make them).
  BusyCount busy_count = BusyCount::at_work;
  // With busy_scale and the at_work count: also calibrate the footprint term
  // (nvme_ssd batch_time_footprint_ns_per_mib, batch_time_footprint_mib)
  // from the controller-only footprint runs (variant footprint: the buffers
  // written varied at one and at every queue active), and move the k
  // sweep's points to the line's footprint along it, so that the busy scale
  // and the term do not both charge the k sweep's growing buffers.
  bool footprint_scale = false;
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

// Hardware results: gpunvme-hw JSON documents merged. Strategy runs
// (schema gpunvme.hw/1) have their `cases` concatenated (device and target
// from the first); controller-only runs (gpunvme.hw_controller/1, the
// calibration set) go to `controller_only`; per-strategy fits of the GPU
// profile's lane-loop cost (gpunvme.lane_loop_fit/1) to `lane_loop_fit`.
// A document's `instance` (the machine instance it was measured on) is given
// to each of its cases that has none.
nlohmann::json merge_hardware_results(const std::vector<nlohmann::json>& docs);

// Runs the simulator for every selected case of `hw` and returns the
// correlation report (schema gpunvme.validate/1). `hw_file` names the source
// in the report and in error messages. ConfigError on malformed input.
//
// With controller-only runs in `hw` (mode "prediction"): every controller
// parameter is taken from them (the calibration set), frozen, and every
// strategy case is predicted from its untraced runs' median and IQR, with an
// order check and, where `lane_loop_fit` is given, leave-one-strategy-out
// cross-validation of that GPU parameter. Without them (mode
// "postdiction"): each traced case's controller is fitted to that case's
// own measured service time, a diagnostic of the GPU side only.
nlohmann::json correlate(const nlohmann::json& hw, const std::string& hw_file,
                         const Options& options);

// Quartiles of repeated measurements (linear interpolation between order
// statistics, as numpy's default): {q1, median, q3}. Empty input: zeros.
struct Quartiles {
  double q1 = 0, median = 0, q3 = 0;
};
Quartiles quartiles(std::vector<double> values);

// The order check: for each pair of strategies at one warp count whose
// measured interquartile ranges do not overlap, whether the simulated
// figures order them the same way. Input: one entry per case.
struct OrderCase {
  std::string strategy;
  std::uint32_t warps = 0;
  Quartiles measured;
  double simulated = 0;
};
struct OrderCheck {
  std::size_t pairs = 0;                   // pairs with disjoint IQRs
  std::size_t agreed = 0;                  // of those, ordered alike by the simulator
  std::vector<std::string> disagreements;  // "WARPS warps: A > B measured, A <= B simulated"
};
OrderCheck order_check(const std::vector<OrderCase>& cases);

// Accel-Sim style scatter plot of a report: simulated against measured per
// metric, log-log axes, the y = x line and the tolerance band. SVG text, no
// dependencies.
std::string correlation_svg(const nlohmann::json& report);

// The GPU microbenchmarks (tests/hardware/gpu_microbench.cu, schema
// gpunvme.gpu_microbench/1) against the same loops on simulated warps of GPU
// profile `profile`: per figure measured, simulated, error % and whether it
// is within `tolerance` (sim/frontend/validate/microbench.cpp). Entries of
// `gpu_overrides` replace the profile's parameters of the same name, as a
// topology's gpu node does (a what-if: a figure removed or changed); for
// gpu_microbench results, whose loops run the profile as committed, any is
// refused (std::invalid_argument).
nlohmann::json correlate_microbenchmarks(
    const nlohmann::json& microbench, const std::string& file, const std::string& profile,
    double tolerance, const nlohmann::json& gpu_overrides = nlohmann::json::object());

// The simulated GPU's time from a batch of 32 CQEs landing in GPU memory (a
// DMA write, which fires the memory's watches as any write does) to a warp
// whose lanes each wait on their own entry seeing the last of them: the
// controller-only feeder's own-slot wait, on a GPU of profile `profile`, in
// ns (sim/frontend/validate/microbench.cpp).
double own_slot_detection_ns(const std::string& profile);

// A short text table of a report.
std::string report_table(const nlohmann::json& report);

// The fewest cases a Pearson r is computed and printed from: two points
// always lie on a line, so r = +-1 from two says nothing.
inline constexpr std::size_t kMinCasesForCorrelation = 3;

// A metric summary's correlation as the plot's legend prints it: "r 0.912",
// or why it is left out.
std::string correlation_text(const nlohmann::json& metric_summary);

}  // namespace gpunvme::validate
