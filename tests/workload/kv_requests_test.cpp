// The kv_cache batch's requests: context lengths drawn from the declared
// distributions (hand-worked draws from scripted engine words, and the
// empirical frequencies of many draws), and a two-request batch whose time
// to first token and time per output token are worked by hand.
#include "sim/system/workload/kv_requests.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <map>

#include "sim/system/workload/kv_cache.h"
#include "tests/kernel/scripted_engine.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

using test::ScriptedEngine;

// The word whose real draw is u (u x 2^64, rounded down).
std::uint64_t word(double u) { return static_cast<std::uint64_t>(std::ldexp(u, 64)); }

KvContextLaw law(KvContextDistribution kind) {
  KvContextLaw l;
  l.kind = kind;
  l.tokens = 1000;
  l.min_tokens = 100;
  l.max_tokens = 4000;
  l.sigma = 0.5;
  l.values = {512, 2048, 8192};
  l.weights = {1, 2, 1};
  return l;
}

TEST(KvRequests, HandWorkedDraws) {
  // Histogram, weights 1:2:1 of 4: u x 4 below 1 is 512, below 3 is 2048,
  // else 8192.
  ScriptedEngine h{{word(0.0), word(0.2), word(0.25), word(0.7), word(0.75), word(0.99)}};
  const KvContextLaw hist = law(KvContextDistribution::histogram);
  EXPECT_EQ(draw_context(h, hist), 512u);
  EXPECT_EQ(draw_context(h, hist), 512u);
  EXPECT_EQ(draw_context(h, hist), 2048u);
  EXPECT_EQ(draw_context(h, hist), 2048u);
  EXPECT_EQ(draw_context(h, hist), 8192u);
  EXPECT_EQ(draw_context(h, hist), 8192u);
  // Lognormal, median 1000, sigma 0.5. Box-Muller: u1 = 0 gives radius 0,
  // the median; u1 = 1 - e^-1/2 gives radius 1, and u2 = 0 (cos 0 = 1) or
  // 0.5 (cos pi = -1) gives z = +1 or -1: 1000 e^0.5 = 1648.7 and
  // 1000 e^-0.5 = 606.5. u1 = 1 - e^-32 gives radius 8: 1000 e^4 = 54598,
  // held at 4000; z = -8 gives 18.3, raised to 100.
  const double radius1 = 1 - std::exp(-0.5), radius8 = 1 - std::exp(-32.0);
  ScriptedEngine g{{word(0.0), word(0.3), word(radius1), word(0.0), word(radius1), word(0.5),
                    word(radius8), word(0.0), word(radius8), word(0.5)}};
  const KvContextLaw logn = law(KvContextDistribution::lognormal);
  EXPECT_EQ(draw_context(g, logn), 1000u);
  EXPECT_EQ(draw_context(g, logn), 1649u);
  EXPECT_EQ(draw_context(g, logn), 607u);
  EXPECT_EQ(draw_context(g, logn), 4000u);
  EXPECT_EQ(draw_context(g, logn), 100u);
  // Fixed draws no word.
  ScriptedEngine none{{}};
  EXPECT_EQ(draw_context(none, law(KvContextDistribution::fixed)), 1000u);
  EXPECT_TRUE(g.words.empty());
  EXPECT_TRUE(h.words.empty());
}

