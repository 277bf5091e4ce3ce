#include "sim/system/workload/run_length.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "models/nvme/ssd_params.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

std::string run_length_refusal(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  if (s.fidelity != Fidelity::fast) return "exact mode runs every I/O";
  if (s.kind != ScenarioKind::microbenchmark) {
    return "only microbenchmarks stop early: the request stream of a " + enum_name(s.kind) +
           " workload has phases";
  }
  if (!s.fast_run_length) return "fast_run_length is false";
  if (s.path != IoPathKind::gpu_initiated) {
    return "only the GPU's own fio loop (path gpu_initiated) stops early; path " +
           enum_name(s.path) + " runs every I/O";
  }
  if (s.rw != Pattern::RandRead && s.rw != Pattern::Read) {
    return "rw " + enum_name(s.rw) +
           " writes, which change the SSDs' flash state (mapping, garbage collection) over the "
           "run; only reads stop early";
  }
  if (s.distribution == Distribution::Zipf) {
    return "zipf reads go through the request-driven GPU path, not the fio loop that stops early";
  }
  if (s.time_based || s.runtime_us > 0) return "runtime_us bounds the run by simulated time";
  if (config.qos.rate_limited()) return "a rate limit shapes the request stream";
  for (const std::string& id : s.ssds) {
    const NodeConfig* node = config.topology.node(id);
    if (node == nullptr) continue;
    const nvme::SsdParams ssd = nvme::SsdParams::from(node->params);
    if (ssd.fault_media_error_rate > 0 || ssd.fault_command_error_rate > 0 ||
        !ssd.fault_schedule.empty()) {
      return id + " injects faults";
    }
  }
  return "";
}

std::size_t mser_truncation(const std::vector<double>& series) {
  const std::size_t n = series.size();
  if (n < 2) return 0;
  // Suffix sums, so every candidate d costs O(1).
  double sum = 0, sum_sq = 0;
  std::vector<double> suffix_sum(n + 1, 0.0), suffix_sq(n + 1, 0.0);
  for (std::size_t j = n; j-- > 0;) {
    sum += series[j];
    sum_sq += series[j] * series[j];
    suffix_sum[j] = sum;
    suffix_sq[j] = sum_sq;
  }
  std::size_t best = 0;
  double best_value = std::numeric_limits<double>::infinity();
  for (std::size_t d = 0; d <= n / 2; ++d) {
    const double count = static_cast<double>(n - d);
    const double mean = suffix_sum[d] / count;
    // sum (x - mean)^2 = sum x^2 - count mean^2, never negative.
    const double squares = std::max(0.0, suffix_sq[d] - count * mean * mean);
    const double value = squares / (count * count);
    if (value < best_value) {
      best_value = value;
      best = d;
    }
  }
  return best;
}

double lag1_autocorrelation(const std::vector<double>& series) {
  const std::size_t n = series.size();
  if (n < 3) return 0.0;
  double mean = 0;
  for (const double x : series) mean += x;
  mean /= static_cast<double>(n);
  double variance = 0, covariance = 0;
  for (std::size_t j = 0; j < n; ++j) {
    variance += (series[j] - mean) * (series[j] - mean);
    if (j + 1 < n) covariance += (series[j] - mean) * (series[j + 1] - mean);
  }
  return variance > 0 ? covariance / variance : 0.0;
}

