// Shapes of public models for the kv_cache workload's `model` field. A row
// gives what the KV cache and the compute model need; each figure is from the
// model's published configuration (config.json of its release), cited in
// configs/SOURCES.md under the row's source key. To add a model, add a row
// here and its name to the `model` field's choices (scenario_params.def).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace gpunvme {

struct KvModelShape {
  const char* name;
  std::int64_t layers;
  std::int64_t kv_heads;
  std::int64_t head_dim;
  std::int64_t gqa_group;  // query heads per KV head
  double params_billion;
  const char* source;  // configs/SOURCES.md key
};

// Llama 3.1 8B and 70B use grouped-query attention (8 KV heads); Llama 2 7B
// is multi-head attention (every query head has its own KV head), so its
// cache per token is four times Llama 3.1 8B's.
inline constexpr std::array<KvModelShape, 3> kKvModels{{
    {"llama-3.1-8b", 32, 8, 128, 4, 8.03, "llama-3.1-card"},
    {"llama-3.1-70b", 80, 8, 128, 8, 70.6, "llama-3.1-70b-config"},
    {"llama-2-7b", 32, 32, 128, 1, 6.74, "llama-2-7b-config"},
}};

// The row named `name`, or nullptr (custom or unknown).
inline const KvModelShape* find_kv_model(const std::string& name) {
  for (const KvModelShape& m : kKvModels) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

}  // namespace gpunvme