TEST(KvRequests, EmpiricalDrawsFollowTheDeclaredDistribution) {
  constexpr int kDraws = 40000;
  RandomEngine rng(7);
  // Histogram: each bin's share within 4 standard deviations of a binomial
  // (p = 1/4: sd 0.0022; p = 1/2: sd 0.0025).
  std::map<std::uint64_t, int> counts;
  for (int i = 0; i < kDraws; ++i)
    ++counts[draw_context(rng, law(KvContextDistribution::histogram))];
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_NEAR(counts[512] / double(kDraws), 0.25, 4 * 0.0022);
  EXPECT_NEAR(counts[2048] / double(kDraws), 0.50, 4 * 0.0025);
  EXPECT_NEAR(counts[8192] / double(kDraws), 0.25, 4 * 0.0022);
  // Uniform on [100, 4000]: mean 2050, sd 1125.8 (sd of the mean 5.6); every
  // draw inside, both ends reached.
  KvContextLaw u = law(KvContextDistribution::uniform);
  double sum = 0;
  std::uint64_t least = ~0ull, most = 0;
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t c = draw_context(rng, u);
    sum += static_cast<double>(c);
    least = std::min(least, c);
    most = std::max(most, c);
  }
  EXPECT_NEAR(sum / kDraws, 2050.0, 4 * 5.63);
  EXPECT_EQ(least, 100u);
  EXPECT_EQ(most, 4000u);
  // Lognormal without holding (bounds far out): ln(context) has mean
  // ln 1000 = 6.9078 and sd 0.5 (rounding to whole tokens adds < 0.001);
  // the median is 1000.
  KvContextLaw l = law(KvContextDistribution::lognormal);
  l.min_tokens = 1;
  l.max_tokens = 1 << 24;
  std::vector<double> logs;
  double log_sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    logs.push_back(std::log(static_cast<double>(draw_context(rng, l))));
    log_sum += logs.back();
  }
  const double mean = log_sum / kDraws;
  double squares = 0;
  for (double x : logs) squares += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, std::log(1000.0), 4 * 0.5 / std::sqrt(kDraws));
  EXPECT_NEAR(std::sqrt(squares / (kDraws - 1)), 0.5, 0.01);
  EXPECT_NEAR(std::exp(nearest_rank(logs, 0.5)), 1000.0, 15.0);
}

TEST(KvRequests, TheScenarioDrawsOneContextPerSequenceWithTheSeed) {
  auto contexts = [](std::uint64_t seed) {
    return kv_shape(
               test::scenario("kv-cache-gpu",
                              {"scenario.batch=4000", "scenario.context_distribution=histogram",
                               "scenario.context_histogram_tokens=[16,32]",
                               "scenario.context_histogram_weights=[3,1]", "scenario.hbm_kv_gib=4"},
                              seed))
        .contexts;
  };
  const std::vector<std::uint64_t> a = contexts(1);
  ASSERT_EQ(a.size(), 4000u);
  EXPECT_EQ(a, contexts(1));
  EXPECT_NE(a, contexts(2));
  const auto shorter = std::count(a.begin(), a.end(), 16u);
  // 3/4 of 4000 = 3000, sd 27.4.
  EXPECT_NEAR(static_cast<double>(shorter), 3000.0, 4 * 27.4);
  EXPECT_EQ(std::count(a.begin(), a.end(), 32u), 4000 - shorter);
}

// 4 layers, 2 KV heads of 64 dims (512 B per token and layer, 8 query heads),
// 0.4e9 parameters (1e8 per layer, 200 us of weights at 1000 GB/s), 100
// TFLOP/s; all KV in HBM. With seed 4 the two requests draw 496 and 1504
// tokens from the histogram.
std::vector<std::string> two_requests(const char* order) {
  return {"scenario.layers=4",
          "scenario.kv_heads=2",
          "scenario.head_dim=64",
          "scenario.block_tokens=16",
          "scenario.batch=2",
          "scenario.decode_steps=2",
          "scenario.bs=8192",
          "scenario.threads=256",
          "scenario.layer_compute_us=10",
          "scenario.measure_reload=false",
          "scenario.hbm_kv_gib=0.01",
          "scenario.host_kv_gib=0",
          "scenario.params_billion=0.4",
          "scenario.gpu_tflops=100",
          "scenario.hbm_bandwidth_gbps=1000",
          "scenario.context_distribution=histogram",
          "scenario.context_histogram_tokens=[496,1504]",
          "scenario.context_histogram_weights=[1,1]",
          std::string("scenario.prefill_order=") + order};
}

