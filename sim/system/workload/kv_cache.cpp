#include "sim/system/workload/kv_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "models/flash/flash_params.h"
#include "models/gpu/gpu.h"
#include "models/nvme/ssd_params.h"
#include "models/pcie/routing.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/workload/kv_models.h"
#include "sim/system/workload/kv_network.h"
#include "sim/system/workload/kv_requests.h"
#include "sim/system/workload/kv_traces.h"
#include "sim/system/workload/remote_io_path.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {
constexpr std::uint64_t kPage = 4096;
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }
double round_to(double v, double unit) { return std::round(v / unit) * unit; }
// Full blocks of every sequence of one layer by the end of decoding.
std::uint64_t end_full_blocks(const KvShape& k) {
  std::uint64_t blocks = 0;
  for (std::uint64_t c : k.contexts) blocks += (c + k.steps) / k.block_tokens;
  return blocks;
}
constexpr double kGiB = 1073741824.0;

std::uint64_t ssd_capacity_bytes(const RunConfig& config) {
  std::uint64_t least = ~std::uint64_t{0};
  const auto ssds = ScenarioParams::from(config.scenario.params).ssds;
  for (const std::string& id : ssds) {
    const NodeConfig& n = *config.topology.node(id);
    least = std::min(
        least, static_cast<std::uint64_t>(nvme::SsdParams::from(n.params).capacity_gib * kGiB));
  }
  return least * ssds.size();
}

std::uint64_t largest_lba(const RunConfig& config) {
  std::uint64_t lba = 512;
  const std::vector<std::string> ssds = ScenarioParams::from(config.scenario.params).ssds;
  for (const std::string& id : ssds) {
    lba = std::max<std::uint64_t>(
        lba, nvme::SsdParams::from(config.topology.node(id)->params).lba_bytes);
  }
  return lba;
}
// A named model sets the shape: a shape field left at its declared default
// yields to it; one set to a third value contradicts it.
void check_model_fields(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const KvModelShape* model = find_kv_model(s.model);
  if (model == nullptr) return;
  const ComponentSpec& spec = scenario_spec();
  const std::pair<const char*, double> fields[] = {
      {"layers", static_cast<double>(model->layers)},
      {"kv_heads", static_cast<double>(model->kv_heads)},
      {"head_dim", static_cast<double>(model->head_dim)},
      {"gqa_group", static_cast<double>(model->gqa_group)},
      {"params_billion", model->params_billion}};
  for (const auto& [name, value] : fields) {
    const double given = config.scenario.params.json().at(name).get<double>();
    const double declared = spec.find(name)->default_value.get<double>();
    if (given != declared && given != value) {
      throw ConfigError(config.scenario.file, std::string("$.") + name, fmt::format("{}", given),
                        fmt::format("model {} has {} = {}; leave the field out or set model = "
                                    "custom",
                                    model->name, name, value));
    }
  }
}
// A trace replaces parameters: setting those too, or a trace for another
// policy, would be ignored.
void check_kv_traces(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const nlohmann::json& given = config.scenario.params.json();
  const ComponentSpec& spec = scenario_spec();
  auto set = [&](const char* name) { return given.at(name) != spec.find(name)->default_value; };
  auto refuse = [&](const char* name, const std::string& why) {
    throw ConfigError(file, std::string("$.") + name, given.at(name).dump(), why);
  };
  if (!s.sparse_trace.empty()) {
    if (s.policy != KvPolicy::sparse) refuse("sparse_trace", "applies to policy = sparse only");
    for (const char* name : {"sparse_fraction", "sparse_miss_rate"}) {
      if (set(name)) refuse(name, "sparse_trace gives it per step and layer: leave one out");
    }
    if (!std::ifstream(kv_trace_path(config, s.sparse_trace)).good()) {
      refuse("sparse_trace", "expected a readable sparsity trace (CSV)");
    }
    const std::uint64_t layers = kv_shape(config).layers;
    read_sparse_trace(kv_trace_path(config, s.sparse_trace), layers);
  }
  if (!s.session_trace.empty()) {
    if (s.policy != KvPolicy::reuse) refuse("session_trace", "applies to policy = reuse only");
    for (const char* name : {"reuse_hit_rate", "reuse_dram_share", "turn_tokens"}) {
      if (set(name)) refuse(name, "session_trace replays the sessions instead: leave one out");
    }
    if (!std::ifstream(kv_trace_path(config, s.session_trace)).good()) {
      refuse("session_trace", "expected a readable session trace (CSV)");
    }
    read_session_trace(kv_trace_path(config, s.session_trace));
  } else {
    for (const char* name : {"reuse_store_dram_gib", "reuse_store_nvme_gib"}) {
      if (set(name)) refuse(name, "applies to policy = reuse with a session_trace only");
    }
  }
}
}  // namespace

KvShape kv_shape(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  KvShape k{};
  const KvModelShape* model = find_kv_model(s.model);
  k.model = model != nullptr ? model->name : "custom";
  k.layers = static_cast<std::uint64_t>(model != nullptr ? model->layers : s.layers);
  k.kv_heads = static_cast<std::uint64_t>(model != nullptr ? model->kv_heads : s.kv_heads);
  k.head_dim = static_cast<std::uint64_t>(model != nullptr ? model->head_dim : s.head_dim);
  k.gqa_group = static_cast<std::uint64_t>(model != nullptr ? model->gqa_group : s.gqa_group);
  k.params = (model != nullptr ? model->params_billion : s.params_billion) * 1e9;
  k.dtype_bytes = static_cast<std::uint64_t>(s.dtype_bytes);
  k.batch = static_cast<std::uint64_t>(s.batch);
  k.block_tokens = static_cast<std::uint64_t>(s.block_tokens);
  k.context = static_cast<std::uint64_t>(s.context_tokens);
  k.contexts = kv_contexts(config);
  k.steps = static_cast<std::uint64_t>(s.decode_steps);
  k.token_bytes = 2ull * k.kv_heads * k.head_dim * k.dtype_bytes;
  k.block_bytes = k.block_tokens * k.token_bytes;
  k.full_blocks = k.context / k.block_tokens;
  k.hbm_blocks = static_cast<std::uint64_t>(s.hbm_kv_gib * kGiB) / k.block_bytes;
  k.dram_blocks = static_cast<std::uint64_t>(s.host_kv_gib * kGiB) / k.block_bytes;
  const double nvme = s.nvme_kv_gib;
  const std::uint64_t slot = round_up(k.block_bytes, kPage);
  k.nvme_blocks = nvme > 0 ? static_cast<std::uint64_t>(nvme * kGiB) / k.block_bytes
                           : ssd_capacity_bytes(config) / slot;
  k.remote_blocks = static_cast<std::uint64_t>(s.remote_kv_gib * kGiB) / k.block_bytes;
  k.prefix_blocks = static_cast<std::uint64_t>(s.shared_prefix_tokens) / k.block_tokens;
  return k;
}

std::uint64_t kv_stored_bytes_private(const KvShape& k) {
  std::uint64_t blocks = 0;
  for (const std::uint64_t c : k.contexts) blocks += c / k.block_tokens;
  return k.layers * blocks * k.block_bytes;
}

std::uint64_t kv_stored_bytes(const KvShape& k) {
  const std::uint64_t copies_saved = k.batch > 0 ? (k.batch - 1) * k.prefix_blocks : 0;
  return kv_stored_bytes_private(k) - k.layers * copies_saved * k.block_bytes;
}

Picoseconds kv_prefill_time(const RunConfig& config) {
  const KvShape k = kv_shape(config);
  return kv_prefill_time(config, k.batch, k.context, 0);
}

