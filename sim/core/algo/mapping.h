// Queue mapping: which queue a thread's I/O goes to. Part of the algorithm
// library (principle 1 of ARCHITECTURE.md) so that the simulator's
// workloads, the host-thread tests and the CUDA kernels pick queues with the
// same code; a GPU thread evaluates it in registers, without memory access.
//
// Queues of several SSDs form one table: queue i of SSD k is at index
// i * ssds + k, so that consecutive indices alternate SSDs (BaM's layout,
// which spreads warps over SSDs without any SSD-specific code).
#pragma once

#include <cstdint>

#include "sim/core/algo/policies.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::algo {

// The mapping's configuration, warp-uniform.
struct QueueMap {
  QueueMapping mapping = QueueMapping::PerWarp;
  SsdMapping ssd_mapping = SsdMapping::Interleave;
  // Exclusive submission: warp w owns queue w (on every SSD when striping),
  // whatever `mapping` says; the configuration checks it is per_warp.
  bool exclusive = false;
  // io_agents: the number of agent warps (0 otherwise). Agent a owns the
  // queues i with i % agents == a on every SSD.
  std::uint32_t agents = 0;
  std::uint32_t queues_per_ssd = 1;
  std::uint32_t ssds = 1;
};

// Who is asking: the thread's warp, the warp's SM, the thread's global index
// and how many I/Os it has issued before this one.
struct QueueUser {
  std::uint32_t warp = 0;
  std::uint32_t sm = 0;
  std::uint32_t thread = 0;
  std::uint64_t io_seq = 0;
};

// Pass as `ssd` when the mapping may choose the SSD itself (interleaving).
constexpr std::uint32_t kAnySsd = 0xFFFFFFFFu;

// The SSD that holds block `block` of a striped space.
GPUNVME_HD constexpr std::uint32_t stripe_ssd(const QueueMap& m, std::uint64_t block) {
  return static_cast<std::uint32_t>(block % m.ssds);
}

// Index into the queue table for one I/O of `u`. `ssd` is the SSD the I/O
// must go to (striping, or a caller that placed the data), or kAnySsd to let
// the mapping spread the I/O over every queue of every SSD.
GPUNVME_HD constexpr std::uint32_t map_queue(const QueueMap& m, const QueueUser& u,
                                             std::uint32_t ssd) {
  const std::uint32_t per_ssd = m.queues_per_ssd;
  const std::uint32_t ssds = m.ssds;
  if (m.agents != 0) {
    // The warp's agent, then one of that agent's queues on the SSD, so that
    // warps sharing an agent also spread over its queues.
    const std::uint32_t a = u.warp % m.agents;
    const std::uint32_t owned_per_ssd = (per_ssd - a + m.agents - 1) / m.agents;
    const std::uint32_t i = a + m.agents * ((u.warp / m.agents) % owned_per_ssd);
    return i * ssds + (ssd == kAnySsd ? u.warp % ssds : ssd);
  }
  if (m.exclusive) return ssd == kAnySsd ? u.warp : u.warp * ssds + ssd;
  std::uint64_t key = 0;
  switch (m.mapping) {
    case QueueMapping::PerSm: key = u.sm; break;
    case QueueMapping::PerWarp: key = u.warp; break;
    case QueueMapping::PerAgent:  // only with agents (above); treated as round robin
    case QueueMapping::RoundRobin: key = std::uint64_t{u.thread} + u.io_seq; break;
  }
  if (ssd == kAnySsd) return static_cast<std::uint32_t>(key % (std::uint64_t{per_ssd} * ssds));
  return static_cast<std::uint32_t>(key % per_ssd) * ssds + ssd;
}

// The queue a warp mostly uses, for CID partitions: with interleaving an
// index into the whole table; with striping its index on each SSD (the same
// on all). 0xFFFFFFFF when any warp may use any queue (round robin).
GPUNVME_HD constexpr std::uint32_t home_queue(const QueueMap& m, std::uint32_t warp,
                                              std::uint32_t sm) {
  const std::uint32_t all = m.queues_per_ssd * m.ssds;
  const bool stripe = m.ssd_mapping == SsdMapping::Stripe;
  switch (m.mapping) {
    case QueueMapping::PerSm: return stripe ? sm % m.queues_per_ssd : sm % all;
    case QueueMapping::PerWarp: return stripe ? warp % m.queues_per_ssd : warp % all;
    default: return 0xFFFFFFFFu;
  }
}

// The agent warp that owns table index `queue` (io_agents).
GPUNVME_HD constexpr std::uint32_t agent_of_queue(const QueueMap& m, std::uint32_t queue) {
  return (queue / m.ssds) % m.agents;
}

}  // namespace gpunvme::algo
