// LLM decoding with the KV cache tiered over HBM, host DRAM and NVMe
// (seed 000: the KV cache problem; seed 001: prefetch and double buffering).
//
// Model shape: per token and layer the cache holds K and V, 2 x kv_heads x
// head_dim x dtype_bytes; blocks of block_tokens tokens are the unit placed
// in a tier and moved. Each sequence has its own context length (all
// context_tokens, or drawn: kv_requests.h). Each sequence's last, partly
// filled block of every layer lives in HBM (new tokens are written there);
// the full blocks are placed in HBM, then DRAM, then NVMe (placement:
// layer_order or interleave). A block that fills during decoding moves down
// to the fastest tier with room (pin) or to its DRAM/NVMe home (lru).
//
// A decode step runs the layers in order. Layer l computes for
// layer_compute_us plus the time attention takes to read the layer's KV from
// HBM (bytes / hbm_bandwidth_gbps), once the previous layer is done and the
// layer's blocks are in HBM. Blocks not in HBM are fetched: from DRAM by a
// GPU copy engine (a DMA read of host memory), from NVMe through the
// scenario's path (bs bytes per command at most). The fetch for layer g
// starts when layer g - prefetch_layers - 1 has finished (its staging buffer
// is free), so prefetch_layers = 0 fetches a layer only when it is next.
//
// eviction = pin: blocks stay where placed; lower-tier blocks stream
// through staging buffers every step. eviction = lru: HBM (less the tail
// blocks) caches blocks; a fetched block replaces the least recently used
// block not needed by a layer in flight; lower tiers keep every block.
//
// shared_prefix_tokens: the first blocks of every sequence's context are
// one prompt prefix (a system prompt, a document); each layer keeps one copy
// of them, placed once in the tiers and fetched once per step for the batch.
//
// Reports tokens per second, each step's time and stall (time the GPU waited
// for data), bytes moved per tier, and (measure_reload) the time to bring one
// sequence's whole context into HBM from DRAM and from NVMe (and from HBM:
// zero, since an HBM-resident context needs no reload).
//
// A failed NVMe read leaves its block's data missing: the token that
// sequence decodes in that step is computed from incomplete data and is
// counted as failed, not in tokens_per_s (a failed block is not retried; its
// cache slot, under lru, holds nothing valid). A failed write of a block moved
// down to NVMe loses it: every later token that reads it fails too.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/system/workload/kv_traces.h"
#include "sim/system/workload/scenario_spec.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {

// The cache's shape from the scenario fields.
struct KvShape {
  std::uint64_t layers, batch, block_tokens, steps;
  std::uint64_t context;  // context_tokens (the reload measures a context of this length)
  // Per sequence: its context length (context for all unless
  // context_distribution draws them).
  std::vector<std::uint64_t> contexts;
  std::uint64_t token_bytes;  // per token and layer: 2 x kv_heads x head_dim x dtype
  std::uint64_t block_bytes;  // block_tokens x token_bytes
  std::uint64_t full_blocks;  // of a context of `context` tokens, per layer: context / block_tokens
  std::uint64_t hbm_blocks;   // tier capacities in blocks
  std::uint64_t dram_blocks;
  std::uint64_t nvme_blocks;
  std::uint64_t remote_blocks;  // remote-memory tier (remote paths)
  // shared_prefix_tokens / block_tokens: per layer, the full blocks every
  // sequence shares, stored and fetched once for the batch.
  std::uint64_t prefix_blocks;
  std::uint64_t gqa_group;
  std::uint64_t kv_heads, head_dim, dtype_bytes;
  double params;      // model weights (count), for the roofline and prefill
  const char* model;  // the model table's row, or "custom"
};
KvShape kv_shape(const RunConfig& config);