Picoseconds kv_prefill_time(const RunConfig& config, std::uint64_t sequences, std::uint64_t fresh,
                            std::uint64_t cached) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const KvShape k = kv_shape(config);
  const double layer_weights = k.params / static_cast<double>(k.layers);
  const double n = static_cast<double>(fresh);
  const double c = static_cast<double>(cached);
  const double batch = static_cast<double>(sequences);
  const double q_heads = static_cast<double>(k.kv_heads * k.gqa_group);
  const double flops = 2.0 * layer_weights * batch * n + 2.0 * batch * q_heads *
                                                             static_cast<double>(k.head_dim) *
                                                             (2 * n * c + n * n);
  const double weights_ps =
      layer_weights * static_cast<double>(s.weight_bytes) / (s.hbm_bandwidth_gbps * 1e-3);
  const double flops_ps = flops / (s.gpu_tflops * 1e12 * 1e-12);
  return static_cast<Picoseconds>(
      std::llround(static_cast<double>(k.layers) * std::max(weights_ps, flops_ps)));
}

Picoseconds kv_layer_compute_time(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  if (s.compute_model == KvCompute::fixed) return s.layer_compute_us;
  const KvShape k = kv_shape(config);
  const double layer_weights = k.params / static_cast<double>(k.layers);
  const double weights_ps =
      layer_weights * static_cast<double>(s.weight_bytes) / (s.hbm_bandwidth_gbps * 1e-3);
  const double flops_ps =
      2.0 * layer_weights * static_cast<double>(k.batch) / (s.gpu_tflops * 1e12 * 1e-12);
  return static_cast<Picoseconds>(std::llround(std::max(weights_ps, flops_ps)));
}

std::uint64_t check_kv_cache(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  check_model_fields(config);
  check_kv_context_law(config);
  check_kv_traces(config);
  const KvShape k = kv_shape(config);
  const std::uint64_t tails = k.batch * k.layers;
  // The shared prefix's blocks are placed once per layer, not once per sequence.
  const std::uint64_t per_layer = end_full_blocks(k) - (k.batch - 1) * k.prefix_blocks;
  const std::uint64_t all_blocks = k.layers * per_layer;
  const bool lru = s.eviction == KvEviction::lru;
  const auto prefetch = static_cast<std::uint64_t>(s.prefetch_layers);
  if (s.shared_prefix_tokens > 0) {
    const auto prefix = static_cast<std::uint64_t>(s.shared_prefix_tokens);
    const std::uint64_t shortest = *std::min_element(k.contexts.begin(), k.contexts.end());
    if (prefix % k.block_tokens != 0 || prefix > shortest) {
      throw ConfigError(file, "$.shared_prefix_tokens", std::to_string(prefix),
                        fmt::format("a whole number of blocks ({} tokens each) of at most the "
                                    "shortest context ({} tokens)",
                                    k.block_tokens, shortest));
    }
    // Sparse selection and in-storage attention read each sequence's own
    // tokens of a block; a reused turn's reload is one sequence's context.
    if (s.policy != KvPolicy::tiered) {
      throw ConfigError(file, "$.shared_prefix_tokens", std::to_string(prefix),
                        fmt::format("a shared prefix is fetched once for the batch under policy "
                                    "tiered only; this scenario's policy is {}",
                                    enum_name(s.policy)));
    }
  }
  if (s.policy == KvPolicy::reuse && !s.measure_reload) {
    throw ConfigError(file, "$.measure_reload", "false",
                      "policy reuse times a returning turn's reload: measure_reload must be true");
  }
  if (lru && s.policy != KvPolicy::tiered && s.policy != KvPolicy::reuse) {
    throw ConfigError(file, "$.eviction", "lru",
                      fmt::format("policy {} streams lower-tier KV every step: eviction must be "
                                  "pin",
                                  enum_name(s.policy)));
  }
  if (k.hbm_blocks < tails) {
    throw ConfigError(file, "$.hbm_kv_gib", fmt::format("{}", s.hbm_kv_gib),
                      fmt::format("HBM must hold every sequence's last block of every layer: {} "
                                  "blocks of {} B",
                                  tails, k.block_bytes));
  }
  const std::uint64_t slot = round_up(k.block_bytes, kPage);
  if (s.nvme_kv_gib > 0 && static_cast<double>(k.nvme_blocks) * static_cast<double>(slot) >
                               static_cast<double>(ssd_capacity_bytes(config))) {
    throw ConfigError(file, "$.nvme_kv_gib", fmt::format("{}", s.nvme_kv_gib),
                      fmt::format("the SSDs hold {} B", ssd_capacity_bytes(config)));
  }
  const std::uint64_t room =
      (lru ? 0 : k.hbm_blocks - tails) + k.dram_blocks + k.remote_blocks + k.nvme_blocks;
  if (room < all_blocks) {
    throw ConfigError(file, "$.context_tokens", std::to_string(k.context),
                      fmt::format("{} full KV blocks by the end of decoding, but the tiers hold {} "
                                  "({})",
                                  all_blocks, room,
                                  lru ? "lru keeps every block in DRAM or NVMe"
                                      : "HBM besides the last blocks, DRAM and NVMe"));
  }
  if (lru && k.hbm_blocks - tails < (prefetch + 1) * per_layer) {
    throw ConfigError(file, "$.hbm_kv_gib", fmt::format("{}", s.hbm_kv_gib),
                      fmt::format("lru needs HBM for the {} layers in flight (prefetch_layers + "
                                  "1): {} blocks besides the {} last blocks",
                                  prefetch + 1, (prefetch + 1) * per_layer, tails));
  }
  check_kv_network(config, k);
  if (k.dram_blocks > 0 && config.topology.nodes_of_kind("host_memory").empty()) {
    throw ConfigError(file, "$.host_kv_gib", fmt::format("{}", s.host_kv_gib),
                      "a DRAM tier needs a host_memory node in the topology");
  }
  if (!s.host_kv_memory.empty()) {
    // The DRAM tier in a named memory (a CXL expander as the tier, or DRAM of another socket):
    // the GPU's copies of its blocks must be routable there.
    const TopologyConfig& topo = config.topology;
    const NodeConfig* tier = topo.node(s.host_kv_memory);
    if (tier == nullptr || (tier->kind != "host_memory" && tier->kind != "cxl_memory")) {
      throw ConfigError(file, "$.host_kv_memory", "\"" + s.host_kv_memory + "\"",
                        "expected the id of a host_memory or cxl_memory node in the topology");
    }
    const TopologyGraph graph(topo);
    const pcie::Router router(topo, graph);
    const auto index = [&topo](const NodeConfig* n) {
      return static_cast<std::size_t>(n - topo.nodes.data());
    };
    if (graph.route(index(topo.node(s.gpu)), index(tier)).empty()) {
      throw ConfigError(file, "$.host_kv_memory", "\"" + s.host_kv_memory + "\"",
                        fmt::format("{} has no route to {}", s.gpu, s.host_kv_memory));
    }
    router.require_path(index(topo.node(s.gpu)), index(tier));
  }
  const NodeConfig& gpu = *config.topology.node(s.gpu);
  const double gpu_bytes = gpu::GpuParams::from(gpu.params).memory_gib * kGiB;
  const double staging = lru ? 0.0 : static_cast<double>((prefetch + 1) * per_layer * slot);
  const double reload = static_cast<double>(k.layers * (k.full_blocks + 1) * slot);
  const double hbm = static_cast<double>(k.hbm_blocks * slot);
  if (hbm + staging + reload > 0.9 * gpu_bytes) {
    throw ConfigError(file, "$.hbm_kv_gib", fmt::format("{}", s.hbm_kv_gib),
                      fmt::format("the KV tier ({:.0f} B), prefetch staging ({:.0f} B) and a "
                                  "reload buffer ({:.0f} B) exceed {}'s memory",
                                  hbm, staging, reload, gpu.id));
  }
  const auto bs = static_cast<std::uint64_t>(s.bs);
  const std::uint64_t block_read = round_up(k.block_bytes, largest_lba(config));
  if (bs % kPage != 0 && bs < block_read) {
    throw ConfigError(file, "$.bs", std::to_string(bs),
                      "a KV block split into several commands needs bs in whole 4 KiB pages");
  }
  // A key-value command moves a block's whole value.
  if (s.kv_request == KvRequest::key) return block_read;
  return std::min(bs, block_read);
}

