#include "sim/system/workload/kv_requests.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/kernel/params/config_error.h"
#include "sim/system/workload/kv_cache.h"

namespace gpunvme {

KvContextLaw kv_context_law(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  KvContextLaw law;
  law.kind = s.context_distribution;
  law.tokens = static_cast<std::uint64_t>(s.context_tokens);
  law.min_tokens = static_cast<std::uint64_t>(s.context_min_tokens);
  law.max_tokens = static_cast<std::uint64_t>(s.context_max_tokens);
  law.sigma = s.context_sigma;
  law.values = s.context_histogram_tokens;
  law.weights = s.context_histogram_weights;
  return law;
}

void check_kv_context_law(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const KvContextDistribution kind = s.context_distribution;
  // A field of another distribution than the one chosen would be ignored.
  const nlohmann::json& given = config.scenario.params.json();
  const ComponentSpec& spec = scenario_spec();
  const std::pair<const char*, std::vector<KvContextDistribution>> fields[] = {
      {"context_min_tokens", {KvContextDistribution::uniform, KvContextDistribution::lognormal}},
      {"context_max_tokens", {KvContextDistribution::uniform, KvContextDistribution::lognormal}},
      {"context_sigma", {KvContextDistribution::lognormal}},
      {"context_histogram_tokens", {KvContextDistribution::histogram}},
      {"context_histogram_weights", {KvContextDistribution::histogram}}};
  for (const auto& [name, kinds] : fields) {
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) continue;
    if (given.at(name) != spec.find(name)->default_value) {
      std::vector<std::string> names;
      for (KvContextDistribution k : kinds) names.push_back(enum_name(k));
      throw ConfigError(file, std::string("$.") + name, given.at(name).dump(),
                        fmt::format("applies to context_distribution = {} only (it is {})",
                                    fmt::join(names, " or "), enum_name(kind)));
    }
  }
  if ((kind == KvContextDistribution::uniform || kind == KvContextDistribution::lognormal) &&
      s.context_min_tokens > s.context_max_tokens) {
    throw ConfigError(file, "$.context_max_tokens", std::to_string(s.context_max_tokens),
                      fmt::format("below context_min_tokens = {}", s.context_min_tokens));
  }
  if (kind == KvContextDistribution::histogram) {
    if (s.context_histogram_tokens.empty()) {
      throw ConfigError(file, "$.context_histogram_tokens", "[]",
                        "a histogram needs at least one context length");
    }
    if (s.context_histogram_weights.size() != s.context_histogram_tokens.size()) {
      throw ConfigError(file, "$.context_histogram_weights",
                        given.at("context_histogram_weights").dump(),
                        fmt::format("one weight per context_histogram_tokens entry: {} expected",
                                    s.context_histogram_tokens.size()));
    }
    double total = 0;
    for (double w : s.context_histogram_weights) total += w;
    if (!(total > 0)) {
      throw ConfigError(file, "$.context_histogram_weights",
                        given.at("context_histogram_weights").dump(),
                        "the weights must not all be 0");
    }
  }
}

std::vector<std::uint64_t> kv_contexts(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const KvContextLaw law = kv_context_law(config);
  RandomEngine rng(config.seed * 0x9E3779B97F4A7C15ull + 0x4B5643);
  std::vector<std::uint64_t> contexts(static_cast<std::size_t>(s.batch));
  for (std::uint64_t& c : contexts) c = draw_context(rng, law);
  return contexts;
}

namespace {
// One forward pass over prompts of the given lengths (nothing cached): per
// layer the roofline of its weights read once and its FLOPs, 2 x weights x
// tokens plus causal attention's 2 x query heads x head_dim x length^2 per
// prompt.
Picoseconds batched_prefill(const RunConfig& config, const std::vector<std::uint64_t>& prompts) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const KvShape k = kv_shape(config);
  const double layer_weights = k.params / static_cast<double>(k.layers);
  const double q_heads = static_cast<double>(k.kv_heads * k.gqa_group);
  double tokens = 0, squares = 0;
  for (std::uint64_t p : prompts) {
    tokens += static_cast<double>(p);
    squares += static_cast<double>(p) * static_cast<double>(p);
  }
  const double flops =
      2.0 * layer_weights * tokens + 2.0 * q_heads * static_cast<double>(k.head_dim) * squares;
  const double weights_ps =
      layer_weights * static_cast<double>(s.weight_bytes) / (s.hbm_bandwidth_gbps * 1e-3);
  const double flops_ps = flops / (s.gpu_tflops * 1e12 * 1e-12);
  return static_cast<Picoseconds>(
      std::llround(static_cast<double>(k.layers) * std::max(weights_ps, flops_ps)));
}
}  // namespace

std::vector<Picoseconds> kv_request_ttfts(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::vector<std::uint64_t> contexts = kv_contexts(config);
  if (s.prefill_order == KvPrefill::sequential) {
    std::vector<Picoseconds> ttfts;
    Picoseconds end = 0;
    for (std::uint64_t c : contexts) {
      end += kv_prefill_time(config, 1, c, 0);
      ttfts.push_back(end);
    }
    return ttfts;
  }
  // Equal prompts: the batch formula of kv_prefill_time.
  const Picoseconds pass = s.context_distribution == KvContextDistribution::fixed
                               ? kv_prefill_time(config)
                               : batched_prefill(config, contexts);
  return std::vector<Picoseconds>(contexts.size(), pass);
}

double nearest_rank(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size(), std::max<std::size_t>(rank, 1)) - 1];
}

}  // namespace gpunvme