// The prompt's forward pass (prefill) of `batch` sequences of `context`
// tokens, the roofline of each layer: max(its weights over the HBM
// bandwidth, its FLOPs over the GPU's), FLOPs = 2 x weights x tokens plus
// causal attention's 2 x query heads x head_dim x context^2 per sequence.
Picoseconds kv_prefill_time(const RunConfig& config);
// Bytes the prompts' full blocks take where they are stored (the cache
// before decoding, every layer): with the shared prefix stored once, and as
// if every sequence kept its own copy.
std::uint64_t kv_stored_bytes(const KvShape& k);
std::uint64_t kv_stored_bytes_private(const KvShape& k);
// Prefill of `fresh` prompt tokens of `sequences` sequences whose first
// `cached` tokens' KV is already in HBM: attention FLOPs 2 x query heads x
// head_dim x (2 x fresh x cached + fresh^2) per sequence.
Picoseconds kv_prefill_time(const RunConfig& config, std::uint64_t sequences, std::uint64_t fresh,
                            std::uint64_t cached);
// Decode compute of one layer besides attention: layer_compute_us, or the
// roofline max(weights / HBM bandwidth, 2 x weights x batch / FLOP/s).
Picoseconds kv_layer_compute_time(const RunConfig& config);

// Checks the kv_cache fields; returns the bytes of one NVMe command at most.
std::uint64_t check_kv_cache(const RunConfig& config);

class KvCacheWorkload : public PathWorkload {
 public:
  KvCacheWorkload(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine);
  nlohmann::json summary(Picoseconds elapsed) const override;
  nlohmann::json sections(Picoseconds elapsed) const override;

  // Placement order: HBM, DRAM, remote memory, NVMe (local or remote).
  enum Tier : std::uint8_t { kHbm = 0, kDram = 1, kNvme = 2, kRemoteMemory = 3 };
  // Bytes read into HBM from DRAM and NVMe in each decode step.
  const std::vector<std::uint64_t>& dram_bytes_per_step() const { return dram_step_bytes_; }
  const std::vector<std::uint64_t>& nvme_bytes_per_step() const { return nvme_step_bytes_; }
  // Bytes read into HBM from the remote-memory tier in each decode step.
  const std::vector<std::uint64_t>& remote_memory_bytes_per_step() const {
    return remote_step_bytes_;
  }
  const std::vector<Picoseconds>& step_times() const { return step_times_; }
  const std::vector<Picoseconds>& stalls() const { return stalls_; }
  Picoseconds reload_dram() const { return reload_dram_; }
  Picoseconds reload_nvme() const { return reload_nvme_; }
  const KvShape& shape() const { return shape_; }
  const std::vector<Picoseconds>& request_ttfts() const { return request_ttfts_; }

 private:
  struct Block {
    Tier tier;                 // pin: where it lives; lru: its home (DRAM or NVMe)
    std::uint64_t home;        // DRAM: host address; NVMe: slot index on the SSDs
    std::int64_t cached = -1;  // lru: HBM cache slot
    bool lost = false;         // its write to NVMe failed: its data is gone
    bool shared = false;       // a shared-prefix block: every sequence's token needs it
  };
  struct Layer {  // one layer of one decode step, g = step * layers + l
    std::uint64_t outstanding = 0;
    bool fetch_started = false;
    bool data_ready = false;
    bool started = false;
    std::uint64_t streamed = 0;         // pin: staging buffers taken
    std::vector<std::uint32_t> pinned;  // lru: cache slots this layer holds
    // sparse: full bytes of the lower-tier blocks, the token bytes fetched of
    // them (selected and missed), and whether the miss path has run.
    std::uint64_t lower_bytes = 0;
    std::uint64_t sparse_bytes = 0;
    bool miss_fetched = false;
    // in_storage: per SSD the bytes of KV its cores read for this layer; the
    // parts (GPU, each SSD's result) the layer still waits for.
    std::vector<std::uint64_t> csd_bytes;
    std::uint64_t parts_left = 0;
    Picoseconds gpu_end = 0;
  };