KvCacheWorkload::KvCacheWorkload(const sc_core::sc_module_name& name, const RunConfig& config,
                                 Machine& machine)
    : PathWorkload(name, config, machine, check_kv_cache(config)),
      shape_(kv_shape(config)),
      policy_(ScenarioParams::from(config.scenario.params).policy),
      lru_(ScenarioParams::from(config.scenario.params).eviction == KvEviction::lru),
      prefetch_(
          static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).prefetch_layers)),
      layer_compute_(kv_layer_compute_time(config)),
      hbm_bytes_per_ps_(ScenarioParams::from(config.scenario.params).hbm_bandwidth_gbps * 1e9 /
                        1e12),
      io_bytes_(check_kv_cache(config)),
      threads_(static_cast<std::uint32_t>(ScenarioParams::from(config.scenario.params).threads)),
      slot_bytes_(round_up(shape_.block_bytes, kPage)) {
  const std::uint64_t tails = shape_.batch * shape_.layers;
  blocks_by_layer_.resize(tails);
  hbm_base_ = gpu_.allocate(shape_.hbm_blocks * slot_bytes_, kPage);
  if (!lru_) {
    staging_per_layer_ = end_full_blocks(shape_);
    staging_base_ = gpu_.allocate(
        std::max<std::uint64_t>(1, (prefetch_ + 1) * staging_per_layer_) * slot_bytes_, kPage);
  }
  reload_base_ = gpu_.allocate(shape_.layers * (shape_.full_blocks + 1) * slot_bytes_, kPage);
  if (shape_.dram_blocks > 0) {
    std::size_t memory = HostSide::npos;
    for (std::size_t i = 0; i < machine.topology().nodes.size(); ++i) {
      if (machine.topology().nodes[i].kind == "host_memory") {
        memory = i;
        break;
      }
    }
    const HostSide side = nearest_host_side(
        machine, machine.gpu(ScenarioParams::from(config.scenario.params).gpu).node());
    if (side.memory != HostSide::npos) memory = side.memory;
    const std::string named = ScenarioParams::from(config.scenario.params).host_kv_memory;
    if (!named.empty()) memory = machine.node_index(named);
    dram_base_ = machine.memory()
                     .allocate(shape_.dram_blocks * slot_bytes_, memory, RegionKind::HostMemory,
                               "kv_dram_tier", kPage)
                     .base;
  }
  layers_.resize(shape_.steps * shape_.layers);
  step_times_.assign(shape_.steps, 0);
  stalls_.assign(shape_.steps, 0);
  dram_step_bytes_.assign(shape_.steps, 0);
  nvme_step_bytes_.assign(shape_.steps, 0);
  remote_step_bytes_.assign(shape_.steps, 0);
  network_write_step_bytes_.assign(shape_.steps, 0);
  network_write_step_end_.assign(shape_.steps, 0);
  step_ends_.assign(shape_.steps, 0);
  token_failed_.assign(shape_.steps * shape_.batch, false);
  request_ttfts_ = kv_request_ttfts(config);
  prefill_ = *std::max_element(request_ttfts_.begin(), request_ttfts_.end());
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  if (s.kv_request == KvRequest::key) lookup_ = std::max<Picoseconds>(1, s.kv_lookup_us);
  if (policy_ == KvPolicy::sparse) {
    sparse_fraction_ = s.sparse_fraction;
    sparse_miss_rate_ = s.sparse_miss_rate;
    key_fraction_ = s.speculation_key_fraction;
    selected_tokens_ = static_cast<std::uint64_t>(
        std::ceil(sparse_fraction_ * static_cast<double>(shape_.block_tokens)));
    if (!s.sparse_trace.empty()) {
      sparse_trace_ = std::make_unique<KvSparseTrace>(
          read_sparse_trace(kv_trace_path(config, s.sparse_trace), shape_.layers));
    }
  }
  if (policy_ == KvPolicy::reuse && !s.session_trace.empty()) {
    sessions_ = std::make_unique<std::vector<KvSession>>(
        read_session_trace(kv_trace_path(config, s.session_trace)));
  }
  if (policy_ == KvPolicy::in_storage) {
    // Each SSD's cores read its flash at the internal bandwidth: the lesser of
    // its channels' buses and its array (array units x the bytes of one read
    // per tR).
    for (const std::string& id : ssd_ids_) {
      const flash::FlashParams f = flash::flash_params_from(config.topology.node(id)->params);
      const double array = static_cast<double>(f.array_units()) *
                           static_cast<double>(f.program_chunk_bytes()) /
                           static_cast<double>(f.read_ps);
      const double buses = static_cast<double>(f.channels) * f.channel_bytes_per_s() * 1e-12;
      csd_bytes_per_ps_.push_back(std::min(array, buses));
    }
    csd_flops_per_ps_ = s.csd_attention_gflops * 1e9 * 1e-12;
    // Per sequence and query head: the partial output (head_dim values) and
    // the softmax's running maximum and sum (FP32 each) to merge with the
    // GPU's part.
    result_bytes_ = shape_.batch * shape_.kv_heads * shape_.gqa_group *
                    (shape_.head_dim * shape_.dtype_bytes + 8);
    result_base_ = gpu_.allocate(ssd_ids_.size() * round_up(result_bytes_, kPage), kPage);
  }
  place_blocks();
}

std::uint64_t KvCacheWorkload::dram_address(std::uint64_t home) const {
  return dram_base_ + (home % std::max<std::uint64_t>(shape_.dram_blocks, 1)) * slot_bytes_;
}

// Full blocks go to the tiers in placement order. pin: HBM (less the last
// blocks), DRAM, NVMe. lru: homes in DRAM then NVMe, and the first blocks
// in placement order start out cached in HBM.
void KvCacheWorkload::place_blocks() {
  const KvShape& k = shape_;
  const std::uint64_t tails = k.batch * k.layers;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> order;  // layer, seq, j
  std::vector<std::uint64_t> full(k.batch);                                    // per sequence
  for (std::uint64_t b = 0; b < k.batch; ++b) full[b] = k.contexts[b] / k.block_tokens;
  const std::uint64_t most = *std::max_element(full.begin(), full.end());
  if (ScenarioParams::from(config_.scenario.params).placement == KvPlacement::interleave) {
    for (std::uint64_t j = 0; j < most; ++j)
      for (std::uint64_t l = 0; l < k.layers; ++l)
        for (std::uint64_t b = 0; b < k.batch; ++b)
          if (j < full[b]) order.emplace_back(l, b, j);
  } else {
    for (std::uint64_t l = 0; l < k.layers; ++l)
      for (std::uint64_t b = 0; b < k.batch; ++b)
        for (std::uint64_t j = 0; j < full[b]; ++j) order.emplace_back(l, b, j);
  }
  // Blocks of a (layer, sequence) are kept in token order.
  std::vector<std::vector<std::uint32_t>> placed(tails);
  for (std::uint64_t l = 0; l < k.layers; ++l)
    for (std::uint64_t b = 0; b < k.batch; ++b) placed[l * k.batch + b].resize(full[b]);
  if (lru_) {
    cache_slots_ = k.hbm_blocks - tails;
    slot_block_.assign(cache_slots_, -1);
    slot_pins_.assign(cache_slots_, 0);
    recency_pos_.resize(cache_slots_);
    for (std::uint64_t i = cache_slots_; i-- > 0;)
      free_slots_.push_back(static_cast<std::uint32_t>(i));
  }
  for (const auto& [l, b, j] : order) {
    if (b > 0 && j < k.prefix_blocks) {
      // The shared prefix: the first sequence's block (placed before it in
      // either order) stands for every sequence's.
      placed[l * k.batch + b][j] = placed[l * k.batch][j];
      continue;
    }
    const auto id = static_cast<std::uint32_t>(blocks_.size());
    Block block = place_in_tiers(kHbm);
    block.shared = j < k.prefix_blocks;
    ++initial_tier_blocks_[block.tier];
    if (lru_ && !free_slots_.empty()) {
      const std::uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      block.cached = slot;
      slot_block_[slot] = id;
      recency_pos_[slot] = recency_.insert(recency_.end(), slot);
    }
    blocks_.push_back(block);
    placed[l * k.batch + b][j] = id;
  }
  blocks_by_layer_ = std::move(placed);
}

