// io_agents' intake of 32 requests a pass, timed alone: agent_loop's step 2
// (sim/core/algo/io_agents.h) written out with the same platform calls, with
// no drain, no doorbell and no stage records (the step reads the agent's
// private state, so a benchmark cannot call it). Shared by
// submission_costs.cu and agent_pass.cu, which time the same kernel.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "hw_bench.cuh"
#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace agent_intake_bench {

namespace algo = gpunvme::algo;
namespace nvme = gpunvme::nvme;
using gpunvme::platform::CudaWarp;

constexpr std::uint32_t kAgentQueues = 4;
constexpr unsigned kAgentPasses = 128;
// Every launch starts at ticket 0: the ring holds one launch's requests, all
// ready in lap 0.
constexpr std::uint32_t kAgentRingEntries = 32 * kAgentPasses;

__global__ void k_agent_intake(bool intake, algo::AgentRing ring, const algo::QueuePair* queues,
                               unsigned long long* out_ns, unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p;
  algo::AgentQueue owned[kAgentQueues];
  for (std::uint32_t i = 0; i < kAgentQueues; ++i) owned[i].queue = i;
  std::uint32_t ring_head = 0;
  unsigned x = 0;
  const unsigned long long t0 = globaltimer();
  for (unsigned pass = 0; pass < kAgentPasses; ++pass) {
    if (!intake) {
      x += pass;
      continue;
    }
    algo::Lanes<algo::AgentRequest> d;
    const algo::LaneMask ready = p.ballot(algo::kAllLanes, [&](int lane) {
      const std::uint32_t t = ring_head + static_cast<std::uint32_t>(lane);
      return p.load_u32(algo::detail::word(ring.ready, t % ring.entries)) == t / ring.entries + 1u;
    });
    const algo::LaneMask run = algo::lanes_below(algo::leading_run(ready));
    if (run == 0) break;  // not reached: every descriptor is ready
    p.for_lanes(run, [&](int lane) {
      const std::uint32_t t = ring_head + static_cast<std::uint32_t>(lane);
      d[lane] = p.template load<algo::AgentRequest>(ring.base + std::uint64_t{t % ring.entries} *
                                                                    sizeof(algo::AgentRequest));
    });
    algo::Lanes<std::uint32_t> ticket;
    algo::Lanes<std::uint32_t> in_flight;
    algo::for_each_lane(p, run, [&](int lane) {
      std::uint32_t before = 0;
      algo::for_each_lane(p, run & algo::lanes_below(static_cast<std::uint32_t>(lane)),
                          [&](int l) { before += d[l].queue == d[lane].queue ? 1u : 0u; });
      const algo::AgentQueue& s = owned[d[lane].queue];
      ticket[lane] = s.ticket + before;
      in_flight[lane] = (s.ticket - s.rung) + s.outstanding + before;
    });
    const algo::LaneMask room = p.ballot(run, [&](int lane) {
      const algo::QueuePair& q = queues[d[lane].queue];
      const std::uint32_t t = ticket[lane];
      return in_flight[lane] + 1u <= q.entries - 1u &&
             p.template load<std::uint64_t>(q.agent_table + std::uint64_t{t % q.entries} * 8) ==
                 0 &&
             p.template load<std::uint64_t>(q.agent_table +
                                            std::uint64_t{(t + 1) % q.entries} * 8) == 0;
    });
    const algo::LaneMask taken = algo::lanes_below(algo::leading_run(room)) & run;
    p.for_lanes(taken, [&](int lane) {
      const std::uint32_t t = ring_head + static_cast<std::uint32_t>(lane);
      p.store_u32(algo::detail::word(ring.gate, t % ring.entries), t / ring.entries + 1u);
    });
    ring_head += algo::lane_count(taken);
    algo::Lanes<std::uint32_t> slot;
    algo::for_each_lane(p, taken, [&](int lane) {
      algo::AgentQueue& s = owned[d[lane].queue];
      slot[lane] = s.ticket % queues[d[lane].queue].entries;
      ++s.ticket;
    });
    p.for_lanes(taken, [&](int lane) {
      const algo::QueuePair& q = queues[d[lane].queue];
      algo::IoRequest r;
      r.opcode = static_cast<nvme::NvmOpcode>(d[lane].opcode);
      r.slba = d[lane].slba;
      r.nlb_zero_based = d[lane].nlb_zero_based;
      r.buffer = d[lane].buffer;
      r.bytes = d[lane].bytes;
      algo::detail::write_sqe(p, q, slot[lane], static_cast<std::uint16_t>(slot[lane]), r);
      // The reply word is 0 here, so the agent table stays free.
      p.store_bytes(q.agent_table + std::uint64_t{slot[lane]} * 8, &d[lane].reply, 8);
    });
    // The pass's commands count as rung (the doorbell itself is not timed).
    for (std::uint32_t i = 0; i < kAgentQueues; ++i) owned[i].rung = owned[i].ticket;
    x += algo::lane_count(taken);
  }
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x == 0) {
    *out_ns = t1 - t0;
    *sink = x;
  }
}

// n ready-to-take 4 KiB read requests spread over the kAgentQueues queues in
// turn; each one's reply word at reply_base + 8 x its index (none with 0).
inline std::vector<algo::AgentRequest> descriptors(std::uint32_t n, std::uint64_t reply_base) {
  std::vector<algo::AgentRequest> d(n);
  for (std::uint32_t t = 0; t < n; ++t) {
    std::memset(&d[t], 0, sizeof d[t]);
    d[t].slba = std::uint64_t{t} * 8u;
    d[t].buffer = 0x10000000ull + std::uint64_t{t % 32u} * 4096u;
    d[t].bytes = 4096;
    d[t].queue = t % kAgentQueues;
    d[t].nlb_zero_based = 7;
    d[t].opcode = static_cast<std::uint8_t>(nvme::NvmOpcode::Read);
    d[t].reply = reply_base == 0 ? 0 : reply_base + std::uint64_t{t} * 8;
  }
  return d;
}

}  // namespace agent_intake_bench
