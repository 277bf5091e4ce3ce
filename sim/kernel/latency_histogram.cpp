#include "sim/kernel/latency_histogram.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpunvme {

namespace {
int highest_bit(Picoseconds v) { return 63 - __builtin_clzll(v); }
double round_ns(double ns) { return std::round(ns * 1000.0) / 1000.0; }
}  // namespace

// Values below 2^kSubBits have a bucket each; above, each power of two is
// split into 2^kSubBits equal buckets.
int LatencyHistogram::bucket_of(Picoseconds value) {
  if (value < (Picoseconds{1} << kSubBits)) return static_cast<int>(value);
  const int shift = highest_bit(value) - kSubBits + 1;
  const auto sub = static_cast<int>((value >> shift) - (Picoseconds{1} << (kSubBits - 1)));
  return (shift << (kSubBits - 1)) + (1 << (kSubBits - 1)) + sub;
}

Picoseconds LatencyHistogram::bucket_midpoint(int bucket) {
  const int half = 1 << (kSubBits - 1);
  if (bucket < 2 * half) return static_cast<Picoseconds>(bucket);
  const int shift = (bucket - half) / half;
  const int sub = (bucket - half) % half;
  const Picoseconds low = (static_cast<Picoseconds>(sub + half)) << shift;
  return low + (Picoseconds{1} << shift) / 2;
}

void LatencyHistogram::record(Picoseconds value) {
  ++buckets_[bucket_of(value)];
  if (count_ == 0 || value < min_) min_ = value;
  max_ = std::max(max_, value);
  ++count_;
  sum_ += value;
  sum_of_squares_ += static_cast<long double>(value) * static_cast<long double>(value);
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (int i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
  sum_of_squares_ += other.sum_of_squares_;
}

double LatencyHistogram::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ / count_);
}

double LatencyHistogram::stdev() const {
  if (count_ < 2) return 0.0;
  const auto n = static_cast<long double>(count_);
  const long double squares_about_mean = sum_of_squares_ - sum_ * sum_ / n;
  return static_cast<double>(std::sqrt(std::max<long double>(0, squares_about_mean / (n - 1))));
}

Picoseconds LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  const std::uint64_t target = std::max<std::uint64_t>(1, std::min(rank, count_));
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= target) return std::clamp(bucket_midpoint(i), min_, max_);
  }
  return max_;
}

nlohmann::json LatencyHistogram::summary_ns() const {
  return {{"count", count_},
          {"mean", round_ns(mean() / 1000.0)},
          {"min", round_ns(ps_to_ns(min()))},
          {"p50", round_ns(ps_to_ns(percentile(0.50)))},
          {"p90", round_ns(ps_to_ns(percentile(0.90)))},
          {"p99", round_ns(ps_to_ns(percentile(0.99)))},
          {"p999", round_ns(ps_to_ns(percentile(0.999)))},
          {"max", round_ns(ps_to_ns(max()))}};
}

}  // namespace gpunvme

namespace gpunvme {

nlohmann::json LatencyHistogram::fio_ns(const std::vector<double>& percentiles) const {
  nlohmann::json points = nlohmann::json::object();
  for (const double p : percentiles) {
    points[fmt::format("{:.6f}", p)] = round_ns(ps_to_ns(percentile(p / 100.0)));
  }
  return {{"count", count_},
          {"min", round_ns(ps_to_ns(min()))},
          {"max", round_ns(ps_to_ns(max()))},
          {"mean", round_ns(mean() / 1000.0)},
          {"stdev", round_ns(stdev() / 1000.0)},
          {"percentile", points}};
}

}  // namespace gpunvme