KvCacheWorkload::Block KvCacheWorkload::place_in_tiers(Tier preferred) {
  const KvShape& k = shape_;
  const std::uint64_t tails = k.batch * k.layers;
  constexpr Tier kOrder[4] = {kHbm, kDram, kRemoteMemory, kNvme};
  const std::uint64_t tier_blocks[4] = {lru_ ? 0 : k.hbm_blocks - tails, k.dram_blocks,
                                        k.nvme_blocks, k.remote_blocks};
  std::uint64_t* used[4] = {&hbm_used_, &dram_used_, &nvme_used_, &remote_used_};
  Block block{kNvme, 0, -1};
  const int first = preferred == kHbm ? 0 : 1;
  for (int i = first; i < 4; ++i) {
    const Tier t = kOrder[i];
    if (*used[t] < tier_blocks[t]) {
      block.tier = t;
      block.home = (*used[t])++;
      break;
    }
  }
  return block;
}

std::uint64_t KvCacheWorkload::new_block(Tier preferred) {
  blocks_.push_back(place_in_tiers(preferred));
  return blocks_.size() - 1;
}

void KvCacheWorkload::begin() {
  step_started_ = now();
  previous_end_ = now();
  const std::uint64_t total = layers_.size();
  for (std::uint64_t g = 0; g <= prefetch_ && g < total; ++g) start_fetch(g);
  try_compute(0);
}

std::int64_t KvCacheWorkload::cache_slot_for(std::uint64_t g, std::uint32_t block) {
  std::uint32_t slot = 0;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    auto victim = std::find_if(recency_.begin(), recency_.end(),
                               [&](std::uint32_t s) { return slot_pins_[s] == 0; });
    if (victim == recency_.end()) {
      throw std::logic_error("kv_cache: no HBM slot free of layers in flight");
    }
    slot = *victim;
    // A slot whose fetch failed holds no block.
    if (slot_block_[slot] >= 0) blocks_[static_cast<std::size_t>(slot_block_[slot])].cached = -1;
    recency_.erase(victim);
  }
  slot_block_[slot] = block;
  blocks_[block].cached = slot;
  recency_pos_[slot] = recency_.insert(recency_.end(), slot);
  (void)g;
  return slot;
}

void KvCacheWorkload::start_fetch(std::uint64_t g) {
  Layer& layer = layers_[g];
  layer.fetch_started = true;
  layer.outstanding = 1;  // held until every block is asked for
  const std::uint64_t l = g % shape_.layers;
  for (std::uint64_t b = 0; b < shape_.batch; ++b) {
    // The shared prefix's blocks are the first sequence's: asked for once.
    const std::vector<std::uint32_t>& blocks = blocks_of(l, b);
    const std::uint64_t from =
        b == 0 ? 0 : std::min<std::uint64_t>(shape_.prefix_blocks, blocks.size());
    for (std::uint64_t j = from; j < blocks.size(); ++j) need_block(g, blocks[j], b);
  }
  fetch_done(g);
}

// Layer g needs block `id` in HBM: nothing to do if it lives (pin) or is
// cached (lru) there; otherwise a fetch into its staging buffer or cache slot.
void KvCacheWorkload::need_block(std::uint64_t g, std::uint32_t id, std::uint64_t seq) {
  Layer& layer = layers_[g];
  Block& block = blocks_[id];
  if (block.lost) fail_token(g / shape_.layers, seq);
  if (!lru_) {
    if (block.tier == kHbm) return;
    if (policy_ == KvPolicy::in_storage && block.tier == kNvme) {
      // The SSD holding the block runs attention over it where it lies.
      if (layer.csd_bytes.empty()) layer.csd_bytes.assign(ssd_ids_.size(), 0);
      layer.csd_bytes[block.home % ssd_ids_.size()] += shape_.block_bytes;
      return;
    }
    const std::uint64_t index = (g % (prefetch_ + 1)) * staging_per_layer_ + layer.streamed++;
    ++layer.outstanding;
    std::uint64_t len = shape_.block_bytes;
    if (policy_ == KvPolicy::sparse) {
      // Only the tokens the speculation selected.
      len = selected_tokens(g) * shape_.token_bytes;
      layer.lower_bytes += shape_.block_bytes;
      layer.sparse_bytes += len;
      selected_bytes_ += len;
    }
    fetch_block(g, id, seq, staging_base_ + index * slot_bytes_, len);
    return;
  }
  if (block.cached >= 0) {
    ++hits_;
    const auto slot = static_cast<std::uint32_t>(block.cached);
    recency_.splice(recency_.end(), recency_, recency_pos_[slot]);
    ++slot_pins_[slot];
    layer.pinned.push_back(slot);
    return;
  }
  ++misses_;
  const auto slot = static_cast<std::uint32_t>(cache_slot_for(g, id));
  ++slot_pins_[slot];
  layer.pinned.push_back(slot);
  ++layer.outstanding;
  fetch_block(g, id, seq, hbm_base_ + std::uint64_t{slot} * slot_bytes_, shape_.block_bytes);
}

void KvCacheWorkload::fail_token(std::uint64_t step, std::uint64_t seq) {
  const std::uint64_t index = step * shape_.batch + seq;
  if (index >= token_failed_.size() || token_failed_[index]) return;
  token_failed_[index] = true;
  ++failed_tokens_;
}

void KvCacheWorkload::fetch_block(std::uint64_t g, std::uint32_t id, std::uint64_t seq,
                                  std::uint64_t dest, std::uint64_t len) {
  const Block& block = blocks_[id];
  const std::uint64_t step = g / shape_.layers;
  if (block.tier == kDram) {
    // A GPU copy engine pulls the block from pinned host memory.
    machine_.copy_engine(gpu_.id()).read(dram_address(block.home), len, [this, g, step, len] {
      bytes_from_dram_ += len;
      dram_step_bytes_[step] += len;
      fetch_done(g);
    });
    return;
  }
  const std::uint32_t issuer = next_issuer_++ % threads_;
  if (block.tier == kRemoteMemory) {
    // One RDMA READ of the block from the storage host's DRAM.
    static_cast<RemoteIoPath&>(io()).read_memory(block.home * slot_bytes_, len, dest, issuer,
                                                 [this, g, step, len] {
                                                   bytes_from_remote_ += len;
                                                   remote_step_bytes_[step] += len;
                                                   fetch_done(g);
                                                 });
    return;
  }
  read_nvme(block.home, dest, issuer, len,
            [this, g, id, seq, step](std::uint64_t bytes, bool failed) {
              bytes_from_nvme_ += bytes;
              nvme_step_bytes_[step] += bytes;
              if (failed) {
                ++failed_block_reads_;
                fail_token(step, seq);
                if (blocks_[id].shared) {
                  for (std::uint64_t b = 0; b < shape_.batch; ++b) fail_token(step, b);
                }
                // Under lru the slot holds no valid copy: a later layer must not hit it.
                Block& b = blocks_[id];
                if (b.cached >= 0) {
                  slot_block_[static_cast<std::size_t>(b.cached)] = -1;
                  b.cached = -1;
                }
              }
              fetch_done(g);
            });
}

