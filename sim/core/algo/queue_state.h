// Laying out a queue's shared algorithm state in GPU memory, and the CID
// space each scheme needs: one place for every workload that builds queues
// for the strategies (the simulator's and the tests').
#pragma once

#include <cstdint>

#include "sim/core/algo/policies.h"
#include "sim/core/algo/queue_pair.h"

namespace gpunvme::algo {

// Bits of warp-local CIDs a warp needs for 32 lanes x iodepth commands.
inline std::uint32_t local_cid_bits(std::uint32_t iodepth) {
  std::uint32_t k = 0;
  while ((1ull << k) < 32ull * iodepth) ++k;
  return k;
}

// CIDs a scheme hands out on one queue: `configured` is the scenario's
// cid_space (0 = the scheme's default), `users` the most warps sharing a
// queue (partitioned schemes).
inline std::uint32_t cid_space_for(CidScheme scheme, std::int64_t configured, std::uint32_t entries,
                                   std::uint32_t users, std::uint32_t iodepth) {
  switch (scheme) {
    case CidScheme::SqSlot: return entries;
    case CidScheme::Counter:
      return configured > 0 ? static_cast<std::uint32_t>(configured) : 65536u;
    case CidScheme::CounterLock:
      return configured > 0 ? static_cast<std::uint32_t>(configured) : entries;
    case CidScheme::WarpPartition: return users << local_cid_bits(iodepth);
    case CidScheme::ThreadPool: return users * 32u * iodepth;
    case CidScheme::ThreadWide: return users << local_cid_bits(iodepth);
  }
  return entries;
}

// Places the counters and arrays of queue `q` (whose rings, doorbells and
// `entries` are set) with `allocate(bytes, alignment) -> address`. Counter
// words get a 128 B line each, so that no two share an L2 line.
template <class Allocate>
void place_queue_state(QueuePair& q, std::uint32_t cid_space, bool agent_table,
                       Allocate&& allocate) {
  const std::uint64_t counters = allocate(QueuePair::counter_bytes(), 128);
  q.ticket = counters;
  q.turn = counters + 1 * 128;
  q.tail_lock = counters + 2 * 128;
  q.credits = counters + 3 * 128;
  q.cq_head = counters + 4 * 128;
  q.cq_lock = counters + 5 * 128;
  q.cq_rung = counters + 6 * 128;
  q.cid_counter = counters + 7 * 128;
  q.slot_gate = allocate(std::uint64_t{q.entries} * 4, 128);
  q.ready = allocate(std::uint64_t{q.entries} * 4, 128);
  q.cq_marks = allocate(std::uint64_t{q.entries} * 4, 128);
  q.cid_space = cid_space;
  q.done = allocate(std::uint64_t{cid_space} * 4, 128);
  q.cid_bits = allocate((std::uint64_t{cid_space} + 31) / 32 * 4, 128);
  if (agent_table) q.agent_table = allocate(std::uint64_t{q.entries} * 8, 128);
}

}  // namespace gpunvme::algo
