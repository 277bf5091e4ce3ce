// Fast mode's run-length controller against hand-computed cases and
// synthetic streams whose steady state is known: MSER-5's truncation point,
// the lag-1 autocorrelation and the t quantile by hand; a stationary stream
// converges to its known rate and mean latency within the intervals it
// reports; a stream with a step or a trend is not declared converged.
#include "sim/system/workload/run_length.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>

namespace gpunvme {
namespace {

TEST(RunLength, MserTruncatesAHandComputedTransient) {
  // d = 0: mean 3.5, squares 62, / 8^2 = 0.969; d = 1: 13.71 / 7^2 = 0.280;
  // d = 2: the rest is constant, 0 (the first zero wins).
  EXPECT_EQ(mser_truncation({10, 6, 2, 2, 2, 2, 2, 2}), 2u);
  // d = 0: 13.71 / 49 = 0.280; d = 1: 6 / 36 = 0.167; d = 2: 4.8 / 25 =
  // 0.192; d = 3 (n / 2): 4 / 16 = 0.25.
  EXPECT_EQ(mser_truncation({5, 1, 3, 1, 3, 1, 3}), 1u);
  // Nothing to truncate in a stationary alternation.
  EXPECT_EQ(mser_truncation({1, 3, 1, 3, 1, 3}), 0u);
}

TEST(RunLength, LagOneAutocorrelationByHand) {
  // {1, 2, 3, 4}: mean 2.5, squares 5, lagged products 1.25.
  EXPECT_DOUBLE_EQ(lag1_autocorrelation({1, 2, 3, 4}), 0.25);
  // {1, -1, 1, -1}: squares 4, lagged products -3.
  EXPECT_DOUBLE_EQ(lag1_autocorrelation({1, -1, 1, -1}), -0.75);
  EXPECT_DOUBLE_EQ(lag1_autocorrelation({2, 2, 2, 2}), 0.0);
}

TEST(RunLength, StudentTQuantiles) {
  EXPECT_DOUBLE_EQ(student_t_975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t_975(29), 2.045);
  // Tables: 2.040 (31), 2.000 (60), 1.984 (100), 1.962 (1000).
  EXPECT_NEAR(student_t_975(31), 2.040, 0.001);
  EXPECT_NEAR(student_t_975(60), 2.000, 0.001);
  EXPECT_NEAR(student_t_975(100), 1.984, 0.001);
  EXPECT_NEAR(student_t_975(1000), 1.962, 0.001);
}

// A deterministic uniform in (0, 1) (SplitMix64), so the streams are the
// same on every platform.
struct Uniform {
  std::uint64_t state;
  double operator()() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;
  }
};

constexpr double kRate = 1e6;                // completions per second
constexpr double kMeanGapPs = 1e12 / kRate;  // 1 us between completions
constexpr double kBaseLatencyPs = 50e6;      // 50 us
constexpr double kJitterPs = 5e6;            // + exponential, mean 5 us

RunLengthRule test_rule() {
  RunLengthRule rule;
  rule.threads = 1024;
  return rule;
}

// Feeds `count` completions: exponential gaps of mean 1 us, latency
// `latency_scale(i)` x (50 us + an exponential of mean 5 us). Returns how
// many it fed before the controller converged (count if it never did).
std::uint64_t feed(RunLengthController& controller, std::uint64_t count,
                   const std::function<double(std::uint64_t)>& latency_scale) {
  Uniform u{42};
  double now = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    now += -std::log(u()) * kMeanGapPs;
    const double latency = latency_scale(i) * (kBaseLatencyPs - std::log(u()) * kJitterPs);
    controller.record(static_cast<Picoseconds>(now), static_cast<Picoseconds>(latency));
    if (controller.converged()) return i + 1;
  }
  return count;
}