void KvCacheWorkload::read_nvme(std::uint64_t slot, std::uint64_t dest, std::uint32_t issuer,
                                std::uint64_t len, std::function<void(std::uint64_t, bool)> done) {
  const std::uint64_t ssds = ssd_ids_.size();
  const auto ssd = static_cast<std::uint32_t>(slot % ssds);
  const std::uint64_t lba = machine_.ssd(ssd_ids_[ssd]).lba_bytes();
  const std::uint64_t bytes = round_up(len, lba);
  const std::uint64_t first = slot / ssds * (slot_bytes_ / lba);
  struct Join {
    std::uint64_t left;
    std::uint64_t arrived = 0;
    bool failed = false;
  };
  auto join = std::make_shared<Join>(Join{(bytes + io_bytes_ - 1) / io_bytes_});
  for (std::uint64_t offset = 0; offset < bytes; offset += io_bytes_) {
    BlockIo request;
    request.ssd = ssd;
    request.slba = first + offset / lba;
    request.lbas = static_cast<std::uint32_t>(std::min(io_bytes_, bytes - offset) / lba);
    request.buffer = dest + offset;
    request.issuer = issuer;
    const std::uint64_t io_bytes = std::uint64_t{request.lbas} * lba;
    submit_after_lookup(request, [join, done, io_bytes](std::uint16_t status) {
      if (status != 0) {
        join->failed = true;
      } else {
        join->arrived += io_bytes;
      }
      if (--join->left == 0) done(join->arrived, join->failed);
    });
  }
}

// key: the whole value moves in one command (io_bytes_ is the block), once
// the SSD has resolved the block's key to its flash locations.
void KvCacheWorkload::submit_after_lookup(const BlockIo& request,
                                          std::function<void(std::uint16_t)> done) {
  if (lookup_ == 0) {
    io().submit(request, std::move(done));
    return;
  }
  ++key_commands_;
  schedule_in(lookup_, [this, request, done] { io().submit(request, done); });
}

void KvCacheWorkload::write_nvme(std::uint32_t block_id, std::uint64_t slot, std::uint64_t src,
                                 std::uint32_t issuer, std::uint64_t step) {
  const std::uint64_t ssds = ssd_ids_.size();
  const auto ssd = static_cast<std::uint32_t>(slot % ssds);
  const std::uint64_t lba = machine_.ssd(ssd_ids_[ssd]).lba_bytes();
  const std::uint64_t bytes = round_up(shape_.block_bytes, lba);
  const std::uint64_t first = slot / ssds * (slot_bytes_ / lba);
  for (std::uint64_t offset = 0; offset < bytes; offset += io_bytes_) {
    BlockIo request;
    request.ssd = ssd;
    request.slba = first + offset / lba;
    request.lbas = static_cast<std::uint32_t>(std::min(io_bytes_, bytes - offset) / lba);
    request.write = true;
    request.buffer = src + offset;
    request.issuer = issuer;
    ++outstanding_writes_;
    const std::uint64_t io_bytes = std::uint64_t{request.lbas} * lba;
    submit_after_lookup(request, [this, block_id, io_bytes, step](std::uint16_t status) {
      if (status != 0) {
        if (!blocks_[block_id].lost) ++failed_block_writes_;
        blocks_[block_id].lost = true;
      } else {
        bytes_to_nvme_ += io_bytes;
        if (is_remote_path(config_)) network_write_done(step, io_bytes);
      }
      --outstanding_writes_;
      maybe_finish();
    });
  }
}

void KvCacheWorkload::network_write_done(std::uint64_t step, std::uint64_t bytes) {
  network_write_step_bytes_[step] += bytes;
  network_write_step_end_[step] = std::max(network_write_step_end_[step], now());
}

void KvCacheWorkload::fetch_done(std::uint64_t g) {
  Layer& layer = layers_[g];
  if (--layer.outstanding != 0) return;
  layer.data_ready = true;
  try_compute(g);
}

void KvCacheWorkload::try_compute(std::uint64_t g) {
  if (g >= layers_.size() || g != computed_) return;
  Layer& layer = layers_[g];
  if (!layer.data_ready || layer.started) return;
  // sparse: running the layer's real attention shows which tokens the
  // speculation missed; they are fetched now, on the critical path.
  if (policy_ == KvPolicy::sparse && !layer.miss_fetched && fetch_missed(g)) return;
  layer.started = true;
  const std::uint64_t step = g / shape_.layers;
  stall_ += now() - previous_end_;
  // Attention reads every cached token of the layer (and the new one) from HBM.
  std::uint64_t tokens = 0;  // over the batch
  for (std::uint64_t c : shape_.contexts) tokens += c + step + 1;
  std::uint64_t attention_bytes = tokens * shape_.token_bytes;
  Picoseconds extra = 0;
  if (policy_ == KvPolicy::sparse) {
    // Attention reads the HBM-resident tokens and those fetched; the
    // speculation for the next layer reads key_fraction of every token's key.
    attention_bytes = attention_bytes - layer.lower_bytes + layer.sparse_bytes;
    const auto speculation = static_cast<std::uint64_t>(
        std::llround(key_fraction_ * static_cast<double>(tokens * shape_.token_bytes / 2)));
    speculation_bytes_ += speculation;
    extra = static_cast<Picoseconds>(
        std::llround(static_cast<double>(speculation) / hbm_bytes_per_ps_));
  }
  std::uint64_t in_storage = 0;
  for (std::uint64_t b : layer.csd_bytes) in_storage += b;
  attention_bytes -= in_storage;
  hbm_attention_bytes_ += attention_bytes;
  const auto attention = static_cast<Picoseconds>(
      std::llround(static_cast<double>(attention_bytes) / hbm_bytes_per_ps_));
  if (in_storage > 0) {
    start_in_storage(g, layer_compute_ + attention + extra);
    return;
  }
  schedule_in(layer_compute_ + attention + extra, [this, g] { layer_done(g); });
}

std::uint64_t KvCacheWorkload::selected_tokens(std::uint64_t g) const {
  if (!sparse_trace_) return selected_tokens_;
  const double fraction = sparse_trace_->fraction_at(g / shape_.layers, g % shape_.layers);
  return static_cast<std::uint64_t>(std::ceil(fraction * static_cast<double>(shape_.block_tokens)));
}

double KvCacheWorkload::miss_rate(std::uint64_t g) const {
  if (!sparse_trace_) return sparse_miss_rate_;
  return sparse_trace_->miss_rate_at(g / shape_.layers, g % shape_.layers);
}

bool KvCacheWorkload::fetch_missed(std::uint64_t g) {
  Layer& layer = layers_[g];
  layer.miss_fetched = true;
  const auto missed_tokens =
      static_cast<std::uint64_t>(std::ceil(miss_rate(g) * static_cast<double>(selected_tokens(g))));
  if (missed_tokens == 0 || layer.lower_bytes == 0) return false;
  const std::uint64_t len = missed_tokens * shape_.token_bytes;
  const std::uint64_t l = g % shape_.layers;
  layer.data_ready = false;
  layer.outstanding = 1;
  std::uint64_t index = 0;
  for (std::uint64_t b = 0; b < shape_.batch; ++b) {
    for (std::uint32_t id : blocks_of(l, b)) {
      if (blocks_[id].tier == kHbm) continue;
      ++layer.outstanding;
      layer.sparse_bytes += len;
      missed_bytes_ += len;
      const std::uint64_t slot = (g % (prefetch_ + 1)) * staging_per_layer_ + index++;
      fetch_block(g, id, b, staging_base_ + slot * slot_bytes_, len);
    }
  }
  fetch_done(g);
  return true;
}

