// Instantiates every strategy of the algorithm library for the CUDA platform,
// so that the headers keep compiling with nvcc (CMake option GPUNVME_CUDA).
// The kernels are not launched here: running them against an SSD is the
// hardware backend's job.
#include "sim/core/algo/error_mailbox.h"
#include "sim/core/algo/gpu_network.h"
#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/strategy.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace gpunvme::algo {

__global__ void queue_strategies(WarpContext* contexts, const IoRequest* requests,
                                 std::uint32_t iodepth) {
  init_warp_scratch();
  platform::CudaWarp p;
  WarpContext& w = contexts[(blockIdx.x * blockDim.x + threadIdx.x) / 32u];
  Lanes<Pending> round;
  w.rounds = &round;
  w.round_count = 1;
  Lanes<IoRequest> request;
  request[threadIdx.x % 32u] = requests[blockIdx.x * blockDim.x + threadIdx.x];
  __syncwarp();
  for (std::uint32_t d = 0; d < iodepth; ++d) {
    submit(p, w, kAllLanes, request, round);
    wait(p, w, round, kAllLanes);
  }
}

__global__ void polling_warps(const WarpContext* context, const std::uint32_t* queues,
                              std::uint32_t count, std::uint64_t shutdown) {
  init_warp_scratch();
  platform::CudaWarp p;
  polling_warp(p, *context, queues, count, shutdown);
}

__global__ void io_agents(AgentContext* agents, const AgentRing* rings,
                          const std::uint32_t* agent_of_queue, const IoRequest* requests,
                          std::uint64_t replies, std::uint32_t agent_warps) {
  init_warp_scratch();
  platform::CudaWarp p;
  const std::uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (warp < agent_warps) {
    agent_loop(p, agents[warp]);
    return;
  }
  Lanes<IoRequest> request;
  Lanes<std::uint64_t> reply;
  Lanes<std::uint16_t> status;
  request[threadIdx.x % 32u] = requests[blockIdx.x * blockDim.x + threadIdx.x];
  reply[threadIdx.x % 32u] = replies + 8u * (blockIdx.x * blockDim.x + threadIdx.x);
  __syncwarp();
  agent_post(p, rings, agent_of_queue, kAllLanes, request, reply);
  agent_wait(p, kAllLanes, reply, status);
}

// A warp whose round failed: it reports the failures to the host, waits for
// the verdicts and lets go of the held commands.
__global__ void error_mailbox(WarpContext* contexts, ErrorMailbox mailbox) {
  init_warp_scratch();
  platform::CudaWarp p;
  WarpContext& w = contexts[(blockIdx.x * blockDim.x + threadIdx.x) / 32u];
  Lanes<Pending> round;
  Lanes<nvme::GpuErrorRecord> record;
  Lanes<std::uint32_t> sequence;
  Lanes<std::uint32_t> verdict_index;
  Lanes<std::uint16_t> action;
  verdict_index[threadIdx.x % 32u] = blockIdx.x * blockDim.x + threadIdx.x;
  __syncwarp();
  signal_errors(p, mailbox, kAllLanes, record, sequence);
  await_verdicts(p, mailbox, kAllLanes, verdict_index, sequence, action);
  release_held(p, w, round, kAllLanes, true);
}

// GPU-initiated networking: a warp posts NVMe-oF read capsules to its NIC
// queue pair and reaps the responses.
__global__ void gpu_network(const NicQueuePair* queues, const NetRead* reads,
                            std::uint16_t* statuses) {
  init_warp_scratch();
  platform::CudaWarp p;
  const std::uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  NicQueueState state = fresh_state(queues[warp]);
  Lanes<NetRead> read;
  read[threadIdx.x % 32u] = reads[blockIdx.x * blockDim.x + threadIdx.x];
  __syncwarp();
  post_reads(p, queues[warp], state, kAllLanes, read);
  reap_responses(p, queues[warp], state, 32u, [&](std::uint16_t cid, std::uint16_t status) {
    if (threadIdx.x % 32u == 0) statuses[warp * 32u + cid % 32u] = status;
  });
}

// The same with any mix of operations: NVMe-oF read and write capsules and
// RDMA READ/WRITE WQEs of remote memory, reaping responder and requester CQEs.
__global__ void gpu_network_ops(const NicQueuePair* queues, const NetOp* ops,
                                std::uint16_t* statuses) {
  init_warp_scratch();
  platform::CudaWarp p;
  const std::uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  NicQueueState state = fresh_state(queues[warp]);
  Lanes<NetOp> op;
  op[threadIdx.x % 32u] = ops[blockIdx.x * blockDim.x + threadIdx.x];
  __syncwarp();
  post_ops(p, queues[warp], state, kAllLanes, op);
  reap_completions(
      p, queues[warp], state, 32u,
      [&](std::uint16_t cid, std::uint16_t status) {
        if (threadIdx.x % 32u == 0) statuses[warp * 32u + cid % 32u] = status;
      },
      [&](std::uint16_t wqe) {
        if (threadIdx.x % 32u == 0) statuses[warp * 32u + wqe % 32u] = 0;
      });
}

}  // namespace gpunvme::algo
