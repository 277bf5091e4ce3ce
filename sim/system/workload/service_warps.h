// The GPU's service warps, for the strategies that have them: which queues
// each polling warp watches, and for I/O agents which queues each agent owns
// and the request ring compute warps post to. One layout for every workload
// that runs the strategies (the microbenchmark and the GPU I/O path of the
// other scenario kinds).
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/mapping.h"
#include "sim/kernel/time.h"

namespace gpunvme {

class ServiceWarps {
 public:
  // `count` service warps over `queues` queues: polling warp i watches every
  // queue q with q % count == i; agent a owns the queues the map gives it and
  // gets a request ring of `ring_entries` in GPU memory.
  void lay_out(bool pollers, bool agents, std::uint32_t count, std::uint32_t queues,
               const algo::QueueMap& map, std::uint32_t ring_entries, gpu::Gpu& gpu);

  const std::vector<std::uint32_t>& poller_queues(std::uint32_t i) const {
    return poller_queues_[i];
  }
  const algo::AgentRing* rings() const { return rings_.data(); }
  const std::uint32_t* agent_of_queue() const { return agent_of_queue_.data(); }

  // Agent `a`'s context: its ring and queues, the scenario's batching
  // (batch_size, batch_timeout_ns) and the shutdown word it watches. The
  // agent updates the state of the queues it owns through it.
  algo::AgentContext agent_context(std::uint32_t a, const algo::WarpContext& base,
                                   std::uint32_t batch_size, Picoseconds batch_timeout,
                                   std::uint64_t shutdown);

 private:
  std::vector<std::vector<std::uint32_t>> poller_queues_;
  std::vector<algo::AgentRing> rings_;
  std::vector<std::uint32_t> agent_of_queue_;
  std::vector<std::vector<algo::AgentQueue>> agent_queues_;
  std::vector<std::vector<std::uint32_t>> agent_local_index_;
};

}  // namespace gpunvme