TEST(KvRequests, TwoRequestsHandWorked) {
  const nlohmann::json seq = run(test::scenario("kv-cache-gpu", two_requests("sequential"), 4));
  const nlohmann::json& req = seq["kv_cache"]["requests"];
  ASSERT_EQ(req["contexts"], nlohmann::json({496, 1504}));
  // Prefill of one prompt of c tokens, per layer: 2 x 1e8 x c + 2 x 8 x 64
  // x c^2 FLOPs at 100 FLOP/ps (above the 2e8 ps of weights), x 4 layers.
  // c = 496: 99,451,920,384 FLOPs -> 3,978,076,815.36 ps; c = 1504:
  // 303,116,304,384 FLOPs -> 12,124,652,175.36 ps. In turn: the second
  // request's first token comes after both passes.
  const double first = 3978076.815, second = 3978076.815 + 12124652.175;
  EXPECT_NEAR(req["ttft_ns"]["min"].get<double>(), first, 0.002);
  EXPECT_NEAR(req["ttft_ns"]["p50"].get<double>(), first, 0.002);
  EXPECT_NEAR(req["ttft_ns"]["p99"].get<double>(), second, 0.002);
  EXPECT_NEAR(req["ttft_ns"]["mean"].get<double>(), (first + second) / 2, 0.002);
  EXPECT_NEAR(seq["summary"]["ttft_ns"].get<double>(), (first + second) / 2, 0.002);
  EXPECT_NEAR(seq["summary"]["ttft_p99_ns"].get<double>(), second, 0.002);
  EXPECT_NEAR(seq["kv_cache"]["prefill_ns"].get<double>(), second, 0.002);
  // Decode: a step is 4 x (10 us + attention over (497 + 1505 + 2s) tokens
  // x 512 B at 1 B/ps): 4 x 11,025,024 ps, then 4 x 11,026,048 ps. Each
  // request's tokens take the steps' times.
  const double step0 = 44100.096, step1 = 44104.192;
  EXPECT_NEAR(req["tpot_ns"]["p50"].get<double>(), step0, 0.002);
  EXPECT_NEAR(req["tpot_ns"]["p99"].get<double>(), step1, 0.002);
  EXPECT_NEAR(req["tpot_ns"]["mean"].get<double>(), (step0 + step1) / 2, 0.002);
  EXPECT_NEAR(seq["summary"]["tpot_p50_ns"].get<double>(), step0, 0.002);
  EXPECT_NEAR(seq["summary"]["tpot_p99_ns"].get<double>(), step1, 0.002);
  // The cache holds both contexts: (496 + 1504) x 4 layers x 512 B.
  EXPECT_EQ(seq["kv_cache"]["total_kv_bytes"].get<std::uint64_t>(), 2000u * 4 * 512);
  EXPECT_DOUBLE_EQ(req["context_tokens"]["mean"].get<double>(), 1000.0);

  // Batched: one pass over both prompts, 2 x 1e8 x 2000 + 1024 x (496^2 +
  // 1504^2) = 402,568,224,768 FLOPs per layer -> 16,102,728,990.72 ps;
  // both first tokens at its end.
  const nlohmann::json bat = run(test::scenario("kv-cache-gpu", two_requests("batched"), 4));
  const nlohmann::json& b = bat["kv_cache"]["requests"];
  EXPECT_NEAR(b["ttft_ns"]["min"].get<double>(), 16102728.991, 0.002);
  EXPECT_NEAR(b["ttft_ns"]["max"].get<double>(), 16102728.991, 0.002);
  EXPECT_NEAR(bat["summary"]["ttft_ns"].get<double>(), 16102728.991, 0.002);
  EXPECT_NEAR(b["tpot_ns"]["mean"].get<double>(), (step0 + step1) / 2, 0.002);
}

}  // namespace
}  // namespace gpunvme