// The GPU computes the layer over its HBM-resident KV while each SSD holding
// some of the layer's KV reads it from flash at its internal bandwidth and
// runs attention on its cores (QK and PV: 4 x query heads x head_dim FLOPs
// per token), then sends its partial result to the GPU through the
// scenario's path as an NVMe read, whose page read stands for the latency of
// the flash pipeline's first page (the bandwidth term leaves it out). The layer is done when every
// part is; waiting for the SSDs beyond the GPU's part is stall.
void KvCacheWorkload::start_in_storage(std::uint64_t g, Picoseconds gpu_time) {
  Layer& layer = layers_[g];
  layer.parts_left = 1;
  const std::uint64_t flops_per_token = 4 * shape_.kv_heads * shape_.gqa_group * shape_.head_dim;
  for (std::size_t i = 0; i < layer.csd_bytes.size(); ++i) {
    const std::uint64_t bytes = layer.csd_bytes[i];
    if (bytes == 0) continue;
    ++layer.parts_left;
    csd_flash_bytes_ += bytes;
    const double tokens = static_cast<double>(bytes / shape_.token_bytes);
    const double read_ps = static_cast<double>(bytes) / csd_bytes_per_ps_[i];
    const double compute_ps = tokens * static_cast<double>(flops_per_token) / csd_flops_per_ps_;
    const auto busy = static_cast<Picoseconds>(std::llround(std::max(read_ps, compute_ps)));
    const std::uint64_t dest = result_base_ + i * round_up(result_bytes_, kPage);
    schedule_in(busy, [this, g, i, dest] {
      read_nvme(i, dest, next_issuer_++ % threads_, result_bytes_,
                [this, g](std::uint64_t bytes, bool failed) {
                  csd_result_bytes_ += bytes;
                  if (failed) {
                    ++failed_block_reads_;
                    for (std::uint64_t b = 0; b < shape_.batch; ++b) {
                      fail_token(g / shape_.layers, b);
                    }
                  }
                  part_done(g);
                });
    });
  }
  schedule_in(gpu_time, [this, g] {
    layers_[g].gpu_end = now();
    part_done(g);
  });
}

void KvCacheWorkload::part_done(std::uint64_t g) {
  Layer& layer = layers_[g];
  if (--layer.parts_left != 0) return;
  stall_ += now() - layer.gpu_end;
  layer_done(g);
}

void KvCacheWorkload::layer_done(std::uint64_t g) {
  ++computed_;
  previous_end_ = now();
  for (std::uint32_t slot : layers_[g].pinned) --slot_pins_[slot];
  layers_[g].pinned.clear();
  const std::uint64_t step = g / shape_.layers;
  if ((g + 1) % shape_.layers == 0) end_step(step);
  const std::uint64_t ahead = g + prefetch_ + 1;
  if (ahead < layers_.size() && !layers_[ahead].fetch_started) start_fetch(ahead);
  if (g + 1 < layers_.size()) {
    try_compute(g + 1);
    return;
  }
  decode_end_ = now();
  if (ScenarioParams::from(config_.scenario.params).measure_reload) {
    reloading_ = true;
    reload(shape_.dram_blocks > 0 ? kDram : kNvme);
  }
  maybe_finish();
}

// Done once decoding, the reload measurements and every write of a block
// moved down a tier are.
void KvCacheWorkload::maybe_finish() {
  if (decode_end_ == 0 || reloading_ || outstanding_writes_ != 0) return;
  done();
}

// The step's token is in every sequence's last block of every layer; a
// block that is now full moves down a tier and a new last block starts.
void KvCacheWorkload::end_step(std::uint64_t step) {
  step_times_[step] = now() - step_started_;
  step_ends_[step] = now();
  stalls_[step] = stall_;
  stall_ = 0;
  step_started_ = now();
  for (std::uint64_t l = 0; l < shape_.layers; ++l) {
    for (std::uint64_t b = 0; b < shape_.batch; ++b) {
      if ((shape_.contexts[b] + step + 1) % shape_.block_tokens != 0) continue;
      const std::uint64_t id = new_block(lru_ ? kDram : kHbm);
      blocks_of(l, b).push_back(static_cast<std::uint32_t>(id));
      // The next step's layer may already be fetching: it needs this block too.
      const std::uint64_t next = (step + 1) * shape_.layers + l;
      if (next < layers_.size() && layers_[next].fetch_started) {
        Layer& layer = layers_[next];
        ++layer.outstanding;
        layer.data_ready = false;
        need_block(next, static_cast<std::uint32_t>(id), b);
        fetch_done(next);
      }
      const Block& block = blocks_[id];
      if (block.tier == kDram) {
        ++outstanding_writes_;
        machine_.copy_engine(gpu_.id()).write(dram_address(block.home), shape_.block_bytes, [this] {
          bytes_to_dram_ += shape_.block_bytes;
          --outstanding_writes_;
          maybe_finish();
        });
      } else if (block.tier == kNvme) {
        write_nvme(static_cast<std::uint32_t>(id), block.home, hbm_base_, next_issuer_++ % threads_,
                   step);
      } else if (block.tier == kRemoteMemory) {
        // One RDMA WRITE of the block into the storage host's DRAM.
        ++outstanding_writes_;
        static_cast<RemoteIoPath&>(io()).write_memory(
            block.home * slot_bytes_, shape_.block_bytes, hbm_base_, next_issuer_++ % threads_,
            [this, step] {
              bytes_to_remote_ += shape_.block_bytes;
              network_write_done(step, shape_.block_bytes);
              --outstanding_writes_;
              maybe_finish();
            });
      }
    }
  }
}

// One sequence's whole context (every layer, the partial last block
// included) brought into HBM from `from`, all blocks requested at once.
void KvCacheWorkload::reload(Tier from) {
  const std::uint64_t blocks =
      shape_.layers * ((shape_.context + shape_.block_tokens - 1) / shape_.block_tokens);
  reload_bytes_ = shape_.layers * shape_.context * shape_.token_bytes;
  reload_started_ = now();
  reload_outstanding_ = blocks;
  auto finished = [this, from] {
    if (--reload_outstanding_ != 0) return;
    if (from == kDram) {
      reload_dram_ = now() - reload_started_;
      reload(kNvme);
      return;
    }
    reload_nvme_ = std::max<Picoseconds>(1, now() - reload_started_);
    reloading_ = false;
    maybe_finish();
  };
  for (std::uint64_t i = 0; i < blocks; ++i) {
    const std::uint64_t dest = reload_base_ + i * slot_bytes_;
    if (from == kDram) {
      machine_.copy_engine(gpu_.id()).read(dram_address(i), shape_.block_bytes, finished);
    } else {
      read_nvme(i % std::max<std::uint64_t>(shape_.nvme_blocks, 1), dest,
                static_cast<std::uint32_t>(i % threads_), shape_.block_bytes,
                [this, finished](std::uint64_t, bool failed) {
                  if (failed) ++failed_reload_blocks_;
                  finished();
                });
    }
  }
}

// Tokens whose every block arrived: a token decoded from missing data is no
// throughput.
std::uint64_t KvCacheWorkload::complete_tokens() const {
  return shape_.batch * shape_.steps - failed_tokens_;
}

bool KvCacheWorkload::data_complete() const {
  return failed_tokens_ == 0 && failed_block_reads_ == 0 && failed_block_writes_ == 0 &&
         failed_reload_blocks_ == 0;
}