double student_t_975(std::uint64_t dof) {
  // Two-sided 95 % quantiles, dof 1..30 (any statistics table).
  static constexpr std::array<double, 30> kTable = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return std::numeric_limits<double>::infinity();
  if (dof <= kTable.size()) return kTable[dof - 1];
  // Cornish-Fisher expansion of t in the normal quantile (Abramowitz and
  // Stegun 26.7.5), within 0.001 of the table beyond 30 degrees of freedom.
  const double z = 1.959963985;
  const double v = static_cast<double>(dof);
  return z + (z * z * z + z) / (4 * v) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

double relative_half_width(const std::vector<double>& batches, bool correlated) {
  const std::size_t m = batches.size();
  if (m < 2) return std::numeric_limits<double>::infinity();
  double mean = 0;
  for (const double x : batches) mean += x;
  mean /= static_cast<double>(m);
  double variance = 0;
  for (const double x : batches) variance += (x - mean) * (x - mean);
  variance /= static_cast<double>(m - 1);
  // Independent batches: the mean's variance is a batch's over m. Under any
  // correlation: at most a batch's, since Var(sum_i B_i / m) = sum_ij
  // Cov(B_i, B_j) / m^2 and |Cov(B_i, B_j)| <= Var(B) (Cauchy-Schwarz).
  const double mean_variance = correlated ? variance : variance / static_cast<double>(m);
  const double half = student_t_975(m - 1) * std::sqrt(mean_variance);
  return mean > 0 ? half / mean : std::numeric_limits<double>::infinity();
}

namespace {

// The value below which a fraction q of `values` lie (the ceil(q n)-th
// smallest); `values` is reordered.
double percentile_of(std::vector<Picoseconds>& values, double q) {
  const std::size_t n = values.size();
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  const std::size_t index = std::min(n - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index),
                   values.end());
  return static_cast<double>(values[index]);
}

double drift(double first, double second) {
  return first > 0 ? std::abs(second / first - 1.0) : std::numeric_limits<double>::infinity();
}

struct MeanAndHalfWidth {
  double mean = 0;
  double half_width = 0;  // relative to the mean
};

MeanAndHalfWidth confidence(const std::vector<double>& batches, bool correlated) {
  const auto n = static_cast<double>(batches.size());
  double mean = 0;
  for (const double x : batches) mean += x;
  mean /= n;
  return {mean, relative_half_width(batches, correlated)};
}

std::vector<double> merged(const std::vector<double>& groups, std::size_t first, std::size_t k) {
  std::vector<double> batches;
  batches.reserve((groups.size() - first) / k);
  for (std::size_t g = first; g + k <= groups.size(); g += k) {
    double sum = 0;
    for (std::size_t j = g; j < g + k; ++j) sum += groups[j];
    batches.push_back(sum / static_cast<double>(k));
  }
  return batches;
}

}  // namespace

void RunLengthController::record(Picoseconds completed_at, Picoseconds latency) {
  if (steady_) return;
  latencies_.push_back(latency);
  // Completions can be seen slightly out of time order (fast mode's warps
  // run ahead): a group ends at the latest completion seen.
  latest_ = std::max(latest_, completed_at);
  group_latency_sum_ += latency;
  if (latencies_.size() % kGroupIos != 0) return;
  const Picoseconds previous = group_end_.empty() ? start_ : group_end_.back();
  group_end_.push_back(latest_);
  group_time_.push_back(static_cast<double>(latest_ - std::min(previous, latest_)) /
                        static_cast<double>(kGroupIos));
  group_latency_.push_back(static_cast<double>(group_latency_sum_) /
                           static_cast<double>(kGroupIos));
  group_latency_sum_ = 0;
  // The rule cannot be met before the minimum share is observed; after
  // that it is evaluated each time the observations grew by 5 %, so its
  // cost stays linear in the run and the stop comes at most 5 % late.
  const std::uint64_t least = std::max(rule_.min_ios, rule_.min_ios_per_thread * rule_.threads);
  if (latencies_.size() < least || group_end_.size() < next_check_groups_) return;
  next_check_groups_ = group_end_.size() + std::max<std::size_t>(1, group_end_.size() / 20);
  steady_ = evaluate();
  if (steady_ && on_converged_) on_converged_();
}

