// The requests of a kv_cache batch: each sequence's context length, drawn
// from the scenario's distribution with the run's seed, and each request's
// time to first token from the prompts' prefill (batched or one after
// another). Decoding then runs the batch in lock step, so every output token
// of every request takes its decode step's time.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/kernel/random.h"
#include "sim/kernel/time.h"
#include "sim/system/config/run_config.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

// A context-length distribution as the scenario declares it.
struct KvContextLaw {
  KvContextDistribution kind = KvContextDistribution::fixed;
  std::uint64_t tokens = 1;  // fixed: the length; lognormal: the median
  std::uint64_t min_tokens = 1, max_tokens = 1;
  double sigma = 0;
  std::vector<std::int64_t> values;  // histogram: the lengths
  std::vector<double> weights;       // histogram: their relative frequencies
};
KvContextLaw kv_context_law(const RunConfig& config);

// A standard normal draw (Box-Muller, the cosine branch) from two uniform
// draws, so that it is the same with every standard library.
template <typename Engine>
double random_standard_normal(Engine& engine) {
  const double u1 = random_unit(engine);
  const double u2 = random_unit(engine);
  constexpr double kTwoPi = 6.283185307179586;
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(kTwoPi * u2);
}

// One context length drawn from `law` (fixed draws nothing).
template <typename Engine>
std::uint64_t draw_context(Engine& engine, const KvContextLaw& law) {
  switch (law.kind) {
    case KvContextDistribution::fixed: return law.tokens;
    case KvContextDistribution::uniform:
      return random_between(engine, law.min_tokens, law.max_tokens);
    case KvContextDistribution::lognormal: {
      const double drawn = std::round(static_cast<double>(law.tokens) *
                                      std::exp(law.sigma * random_standard_normal(engine)));
      const double held = std::min(std::max(drawn, static_cast<double>(law.min_tokens)),
                                   static_cast<double>(law.max_tokens));
      return static_cast<std::uint64_t>(held);
    }
    case KvContextDistribution::histogram: {
      double total = 0;
      for (double w : law.weights) total += w;
      const double u = random_unit(engine) * total;
      double cumulative = 0;
      for (std::size_t i = 0; i < law.values.size(); ++i) {
        cumulative += law.weights[i];
        if (u < cumulative) return static_cast<std::uint64_t>(law.values[i]);
      }
      // u rounded up to the total: the last bin with any weight.
      for (std::size_t i = law.values.size(); i-- > 0;) {
        if (law.weights[i] > 0) return static_cast<std::uint64_t>(law.values[i]);
      }
      return law.tokens;
    }
  }
  return law.tokens;
}

// Checks the distribution's fields: bounds in order, a histogram's lists of
// one length with some weight, and no field of another distribution set.
void check_kv_context_law(const RunConfig& config);

// Each sequence's context length, in sequence order, drawn with an engine
// seeded from the run's seed.
std::vector<std::uint64_t> kv_contexts(const RunConfig& config);

// Each request's time to first token, measured from the batch's arrival:
// batched, the end of one forward pass over every prompt; sequential, the
// end of its own pass after those of the requests before it.
std::vector<Picoseconds> kv_request_ttfts(const RunConfig& config);

// The nearest-rank percentile (the smallest value with at least p of the
// values at or below it), p in (0, 1]; 0 for no values.
double nearest_rank(std::vector<double> values, double p);

}  // namespace gpunvme