// AttentionStore over a session trace: each turn's time to first token. A
// session's first turn, or a returning one whose context was dropped,
// prefills context and turn; a returning one found in DRAM or on NVMe
// reloads its context (the measured reload of context_tokens, scaled by its
// length: reloads here are bandwidth-bound) and prefills the turn against it.
nlohmann::json KvCacheWorkload::session_replay() const {
  const ScenarioParams s = ScenarioParams::from(config_.scenario.params);
  const KvShape& k = shape_;
  const std::vector<KvTurn> turns =
      replay_sessions(*sessions_, k.token_bytes * k.layers, k.steps, s.reuse_store_dram_gib * kGiB,
                      s.reuse_store_nvme_gib * kGiB);
  std::vector<double> first, returning;
  std::uint64_t counts[4] = {0, 0, 0, 0};
  double returning_sum = 0, first_sum = 0;
  for (const KvTurn& t : turns) {
    ++counts[static_cast<int>(t.hit)];
    Picoseconds ttft = 0;
    if (t.hit == KvStoreHit::dram || t.hit == KvStoreHit::nvme) {
      const double share = static_cast<double>(t.cached_tokens) / static_cast<double>(k.context);
      const Picoseconds measured = t.hit == KvStoreHit::dram ? reload_dram_ : reload_nvme_;
      ttft = static_cast<Picoseconds>(std::llround(static_cast<double>(measured) * share)) +
             kv_prefill_time(config_, 1, t.turn_tokens, t.cached_tokens);
    } else {
      ttft = kv_prefill_time(config_, 1, t.cached_tokens + t.turn_tokens, 0);
    }
    if (t.hit == KvStoreHit::first) {
      first.push_back(ps_to_ns(ttft));
      first_sum += ps_to_ns(ttft);
    } else {
      returning.push_back(ps_to_ns(ttft));
      returning_sum += ps_to_ns(ttft);
    }
  }
  auto spread = [](const std::vector<double>& v, double sum) -> nlohmann::json {
    if (v.empty()) return nullptr;
    return {{"mean", round_to(sum / static_cast<double>(v.size()), 0.001)},
            {"p50", round_to(nearest_rank(v, 0.5), 0.001)},
            {"p99", round_to(nearest_rank(v, 0.99), 0.001)},
            {"max", round_to(*std::max_element(v.begin(), v.end()), 0.001)}};
  };
  const std::uint64_t hits = counts[1] + counts[2];
  const std::uint64_t back = returning.size();
  return {{"sessions", sessions_->size()},
          {"turns", turns.size()},
          {"returning_turns", back},
          {"dram_hits", counts[1]},
          {"nvme_hits", counts[2]},
          {"misses", counts[3]},
          {"hit_rate", back > 0 ? round_to(static_cast<double>(hits) / back, 1e-6) : 0.0},
          {"dram_share", hits > 0 ? round_to(static_cast<double>(counts[1]) / hits, 1e-6) : 0.0},
          {"ttft_first_turn_ns", spread(first, first_sum)},
          {"ttft_returning_ns", spread(returning, returning_sum)},
          {"ttft_ns", back > 0 ? round_to(returning_sum / static_cast<double>(back), 0.001) : 0.0}};
}

double KvCacheWorkload::mean_ttft_ns() const {
  double sum = 0;
  for (Picoseconds t : request_ttfts_) sum += static_cast<double>(t);
  return sum / static_cast<double>(request_ttfts_.size()) / 1000.0;
}

// Each request's time to first token, and each output token's time: a
// decode step gives every request of the batch one token, so a request's
// tokens take the steps' times.
nlohmann::json KvCacheWorkload::request_figures() const {
  std::vector<double> ttft, tpot, contexts;
  for (Picoseconds t : request_ttfts_) ttft.push_back(ps_to_ns(t));
  for (Picoseconds t : step_times_) tpot.push_back(ps_to_ns(t));
  double context_sum = 0;
  for (std::uint64_t c : shape_.contexts) {
    contexts.push_back(static_cast<double>(c));
    context_sum += static_cast<double>(c);
  }
  auto spread = [](const std::vector<double>& v, double mean) {
    return nlohmann::json{{"mean", round_to(mean, 0.001)},
                          {"min", round_to(*std::min_element(v.begin(), v.end()), 0.001)},
                          {"p50", round_to(nearest_rank(v, 0.5), 0.001)},
                          {"p99", round_to(nearest_rank(v, 0.99), 0.001)},
                          {"max", round_to(*std::max_element(v.begin(), v.end()), 0.001)}};
  };
  Picoseconds steps = 0;
  for (Picoseconds t : step_times_) steps += t;
  const ScenarioParams s = ScenarioParams::from(config_.scenario.params);
  return {{"requests", shape_.batch},
          {"context_distribution", enum_name(s.context_distribution)},
          {"prefill_order", enum_name(s.prefill_order)},
          {"context_tokens", spread(contexts, context_sum / static_cast<double>(contexts.size()))},
          {"contexts", shape_.contexts},
          {"ttft_ns", spread(ttft, mean_ttft_ns())},
          {"tpot_ns", spread(tpot, ps_to_ns(steps) / static_cast<double>(shape_.steps))}};
}

nlohmann::json KvCacheWorkload::summary(Picoseconds) const {
  const double seconds = static_cast<double>(decode_end_ - began_at()) * 1e-12;
  Picoseconds stall = 0;
  for (Picoseconds s : stalls_) stall += s;
  Picoseconds steps = 0;
  for (Picoseconds t : step_times_) steps += t;
  const nlohmann::json figures = request_figures();
  return {{"tokens_per_s",
           seconds > 0 ? round_to(static_cast<double>(complete_tokens()) / seconds, 0.001) : 0.0},
          {"mean_stall_ns", round_to(ps_to_ns(stall) / static_cast<double>(shape_.steps), 0.001)},
          {"ttft_ns", round_to(mean_ttft_ns(), 0.001)},
          {"tpot_ns", round_to(ps_to_ns(steps) / static_cast<double>(shape_.steps), 0.001)},
          {"ttft_p50_ns", figures["ttft_ns"]["p50"]},
          {"ttft_p99_ns", figures["ttft_ns"]["p99"]},
          {"tpot_p50_ns", figures["tpot_ns"]["p50"]},
          {"tpot_p99_ns", figures["tpot_ns"]["p99"]},
          {"failed_tokens", failed_tokens_},
          {"data_complete", data_complete()}};
}

