#include "sim/system/workload/service_warps.h"

#include "sim/kernel/time.h"

namespace gpunvme {

void ServiceWarps::lay_out(bool pollers, bool agents, std::uint32_t count, std::uint32_t queues,
                           const algo::QueueMap& map, std::uint32_t ring_entries, gpu::Gpu& gpu) {
  if (pollers) {
    poller_queues_.resize(count);
    for (std::uint32_t q = 0; q < queues; ++q) poller_queues_[q % count].push_back(q);
  }
  if (agents) {
    rings_.resize(count);
    agent_queues_.resize(count);
    agent_local_index_.assign(count, std::vector<std::uint32_t>(queues, ~0u));
    agent_of_queue_.resize(queues);
    for (std::uint32_t q = 0; q < queues; ++q) {
      const std::uint32_t a = algo::agent_of_queue(map, q);
      agent_of_queue_[q] = a;
      agent_local_index_[a][q] = static_cast<std::uint32_t>(agent_queues_[a].size());
      algo::AgentQueue owned;
      owned.queue = q;
      agent_queues_[a].push_back(owned);
    }
    for (algo::AgentRing& ring : rings_) {
      ring.entries = ring_entries;
      ring.base = gpu.allocate(std::uint64_t{ring_entries} * sizeof(algo::AgentRequest), 4096);
      ring.tail = gpu.allocate(128, 128);
      ring.gate = gpu.allocate(std::uint64_t{ring_entries} * 4, 128);
      ring.ready = gpu.allocate(std::uint64_t{ring_entries} * 4, 128);
    }
  }
}

algo::AgentContext ServiceWarps::agent_context(std::uint32_t a, const algo::WarpContext& base,
                                               std::uint32_t batch_size, Picoseconds batch_timeout,
                                               std::uint64_t shutdown) {
  algo::AgentContext context;
  context.w = base;
  context.ring = rings_[a];
  context.owned = agent_queues_[a].data();
  context.owned_count = static_cast<std::uint32_t>(agent_queues_[a].size());
  context.local_index = agent_local_index_[a].data();
  context.batch_size = batch_size;
  context.batch_timeout = batch_timeout;
  context.shutdown = shutdown;
  return context;
}

}  // namespace gpunvme