TEST(RunLength, AStationaryStreamConvergesToItsMean) {
  RunLengthController controller(test_rule(), 0);
  const std::uint64_t fed = feed(controller, 2'000'000, [](std::uint64_t) { return 1.0; });
  ASSERT_TRUE(controller.converged()) << fed;
  const SteadyState& s = *controller.steady_state();
  // It stopped well before the stream ran out, past its minimum share.
  EXPECT_LT(fed, 2'000'000u);
  EXPECT_GE(s.observed_ios - s.warmup_ios, 20'000u);
  EXPECT_GE(s.batches, 30u);
  EXPECT_LE(s.ios_per_s_half_width, 0.01);
  EXPECT_LE(s.latency_mean_half_width, 0.01);
  // The known rate and mean latency lie within the reported intervals.
  EXPECT_LE(std::abs(s.ios_per_s / kRate - 1.0), s.ios_per_s_half_width);
  const double mean_latency = kBaseLatencyPs + kJitterPs;
  EXPECT_LE(std::abs(s.latency->mean() / mean_latency - 1.0), s.latency_mean_half_width);
  // p50 of 50 us + Exp(5 us): 50 + 5 ln 2 us (the histogram's 1.6 %).
  EXPECT_NEAR(static_cast<double>(s.latency->percentile(0.5)),
              kBaseLatencyPs + kJitterPs * std::log(2.0), 0.016 * kBaseLatencyPs);
}

TEST(RunLength, AStepInLatencyIsNotDeclaredConverged) {
  // A 10 % step after 200,000 completions; the rule may not stop before
  // 300,000, so every evaluation sees the step inside its post-warm-up
  // segment (MSER may cut at most half the run).
  RunLengthRule rule = test_rule();
  rule.min_ios = 300'000;
  RunLengthController stepped(rule, 0);
  feed(stepped, 390'000, [](std::uint64_t i) { return i < 200'000 ? 1.0 : 1.1; });
  EXPECT_FALSE(stepped.converged());
  // The same stream without the step converges under the same rule.
  RunLengthController flat(rule, 0);
  feed(flat, 390'000, [](std::uint64_t) { return 1.0; });
  EXPECT_TRUE(flat.converged());
}

TEST(RunLength, AChangeInTheTailAloneIsNotDeclaredConverged) {
  // After 200,000 completions the latency's spread doubles while its mean
  // stays 55 us (45 us + an exponential of mean 10 us): the batch means see
  // no change, the p99 of the two halves does (73 us against 91 us).
  RunLengthRule rule = test_rule();
  rule.min_ios = 300'000;
  RunLengthController widened(rule, 0);
  Uniform u{7};
  double now = 0;
  for (std::uint64_t i = 0; i < 390'000 && !widened.converged(); ++i) {
    now += -std::log(u()) * kMeanGapPs;
    const double latency = i < 200'000 ? kBaseLatencyPs - std::log(u()) * kJitterPs
                                       : 45e6 - std::log(u()) * 2 * kJitterPs;
    widened.record(static_cast<Picoseconds>(now), static_cast<Picoseconds>(latency));
  }
  EXPECT_FALSE(widened.converged());
}

TEST(RunLength, ATrendIsNotDeclaredConverged) {
  // Latency growing 10 % per 100,000 completions: never stationary.
  RunLengthController trending(test_rule(), 0);
  const std::uint64_t fed =
      feed(trending, 2'000'000, [](std::uint64_t i) { return 1.0 + static_cast<double>(i) / 1e6; });
  EXPECT_FALSE(trending.converged()) << fed;
}

TEST(RunLength, HalfWidthsOfIndependentAndCorrelatedBatchesByHand) {
  // Batches 1, 2, 3, 4: mean 2.5, sample variance 5/3, t(0.975, 3) = 3.182.
  const std::vector<double> batches{1, 2, 3, 4};
  EXPECT_NEAR(relative_half_width(batches, false), 3.182 * std::sqrt(5.0 / 3.0 / 4.0) / 2.5, 1e-12);
  // Correlated: the bound Var(mean) <= Var(batch), sqrt(4) = 2 times wider.
  EXPECT_NEAR(relative_half_width(batches, true), 3.182 * std::sqrt(5.0 / 3.0) / 2.5, 1e-12);
  EXPECT_TRUE(std::isinf(relative_half_width({1.0}, false)));
}

// Feeds `count` completions 1 us apart on average, latency 50 us x (1 +
// 15 % sin(2 pi i / 1,024) + `slow` sin(2 pi i / 400,000)) + an exponential
// of mean 0.5 us: the shape of a closed loop's latency (a pattern repeating
// every cycle of its 1,024 threads, which batches of one cycle average out)
// with a slow wave that dominates the batch means. Returns how many it fed.
std::uint64_t feed_cycles(RunLengthController& controller, std::uint64_t count, double slow) {
  Uniform u{11};
  double now = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    now += -std::log(u()) * kMeanGapPs;
    const double x = static_cast<double>(i);
    const double shape =
        1.0 + 0.15 * std::sin(2 * M_PI * x / 1024) + slow * std::sin(2 * M_PI * x / 4e5);
    const double latency = kBaseLatencyPs * shape - std::log(u()) * 0.5e6;
    controller.record(static_cast<Picoseconds>(now), static_cast<Picoseconds>(latency));
    if (controller.converged()) return i + 1;
  }
  return count;
}

TEST(RunLength, ASlowSmallWaveConvergesUnderTheCorrelationBound) {
  // A 0.3 % wave of period 400,000 completions, far longer than a batch (of
  // one cycle, 1,025 completions): the batch means correlate at every batch
  // size the run allows (lag-1 above 0.2), as the latency of per_warp_queue
  // with 16,384 threads does (README, Fast mode), and lag-1 alone refused
  // it. Its mean is known within 0.3 % at any point, which the bound that
  // needs no independence establishes.
  RunLengthController controller(test_rule(), 0);
  const std::uint64_t fed = feed_cycles(controller, 2'000'000, 0.003);
  ASSERT_TRUE(controller.converged()) << fed;
  const SteadyState& s = *controller.steady_state();
  EXPECT_TRUE(s.correlated_latency);
  EXPECT_FALSE(s.correlated_time);  // exponential gaps: independent batches
  EXPECT_GT(s.lag1_latency, 0.2);
  EXPECT_LE(s.latency_mean_half_width, 0.01);
  // The stream's mean latency (the wave's mean is 0) lies within the
  // interval it reports.
  const double mean_latency = kBaseLatencyPs + 0.5e6;
  EXPECT_LE(std::abs(s.latency->mean() / mean_latency - 1.0), s.latency_mean_half_width);
  // The same wave at 3 %: the batch means spread too far for the bound.
  RunLengthController wide(test_rule(), 0);
  feed_cycles(wide, 2'000'000, 0.03);
  EXPECT_FALSE(wide.converged());
}

TEST(RunLength, AWarmUpIsTruncated) {
  // The first 20,000 completions at twice the latency, as while queues fill.
  RunLengthController controller(test_rule(), 0);
  feed(controller, 2'000'000, [](std::uint64_t i) { return i < 20'000 ? 2.0 : 1.0; });
  ASSERT_TRUE(controller.converged());
  const SteadyState& s = *controller.steady_state();
  EXPECT_GE(s.warmup_ios, 20'000u);
  EXPECT_LE(s.warmup_ios, 21'000u);
  const double mean_latency = kBaseLatencyPs + kJitterPs;
  EXPECT_LE(std::abs(s.latency->mean() / mean_latency - 1.0), s.latency_mean_half_width);
}

}  // namespace
}  // namespace gpunvme