nlohmann::json KvCacheWorkload::sections(Picoseconds elapsed) const {
  nlohmann::json out = PathWorkload::sections(elapsed);
  const KvShape& k = shape_;
  nlohmann::json steps = nlohmann::json::array();
  Picoseconds total_step = 0, total_stall = 0;
  for (std::uint64_t s = 0; s < k.steps; ++s) {
    steps.push_back({{"time_ns", round_to(ps_to_ns(step_times_[s]), 0.001)},
                     {"stall_ns", round_to(ps_to_ns(stalls_[s]), 0.001)},
                     {"dram_to_hbm_bytes", dram_step_bytes_[s]},
                     {"nvme_to_hbm_bytes", nvme_step_bytes_[s]}});
    total_step += step_times_[s];
    total_stall += stalls_[s];
  }
  const double seconds = static_cast<double>(decode_end_ - began_at()) * 1e-12;
  std::uint64_t context_tokens = 0;
  for (std::uint64_t c : k.contexts) context_tokens += c;
  const std::uint64_t total_kv = k.layers * context_tokens * k.token_bytes;
  auto reload_ns = [](Picoseconds t) -> nlohmann::json {
    return t == 0 ? nlohmann::json(nullptr) : nlohmann::json(round_to(ps_to_ns(t), 0.001));
  };
  // A context already in HBM is where attention reads it: bringing it back
  // moves no bytes and takes no time, so the HBM figure is zero by
  // definition, not measured. It is reported (when the reload is measured)
  // so that the three tiers read side by side; null like the others when it
  // is not.
  const bool measured = ScenarioParams::from(config_.scenario.params).measure_reload;
  out["kv_cache"] = {
      {"token_bytes_per_layer", k.token_bytes},
      {"kv_bytes_per_token", k.token_bytes * k.layers},
      {"block_bytes", k.block_bytes},
      {"full_blocks_per_sequence_layer", k.full_blocks},
      {"total_kv_bytes", total_kv},
      {"total_kv_bytes_without_gqa", total_kv * k.gqa_group},
      {"tiers",
       {{"hbm_blocks", k.hbm_blocks},
        {"dram_blocks", k.dram_blocks},
        {"nvme_blocks", k.nvme_blocks},
        {"initial_hbm_blocks", initial_tier_blocks_[kHbm] + k.batch * k.layers},
        {"initial_dram_blocks", initial_tier_blocks_[kDram]},
        {"initial_nvme_blocks", initial_tier_blocks_[kNvme]}}},
      {"eviction", lru_ ? "lru" : "pin"},
      {"steps", steps},
      {"tokens_per_s",
       seconds > 0 ? round_to(static_cast<double>(complete_tokens()) / seconds, 0.001) : 0.0},
      {"tokens", k.batch * k.steps},
      {"failed_tokens", failed_tokens_},
      {"failed_block_reads", failed_block_reads_},
      {"failed_block_writes", failed_block_writes_},
      {"data_complete", data_complete()},
      {"mean_step_ns", round_to(ps_to_ns(total_step) / static_cast<double>(k.steps), 0.001)},
      {"mean_stall_ns", round_to(ps_to_ns(total_stall) / static_cast<double>(k.steps), 0.001)},
      {"bytes",
       {{"hbm_attention_read", hbm_attention_bytes_},
        {"dram_to_hbm", bytes_from_dram_},
        {"nvme_to_hbm", bytes_from_nvme_},
        {"hbm_to_dram", bytes_to_dram_},
        {"hbm_to_nvme", bytes_to_nvme_}}},
      {"lru", {{"hits", hits_}, {"misses", misses_}}},
      {"reload",
       {{"bytes", reload_bytes_},
        {"failed_blocks", failed_reload_blocks_},
        {"hbm_ns", measured ? nlohmann::json(0.0) : nlohmann::json(nullptr)},
        {"dram_ns", reload_ns(reload_dram_)},
        {"nvme_ns", reload_ns(reload_nvme_)}}},
      {"model",
       {{"name", k.model},
        {"layers", k.layers},
        {"kv_heads", k.kv_heads},
        {"head_dim", k.head_dim},
        {"gqa_group", k.gqa_group},
        {"params", k.params}}},
      {"layer_compute_ns", round_to(ps_to_ns(layer_compute_), 0.001)},
      {"prefill_ns", round_to(ps_to_ns(prefill_), 0.001)},
      // The prompt's forward pass yields the first token (the mean over
      // the requests); each decode step one more per sequence.
      {"ttft_ns", round_to(mean_ttft_ns(), 0.001)},
      {"tpot_ns", round_to(ps_to_ns(total_step) / static_cast<double>(k.steps), 0.001)},
      {"policy", enum_name(policy_)},
      {"request", lookup_ > 0 ? "key" : "lba"},
      {"requests", request_figures()},
  };
  if (is_remote_path(config_)) {
    // The network tiers: the NVMe tier on the storage host's SSDs (read
    // through NVMe-oF) and the remote-memory tier in its DRAM (RDMA READs);
    // their seams are in the remote section.
    nlohmann::json per_step = nlohmann::json::array();
    for (std::uint64_t s = 0; s < k.steps; ++s) {
      per_step.push_back(nvme_step_bytes_[s] + remote_step_bytes_[s]);
    }
    const auto& path = static_cast<const RemoteIoPath&>(io());
    out["kv_cache"]["network_tier"] = {
        {"nvme", "remote"},
        {"remote_memory_blocks", k.remote_blocks},
        {"initial_remote_memory_blocks", initial_tier_blocks_[kRemoteMemory]},
        {"remote_memory_to_hbm", bytes_from_remote_},
        {"remote_memory_reads", path.memory_reads()},
        {"remote_memory_read_mean_ns", path.memory_read_mean_ns()},
        {"remote_nvme_to_hbm", bytes_from_nvme_},
        {"bytes_per_step", per_step}};
    // Blocks filled during decoding written into the network tiers (RDMA
    // WRITE to remote memory, NVMe-oF writes to the remote NVMe tier): bytes
    // per step, and the time from the step's end to its last write's end.
    nlohmann::json write_bytes = nlohmann::json::array();
    nlohmann::json write_ns = nlohmann::json::array();
    for (std::uint64_t s = 0; s < k.steps; ++s) {
      write_bytes.push_back(network_write_step_bytes_[s]);
      const Picoseconds took =
          network_write_step_bytes_[s] == 0 ? 0 : network_write_step_end_[s] - step_ends_[s];
      write_ns.push_back(round_to(ps_to_ns(took), 0.001));
    }
    nlohmann::json& tier = out["kv_cache"]["network_tier"];
    tier["hbm_to_remote_memory"] = bytes_to_remote_;
    tier["remote_memory_writes"] = path.memory_writes();
    tier["remote_memory_write_mean_ns"] = path.memory_write_mean_ns();
    tier["hbm_to_remote_nvme"] = bytes_to_nvme_;
    tier["write_bytes_per_step"] = write_bytes;
    tier["write_ns_per_step"] = write_ns;
  }
  if (k.prefix_blocks > 0) {
    // The prompts' full blocks as stored (every layer), the prefix once.
    const std::uint64_t stored = kv_stored_bytes(k);
    const std::uint64_t private_copies = kv_stored_bytes_private(k);
    out["kv_cache"]["shared_prefix"] = {{"tokens", k.prefix_blocks * k.block_tokens},
                                        {"blocks_per_layer", k.prefix_blocks},
                                        {"stored_bytes", stored},
                                        {"stored_bytes_private_prefix", private_copies},
                                        {"saved_bytes", private_copies - stored}};
  }
  if (lookup_ > 0) {
    out["kv_cache"]["key_commands"] = key_commands_;
    out["kv_cache"]["lookup_ns"] = round_to(ps_to_ns(lookup_), 0.001);
  }
  if (policy_ == KvPolicy::reuse && sessions_) {
    out["kv_cache"]["reuse"] = session_replay();
  } else if (policy_ == KvPolicy::reuse) {
    // One returning session (AttentionStore): a hit reloads its context from
    // DRAM or NVMe (the measured reloads) and prefills the new turn against
    // it; a miss prefills context and turn anew.
    const ScenarioParams s = ScenarioParams::from(config_.scenario.params);
    const auto turn = static_cast<std::uint64_t>(s.turn_tokens);
    const Picoseconds fresh = kv_prefill_time(config_, 1, turn, k.context);
    const Picoseconds miss = kv_prefill_time(config_, 1, k.context + turn, 0);
    const double hit_dram = ps_to_ns(reload_dram_ + fresh);
    const double hit_nvme = ps_to_ns(reload_nvme_ + fresh);
    const double expected =
        s.reuse_hit_rate * (s.reuse_dram_share * hit_dram + (1 - s.reuse_dram_share) * hit_nvme) +
        (1 - s.reuse_hit_rate) * ps_to_ns(miss);
    out["kv_cache"]["reuse"] = {{"hit_rate", s.reuse_hit_rate},
                                {"dram_share", s.reuse_dram_share},
                                {"turn_tokens", turn},
                                {"ttft_hit_dram_ns", round_to(hit_dram, 0.001)},
                                {"ttft_hit_nvme_ns", round_to(hit_nvme, 0.001)},
                                {"ttft_miss_ns", round_to(ps_to_ns(miss), 0.001)},
                                {"ttft_ns", round_to(expected, 0.001)}};
  }
  if (policy_ == KvPolicy::sparse) {
    out["kv_cache"]["sparse"] = {
        {"selected_tokens_per_block",
         sparse_trace_ ? nlohmann::json(nullptr) : nlohmann::json(selected_tokens_)},
        {"selected_bytes", selected_bytes_},
        {"missed_bytes", missed_bytes_},
        {"speculation_hbm_bytes", speculation_bytes_}};
    if (sparse_trace_) out["kv_cache"]["sparse"]["trace_steps"] = sparse_trace_->steps;
  }
  if (policy_ == KvPolicy::in_storage) {
    nlohmann::json bandwidth = nlohmann::json::array();
    for (double b : csd_bytes_per_ps_) bandwidth.push_back(round_to(b * 1e3, 0.001));
    out["kv_cache"]["in_storage"] = {
        {"flash_bytes_read", csd_flash_bytes_},
        {"result_bytes", csd_result_bytes_},
        {"result_bytes_per_ssd_layer", result_bytes_},
        {"internal_gbps", bandwidth},
        {"data_reduction", csd_result_bytes_ > 0
                               ? round_to(static_cast<double>(csd_flash_bytes_) /
                                              static_cast<double>(csd_result_bytes_),
                                          0.001)
                               : 0.0}};
  }
  return out;
}

}  // namespace gpunvme