  void begin() override;
  void place_blocks();
  std::uint64_t new_block(Tier preferred_home);
  void start_fetch(std::uint64_t g);
  void need_block(std::uint64_t g, std::uint32_t block, std::uint64_t seq);
  void fetch_block(std::uint64_t g, std::uint32_t block, std::uint64_t seq, std::uint64_t dest,
                   std::uint64_t len);
  // sparse: fetches the tokens the speculation missed, once the layer is next;
  // returns false when there are none.
  bool fetch_missed(std::uint64_t g);
  // sparse: tokens selected of each lower-tier block for layer g, and the
  // fraction of them missed (the parameters, or the trace's step and layer).
  std::uint64_t selected_tokens(std::uint64_t g) const;
  double miss_rate(std::uint64_t g) const;
  // in_storage: the SSDs' attention over their KV, joined with the GPU's part.
  void start_in_storage(std::uint64_t g, Picoseconds gpu_time);
  void part_done(std::uint64_t g);
  // The token sequence `seq` decodes in `step` lacks data.
  void fail_token(std::uint64_t step, std::uint64_t seq);
  void fetch_done(std::uint64_t g);
  void try_compute(std::uint64_t g);
  void layer_done(std::uint64_t g);
  void end_step(std::uint64_t step);
  void reload(Tier from);
  void maybe_finish();
  double mean_ttft_ns() const;
  // The requests' context lengths, TTFT and TPOT: mean, min, p50, p99, max.
  nlohmann::json request_figures() const;
  // reuse with a session trace: the turns' hits and times to first token.
  nlohmann::json session_replay() const;
  // Calls `done` with the bytes that arrived and whether any of the block's
  // I/Os failed.
  void read_nvme(std::uint64_t slot, std::uint64_t dest, std::uint32_t issuer, std::uint64_t len,
                 std::function<void(std::uint64_t bytes, bool failed)> done);
  void submit_after_lookup(const BlockIo& request, std::function<void(std::uint16_t)> done);
  // Writes block `block` to NVMe slot `slot` from `src`, a write of decode
  // step `step`.
  void write_nvme(std::uint32_t block, std::uint64_t slot, std::uint64_t src, std::uint32_t issuer,
                  std::uint64_t step);
  // A write of decode step `step` of `bytes` finished now (network writes:
  // the remote NVMe tier on a remote path, the remote-memory tier).
  void network_write_done(std::uint64_t step, std::uint64_t bytes);
  std::int64_t cache_slot_for(std::uint64_t g, std::uint32_t block);
  std::uint64_t complete_tokens() const;
  bool data_complete() const;
  std::uint64_t dram_address(std::uint64_t home) const;
  std::vector<std::uint32_t>& blocks_of(std::uint64_t layer, std::uint64_t seq) {
    return blocks_by_layer_[layer * shape_.batch + seq];
  }

  KvShape shape_;
  KvPolicy policy_;
  bool lru_;
  std::uint64_t prefetch_;
  Picoseconds layer_compute_;
  double hbm_bytes_per_ps_;
  std::uint64_t io_bytes_;  // bytes per NVMe command at most
  std::uint32_t threads_;
  std::uint32_t next_issuer_ = 0;
  std::uint64_t slot_bytes_;  // a block's footprint in GPU memory, host memory and on the SSDs

  std::vector<Block> blocks_;
  std::vector<std::vector<std::uint32_t>> blocks_by_layer_;  // [layer * batch + seq] -> blocks
  std::uint64_t hbm_used_ = 0, dram_used_ = 0, nvme_used_ = 0, remote_used_ = 0;
  // The first tier with room from `preferred` on, in placement order, and
  // its next home; kNvme with home 0 when every tier is full.
  Block place_in_tiers(Tier preferred);
  std::uint64_t cache_slots_ = 0;  // lru
  std::uint64_t hbm_base_ = 0;     // pinned HBM blocks (pin) or cache slots (lru)
  std::uint64_t staging_base_ = 0;
  std::uint64_t staging_per_layer_ = 0;
  std::uint64_t dram_base_ = 0;
  std::uint64_t reload_base_ = 0;
  std::vector<std::uint64_t> hbm_slot_of_;  // pin: HBM slot of HBM-resident blocks
  // lru: per slot the block it holds, recency, and how many layers in
  // flight hold it.
  std::vector<std::int64_t> slot_block_;
  std::vector<std::uint32_t> slot_pins_;
  std::list<std::uint32_t> recency_;  // least recent first
  std::vector<std::list<std::uint32_t>::iterator> recency_pos_;
  std::vector<std::uint32_t> free_slots_;