std::optional<SteadyState> RunLengthController::evaluate() const {
  const std::size_t groups = group_end_.size();
  if (groups < 2 * rule_.min_batches) return std::nullopt;
  // The warm-up: the later truncation point of the two series. One that
  // lands at the end of MSER's range means the transient is not over.
  const std::size_t warmup =
      std::max(mser_truncation(group_time_), mser_truncation(group_latency_));
  if (warmup >= groups / 2) return std::nullopt;
  const std::size_t measured_groups = groups - warmup;
  const std::uint64_t measured_ios = measured_groups * kGroupIos;
  if (measured_ios < rule_.min_ios || measured_ios < rule_.min_ios_per_thread * rule_.threads) {
    return std::nullopt;
  }
  // Batches of k groups, ending with the last group: as many completions
  // as there are threads where the run allows min_batches of them (in a
  // closed loop every thread completes once per cycle of that length, and
  // shorter batches see its bursts as variance), else the largest that
  // gives min_batches (Schmeiser 1982: a fixed number of batches growing
  // with the run); k doubles while the batch means are still correlated.
  const std::size_t thread_groups = (rule_.threads + kGroupIos - 1) / kGroupIos;
  const std::size_t first_k =
      std::max<std::size_t>(1, std::min(thread_groups, measured_groups / rule_.min_batches));
  std::size_t k = first_k;
  std::vector<double> time_batches, latency_batches;
  auto batch = [&](std::size_t size) {
    const std::size_t first = warmup + measured_groups % size;
    time_batches = merged(group_time_, first, size);
    latency_batches = merged(group_latency_, first, size);
  };
  // Batch means that still correlate at every batch size the run allows: the
  // first size's batches (one closed-loop cycle where the run allows; the
  // smallest, so the largest spread), and for each series whose lag-1 there
  // exceeds max_lag1 the bound that needs no independence.
  bool correlated_time = false;
  bool correlated_latency = false;
  for (;;) {
    if (measured_groups / k < rule_.min_batches) {
      k = first_k;
      batch(k);
      correlated_time = lag1_autocorrelation(time_batches) > rule_.max_lag1;
      correlated_latency = lag1_autocorrelation(latency_batches) > rule_.max_lag1;
      break;
    }
    batch(k);
    if (lag1_autocorrelation(time_batches) <= rule_.max_lag1 &&
        lag1_autocorrelation(latency_batches) <= rule_.max_lag1) {
      break;
    }
    k *= 2;
  }
  const MeanAndHalfWidth time = confidence(time_batches, correlated_time);
  const MeanAndHalfWidth latency = confidence(latency_batches, correlated_latency);
  if (time.half_width > rule_.precision || latency.half_width > rule_.precision) {
    return std::nullopt;
  }
  // The trend check, on the post-warm-up latencies themselves.
  const std::size_t begin = warmup * kGroupIos;
  const std::size_t end = groups * kGroupIos;
  const std::size_t middle = begin + (end - begin) / 2;
  std::vector<Picoseconds> first(latencies_.begin() + static_cast<std::ptrdiff_t>(begin),
                                 latencies_.begin() + static_cast<std::ptrdiff_t>(middle));
  std::vector<Picoseconds> second(latencies_.begin() + static_cast<std::ptrdiff_t>(middle),
                                  latencies_.begin() + static_cast<std::ptrdiff_t>(end));
  SteadyState s;
  s.p50_drift = drift(percentile_of(first, 0.50), percentile_of(second, 0.50));
  s.p99_drift = drift(percentile_of(first, 0.99), percentile_of(second, 0.99));
  if (s.p50_drift > rule_.trend_tolerance || s.p99_drift > rule_.trend_tolerance) {
    return std::nullopt;
  }
  s.observed_ios = latencies_.size();
  s.warmup_ios = begin;
  s.warmup_end = warmup == 0 ? start_ : group_end_[warmup - 1];
  s.stop_time = group_end_.back();
  s.batches = time_batches.size();
  s.batch_ios = k * kGroupIos;
  const Picoseconds span = s.stop_time - s.warmup_end;
  if (span == 0) return std::nullopt;
  s.ios_per_s = static_cast<double>(measured_ios) / (static_cast<double>(span) * 1e-12);
  s.ios_per_s_half_width = time.half_width;
  s.latency_mean_half_width = latency.half_width;
  s.lag1_time = lag1_autocorrelation(time_batches);
  s.lag1_latency = lag1_autocorrelation(latency_batches);
  s.correlated_time = correlated_time;
  s.correlated_latency = correlated_latency;
  s.latency = std::make_unique<LatencyHistogram>();
  for (std::size_t j = begin; j < end; ++j) s.latency->record(latencies_[j]);
  return s;
}

}  // namespace gpunvme
