// Latency distribution with bounded relative error (log-linear buckets, as
// HdrHistogram does): 64 sub-buckets per power of two keep every reported
// percentile within 1.6 % of the exact value at constant memory, whatever the
// number of samples. Minimum, maximum, count, sum and sum of squares (so mean
// and standard deviation) are exact.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/kernel/time.h"

namespace gpunvme {

class LatencyHistogram {
 public:
  void record(Picoseconds value);
  void merge(const LatencyHistogram& other);

  std::uint64_t count() const { return count_; }
  Picoseconds min() const { return count_ == 0 ? 0 : min_; }
  Picoseconds max() const { return max_; }
  double mean() const;
  // Sample standard deviation (n - 1 in the denominator, as fio reports it);
  // 0 below two samples.
  double stdev() const;
  // The value below which a fraction `q` (0..1) of the samples lie.
  Picoseconds percentile(double q) const;

  // {"count", "mean", "p50", "p90", "p99", "p999", "max", "min"} in ns.
  nlohmann::json summary_ns() const;
  // fio's figures in ns: {"count", "min", "max", "mean", "stdev", "percentile":
  // {"P.000000": value}} for each P of `percentiles` (in %), keyed as fio's
  // JSON output keys them.
  nlohmann::json fio_ns(const std::vector<double>& percentiles) const;

 private:
  static constexpr int kSubBits = 6;
  static constexpr int kBuckets = (64 - kSubBits + 1) << kSubBits;
  static int bucket_of(Picoseconds value);
  static Picoseconds bucket_midpoint(int bucket);

  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  Picoseconds min_ = 0;
  Picoseconds max_ = 0;
  long double sum_ = 0;
  long double sum_of_squares_ = 0;
};

}  // namespace gpunvme
