// Run-length control of fast mode: the sequential relative-precision
// procedure of discrete-event output analysis (Law & Kelton, "Simulation
// Modeling and Analysis", 5th ed., 9.5.3 and 9.5.2), with warm-up truncation
// by MSER-5 (White 1997; Franklin and White 2008). Fed every completed I/O
// (when it completed, its end-to-end latency), it says when the run's
// steady-state throughput and latency have converged, so that the workload
// can stop issuing I/Os and the result can answer for the requested count
// from the converged steady state (README, Fast mode).
//
// The observations are groups of kGroupIos consecutive completions (the
// "5" of MSER-5): each group's time per completion and mean latency.
//   - warm-up: MSER applied to each of the two group series (the d in
//     [0, n/2] that minimises the squared deviation of the rest from its
//     mean over (n - d)^2); the later of the two truncation points;
//   - batch means: after the warm-up, consecutive groups are merged into
//     batches of k groups: as many completions as there are threads where
//     the run allows min_batches such batches, else the largest k that gives
//     min_batches; k doubles while the lag-1 autocorrelation of either batch
//     series exceeds max_lag1 and at least min_batches batches remain;
//     where no such k brings both below it, the batches are the first k's,
//     and a series whose lag-1 exceeds max_lag1 there gets the half-width
//     that holds under any correlation between the batches (the variance of
//     a mean of m batches is at most one batch's, by Cauchy-Schwarz: sqrt(m)
//     times the independent batches' half-width);
//   - converged when, after the warm-up, at least min_batches batches hold
//     at least min_ios completions and min_ios_per_thread per thread, the
//     95 % confidence-interval half-width (Student t) of the mean time per
//     completion and of the mean latency are each at most `precision` of
//     their means, and the p50 and p99 of the latencies of the first and of
//     the second half of the post-warm-up completions agree within
//     trend_tolerance (a drift the batch means could hide).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/kernel/latency_histogram.h"
#include "sim/kernel/time.h"
#include "sim/system/config/run_config.h"

namespace gpunvme {

struct RunLengthRule {
  double precision = 0.01;               // relative 95 % CI half-width
  std::uint64_t min_batches = 30;        // batches after the warm-up
  std::uint64_t min_ios = 20000;         // completions after the warm-up
  std::uint64_t min_ios_per_thread = 2;  // completions after the warm-up, per thread
  std::uint64_t threads = 1;
  double trend_tolerance = 0.02;  // p50 and p99, first against second half
  double max_lag1 = 0.2;          // lag-1 autocorrelation of the batch means
};

// Where run-length control applies: fast mode (fidelity fast, with
// fast_run_length) on a run whose rest is statistically the same as what was
// simulated. That is the microbenchmark's own GPU warp loop (gpu_initiated,
// rw read or randread, uniform or sequential) with no runtime limit, no
// injected faults on its SSDs and no rate limit: reads leave the flash
// state as it was, and nothing else in such a run changes over time.
// Returns "" where it applies, else why not (summary.run_length.reason).
std::string run_length_refusal(const RunConfig& config);

// MSER over `series`: the truncation point d in [0, n/2] minimising
// sum_{j >= d} (x_j - mean_{>= d})^2 / (n - d)^2 (the first such d on ties).
std::size_t mser_truncation(const std::vector<double>& series);
// Lag-1 autocorrelation of `series` (0 below three values or with no variance).
double lag1_autocorrelation(const std::vector<double>& series);
// Student's t quantile t_{0.975, dof} (dof >= 1).
double student_t_975(std::uint64_t dof);
// The 95 % confidence-interval half-width of the mean of `batches`,
// relative to it (Student t, m - 1 degrees of freedom): t s / sqrt(m) for
// independent batches; t s where they are `correlated`, the bound that
// holds under any correlation (the variance of a mean of m batches is at
// most one batch's). Infinite below two batches or for a mean <= 0.
double relative_half_width(const std::vector<double>& batches, bool correlated);

// What the controller concluded at the point it converged.
struct SteadyState {
  std::uint64_t observed_ios = 0;  // completions seen when it converged
  std::uint64_t warmup_ios = 0;    // of those, left out as warm-up
  Picoseconds warmup_end = 0;      // completion time of the warm-up's last I/O
  Picoseconds stop_time = 0;       // completion time of the last I/O seen
  std::uint64_t batches = 0;
  std::uint64_t batch_ios = 0;
  double ios_per_s = 0;                // post-warm-up completions / their time
  double ios_per_s_half_width = 0;     // relative 95 % CI half-width of the rate
  double latency_mean_half_width = 0;  // relative 95 % CI half-width of the mean latency
  double lag1_time = 0;                // lag-1 autocorrelation of the final batches
  double lag1_latency = 0;
  // Where the batch means of a series stayed correlated (lag-1 above
  // max_lag1) at every batch size the run allows: its half-width is the
  // correlation bound's (sqrt(m) times the independent batches'), on the
  // first size's batches.
  bool correlated_time = false;
  bool correlated_latency = false;
  double p50_drift = 0;  // |second half / first half - 1|
  double p99_drift = 0;
  // Post-warm-up end-to-end latencies; on the heap, as the controller runs on
  // the small stacks of the warps' fibres.
  std::unique_ptr<LatencyHistogram> latency;
};

class RunLengthController {
 public:
  static constexpr std::uint64_t kGroupIos = 5;

  RunLengthController(const RunLengthRule& rule, Picoseconds start) : rule_(rule), start_(start) {}

  // Every completed I/O, in the order the workload sees them complete;
  // ignored once converged.
  void record(Picoseconds completed_at, Picoseconds latency);
  // Called once, from the record() that meets the rule (the workload ends
  // the run there: README, Fast mode).
  void on_converged(std::function<void()> callback) { on_converged_ = std::move(callback); }
  // The steady state, once the rule is met.
  bool converged() const { return steady_.has_value(); }
  const std::optional<SteadyState>& steady_state() const { return steady_; }
  const RunLengthRule& rule() const { return rule_; }
  std::uint64_t observed() const { return latencies_.size(); }
  // Evaluates the rule now on what has been recorded (the controller calls
  // it at growing intervals); the steady state if met.
  std::optional<SteadyState> evaluate() const;

 private:
  RunLengthRule rule_;
  Picoseconds start_;
  Picoseconds latest_ = 0;
  std::vector<Picoseconds> latencies_;  // by completion order
  std::vector<Picoseconds> group_end_;  // completion time closing each group
  std::vector<double> group_time_;      // time per completion of each group (ps)
  std::vector<double> group_latency_;   // mean latency of each group (ps)
  Picoseconds group_latency_sum_ = 0;
  std::size_t next_check_groups_ = 0;
  std::optional<SteadyState> steady_;
  std::function<void()> on_converged_;
};

}  // namespace gpunvme