  std::vector<Layer> layers_;
  Picoseconds previous_end_ = 0;  // when the last layer finished computing
  std::uint64_t computed_ = 0;    // layers finished
  std::vector<Picoseconds> step_times_, stalls_;
  std::vector<std::uint64_t> dram_step_bytes_, nvme_step_bytes_, remote_step_bytes_;
  std::uint64_t bytes_from_remote_ = 0;
  // Writes into the network tiers per decode step: bytes, and when the
  // step's last one finished (they start at its end).
  std::vector<std::uint64_t> network_write_step_bytes_;
  std::vector<Picoseconds> network_write_step_end_;
  std::vector<Picoseconds> step_ends_;
  std::uint64_t bytes_to_remote_ = 0;  // HBM to the remote-memory tier
  Picoseconds step_started_ = 0;
  Picoseconds stall_ = 0;
  std::uint64_t bytes_from_dram_ = 0, bytes_from_nvme_ = 0;
  std::uint64_t bytes_to_dram_ = 0, bytes_to_nvme_ = 0;
  std::uint64_t hbm_attention_bytes_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0;
  std::uint64_t initial_tier_blocks_[4] = {0, 0, 0, 0};
  std::uint64_t outstanding_writes_ = 0;
  Picoseconds decode_end_ = 0;
  Picoseconds reload_dram_ = 0, reload_nvme_ = 0;
  std::uint64_t reload_bytes_ = 0;
  std::uint64_t reload_outstanding_ = 0;
  bool reloading_ = false;
  Picoseconds reload_started_ = 0;
  // Failures: per (step, sequence) whether its token lacked data.
  std::vector<bool> token_failed_;
  std::uint64_t failed_tokens_ = 0;
  std::uint64_t failed_block_reads_ = 0;   // blocks whose read failed (decoding)
  std::uint64_t failed_block_writes_ = 0;  // blocks lost moving down to NVMe
  std::uint64_t failed_reload_blocks_ = 0;
  // sparse (InfiniGen) and in_storage (InstInfer).
  double sparse_fraction_ = 0, sparse_miss_rate_ = 0, key_fraction_ = 0;
  std::uint64_t selected_tokens_ = 0;            // per lower-tier block
  std::unique_ptr<KvSparseTrace> sparse_trace_;  // replaces the two parameters
  // reuse: the session trace, replayed instead of the hit-rate parameters.
  std::unique_ptr<std::vector<KvSession>> sessions_;
  std::uint64_t speculation_bytes_ = 0, selected_bytes_ = 0, missed_bytes_ = 0;
  std::vector<double> csd_bytes_per_ps_;  // per SSD: internal flash bandwidth
  double csd_flops_per_ps_ = 0;
  std::uint64_t result_bytes_ = 0;  // one SSD's attention result per layer
  std::uint64_t result_base_ = 0;
  std::uint64_t csd_flash_bytes_ = 0, csd_result_bytes_ = 0;
  Picoseconds prefill_ = 0;                 // the end of the prompts' prefill
  std::vector<Picoseconds> request_ttfts_;  // per sequence (request)
  // key requests: the SSD's key lookup per command (at least 1 ps, so 0
  // means block-address requests), and the key-value commands issued.
  Picoseconds lookup_ = 0;
  std::uint64_t key_commands_ = 0;  // time to first token: the prompt's forward pass
};

}  // namespace gpunvme
