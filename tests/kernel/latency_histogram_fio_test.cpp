// The fio figures of LatencyHistogram and FioLatency on samples worked by
// hand. Values below 64 ps have a histogram bucket each, so percentiles of
// such samples are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/kernel/latency_histogram.h"

namespace gpunvme {
namespace {

TEST(LatencyHistogramFio, StdevAndPercentilesOfAKnownSample) {
  LatencyHistogram h;
  for (Picoseconds v : {2, 4, 4, 4, 5, 5, 7, 9}) h.record(v);
  // Mean 5; squared deviations 9+1+1+1+0+0+4+16 = 32; sample variance 32/7.
  EXPECT_DOUBLE_EQ(h.mean(), 5.0);
  EXPECT_NEAR(h.stdev(), std::sqrt(32.0 / 7.0), 1e-12);
  // Nearest rank: p1 -> 1st value, p50 -> 4th, p75 -> 6th, p90 -> 8th.
  EXPECT_EQ(h.percentile(0.01), 2u);
  EXPECT_EQ(h.percentile(0.50), 4u);
  EXPECT_EQ(h.percentile(0.75), 5u);
  EXPECT_EQ(h.percentile(0.90), 9u);
  const nlohmann::json j = h.fio_ns({1, 50, 75, 90, 99.99});
  EXPECT_EQ(j["count"].get<int>(), 8);
  EXPECT_DOUBLE_EQ(j["min"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(j["max"].get<double>(), 0.009);
  EXPECT_DOUBLE_EQ(j["mean"].get<double>(), 0.005);
  EXPECT_DOUBLE_EQ(j["stdev"].get<double>(), 0.002);  // 2.138 ps, to 0.001 ns
  EXPECT_DOUBLE_EQ(j["percentile"]["1.000000"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(j["percentile"]["50.000000"].get<double>(), 0.004);
  EXPECT_DOUBLE_EQ(j["percentile"]["75.000000"].get<double>(), 0.005);
  EXPECT_DOUBLE_EQ(j["percentile"]["99.990000"].get<double>(), 0.009);
}

TEST(LatencyHistogramFio, StdevSurvivesMergeAndLargeValues) {
  // 1 ms +- 1 us: the sum of squares (about 1e18 ps^2 each) must not drown
  // the spread. Samples 1e9 - 1e6 and 1e9 + 1e6 ps: sample stdev
  // sqrt(2 * 1e12 / 1) = 1.41421e6 ps.
  LatencyHistogram a, b;
  a.record(1'000'000'000 - 1'000'000);
  b.record(1'000'000'000 + 1'000'000);
  EXPECT_EQ(a.stdev(), 0.0);  // one sample
  a.merge(b);
  EXPECT_NEAR(a.stdev(), std::sqrt(2.0) * 1e6, 1.0);
}

}  // namespace
}  // namespace gpunvme
