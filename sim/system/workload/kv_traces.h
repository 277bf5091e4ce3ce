// Trace files of the kv_cache workload, small CSV files (README, "KV offload
// policies"): an attention-sparsity trace that the sparse policy reads
// instead of sparse_fraction and sparse_miss_rate, and a session trace that
// the reuse policy replays instead of reuse_hit_rate and reuse_dram_share.
// Lines starting with # and blank lines are skipped; the first other line is
// the header, exactly as given below; fields are separated by commas.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/system/config/run_config.h"

namespace gpunvme {

// A trace file named in the scenario: beside the scenario file when there is
// one of that name there, else as given (relative to the working directory).
std::string kv_trace_path(const RunConfig& config, const std::string& name);

// step,layer,fraction,miss_rate: per decode step and layer, the fraction of
// each lower-tier block's tokens the speculation selects (0 < f <= 1) and the
// fraction of those it missed (0 <= m <= 1). Every layer of steps 0 to S - 1
// appears once; decode step s uses the trace's step s mod S.
struct KvSparseTrace {
  std::string file;
  std::uint64_t steps = 0, layers = 0;
  std::vector<double> fraction, miss_rate;  // [step * layers + layer]
  double fraction_at(std::uint64_t step, std::uint64_t layer) const {
    return fraction[(step % steps) * layers + layer];
  }
  double miss_rate_at(std::uint64_t step, std::uint64_t layer) const {
    return miss_rate[(step % steps) * layers + layer];
  }
};
KvSparseTrace read_sparse_trace(const std::string& path, std::uint64_t layers);

// session,arrival_s,turns,think_s,context_tokens,turn_tokens: a conversation
// that arrives at arrival_s with context_tokens of history, and comes back
// turns - 1 more times, think_s apart (arrival to arrival); each turn adds
// turn_tokens of prompt (and the reply's tokens) to its context.
struct KvSession {
  std::string id;
  double arrival_s = 0;
  std::uint64_t turns = 1;
  double think_s = 0;
  std::uint64_t context_tokens = 0, turn_tokens = 1;
};
std::vector<KvSession> read_session_trace(const std::string& path);

// Where a turn found its session's saved KV.
enum class KvStoreHit : std::uint8_t { first, dram, nvme, miss };

struct KvTurn {
  std::size_t session;  // index in the trace
  std::uint64_t turn;   // 0 = the session's first
  double arrival_s;
  std::uint64_t cached_tokens;  // the session's context when the turn arrives
  std::uint64_t turn_tokens;
  KvStoreHit hit;
};

// Replays the sessions' turns in arrival order (ties in trace order) against
// a store of saved contexts kept in recency order: after each turn the
// session's whole context (cached, turn and reply_tokens) is saved as the
// most recent; the most recent contexts that fit dram_bytes are in DRAM,
// the next ones that fit nvme_bytes on NVMe, older ones are dropped
// (AttentionStore's DRAM and SSD tiers, least recently used moved down). A
// returning turn hits where its context is, or misses.
std::vector<KvTurn> replay_sessions(const std::vector<KvSession>& sessions,
                                    std::uint64_t bytes_per_token, std::uint64_t reply_tokens,
                                    double dram_bytes, double nvme_bytes);

}  // namespace gpunvme
