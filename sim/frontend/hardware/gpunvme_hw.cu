// gpunvme-hw: the hardware backend. Runs the algorithm library's own
// strategies (sim/core/algo: submit/wait, I/O agents, polling warps) unchanged in
// CUDA kernels on a real GPU, against an NVMe target (nvme_target.h: the host-thread
// controller of soft_controller.h, or the GPU-resident one of gpu_target.h), records every I/O's
// stage times on the GPU (sim/core/algo/stages.h, %globaltimer) and writes per-stage latency
// distributions per strategy and warp count to one JSON file.
//
//   gpunvme-hw --out hw.json [--strategies all_threads,bam_ticket,...]
//              [--warps 1,8,32,132] [--ios 16384] [--queues 32] [--entries 256]
//              [--target-threads 4] [--file PATH | --file-mib 256] [--device 0]
//              [--target host|gpu] [--gpu-target-sms 8] [--gpu-target-warps 32]
//
// Exit codes: 0 ok; 1 a run failed (I/O errors, wrong data, a protocol
// violation, a hang); 2 bad command line; 77 no CUDA device (test harnesses
// treat it as "skipped").
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/queue_state.h"
#include "sim/core/algo/strategy.h"
#include "sim/core/algo/strategy_names.h"
#include "sim/core/platform/cuda_warp.cuh"
#include "sim/core/protocol/nvme_batch_completion.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/frontend/hardware/gpu_target.h"
#include "sim/frontend/hardware/soft_controller.h"
#include "sim/frontend/hardware/target_extensions.h"

namespace gpunvme::hw {
namespace {

constexpr int kBadInput = 2;
constexpr int kNoDevice = 77;
// The data pattern the namespace file holds: the first 8 bytes of every LBA
// (the same pattern as the host-thread target, sim/core/platform/soft_target.h).
constexpr std::uint64_t kPatternKey = 0xC0FFEE5A5A5A5A5Aull;
// Most queues one I/O-agent warp may own (its counters live in the agent's
// local memory).
constexpr std::uint32_t kMaxAgentQueues = 64;
constexpr unsigned kFullMaskFeed = 0xFFFFFFFFu;

// The queue pair's rings and doorbells where the target placed them, in
// namespace 1; trace_id names the queue in stage records.
void take_rings(algo::QueuePair& q, std::uint32_t trace_id, const IoQueueRings& rings,
                std::uint32_t entries) {
  q.trace_id = trace_id;
  q.qid = rings.qid;
  q.nsid = 1;
  q.sq_base = rings.sq_device;
  q.cq_base = rings.cq_device;
  q.entries = entries;
  q.sq_doorbell = rings.sq_doorbell_device;
  q.cq_doorbell = rings.cq_doorbell_device;
}

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

// ---- the named strategies as the simulator's scenario names them

struct StrategyCase {
  std::string name;        // as reported
  std::string scenario;    // the scenario's `strategy`
  std::string completion;  // the scenario's `completion` override ("" = the strategy's)
  std::string submission;  // the scenario's `submission` override ("" = the strategy's)
  std::string cid_scheme;  // the scenario's `cid_scheme` override ("" = the strategy's)
  algo::Strategy strategy;
  bool agents = false;
  bool pollers = false;
  bool shadow_polled = false;  // controller-polled shadow doorbells (shadow_doorbells: true)
};

// A named strategy, then options joined by '+': polling_warps, and the
// proposed NVMe extensions (on warp_batch, as the simulator's nvme-ext
// scenarios use them): cqe_at_slot or cid_bitmap (completion), warp_doorbell
// (submission), thread_wide (CID scheme), shadow_polled (shadow doorbells
// the target polls). False for an unknown name, option or combination.
bool strategy_case(const std::string& name, StrategyCase& out) {
  using algo::NamedStrategy;
  out = StrategyCase{};
  out.name = name;
  std::vector<std::string> parts;
  std::stringstream in(name);
  for (std::string part; std::getline(in, part, '+');) parts.push_back(part);
  if (parts.empty()) return false;
  const algo::StrategyEntry* entry = algo::find_strategy(parts[0]);
  if (entry == nullptr) return false;
  out.scenario = parts[0];
  out.strategy = algo::named_strategy(entry->value);
  out.agents = entry->value == NamedStrategy::IoAgents;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& option = parts[i];
    const bool extension_base = entry->value == NamedStrategy::WarpBatch;
    if (option == "polling_warps" && extension_base && out.completion.empty()) {
      out.completion = option;
      out.strategy.completion = algo::Completion::PollingWarps;
      out.pollers = true;
    } else if ((option == "cqe_at_slot" || option == "cid_bitmap") && extension_base &&
               out.completion.empty()) {
      out.completion = option;
      out.strategy.completion =
          option == "cqe_at_slot" ? algo::Completion::SlotIndexed : algo::Completion::CidBitmap;
    } else if (option == "warp_doorbell" && extension_base && out.submission.empty()) {
      out.submission = option;
      out.strategy.submission = algo::Submission::WarpDoorbell;
    } else if (option == "thread_wide" && extension_base && out.cid_scheme.empty()) {
      out.cid_scheme = option;
      out.strategy.cid = algo::CidScheme::ThreadWide;
    } else if (option == "shadow_polled" && extension_base && !out.shadow_polled) {
      out.shadow_polled = true;
    } else {
      return false;
    }
  }
  // As the simulator refuses them: the bitmap has one bit per 16-bit CID,
  // and a shadow word holds a tail, not a warp doorbell's run.
  if (out.strategy.completion == algo::Completion::CidBitmap &&
      out.strategy.cid == algo::CidScheme::ThreadWide) {
    return false;
  }
  if (out.shadow_polled && out.strategy.submission == algo::Submission::WarpDoorbell) return false;
  return true;
}

// ---- kernel

struct KernelArgs {
  const algo::QueuePair* queues;
  std::uint32_t queue_count;
  algo::Strategy strategy;
  std::uint32_t cq_doorbell_batch;
  std::uint32_t max_batch;
  std::uint32_t cid_local_bits;
  std::uint32_t warps;          // compute warps
  std::uint32_t service_warps;  // agents or pollers, numbered after them
  std::uint32_t rounds;         // I/Os per thread (iodepth 1)
  std::uint32_t bytes;
  std::uint16_t nlb_zero_based;
  std::uint32_t lbas_per_io;
  std::uint64_t blocks;  // bs-sized blocks in the namespace
  std::uint64_t buffers;
  std::uint32_t buffer_stride;
  std::uint64_t seed;
  const platform::CudaStageTrace* trace;
  const platform::CudaOpProfile* profile;
  std::uint32_t poll_backoff_ns;  // __nanosleep between polls of a waiting warp
  unsigned* errors;
  unsigned* mismatches;
  unsigned* finished;
  std::uint64_t shutdown;  // GPU word: set once every compute warp is done
  bool agents;
  bool pollers;
  // io_agents
  const algo::AgentRing* rings;
  const std::uint32_t* agent_of_queue;
  const algo::AgentQueue* agent_queues;  // agent a's at [agent_first[a], agent_first[a + 1])
  const std::uint32_t* agent_first;
  const std::uint32_t* agent_local_index;  // [agent][queue]
  std::uint64_t replies;
  std::uint32_t batch_size;
  // polling warps
  const std::uint32_t* poller_queues;  // poller i's at [poller_first[i], poller_first[i + 1])
  const std::uint32_t* poller_first;
};

__device__ std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ std::uint32_t sm_id() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// The strategy a compute warp's code is compiled for. The per-role compute
// kernels (compute_kernel<S>) hold one named strategy as a compile-time
// constant, as an application compiles only the strategy it uses: the other
// strategies' code is not in the kernel. Runtime reads KernelArgs::strategy,
// as the combined kernel does (and the per-role kernel for the extension
// options, which have no kernel of their own).
enum class CompiledStrategy : int {
  Runtime,
  AllThreads,
  BamTicket,
  WarpBatch,
  WarpBatchPollingWarps,
  PerWarpQueue,
  IoAgents
};

// The named strategy of a compiled compute kernel (S other than Runtime).
template <CompiledStrategy S>
__host__ __device__ constexpr algo::Strategy compiled_strategy() {
  using algo::NamedStrategy;
  static_assert(S != CompiledStrategy::Runtime, "Runtime reads the strategy at run time");
  if constexpr (S == CompiledStrategy::AllThreads) {
    return algo::named_strategy(NamedStrategy::AllThreads);
  } else if constexpr (S == CompiledStrategy::BamTicket) {
    return algo::named_strategy(NamedStrategy::BamTicket);
  } else if constexpr (S == CompiledStrategy::WarpBatch) {
    return algo::named_strategy(NamedStrategy::WarpBatch);
  } else if constexpr (S == CompiledStrategy::WarpBatchPollingWarps) {
    algo::Strategy s = algo::named_strategy(NamedStrategy::WarpBatch);
    s.completion = algo::Completion::PollingWarps;
    return s;
  } else if constexpr (S == CompiledStrategy::PerWarpQueue) {
    return algo::named_strategy(NamedStrategy::PerWarpQueue);
  } else {
    return algo::named_strategy(NamedStrategy::IoAgents);
  }
}

// The CUDA platform with the strategy fixed at compile time: the algorithm
// library reads it through algo::strategy_of instead of the WarpContext, so
// the switches over the strategy's policies fold and the other strategies'
// code is not compiled into the kernel.
template <CompiledStrategy S>
class StrategyWarp : public platform::CudaWarp {
 public:
  using platform::CudaWarp::CudaWarp;
  __host__ __device__ static constexpr algo::Strategy fixed_strategy() {
    return compiled_strategy<S>();
  }
};

template <CompiledStrategy S>
struct WarpFor {
  using type = StrategyWarp<S>;
};
template <>
struct WarpFor<CompiledStrategy::Runtime> {
  using type = platform::CudaWarp;
};

template <CompiledStrategy S>
__device__ __forceinline__ algo::Strategy compute_strategy(const KernelArgs& a) {
  if constexpr (S == CompiledStrategy::Runtime) {
    return a.strategy;
  } else {
    return compiled_strategy<S>();
  }
}

template <CompiledStrategy S>
__device__ __forceinline__ bool compute_agents(const KernelArgs& a) {
  if constexpr (S == CompiledStrategy::Runtime) {
    return a.agents;
  } else {
    return S == CompiledStrategy::IoAgents;
  }
}

// The queue a compute warp's I/O goes to: the simulator's mapping
// (sim/system/workload/microbenchmark.cpp, Microbenchmark::map_queue) for one SSD.
__device__ std::uint32_t map_queue(const KernelArgs& a, const algo::Strategy& strategy, bool agents,
                                   std::uint32_t w, std::uint32_t thread, std::uint32_t round) {
  const std::uint32_t n = a.queue_count;
  if (agents) {
    const std::uint32_t agent_count = a.service_warps;
    const std::uint32_t ag = w % agent_count;
    const std::uint32_t owned = (n - ag + agent_count - 1) / agent_count;
    return ag + agent_count * ((w / agent_count) % owned);
  }
  if (strategy.submission == algo::Submission::Exclusive) return w;
  switch (strategy.mapping) {
    case algo::QueueMapping::PerSm: return sm_id() % n;
    case algo::QueueMapping::PerWarp: return w % n;
    default: return (thread + round) % n;
  }
}

__device__ algo::WarpContext base_context(const KernelArgs& a, const algo::Strategy& strategy) {
  algo::WarpContext c;
  c.queues = a.queues;
  c.queue_count = a.queue_count;
  c.strategy = strategy;
  c.cq_doorbell_batch = a.cq_doorbell_batch;
  c.max_batch = a.max_batch;
  c.cid_local_bits = a.cid_local_bits;
  c.iodepth = 1;
  return c;
}

// Every thread of a warp runs the roles below; the warp's private state
// (WarpContext, AgentContext) is a per-thread copy that all lanes update
// identically, so no lane ever reads state another lane is writing.

// Polling warp i: completes the commands of its queues until shutdown.
__device__ __forceinline__ void polling_role(const KernelArgs& a, std::uint32_t i,
                                             platform::CudaWarp& p) {
  const algo::WarpContext c = base_context(a, a.strategy);
  algo::polling_warp(p, c, a.poller_queues + a.poller_first[i],
                     a.poller_first[i + 1] - a.poller_first[i], a.shutdown);
  p.flush_stage_means();
}

// io_agents' agent warp i: serves its ring and its queues until shutdown.
__device__ __forceinline__ void agent_role(const KernelArgs& a, std::uint32_t i,
                                           platform::CudaWarp& p) {
  algo::AgentContext c;
  c.w = base_context(a, a.strategy);
  c.ring = a.rings[i];
  algo::AgentQueue owned[kMaxAgentQueues];
  const std::uint32_t first = a.agent_first[i];
  c.owned_count = a.agent_first[i + 1] - first;
  for (std::uint32_t k = 0; k < c.owned_count; ++k) owned[k] = a.agent_queues[first + k];
  c.owned = owned;
  c.local_index = a.agent_local_index + std::uint64_t{i} * a.queue_count;
  c.batch_size = a.batch_size;
  c.batch_timeout = 0;
  c.shutdown = a.shutdown;
  algo::agent_loop(p, c);
  p.flush_stage_means();
  p.flush_op_profile();
}

// Compute warp w: a.rounds reads per lane, each checked; the last warp to
// finish raises shutdown for the service warps.
template <CompiledStrategy S, class P>
__device__ __forceinline__ void compute_role(const KernelArgs& a, std::uint32_t w,
                                             std::uint32_t lane, P& p) {
  const algo::Strategy strategy = compute_strategy<S>(a);
  const bool agents = compute_agents<S>(a);
  algo::WarpContext c = base_context(a, strategy);
  // The warp's index among the warps of its queue (w % queues): its CID
  // partition (thread_wide); the other schemes do not read it.
  c.cid_partition = w / a.queue_count;
  algo::Lanes<algo::Pending> round;
  c.rounds = &round;
  c.round_count = 1;
  algo::Lanes<std::uint64_t> reply;
  algo::Lanes<std::uint16_t> status;
  const std::uint32_t thread = w * 32u + lane;
  const std::uint64_t buffer = a.buffers + std::uint64_t{thread} * a.buffer_stride;
  volatile std::uint64_t* first_word = reinterpret_cast<volatile std::uint64_t*>(buffer);
  reply[lane] = a.replies + std::uint64_t{thread} * 8u;
  for (std::uint32_t r = 0; r < a.rounds; ++r) {
    algo::Lanes<algo::IoRequest> request;
    algo::IoRequest& req = request[lane];
    const std::uint64_t block = mix(a.seed ^ (std::uint64_t{thread} << 24) ^ r) % a.blocks;
    req.opcode = nvme::NvmOpcode::Read;
    req.slba = block * a.lbas_per_io;
    req.nlb_zero_based = a.nlb_zero_based;
    req.buffer = buffer;
    req.bytes = a.bytes;
    req.queue = map_queue(a, strategy, agents, w, thread, r);
    req.pool_index = 0;
    // Clear the word the data check reads, so that only this read's data
    // can pass it.
    *first_word = 0;
    __threadfence_system();
    __syncwarp();
    if (agents) {
      algo::agent_post(p, a.rings, a.agent_of_queue, algo::kAllLanes, request, reply);
      algo::agent_wait(p, algo::kAllLanes, reply, status);
    } else {
      round.fill(algo::Pending{});
      algo::submit(p, c, algo::kAllLanes, request, round);
      algo::wait(p, c, round, algo::kAllLanes);
      status[lane] = round[lane].status;
      __syncwarp();
    }
    if (status[lane] != 0) {
      atomicAdd(a.errors, 1u);
    } else if (*first_word != (req.slba ^ kPatternKey)) {
      atomicAdd(a.mismatches, 1u);
    }
    __syncwarp();
  }
  if (a.service_warps != 0 && lane == 0) {
    __threadfence();
    if (atomicAdd(a.finished, 1u) + 1u == a.warps) {
      *reinterpret_cast<volatile unsigned*>(a.shutdown) = 1u;
      __threadfence();
    }
  }
  p.flush_stage_means();
  p.flush_op_profile();
}

// The combined kernel (--kernel combined): every role in one kernel, the
// strategy read at run time; service warps are numbered after the compute
// warps.
__global__ void io_kernel(KernelArgs a) {
  algo::init_warp_scratch();
  const std::uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  const std::uint32_t lane = threadIdx.x % 32u;
  if (w >= a.warps + a.service_warps) return;
  platform::CudaWarp p(a.poll_backoff_ns, a.trace, a.profile, w >= a.warps ? 1 : 0);
  if (w >= a.warps) {
    if (a.pollers) {
      polling_role(a, w - a.warps, p);
    } else {
      agent_role(a, w - a.warps, p);
    }
    return;
  }
  compute_role<CompiledStrategy::Runtime>(a, w, lane, p);
}

// The per-role kernels (--kernel per-role): the compute warps of one
// strategy, io_agents' agent warps and the polling warps, each a kernel of
// its own, launched side by side on streams of their own.
template <CompiledStrategy S>
__global__ void compute_kernel(KernelArgs a) {
  algo::init_warp_scratch();
  const std::uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (w >= a.warps) return;
  typename WarpFor<S>::type p(a.poll_backoff_ns, a.trace, a.profile, 0);
  compute_role<S>(a, w, threadIdx.x % 32u, p);
}

__global__ void agent_kernel(KernelArgs a) {
  algo::init_warp_scratch();
  const std::uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (i >= a.service_warps) return;
  platform::CudaWarp p(a.poll_backoff_ns, a.trace, a.profile, 1);
  agent_role(a, i, p);
}

__global__ void polling_kernel(KernelArgs a) {
  algo::init_warp_scratch();
  const std::uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (i >= a.service_warps) return;
  platform::CudaWarp p(a.poll_backoff_ns, a.trace, a.profile, 1);
  polling_role(a, i, p);
}

__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// Controller-only runs under polls: warp w reads the 16 B entries of CQ ring
// w % rings one after another (ld.volatile.v4, every lane the same entry,
// the next read after the last returns), as a CQ-scanning waiter does, until
// *stop is set; loads[w] and ns[w] give its count of loads and their time.
__global__ void poll_cq_rings(const std::uint64_t* rings, std::uint32_t ring_count,
                              std::uint32_t entries, const volatile unsigned* stop,
                              unsigned long long* loads, unsigned long long* ns) {
  const std::uint64_t ring = rings[blockIdx.x % ring_count];
  std::uint32_t pos = (blockIdx.x / ring_count) % entries;
  unsigned long long count = 0, acc = 0;
  const unsigned long long t0 = globaltimer_ns();
  while (*stop == 0) {
    for (int i = 0; i < 32; ++i) {
      unsigned x, y, z, w;
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                   : "l"(ring + std::uint64_t{pos} * 16u)
                   : "memory");
      acc += x ^ y ^ z ^ w;
      pos = (pos + 1u + ((w >> 17) & 0u)) % entries;
    }
    count += 32;
  }
  if (threadIdx.x == 0) {
    loads[blockIdx.x] = count + (acc == ~0ull ? 1 : 0);
    ns[blockIdx.x] = globaltimer_ns() - t0;
  }
}

// Controller-only runs under polls, as waiters poll: warp w waits on the next
// entry of CQ ring w % rings (every warp of a ring the same entry, the one
// the target writes next): it reads that 16 B entry (ld.volatile.v4, every
// lane) until its phase tag is the current lap's, then moves to the entry
// after it, until *stop is set. The rings are fresh (all zero), so lap 0's
// phase tag is 1. loads[w] and ns[w] give its count of loads and their time.
__global__ void poll_next_cq_entry(const std::uint64_t* rings, std::uint32_t ring_count,
                                   std::uint32_t entries, const volatile unsigned* stop,
                                   unsigned long long* loads, unsigned long long* ns) {
  const std::uint64_t ring = rings[blockIdx.x % ring_count];
  std::uint32_t pos = 0;
  unsigned phase = 1;
  unsigned long long count = 0, acc = 0;
  const unsigned long long t0 = globaltimer_ns();
  while (*stop == 0) {
    unsigned x, y, z, w;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
                 : "l"(ring + std::uint64_t{pos} * 16u)
                 : "memory");
    ++count;
    if (((w >> 16) & 1u) == phase) {  // written in this lap: the next one is awaited
      if (++pos == entries) {
        pos = 0;
        phase ^= 1u;
      }
    }
    acc += x ^ y ^ z;
  }
  if (threadIdx.x == 0) {
    loads[blockIdx.x] = count + (acc == ~0ull ? 1 : 0);
    ns[blockIdx.x] = globaltimer_ns() - t0;
  }
}

// Controller-only feeder for the GPU target: no strategy, one warp per queue.
// Each round the warp's lanes build `depth` read SQEs (CIDs 0..depth-1, one
// slot after another, random blocks), store them, fence, ring the SQ tail
// doorbell once, then wait for all their CQEs (each lane polls its own
// slots), check status and the first word of each buffer, and release the
// CQ slots with one CQ head doorbell. The target thus sees whole batches of
// `depth` commands and its own service times, batch line and gaps are
// measured with the submitter's cost kept out of them.
//
// With FeedArgs::queue_pairs set (--feed-wait cq_scan) the warp waits as
// bam_ticket's warps do instead: each command's CID is its SQ slot, and the
// round's lanes wait through algo::wait compiled for bam_ticket (completion
// policy CqScan: own_cqe_waiting per waiting lane as the predicate, then
// scan_cq, whose lock winner moves the CQ head and rings its doorbell), so
// the wait beyond the target's batch is bam_ticket's with no submission
// strategy in it. Several feeder warps may share a block (blockDim.x / 32
// of them, queue blockIdx.x * that + warp), as a strategy's warps do.
struct FeedRing {
  unsigned char* sq;
  const unsigned char* cq;
  std::uint32_t* sq_doorbell;
  std::uint32_t* cq_doorbell;
  unsigned long long quota;
};

struct FeedArgs {
  const FeedRing* rings;
  std::uint32_t queues, entries, depth, lbas_per_io;
  std::uint64_t blocks;
  unsigned char* buffers;
  std::uint64_t buffer_count;
  std::uint32_t buffer_stride;
  std::uint32_t scatter;     // 1: a round's buffers two apart
  std::uint32_t check_data;  // 0 where buffers of outstanding commands may coincide
  std::uint64_t seed;
  unsigned long long deadline_ns;  // %globaltimer: give up after this
  // The feeder's think time: after releasing a round's CQ slots the warp
  // waits this long before building the next round, so that the serving
  // warp idles at least this long between its batches (0: no wait).
  unsigned long long gap_ns;
  // 1: each round's think time is drawn uniformly from [0, 2 gap_ns] (its
  // mean gap_ns), so that the feeders' rounds drift apart and the serving
  // warps' batches stop lining up; 0: every round waits gap_ns.
  std::uint32_t gap_random;
  // A feeder lane's sleep between two reads of a CQ entry it waits on (0:
  // it spins), so that the feeders' polling load on the memory system can
  // be taken away while the serving warps stay as busy.
  std::uint32_t poll_sleep_ns;
  // errors, mismatches, timed-out warps, rounds, the rounds' summed ns
  // (doorbell written to the last CQE seen), the rounds' summed ns from
  // the doorbell to the first CQE seen, and the feeder warps' summed SM
  // cycles (clock64) and summed %globaltimer ns over their whole run: their
  // ratio is the SM clock the case ran at
  unsigned long long* counters;
  std::uint32_t* feeder_sm;  // the SM each feeder warp ran on, by queue
  // The queues as the algorithm library sees them (bam_ticket's state in GPU
  // memory, sim/core/algo/queue_state.h); null: each lane polls its own CQ
  // slot (--feed-wait own_slot).
  const algo::QueuePair* queue_pairs;
  // With the cq_scan wait and --trace 3: the waiting warps' time by platform
  // call (role 0), as the strategy cases' op profiles; null: none.
  const platform::CudaOpProfile* profile;
};

using BamTicketWarp = StrategyWarp<CompiledStrategy::BamTicket>;

// Whether the buffer of the command in SQ position `position` (mod n) of
// feeder queue q holds the data pattern of `slba` in its first word.
__device__ bool buffer_holds_pattern(const FeedArgs& a, std::uint32_t q, std::uint32_t n,
                                     std::uint32_t position, std::uint64_t slba) {
  const std::uint64_t slot = std::uint64_t{q} * n + position % n;
  const std::uint64_t buffer = (a.scatter ? 2 * slot : slot) % a.buffer_count;
  const std::uint64_t first =
      __ldcg(reinterpret_cast<const unsigned long long*>(a.buffers + buffer * a.buffer_stride));
  return first == (slba ^ kPatternKey);
}

// bam_ticket's wait for one feeder round: lanes below `count` each hold the
// command of SQ ticket first_ticket + lane (CID = its SQ slot) on queue `q`;
// returns the lane's NVMe status once every one of them has been consumed.
__device__ std::uint16_t wait_as_bam_ticket(const FeedArgs& a, BamTicketWarp& p, std::uint32_t q,
                                            std::uint32_t first_ticket, std::uint32_t count) {
  constexpr CompiledStrategy kBam = CompiledStrategy::BamTicket;
  algo::WarpContext c;
  c.queues = a.queue_pairs;
  c.queue_count = a.queues;
  c.strategy = compiled_strategy<kBam>();
  c.cq_doorbell_batch = 1;  // as the strategy cases (the simulator's default)
  c.max_batch = 32;
  c.iodepth = 1;
  algo::Lanes<algo::Pending> round;
  c.rounds = &round;
  c.round_count = 1;
  const unsigned lane = threadIdx.x & 31u;
  round[lane] = algo::Pending{};
  if (lane < count) {
    round[lane].queue = q;
    round[lane].ticket = first_ticket + lane;
    round[lane].cid = (first_ticket + lane) % a.entries;
    round[lane].state = algo::kOutstanding;
  }
  __syncwarp();
  algo::wait(p, c, round, algo::lanes_below(count));
  const std::uint16_t status = round[lane].status;
  __syncwarp();
  return status;
}

__global__ void feed_gpu_target(FeedArgs a) {
  const unsigned lane = threadIdx.x & 31u;
  const std::uint32_t q = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  if (q >= a.queues) return;
  const bool cq_scan = a.queue_pairs != nullptr;
  if (cq_scan) algo::init_warp_scratch();
  BamTicketWarp p(0, nullptr, a.profile, 0);
  const long long cycles_at_start = clock64();
  const unsigned long long ns_at_start = globaltimer_ns();
  if (lane == 0) a.feeder_sm[q] = sm_id();
  const FeedRing r = a.rings[q];
  const std::uint32_t n = a.entries;
  std::uint32_t sq_tail = 0, cq_head = 0, phase = 1;
  std::uint64_t rng = (a.seed + 1) * 0x9E3779B97F4A7C15ull ^ (std::uint64_t{q} << 20) ^ lane;
  unsigned long long submitted = 0, errors = 0, mismatches = 0, rounds = 0;
  unsigned long long round_ns = 0, first_ns = 0;
  bool timed_out = false;
  while (submitted < r.quota && !timed_out) {
    const std::uint32_t count =
        static_cast<std::uint32_t>(r.quota - submitted < a.depth ? r.quota - submitted : a.depth);
    const std::uint64_t round_rng = rng;
    for (std::uint32_t j = lane; j < count; j += 32) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      const std::uint32_t slot_in_ring = (sq_tail + j) % n;
      const std::uint64_t slot = std::uint64_t{q} * n + slot_in_ring;
      const std::uint64_t buffer = (a.scatter ? 2 * slot : slot) % a.buffer_count;
      // bam_ticket's CID is the SQ slot; the own-slot wait checks CID j.
      const std::uint32_t cid = cq_scan ? slot_in_ring : j;
      const nvme::SubmissionEntry e =
          nvme::make_read(static_cast<std::uint16_t>(cid), 1, (rng % a.blocks) * a.lbas_per_io,
                          static_cast<std::uint16_t>(a.lbas_per_io - 1),
                          reinterpret_cast<std::uint64_t>(a.buffers) + buffer * a.buffer_stride, 0);
      uint4 words[4];
      memcpy(words, &e, sizeof e);
      uint4* at = reinterpret_cast<uint4*>(r.sq + std::uint64_t{slot_in_ring} * 64u);
      for (int k = 0; k < 4; ++k) __stcg(at + k, words[k]);
    }
    // The SQEs are visible before the doorbell that announces them.
    __threadfence();
    __syncwarp();
    sq_tail = (sq_tail + count) % n;
    const unsigned long long rung_at = globaltimer_ns();
    if (lane == 0) *reinterpret_cast<volatile std::uint32_t*>(r.sq_doorbell) = sq_tail;
    if (cq_scan) {
      // The round's SQ tickets start at the commands submitted before it
      // (the ring began at slot 0).
      const std::uint16_t status =
          wait_as_bam_ticket(a, p, q, static_cast<std::uint32_t>(submitted), count);
      round_ns += globaltimer_ns() - rung_at;
      if (lane < count) {
        std::uint64_t check_rng = round_rng;
        check_rng ^= check_rng << 13;
        check_rng ^= check_rng >> 7;
        check_rng ^= check_rng << 17;
        const std::uint64_t slba = (check_rng % a.blocks) * a.lbas_per_io;
        if (status != 0) ++errors;
        if (a.check_data != 0 && !buffer_holds_pattern(a, q, n, sq_tail + n - count + lane, slba))
          ++mismatches;
      }
      timed_out = __any_sync(kFullMaskFeed, globaltimer_ns() > a.deadline_ns);
    } else {
      unsigned long long first_seen = ~0ull;
      // The target posts a batch's CQEs in SQ order, so CQ position j of the
      // round completes CID j, whose block the lane draws again from the
      // round's generator state.
      std::uint64_t check_rng = round_rng;
      for (std::uint32_t j = lane; j < count; j += 32) {
        check_rng ^= check_rng << 13;
        check_rng ^= check_rng >> 7;
        check_rng ^= check_rng << 17;
        const std::uint64_t slba = (check_rng % a.blocks) * a.lbas_per_io;
        const std::uint32_t position = cq_head + j;
        const std::uint32_t want = (position >= n) ? phase ^ 1u : phase;
        const unsigned char* at = r.cq + std::uint64_t{position % n} * 16u;
        std::uint32_t dw3 = 0;
        for (;;) {
          dw3 = *reinterpret_cast<const volatile std::uint32_t*>(at + 12);
          if (((dw3 >> 16) & 1u) == want) break;
          if (globaltimer_ns() > a.deadline_ns) {
            timed_out = true;
            break;
          }
          if (a.poll_sleep_ns != 0) __nanosleep(a.poll_sleep_ns);
        }
        if (timed_out) break;
        if (j == 0) first_seen = globaltimer_ns();
        __threadfence();
        if (((dw3 >> 17) & 0x7FFFu) != 0 || (dw3 & 0xFFFFu) != j) ++errors;
        if (a.check_data != 0 && !buffer_holds_pattern(a, q, n, sq_tail + n - count + j, slba))
          ++mismatches;
      }
      timed_out = __any_sync(kFullMaskFeed, timed_out);
      if (timed_out) break;
      __syncwarp();
      const unsigned long long all_seen = globaltimer_ns();
      first_seen = __shfl_sync(kFullMaskFeed, first_seen, 0);
      round_ns += all_seen - rung_at;
      first_ns += first_seen - rung_at;
      const std::uint32_t new_head = (cq_head + count) % n;
      if (cq_head + count >= n) phase ^= 1u;
      cq_head = new_head;
      __syncwarp();
      if (lane == 0) *reinterpret_cast<volatile std::uint32_t*>(r.cq_doorbell) = cq_head;
    }
    submitted += count;
    ++rounds;
    if (a.gap_ns != 0) {
      // Sleeping, not spinning: the feeder's SM stays as quiet as it can.
      unsigned long long wait = a.gap_ns;
      if (a.gap_random != 0) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // Lane 0's draw for the whole warp.
        wait = __shfl_sync(kFullMaskFeed, rng, 0) % (2 * a.gap_ns + 1);
      }
      const unsigned long long until = globaltimer_ns() + wait;
      while (globaltimer_ns() < until) __nanosleep(256);
    }
  }
  p.flush_op_profile();
  for (int off = 16; off > 0; off /= 2) {
    errors += __shfl_down_sync(kFullMaskFeed, errors, off);
    mismatches += __shfl_down_sync(kFullMaskFeed, mismatches, off);
  }
  if (lane == 0) {
    atomicAdd(a.counters + 0, errors);
    atomicAdd(a.counters + 1, mismatches);
    if (timed_out) atomicAdd(a.counters + 2, 1ull);
    atomicAdd(a.counters + 3, rounds);
    atomicAdd(a.counters + 4, round_ns);
    atomicAdd(a.counters + 5, first_ns);
    atomicAdd(a.counters + 6, static_cast<unsigned long long>(clock64() - cycles_at_start));
    atomicAdd(a.counters + 7, globaltimer_ns() - ns_at_start);
  }
}

__global__ void read_globaltimer(unsigned long long* out) { *out = globaltimer_ns(); }

// ---- host side

struct Options {
  std::string out;
  std::vector<std::string> strategies = {"all_threads",    "bam_ticket",
                                         "warp_batch",     "warp_batch+polling_warps",
                                         "per_warp_queue", "io_agents"};
  std::vector<std::uint32_t> warps = {1, 8, 32, 132, 528};
  std::uint64_t ios = 16384;
  std::uint32_t queues = 32;
  std::uint32_t entries = 256;
  std::uint32_t target_threads = 4;
  // The NVMe target: "host" (soft_controller.h) or "gpu" (gpu_target.h), and
  // the GPU one's SMs and serving warps.
  std::string target = "host";
  // The GPU code's kernels: "per-role" (a compute kernel compiled for the
  // case's strategy, the agent or polling warps in a kernel of their own,
  // launched side by side) or "combined" (every role and strategy in one
  // kernel, the strategy chosen at run time).
  std::string kernel = "per-role";
  std::uint32_t gpu_target_sms = 8;
  std::uint32_t gpu_target_warps = 32;
  std::uint32_t dstrd = 0;            // CAP.DSTRD: doorbells 4 << dstrd bytes apart
  std::uint32_t poll_backoff_ns = 0;  // __nanosleep between a waiting warp's polls
  std::uint32_t threads_per_block = 256;
  std::uint32_t agent_warps = 8;   // the simulator's agent_warps default
  std::uint32_t poller_warps = 4;  // the simulator's poller_warps default
  std::uint32_t bs = 4096;
  std::string file;
  std::uint64_t file_mib = 256;
  int device = 0;
  double timeout_s = 120;
  std::uint64_t seed = 1;
  // Stage timing: 0 none, 1 a record per I/O (distributions; costs about as
  // much as the stages), 2 per-stage means only (a clock read per record),
  // 3 no stages but an op profile (each warp's time by platform call).
  std::uint32_t trace = 1;
  // Controller-only mode: no GPU strategy; host feeder threads keep this many
  // commands outstanding per queue (one case per depth) and the target's own
  // statistics are reported. Empty: the strategy cases.
  std::vector<std::uint32_t> controller_depths;
  std::uint32_t feeders = 4;  // host threads that feed the queues in that mode
  // Controller-only mode with the GPU target: each feeder warp's think time
  // after each round (ns), so that serving warps idle between batches.
  std::uint64_t feed_gap_ns = 0;
  bool feed_gap_random = false;  // each think time drawn from [0, 2 feed_gap_ns]
  // ... and each feeder lane's sleep between two polls of a CQ entry (ns).
  std::uint32_t feed_poll_sleep_ns = 0;
  // ... and the feeder warps to a block (one case per value), and how each
  // waits for its round: "own_slot" (each lane polls its CQ slot) or
  // "cq_scan" (bam_ticket's completion code); one case per wait. Either
  // option given, the feeder blocks take the strategy kernels' per-warp
  // scratch of shared memory, so that they are placed as those are.
  std::vector<std::uint32_t> feed_warps_per_block = {1};
  std::vector<std::string> feed_waits = {"own_slot"};
  bool feed_scratch = false;
  // Controller-only mode: this many GPU warps poll the queues' CQ rings
  // meanwhile, as CQ-scanning waiters do (the target under GPU reads of
  // host memory, with no strategy); 0: the GPU runs nothing.
  std::uint32_t host_pollers = 0;
  // With host_pollers: true, each polling warp waits on its ring's next CQ
  // entry (as a strategy's waiter does); false, it sweeps the ring.
  bool host_pollers_next = false;
  // Controller-only mode: a batch's buffers one apart instead of adjacent,
  // so that the target copies each command's data on its own.
  bool scatter_buffers = false;
};

[[noreturn]] void bad(const std::string& option, const std::string& value, const std::string& why) {
  std::fprintf(stderr, "gpunvme-hw: error: %s = '%s': %s\n", option.c_str(), value.c_str(),
               why.c_str());
  std::exit(kBadInput);
}

std::uint64_t parse_u64(const std::string& option, const std::string& v, std::uint64_t lo,
                        std::uint64_t hi) {
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi) {
    bad(option, v,
        "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return x;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void usage() {
  std::printf(
      "gpunvme-hw: run the GPU I/O strategies of sim/core/algo on this GPU against a software "
      "NVMe\n"
      "controller (host threads polling doorbells in pinned host memory, data from a file).\n"
      "  --out FILE               results JSON (required)\n"
      "  --strategies LIST        all_threads,bam_ticket,warp_batch,warp_batch+polling_warps,\n"
      "                           per_warp_queue,io_agents (default: all); warp_batch takes\n"
      "                           the proposed NVMe extensions the target offers as options:\n"
      "                           +cqe_at_slot or +cid_bitmap, +thread_wide, +shadow_polled,\n"
      "                           +warp_doorbell (e.g. warp_batch+cqe_at_slot+shadow_polled)\n"
      "  --warps LIST             compute warps per case (default 1,8,32,132,528)\n"
      "  --ios N                  I/Os per case at least (default 16384; >= 2 per thread)\n"
      "  --queues N               I/O queue pairs (default 32; per_warp_queue: one per warp)\n"
      "  --entries N              entries per SQ and CQ (default 256)\n"
      "  --target-threads N       host target's threads (default 4)\n"
      "  --target host|gpu        the NVMe target: host threads polling pinned host memory\n"
      "                           (default), or a persistent kernel on SMs of its own with\n"
      "                           rings, doorbells and the namespace image in GPU memory\n"
      "  --kernel per-role|combined  the strategy cases' GPU code: a compute kernel compiled\n"
      "                           for the case's strategy beside kernels of its agent or\n"
      "                           polling warps, on streams of their own (default), or one\n"
      "                           kernel of every role and strategy (the strategy chosen at\n"
      "                           run time; the harness before per-role kernels)\n"
      "  --gpu-target-sms N       SMs the GPU target holds (default 8)\n"
      "  --gpu-target-warps N     its serving warps, spread over those SMs (default 32)\n"
      "  --dstrd N                doorbell stride 4 << N bytes (CAP.DSTRD, 0-9; default 0)\n"
      "  --poll-backoff-ns N      __nanosleep between a waiting warp's polls (default 0)\n"
      "  --threads-per-block N    CUDA block size (default 256)\n"
      "  --agent-warps N          io_agents service warps (default 8)\n"
      "  --poller-warps N         polling warps (default 4)\n"
      "  --bs N                   bytes per read (default 4096)\n"
      "  --file PATH              namespace file (default: a pattern file of --file-mib MiB,\n"
      "                           created in $TMPDIR)\n"
      "  --trace 0|1|2|3          per-stage times: 0 none, 1 a record per I/O (distributions;\n"
      "                           the records cost about as much as the stages), 2 per-stage\n"
      "                           means only (a clock read per record; default 1), 3 no stages\n"
      "                           but an op profile: warp time by platform call per I/O (with\n"
      "                           --controller-only --feed-wait cq_scan: the feeder warps')\n"
      "  --controller-only LIST   no GPU strategy: host feeder threads keep DEPTH commands\n"
      "                           outstanding per queue (one case per depth in LIST) against\n"
      "                           the same target; its service time, batch line and\n"
      "                           throughput are reported (schema gpunvme.hw_controller/1);\n"
      "                           with --target gpu one feeder warp per queue submits DEPTH\n"
      "                           commands with one doorbell and waits for all of them\n"
      "  --feeders N              feeder threads in that mode (default 4)\n"
      "  --feed-gap-ns N          with --target gpu in that mode, each feeder warp waits N ns\n"
      "                           after each round, so serving warps idle between batches\n"
      "                           (default 0)\n"
      "  --feed-gap-random 0|1    1: each think time drawn uniformly from [0, 2N] instead, so\n"
      "                           the feeders' rounds drift apart (default 0)\n"
      "  --feed-poll-sleep-ns N   with --target gpu in that mode, each feeder lane sleeps N ns\n"
      "                           between two reads of a CQ entry it waits on (default 0: spins)\n"
      "  --feed-warps-per-block LIST  with --target gpu in that mode, feeder warps to a block\n"
      "                           (1..32; one case per value; default 1)\n"
      "  --feed-wait LIST         with --target gpu in that mode, how a feeder warp waits for\n"
      "                           its round: own_slot (each lane polls its CQ slot; default) or\n"
      "                           cq_scan (bam_ticket's completion code: CID = SQ slot, CqScan's\n"
      "                           predicate and scan_cq; depth at most 32); one case per value.\n"
      "                           Either option makes the feeder blocks take the strategy\n"
      "                           kernels' per-warp shared memory, so they are placed as those\n"
      "                           kernels' blocks are\n"
      "  --host-pollers W         in that mode, W GPU warps poll the CQ rings meanwhile, as\n"
      "                           CQ-scanning waiters do (default 0: the GPU runs nothing)\n"
      "  --host-poll next|sweep   what those warps read: each ring's next CQ entry until it\n"
      "                           is written, as waiters do, or the whole ring in turn\n"
      "                           (default sweep)\n"
      "  --scatter-buffers 0|1    in that mode, 1: a batch's buffers apart, one copy per\n"
      "                           command (default 0: adjacent, one copy per batch)\n"
      "  --device N, --seed N, --timeout-s S\n"
      "Exit codes: 0 ok, 1 a case failed, 2 bad arguments, 77 no CUDA device.\n");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    }
    if (i + 1 >= argc) bad(arg, "", "missing value (see --help)");
    const std::string v = argv[++i];
    if (arg == "--out") {
      o.out = v;
    } else if (arg == "--strategies") {
      o.strategies = split(v);
      StrategyCase sc;
      for (const std::string& s : o.strategies) {
        if (!strategy_case(s, sc)) {
          bad(arg, s,
              "unknown strategy, option or combination (see --help; cid_bitmap does not take "
              "thread_wide, shadow_polled does not take warp_doorbell)");
        }
      }
    } else if (arg == "--warps") {
      o.warps.clear();
      for (const std::string& s : split(v)) {
        o.warps.push_back(static_cast<std::uint32_t>(parse_u64(arg, s, 1, 65536)));
      }
    } else if (arg == "--ios") {
      o.ios = parse_u64(arg, v, 1, 1ull << 32);
    } else if (arg == "--queues") {
      o.queues = static_cast<std::uint32_t>(parse_u64(arg, v, 1, 4096));
    } else if (arg == "--entries") {
      o.entries = static_cast<std::uint32_t>(parse_u64(arg, v, 34, 65536));
    } else if (arg == "--target") {
      if (v != "host" && v != "gpu") bad(arg, v, "expected host or gpu");
      o.target = v;
    } else if (arg == "--kernel") {
      if (v != "per-role" && v != "combined") bad(arg, v, "expected per-role or combined");
      o.kernel = v;
    } else if (arg == "--gpu-target-sms") {
      o.gpu_target_sms = static_cast<std::uint32_t>(parse_u64(arg, v, 1, 64));
    } else if (arg == "--gpu-target-warps") {
      o.gpu_target_warps = static_cast<std::uint32_t>(parse_u64(arg, v, 1, 2048));
    } else if (arg == "--target-threads") {
      o.target_threads = static_cast<std::uint32_t>(parse_u64(arg, v, 1, 256));
    } else if (arg == "--dstrd") {
      o.dstrd = static_cast<std::uint32_t>(parse_u64(arg, v, 0, 9));
    } else if (arg == "--poll-backoff-ns") {
      o.poll_backoff_ns = static_cast<std::uint32_t>(parse_u64(arg, v, 0, 1000000));
    } else if (arg == "--threads-per-block") {
      o.threads_per_block = static_cast<std::uint32_t>(parse_u64(arg, v, 32, 1024));
      if (o.threads_per_block % 32 != 0) bad(arg, v, "must be a multiple of 32");
    } else if (arg == "--agent-warps") {
      o.agent_warps = static_cast<std::uint32_t>(parse_u64(arg, v, 1, 1024));
    } else if (arg == "--poller-warps") {
      o.poller_warps = static_cast<std::uint32_t>(parse_u64(arg, v, 1, 1024));
    } else if (arg == "--bs") {
      o.bs = static_cast<std::uint32_t>(parse_u64(arg, v, 512, 1 << 17));
      if (o.bs % 512 != 0) bad(arg, v, "must be a multiple of the 512 B LBA");
    } else if (arg == "--file") {
      o.file = v;
    } else if (arg == "--file-mib") {
      o.file_mib = parse_u64(arg, v, 1, 1 << 20);
    } else if (arg == "--device") {
      o.device = static_cast<int>(parse_u64(arg, v, 0, 64));
    } else if (arg == "--seed") {
      o.seed = parse_u64(arg, v, 0, ~0ull);
    } else if (arg == "--trace") {
      o.trace = static_cast<std::uint32_t>(parse_u64(arg, v, 0, 3));
    } else if (arg == "--controller-only") {
      o.controller_depths.clear();
      for (const std::string& d : split(v)) {
        o.controller_depths.push_back(static_cast<std::uint32_t>(parse_u64(arg, d, 1, 4096)));
      }
      if (o.controller_depths.empty()) bad(arg, v, "expected a list of depths");
    } else if (arg == "--scatter-buffers") {
      o.scatter_buffers = parse_u64(arg, v, 0, 1) != 0;
    } else if (arg == "--host-pollers") {
      o.host_pollers = static_cast<std::uint32_t>(parse_u64(arg, v, 0, 65536));
    } else if (arg == "--host-poll") {
      if (v != "next" && v != "sweep") bad(arg, v, "expected next or sweep");
      o.host_pollers_next = v == "next";
    } else if (arg == "--feed-gap-ns") {
      o.feed_gap_ns = parse_u64(arg, v, 0, 1000000000);
    } else if (arg == "--feed-poll-sleep-ns") {
      o.feed_poll_sleep_ns = static_cast<std::uint32_t>(parse_u64(arg, v, 0, 1000000));
    } else if (arg == "--feed-gap-random") {
      o.feed_gap_random = parse_u64(arg, v, 0, 1) != 0;
    } else if (arg == "--feed-warps-per-block") {
      o.feed_warps_per_block.clear();
      for (const std::string& d : split(v)) {
        o.feed_warps_per_block.push_back(static_cast<std::uint32_t>(parse_u64(arg, d, 1, 32)));
      }
      if (o.feed_warps_per_block.empty()) bad(arg, v, "expected a list of warps per block");
      o.feed_scratch = true;
    } else if (arg == "--feed-wait") {
      o.feed_waits.clear();
      for (const std::string& d : split(v)) {
        if (d != "own_slot" && d != "cq_scan") bad(arg, d, "expected own_slot or cq_scan");
        o.feed_waits.push_back(d);
      }
      if (o.feed_waits.empty()) bad(arg, v, "expected a list of own_slot, cq_scan");
      o.feed_scratch = true;
    } else if (arg == "--feeders") {
      o.feeders = static_cast<std::uint32_t>(parse_u64(arg, v, 1, 256));
    } else if (arg == "--timeout-s") {
      o.timeout_s = static_cast<double>(parse_u64(arg, v, 1, 3600));
    } else {
      bad(arg, v, "unknown option (see --help)");
    }
  }
  if (o.out.empty()) bad("--out", "", "required: where to write the results JSON");
  if (o.target == "gpu" && !o.controller_depths.empty() && o.host_pollers != 0) {
    bad("--host-pollers", std::to_string(o.host_pollers),
        "needs --target host: the GPU target's feeder warps poll its CQs themselves");
  }
  if (o.feed_gap_ns != 0 && (o.target != "gpu" || o.controller_depths.empty())) {
    bad("--feed-gap-ns", std::to_string(o.feed_gap_ns),
        "needs --target gpu and --controller-only: only the GPU target's feeder warps think");
  }
  if (o.feed_gap_random && o.feed_gap_ns == 0) {
    bad("--feed-gap-random", "1", "needs --feed-gap-ns above 0: the mean think time");
  }
  if (o.feed_poll_sleep_ns != 0 && (o.target != "gpu" || o.controller_depths.empty())) {
    bad("--feed-poll-sleep-ns", std::to_string(o.feed_poll_sleep_ns),
        "needs --target gpu and --controller-only: only the GPU target's feeder warps poll");
  }
  if (o.feed_scratch && (o.target != "gpu" || o.controller_depths.empty())) {
    bad("--feed-warps-per-block/--feed-wait", "",
        "needs --target gpu and --controller-only: only the GPU target's feeder warps wait");
  }
  for (std::uint32_t d : o.controller_depths) {
    bool cq_scan = false;
    for (const std::string& w : o.feed_waits) cq_scan = cq_scan || w == "cq_scan";
    if (cq_scan && d > 32) {
      bad("--controller-only", std::to_string(d),
          "with --feed-wait cq_scan a depth is at most 32: one command per lane, as bam_ticket's "
          "lanes wait");
    }
    if (d >= o.entries) {
      bad("--controller-only", std::to_string(d),
          "a depth must be below --entries (" + std::to_string(o.entries) + ")");
    }
  }
  return o;
}

// A namespace file whose every 512 B LBA starts with its pattern word.
std::string make_pattern_file(std::uint64_t mib) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/gpunvme-hw-namespace-" +
                           std::to_string(::getpid()) + ".bin";
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  std::vector<unsigned char> chunk(1 << 20);
  for (std::uint64_t c = 0; c < mib; ++c) {
    for (std::uint64_t off = 0; off < chunk.size(); off += 8) {
      const std::uint64_t lba = (c * chunk.size() + off) / 512;
      const std::uint64_t v =
          off % 512 == 0 ? lba ^ kPatternKey : lba * 0x9E3779B97F4A7C15ull + off;
      std::memcpy(chunk.data() + off, &v, 8);
    }
    if (::pwrite(fd, chunk.data(), chunk.size(), static_cast<off_t>(c * chunk.size())) !=
        static_cast<ssize_t>(chunk.size())) {
      ::close(fd);
      throw std::runtime_error("cannot write " + path);
    }
  }
  ::close(fd);
  return path;
}

// Bump allocator over one cudaMalloc'ed arena (queue state, rings, words).
class DeviceArena {
 public:
  explicit DeviceArena(std::uint64_t bytes) : bytes_(bytes) {
    check(cudaMalloc(&base_, bytes), "cudaMalloc (arena)");
  }
  ~DeviceArena() { cudaFree(base_); }
  void reset() {
    next_ = 0;
    check(cudaMemset(base_, 0, bytes_), "cudaMemset (arena)");
  }
  // `align` is the alignment of the address, not of the offset: cudaMalloc
  // guarantees 256 B, and the shadow doorbell buffers need whole pages.
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t align) {
    const std::uint64_t base = reinterpret_cast<std::uint64_t>(base_);
    next_ = (base + next_ + align - 1) / align * align - base;
    if (next_ + bytes > bytes_) throw std::runtime_error("device arena exhausted");
    const std::uint64_t at = base + next_;
    next_ += bytes;
    return at;
  }
  template <class T>
  T* put(const std::vector<T>& v) {
    const std::uint64_t at = allocate(std::max<std::size_t>(1, v.size()) * sizeof(T), 128);
    if (!v.empty())
      check(cudaMemcpy(reinterpret_cast<void*>(at), v.data(), v.size() * sizeof(T),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy (arena)");
    return reinterpret_cast<T*>(at);
  }

 private:
  void* base_ = nullptr;
  std::uint64_t bytes_;
  std::uint64_t next_ = 0;
};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += ' ';
      continue;
    }
    out += ch;
  }
  return out;
}

std::string json_distribution(const Distribution& d) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"count\": %llu, \"mean\": %.1f, \"min\": %.1f, \"p50\": %.1f, \"p90\": %.1f, "
                "\"p99\": %.1f, \"max\": %.1f}",
                static_cast<unsigned long long>(d.count), d.mean, d.min, d.p50, d.p90, d.p99,
                d.max);
  return buf;
}

// Per-stage distributions from the GPU's records: each interval runs from the
// previous step to the named one, as the simulator's StageRecorder computes
// them. The hardware has no CQE-arrival record (the controller posts it on
// the host clock), so `completion` spans doorbell to CQE seen: the
// simulator's completion_wait + completion_polling.
struct StageResult {
  std::map<std::string, Distribution> stages;
  std::uint64_t records = 0, dropped = 0;
};

using StageInterval = std::pair<std::string, std::pair<algo::Stage, algo::Stage>>;

const std::vector<StageInterval>& stage_intervals() {
  using algo::Stage;
  static const std::vector<StageInterval> intervals = {
      {"cid_allocation", {Stage::Request, Stage::CidAllocated}},
      {"sqe_construction", {Stage::CidAllocated, Stage::SqeBuilt}},
      {"sq_tail_sync", {Stage::SqeBuilt, Stage::SqTailSynced}},
      {"doorbell", {Stage::SqTailSynced, Stage::DoorbellRung}},
      {"completion", {Stage::DoorbellRung, Stage::CompletionSeen}},
      {"cq_head_sync", {Stage::CompletionSeen, Stage::CqHeadSynced}},
      {"delivery", {Stage::CqHeadSynced, Stage::Delivered}},
      {"end_to_end", {Stage::Request, Stage::Delivered}}};
  return intervals;
}

StageResult stage_result(const std::vector<unsigned long long>& log, std::uint64_t records) {
  using algo::Stage;
  constexpr int n = platform::CudaStageTrace::kStages;
  const std::vector<StageInterval>& intervals = stage_intervals();
  std::map<std::string, std::vector<double>> samples;
  StageResult r;
  for (std::uint64_t i = 0; i < records; ++i) {
    const unsigned long long* t = &log[i * n];
    bool complete = true;
    for (int s = 0; s < n; ++s) {
      if (s != static_cast<int>(Stage::CqePosted) && t[s] == 0) complete = false;
    }
    // A CID reused before its previous command's last record (CQ scan
    // releases the slot first) leaves a record mixing two commands; the
    // simulator's recorder has the same bookkeeping and counts such records
    // with clamped intervals. Here they are counted as dropped.
    if (!complete || t[static_cast<int>(Stage::Delivered)] < t[static_cast<int>(Stage::Request)]) {
      ++r.dropped;
      continue;
    }
    ++r.records;
    for (const auto& [name, span] : intervals) {
      const unsigned long long from = t[static_cast<int>(span.first)];
      const unsigned long long to = t[static_cast<int>(span.second)];
      samples[name].push_back(to >= from ? static_cast<double>(to - from) : 0.0);
    }
  }
  for (auto& [name, v] : samples) r.stages[name] = summarize(std::move(v));
  return r;
}

// The op profile's totals as JSON, per role (compute warps, service warps):
// warp time per I/O in each kind of platform call and in the warps' own
// code between calls ("other"), calls per I/O, and the clock's ns per cycle.
std::string op_profile_json(const std::vector<unsigned long long>& totals, std::uint64_t ios) {
  constexpr int k = platform::CudaOpProfile::kKinds;
  constexpr int per_role = platform::CudaOpProfile::kPerRole;
  std::ostringstream js;
  js << "{";
  const char* roles[] = {"compute", "service"};
  bool first_role = true;
  for (int role = 0; role < 2; ++role) {
    const unsigned long long* t = totals.data() + role * per_role;
    const unsigned long long warps = t[2 * k + 2];
    if (warps == 0) continue;
    const double ns_per_cycle =
        t[2 * k] == 0 ? 0.0 : static_cast<double>(t[2 * k + 1]) / static_cast<double>(t[2 * k]);
    const double per_io = 1.0 / static_cast<double>(ios);
    unsigned long long in_calls = 0;
    js << (first_role ? "" : ", ") << "\"" << roles[role] << "\": {\"warps\": " << warps
       << ", \"ns_per_cycle\": " << ns_per_cycle
       << ", \"warp_ns_per_io\": " << static_cast<double>(t[2 * k + 1]) * per_io
       << ", \"ns_per_io\": {";
    for (int i = 0; i < k; ++i) {
      in_calls += t[i];
      js << (i ? ", " : "") << "\"" << platform::kOpKindNames[i]
         << "\": " << static_cast<double>(t[i]) * ns_per_cycle * per_io;
    }
    const double other = static_cast<double>(t[2 * k]) - static_cast<double>(in_calls);
    js << ", \"other\": " << other * ns_per_cycle * per_io << "}, \"calls_per_io\": {";
    for (int i = 0; i < k; ++i) {
      js << (i ? ", " : "") << "\"" << platform::kOpKindNames[i]
         << "\": " << static_cast<double>(t[k + i]) * per_io;
    }
    js << "}}";
    first_role = false;
  }
  js << "}";
  return js.str();
}

// Per-stage means from means-mode totals (sum and count of each stage's
// timestamps): an interval's mean is the difference of its two stages' mean
// timestamps, which holds when every command records every stage once (the
// counts, reported beside the means, show it). Intervals as stage_result's.
struct StageMeans {
  std::map<std::string, double> intervals;           // ns
  std::map<std::string, unsigned long long> counts;  // records per stage
};

StageMeans stage_means(const std::vector<unsigned long long>& totals) {
  using algo::Stage;
  constexpr int n = platform::CudaStageTrace::kStages;
  StageMeans m;
  auto mean = [&](Stage s) {
    const unsigned long long c = totals[n + static_cast<int>(s)];
    return c == 0 ? 0.0 : static_cast<double>(totals[static_cast<int>(s)]) / static_cast<double>(c);
  };
  for (const auto& [name, span] : stage_intervals()) {
    const unsigned long long from = totals[n + static_cast<int>(span.first)];
    const unsigned long long to = totals[n + static_cast<int>(span.second)];
    if (from == 0 || to == 0) continue;
    m.intervals[name] = mean(span.second) - mean(span.first);
  }
  for (int s = 0; s < n; ++s) {
    const char* name = s == 0 ? "request" : algo::stage_interval_name(static_cast<Stage>(s));
    if (totals[n + s] != 0) m.counts[name] = totals[n + s];
  }
  return m;
}

std::string read_command(const char* cmd) {
  std::string out;
  FILE* f = ::popen(cmd, "r");
  if (f == nullptr) return out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
  ::pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The target's statistics of one case (TargetStats) as JSON.
std::string target_json(const TargetStats& ts) {
  std::ostringstream js;
  js << "{\"fetched\": " << ts.fetched << ", \"completed\": " << ts.completed
     << ", \"errors\": " << ts.errors << ", \"sq_doorbell_updates\": " << ts.sq_doorbell_updates
     << ", \"service_ns\": " << json_distribution(ts.service_ns)
     << ", \"data_ns\": " << json_distribution(ts.data_ns) << ", \"batches\": " << ts.batches
     << ", \"batch_commands\": " << json_distribution(ts.batch_commands)
     << ", \"batch_copies\": " << json_distribution(ts.batch_copies)
     << ", \"batch_fixed_ns\": " << ts.batch_fixed_ns
     << ", \"batch_per_command_ns\": " << ts.batch_per_command_ns
     << ", \"batch_gap_ns\": " << json_distribution(ts.batch_gap_ns) << ", \"threads\": [";
  for (std::size_t i = 0; i < ts.threads.size(); ++i) {
    const TargetStats::Thread& t = ts.threads[i];
    js << (i ? ", " : "") << "{\"completed\": " << t.completed << ", \"batches\": " << t.batches
       << ", \"busy_ns\": " << t.busy_ns << ", \"first_batch_ns\": " << t.first_batch_ns
       << ", \"last_batch_end_ns\": " << t.last_batch_end_ns;
    if (t.sm >= 0) js << ", \"sm\": " << t.sm;
    js << "}";
  }
  js << "], \"violations\": [";
  for (std::size_t i = 0; i < ts.violations.size(); ++i) {
    js << (i ? ", " : "") << "\"" << json_escape(ts.violations[i]) << "\"";
  }
  js << "]}";
  return js.str();
}

struct CaseResult {
  std::string json;
  bool ok = true;
};

class Backend {
 public:
  Backend(const Options& o, const cudaDeviceProp& prop) : o_(o), prop_(prop) {
    max_warps_ = *std::max_element(o.warps.begin(), o.warps.end());
    buffer_stride_ = (o.bs + 4095) / 4096 * 4096;
    buffers_bytes_ = std::uint64_t{max_warps_} * 32u * buffer_stride_;
    check(cudaMalloc(&buffers_, buffers_bytes_), "cudaMalloc (data buffers)");
    check(cudaMalloc(&counters_, 4 * sizeof(unsigned)), "cudaMalloc (counters)");
    const std::uint32_t max_queues = std::max<std::uint32_t>(o.queues, max_warps_);
    if (o.target == "gpu") {
      GpuTarget::Options t;
      t.capacity_bytes = o.file_mib << 20;
      t.sms = o.gpu_target_sms;
      t.serving_warps = o.gpu_target_warps;
      t.dstrd = static_cast<std::uint8_t>(o.dstrd);
      t.max_queues = max_queues;
      t.max_entries = 65536;
      t.dma_base = reinterpret_cast<std::uint64_t>(buffers_);
      t.dma_bytes = buffers_bytes_;
      t.command_log = std::max<std::uint64_t>(o.ios * 2, 1 << 16);
      target_ = std::make_unique<GpuTarget>(t);
      return;
    }
    SoftController::Options t;
    t.threads = o.target_threads;
    t.dstrd = static_cast<std::uint8_t>(o.dstrd);
    t.max_queues = max_queues;
    t.max_entries = 65536;
    t.dma_base = reinterpret_cast<std::uint64_t>(buffers_);
    t.dma_bytes = buffers_bytes_;
    if (o.file.empty()) {
      file_ = make_pattern_file(o.file_mib);
      created_file_ = true;
    } else {
      file_ = o.file;
    }
    t.file = file_;
    target_ = std::make_unique<SoftController>(t);
    // Warm the page cache: the controller then serves from memory, as a
    // drive's read cache would not; the figure the simulator gets is the
    // measured service time whatever it contains.
    warm_file();
  }
  ~Backend() {
    target_.reset();
    cudaFree(buffers_);
    cudaFree(counters_);
    if (created_file_) ::unlink(file_.c_str());
  }
  NvmeTarget& target() { return *target_; }
  std::uint64_t file_bytes() const { return target_->capacity_lbas() * target_->lba_bytes(); }

  CaseResult run_case(const StrategyCase& sc, std::uint32_t warps);
  CaseResult run_controller_case(std::uint32_t depth);
  CaseResult run_gpu_controller_case(std::uint32_t depth, std::uint32_t warps_per_block,
                                     const std::string& wait);

 private:
  void warm_file() {
    const int fd = ::open(file_.c_str(), O_RDONLY);
    std::vector<unsigned char> buf(1 << 20);
    while (fd >= 0 && ::read(fd, buf.data(), buf.size()) > 0) {
    }
    if (fd >= 0) ::close(fd);
  }

  const Options& o_;
  const cudaDeviceProp& prop_;
  std::uint32_t max_warps_ = 1;
  std::uint32_t buffer_stride_ = 4096;
  std::uint64_t buffers_bytes_ = 0;
  void* buffers_ = nullptr;
  unsigned* counters_ = nullptr;  // errors, mismatches, finished, trace count
  std::string file_;
  bool created_file_ = false;
  std::unique_ptr<NvmeTarget> target_;
};

// A case's kernels: the compute warps' and, where the strategy has service
// warps (io_agents' agents, polling warps) and the kernels are per role, the
// service warps'. The combined kernel runs both roles.
using KernelFunction = void (*)(KernelArgs);
struct CaseKernels {
  KernelFunction compute = nullptr;
  std::string compute_name;
  KernelFunction service = nullptr;  // nullptr: no service kernel
  std::string service_name;
};

bool same_strategy(const algo::Strategy& x, const algo::Strategy& y) {
  return x.mapping == y.mapping && x.cid == y.cid && x.submission == y.submission &&
         x.completion == y.completion;
}

CaseKernels case_kernels(const StrategyCase& sc, bool per_role, bool has_service) {
  CaseKernels k;
  if (!per_role) {
    k.compute = io_kernel;
    k.compute_name = "io_kernel";
    return k;
  }
  using algo::NamedStrategy;
  // The six strategies of the validation each have a kernel compiled for
  // them; a strategy with the proposed extensions' options runs the compute
  // kernel that reads the strategy at run time.
  algo::Strategy polling = algo::named_strategy(NamedStrategy::WarpBatch);
  polling.completion = algo::Completion::PollingWarps;
  const struct {
    const char* name;
    algo::Strategy strategy;
    KernelFunction kernel;
  } compiled[] = {
      {"all_threads", algo::named_strategy(NamedStrategy::AllThreads),
       compute_kernel<CompiledStrategy::AllThreads>},
      {"bam_ticket", algo::named_strategy(NamedStrategy::BamTicket),
       compute_kernel<CompiledStrategy::BamTicket>},
      {"warp_batch", algo::named_strategy(NamedStrategy::WarpBatch),
       compute_kernel<CompiledStrategy::WarpBatch>},
      {"warp_batch+polling_warps", polling,
       compute_kernel<CompiledStrategy::WarpBatchPollingWarps>},
      {"per_warp_queue", algo::named_strategy(NamedStrategy::PerWarpQueue),
       compute_kernel<CompiledStrategy::PerWarpQueue>},
      {"io_agents", algo::named_strategy(NamedStrategy::IoAgents),
       compute_kernel<CompiledStrategy::IoAgents>},
  };
  k.compute = compute_kernel<CompiledStrategy::Runtime>;
  k.compute_name = "compute_kernel<runtime>";
  for (const auto& c : compiled) {
    if (sc.name == c.name && same_strategy(sc.strategy, c.strategy) && !sc.shadow_polled) {
      k.compute = c.kernel;
      k.compute_name = std::string("compute_kernel<") + c.name + ">";
    }
  }
  if (has_service) {
    k.service = sc.agents ? agent_kernel : polling_kernel;
    k.service_name = sc.agents ? "agent_kernel" : "polling_kernel";
  }
  return k;
}

CaseResult Backend::run_case(const StrategyCase& sc, std::uint32_t warps) {
  CaseResult out;
  const std::uint32_t queues =
      sc.strategy.submission == algo::Submission::Exclusive ? warps : o_.queues;
  const std::uint32_t entries = o_.entries;
  const std::uint32_t threads = warps * 32u;
  const std::uint32_t rounds =
      static_cast<std::uint32_t>(std::max<std::uint64_t>(2, (o_.ios + threads - 1) / threads));
  const std::uint64_t ios = std::uint64_t{threads} * rounds;
  const std::uint32_t service = sc.agents    ? std::min(o_.agent_warps, queues)
                                : sc.pollers ? std::min(o_.poller_warps, queues)
                                             : 0;
  const std::uint32_t tpb = std::min(o_.threads_per_block, threads);
  const bool per_role_kernels = o_.kernel == "per-role";
  const CaseKernels kernels = case_kernels(sc, per_role_kernels, service != 0);
  // Combined: the service warps in blocks after the compute warps'. Per
  // role: the compute warps' blocks alone, and the service warps' in blocks
  // of the same size (fewer threads where they are fewer).
  const std::uint32_t blocks = ((warps + (per_role_kernels ? 0 : service)) * 32u + tpb - 1) / tpb;
  const std::size_t smem = std::size_t{tpb / 32u} * GPUNVME_WARP_SCRATCH_BYTES;
  const std::uint32_t service_tpb = kernels.service ? std::min(tpb, service * 32u) : 0;
  const std::uint32_t service_blocks =
      kernels.service ? (service * 32u + service_tpb - 1) / service_tpb : 0;
  const std::size_t service_smem = std::size_t{service_tpb / 32u} * GPUNVME_WARP_SCRATCH_BYTES;

  std::ostringstream js;
  js << "{\"strategy\": \"" << sc.name << "\", \"warps\": " << warps << ", \"threads\": " << threads
     << ", \"threads_per_block\": " << tpb << ", \"queues\": " << queues
     << ", \"queue_entries\": " << entries << ", \"bs\": " << o_.bs << ", \"iodepth\": 1"
     << ", \"ios\": " << ios << ", \"service_warps\": " << service
     << ", \"trace\": " << (o_.trace == 1 ? "true" : "false") << ", \"stage_timing\": \""
     << (o_.trace == 0   ? "none"
         : o_.trace == 1 ? "records"
         : o_.trace == 2 ? "means"
                         : "op_profile")
     << "\", \"harness_kernel\": \"" << o_.kernel << "\", \"kernels\": [\"" << kernels.compute_name
     << "\"";
  if (kernels.service) js << ", \"" << kernels.service_name << "\"";
  js << "]";
  // The matching simulator scenario (gpunvme validate applies these).
  js << ", \"scenario\": {\"strategy\": \"" << sc.scenario << "\"";
  if (!sc.completion.empty()) js << ", \"completion\": \"" << sc.completion << "\"";
  if (!sc.submission.empty()) js << ", \"submission\": \"" << sc.submission << "\"";
  if (!sc.cid_scheme.empty()) js << ", \"cid_scheme\": \"" << sc.cid_scheme << "\"";
  if (sc.shadow_polled) js << ", \"shadow_doorbells\": true";
  js << ", \"threads\": " << threads << ", \"threads_per_block\": " << tpb
     << ", \"queues\": " << queues << ", \"queue_entries\": " << entries << ", \"bs\": " << o_.bs
     << ", \"iodepth\": 1, \"ios\": " << ios << ", \"rw\": \"randread\"";
  if (o_.poll_backoff_ns != 0) js << ", \"poll_backoff_ns\": " << o_.poll_backoff_ns;
  if (sc.agents) js << ", \"agent_warps\": " << service;
  if (sc.pollers) js << ", \"poller_warps\": " << service;
  js << "}";

  auto fail = [&](const std::string& why) {
    js << ", \"error\": \"" << json_escape(why) << "\"}";
    out.json = js.str();
    out.ok = false;
    std::fprintf(stderr, "gpunvme-hw: %s, %u warps: %s\n", sc.name.c_str(), warps, why.c_str());
    return out;
  };

  const auto blocks_per_sm = [](KernelFunction kernel, std::uint32_t block_threads,
                                std::size_t shared) {
    int per_sm = 0;
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(shared)),
          "cudaFuncSetAttribute");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel,
                                                        static_cast<int>(block_threads), shared),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    return static_cast<std::uint64_t>(per_sm);
  };
  // Warps wait on each other (ticket order, agents, pollers): every block
  // must be resident at once, on the SMs the target leaves free. Per role,
  // the two kernels are counted on SMs apart (an SM may hold blocks of both,
  // so this asks for no less than they need).
  const std::uint64_t free_sms =
      static_cast<std::uint64_t>(prop_.multiProcessorCount) - target_->reserved_sms();
  const std::uint64_t per_sm = blocks_per_sm(kernels.compute, tpb, smem);
  if (!kernels.service) {
    if (per_sm * free_sms < blocks) {
      return fail("needs " + std::to_string(blocks) + " resident blocks of " + std::to_string(tpb) +
                  " threads; the GPU holds " + std::to_string(per_sm * free_sms) +
                  " beside the target");
    }
  } else {
    const std::uint64_t service_per_sm = blocks_per_sm(kernels.service, service_tpb, service_smem);
    const std::uint64_t sms_needed =
        (per_sm == 0 ? free_sms + 1 : (blocks + per_sm - 1) / per_sm) +
        (service_per_sm == 0 ? free_sms + 1
                             : (service_blocks + service_per_sm - 1) / service_per_sm);
    if (sms_needed > free_sms) {
      return fail("needs " + std::to_string(blocks) + " resident blocks of " + std::to_string(tpb) +
                  " threads (" + std::to_string(per_sm) + " per SM) and " +
                  std::to_string(service_blocks) + " of " + std::to_string(service_tpb) + " (" +
                  std::to_string(service_per_sm) + " per SM) at once; " + std::to_string(free_sms) +
                  " SMs are free beside the target");
    }
  }
  if (sc.agents && (queues + service - 1) / service > kMaxAgentQueues) {
    return fail("io_agents: more than " + std::to_string(kMaxAgentQueues) + " queues per agent");
  }

  // Queues: rings and doorbells from the controller, the algorithms' shared
  // state in GPU memory (sim/core/algo/queue_state.h).
  target_->stop();
  target_->delete_io_queues();
  target_->reset_stats();
  // The most warps sharing a queue (warp w on queue w % queues): the CID
  // partitions of the partitioned schemes (thread_wide).
  const std::uint32_t users = (warps + queues - 1) / queues;
  const std::uint32_t cid_space = algo::cid_space_for(sc.strategy.cid, 0, entries, users, 1);
  const bool bitmap = sc.strategy.completion == algo::Completion::CidBitmap;
  const std::uint64_t bitmap_bytes =
      std::uint64_t{nvme::batch_bitmap_words(cid_space)} * nvme::kBatchBitmapWordBytes;
  // Doorbell Buffer Config's shadow and EventIdx buffers: laid out like the
  // doorbell registers, whole pages.
  const std::uint64_t shadow_bytes =
      (nvme::shadow_doorbell_offset(nvme::DoorbellKind::CqHead, static_cast<std::uint16_t>(queues),
                                    static_cast<std::uint8_t>(o_.dstrd)) +
       4 + nvme::kMinPageSize - 1) /
      nvme::kMinPageSize * nvme::kMinPageSize;
  std::uint64_t arena_bytes =
      std::uint64_t{queues} *
      (algo::QueuePair::counter_bytes() + 3ull * entries * 4 + 512 + std::uint64_t{cid_space} * 4 +
       cid_space / 8 + 4 + entries * 8 + 1024 + (bitmap ? 2 * bitmap_bytes + 256 : 0));
  if (sc.shadow_polled) arena_bytes += 2 * shadow_bytes + 2 * nvme::kMinPageSize;
  arena_bytes += std::uint64_t{service} * (std::uint64_t{entries} * 72 + 1024) +
                 std::uint64_t{threads} * 8 + std::uint64_t{queues} * (service + 2) * 8 + (1 << 20);
  DeviceArena arena(arena_bytes);
  arena.reset();
  std::vector<algo::QueuePair> table(queues);
  std::uint64_t shadow = 0, event_idx = 0;
  try {
    if (sc.shadow_polled) {
      shadow = arena.allocate(shadow_bytes, nvme::kMinPageSize);
      event_idx = arena.allocate(shadow_bytes, nvme::kMinPageSize);
      target_->configure_doorbell_buffer(nvme::make_doorbell_buffer_config(0, shadow, event_idx));
    }
  } catch (const std::runtime_error& e) {
    return fail(e.what());
  }
  for (std::uint32_t i = 0; i < queues; ++i) {
    const auto qid = static_cast<std::uint16_t>(i + 1);
    algo::QueuePair& q = table[i];
    // The Create I/O CQ and SQ, with the extensions' CDW11 bits (the target
    // places the rings: PRP1 0).
    if (bitmap) q.completion_bitmap = arena.allocate(bitmap_bytes, nvme::kBatchBitmapAlignment);
    nvme::SubmissionEntry create_cq =
        nvme::make_create_io_cq(0, qid, entries, 0, true, false, 0,
                                sc.strategy.completion == algo::Completion::SlotIndexed);
    if (bitmap) create_cq = nvme::with_batch_completion(create_cq, q.completion_bitmap, cid_space);
    const nvme::SubmissionEntry create_sq =
        nvme::make_create_io_sq(0, qid, entries, 0, qid, nvme::QueuePriority::Medium, true,
                                sc.strategy.submission == algo::Submission::WarpDoorbell,
                                sc.strategy.cid == algo::CidScheme::ThreadWide);
    IoQueueRings rings;
    try {
      rings = target_->create_io_queue_pair(create_cq, create_sq);
    } catch (const std::runtime_error& e) {
      return fail(e.what());
    }
    q.wide_cids = sc.strategy.cid == algo::CidScheme::ThreadWide ? 1u : 0u;
    if (bitmap) {
      q.bitmap_seen = arena.allocate(bitmap_bytes, nvme::kBatchBitmapAlignment);
    }
    if (sc.shadow_polled) {
      const auto dstrd = static_cast<std::uint8_t>(o_.dstrd);
      q.sq_shadow = shadow_word(shadow, nvme::DoorbellKind::SqTail, qid, dstrd);
      q.cq_shadow = shadow_word(shadow, nvme::DoorbellKind::CqHead, qid, dstrd);
      q.sq_event_idx = shadow_word(event_idx, nvme::DoorbellKind::SqTail, qid, dstrd);
      q.cq_event_idx = shadow_word(event_idx, nvme::DoorbellKind::CqHead, qid, dstrd);
      q.shadow_polled = 1;
    }
    take_rings(q, i, rings, entries);
    algo::place_queue_state(q, cid_space, sc.agents, [&](std::uint64_t b, std::uint64_t al) {
      return arena.allocate(b, al);
    });
  }

  KernelArgs a{};
  a.queues = arena.put(table);
  a.queue_count = queues;
  a.strategy = sc.strategy;
  a.cq_doorbell_batch = 1;  // the simulator's cq_doorbell_batch default
  a.max_batch = 32;         // min(32, batch_size default 32), as the simulator
  a.cid_local_bits = algo::local_cid_bits(1);
  a.warps = warps;
  a.poll_backoff_ns = o_.poll_backoff_ns;
  a.service_warps = service;
  a.rounds = rounds;
  a.bytes = o_.bs;
  a.lbas_per_io = o_.bs / target_->lba_bytes();
  a.nlb_zero_based = static_cast<std::uint16_t>(a.lbas_per_io - 1);
  a.blocks = target_->capacity_lbas() / a.lbas_per_io;
  a.buffers = reinterpret_cast<std::uint64_t>(buffers_);
  a.buffer_stride = buffer_stride_;
  a.seed = o_.seed;
  a.errors = counters_;
  a.mismatches = counters_ + 1;
  a.finished = counters_ + 2;
  a.shutdown = arena.allocate(128, 128);
  a.agents = sc.agents;
  a.pollers = sc.pollers;
  a.batch_size = 32;  // the simulator's batch_size default
  if (sc.agents) {
    std::vector<algo::AgentRing> rings(service);
    std::vector<std::uint32_t> agent_of(queues), first(service + 1, 0),
        local(std::uint64_t{service} * queues, ~0u);
    std::vector<algo::AgentQueue> owned;
    for (std::uint32_t ag = 0; ag < service; ++ag) {
      first[ag] = static_cast<std::uint32_t>(owned.size());
      for (std::uint32_t q = ag; q < queues; q += service) {
        agent_of[q] = ag;
        local[std::uint64_t{ag} * queues + q] =
            static_cast<std::uint32_t>(owned.size()) - first[ag];
        algo::AgentQueue aq;
        aq.queue = q;
        owned.push_back(aq);
      }
      // The simulator's agent_ring_entries default is 1024.
      algo::AgentRing& r = rings[ag];
      r.entries = 1024;
      r.base = arena.allocate(std::uint64_t{r.entries} * sizeof(algo::AgentRequest), 4096);
      r.tail = arena.allocate(128, 128);
      r.gate = arena.allocate(std::uint64_t{r.entries} * 4, 128);
      r.ready = arena.allocate(std::uint64_t{r.entries} * 4, 128);
    }
    first[service] = static_cast<std::uint32_t>(owned.size());
    a.rings = arena.put(rings);
    a.agent_of_queue = arena.put(agent_of);
    a.agent_queues = arena.put(owned);
    a.agent_first = arena.put(first);
    a.agent_local_index = arena.put(local);
    a.replies = arena.allocate(std::uint64_t{threads} * 8, 128);
  }
  if (sc.pollers) {
    std::vector<std::uint32_t> list, first(service + 1, 0);
    for (std::uint32_t i = 0; i < service; ++i) {
      first[i] = static_cast<std::uint32_t>(list.size());
      for (std::uint32_t q = i; q < queues; q += service) list.push_back(q);
    }
    first[service] = static_cast<std::uint32_t>(list.size());
    a.poller_queues = arena.put(list);
    a.poller_first = arena.put(first);
  }

  // Stage trace: a live slot per (queue, CID) and a record per I/O.
  platform::CudaStageTrace trace;
  constexpr int n = platform::CudaStageTrace::kStages;
  trace.queues = queues;
  trace.cid_slots = cid_space;
  trace.capacity = static_cast<std::uint32_t>(ios);
  const std::uint64_t live_bytes = std::uint64_t{queues} * cid_space * n * 8;
  const std::uint64_t log_bytes = ios * n * 8;
  check(cudaMalloc(&trace.live, live_bytes), "cudaMalloc (trace)");
  check(cudaMalloc(&trace.log, log_bytes), "cudaMalloc (trace log)");
  check(cudaMemset(trace.live, 0, live_bytes), "cudaMemset (trace)");
  trace.count = counters_ + 3;
  trace.means_only = o_.trace == 2;
  check(cudaMalloc(&trace.totals, 2 * n * 8), "cudaMalloc (stage totals)");
  check(cudaMemset(trace.totals, 0, 2 * n * 8), "cudaMemset (stage totals)");
  // Timestamps are summed after a base read just before the kernel, so that
  // the sums stay far from overflow.
  read_globaltimer<<<1, 1>>>(trace.totals);
  check(cudaMemcpy(&trace.base_ns, trace.totals, 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemset(trace.totals, 0, 2 * n * 8), "cudaMemset (stage totals)");
  check(cudaMemset(counters_, 0, 4 * sizeof(unsigned)), "cudaMemset (counters)");
  std::vector<platform::CudaStageTrace> trace_host = {trace};
  a.trace = o_.trace == 1 || o_.trace == 2 ? arena.put(trace_host) : nullptr;
  constexpr int per_role = platform::CudaOpProfile::kPerRole;
  platform::CudaOpProfile profile;
  check(cudaMalloc(&profile.totals, 2 * per_role * 8), "cudaMalloc (op profile)");
  check(cudaMemset(profile.totals, 0, 2 * per_role * 8), "cudaMemset (op profile)");
  std::vector<platform::CudaOpProfile> profile_host = {profile};
  a.profile = o_.trace == 3 ? arena.put(profile_host) : nullptr;

  if (target_->reserved_sms() != 0 || kernels.service != nullptr) {
    // A launch that needs more local memory than the pool holds waits until
    // every running kernel has ended (the driver resizes the pool), the
    // target's persistent kernel included, and the per-role service kernel,
    // which is launched first and waits for the compute warps: launch the
    // GPU code once, empty (no warps), before the target starts, so that its
    // local memory is in place (the pool is kept at its largest, see
    // main_impl). Without it the host-thread target's
    // warp_batch+polling_warps case hung in the compute kernel's launch.
    KernelArgs none{};
    kernels.compute<<<1, 32, smem>>>(none);
    check(cudaGetLastError(), "kernel launch (local memory)");
    if (kernels.service) {
      kernels.service<<<1, 32, service_smem>>>(none);
      check(cudaGetLastError(), "kernel launch (local memory)");
    }
    check(cudaDeviceSynchronize(), "kernel (local memory)");
  }
  target_->start();
  cudaEvent_t begin, end;
  check(cudaEventCreate(&begin), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  cudaStream_t compute_stream = nullptr, service_stream = nullptr;
  cudaEvent_t compute_done = nullptr;
  if (!per_role_kernels) {
    check(cudaEventRecord(begin), "cudaEventRecord");
    io_kernel<<<blocks, tpb, smem>>>(a);
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(end), "cudaEventRecord");
  } else {
    // Streams that do not wait for the legacy stream or each other; the
    // service warps first, so that they are resident when compute warps
    // post to them. The time runs from before the first launch to the end
    // of both kernels (the service warps leave at shutdown), as the
    // combined kernel's does.
    check(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&service_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&compute_done, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(begin, service_stream), "cudaEventRecord");
    if (kernels.service) {
      kernels.service<<<service_blocks, service_tpb, service_smem, service_stream>>>(a);
      check(cudaGetLastError(), "kernel launch (service warps)");
    }
    check(cudaStreamWaitEvent(compute_stream, begin, 0), "cudaStreamWaitEvent");
    kernels.compute<<<blocks, tpb, smem, compute_stream>>>(a);
    check(cudaGetLastError(), "kernel launch");
    check(cudaEventRecord(compute_done, compute_stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(service_stream, compute_done, 0), "cudaStreamWaitEvent");
    check(cudaEventRecord(end, service_stream), "cudaEventRecord");
  }
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaEventQuery(end);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) check(q, "kernel");
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (waited > o_.timeout_s) {
      // A kernel cannot be cancelled: report and leave the process.
      target_->stop();
      const TargetStats s = target_->stats();
      std::fprintf(stderr,
                   "gpunvme-hw: %s, %u warps: no completion after %.0f s (controller fetched %llu, "
                   "completed %llu); exiting\n",
                   sc.name.c_str(), warps, waited, static_cast<unsigned long long>(s.fetched),
                   static_cast<unsigned long long>(s.completed));
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  if (per_role_kernels) {
    cudaEventDestroy(compute_done);
    cudaStreamDestroy(compute_stream);
    cudaStreamDestroy(service_stream);
  }
  target_->stop();

  unsigned counters[4];
  check(cudaMemcpy(counters, counters_, sizeof counters, cudaMemcpyDeviceToHost), "cudaMemcpy");
  const std::uint64_t records = std::min<std::uint64_t>(counters[3], ios);
  std::vector<unsigned long long> log(records * n);
  check(cudaMemcpy(log.data(), trace.log, records * n * 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::vector<unsigned long long> totals(2 * n);
  check(cudaMemcpy(totals.data(), trace.totals, 2 * n * 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(trace.live);
  cudaFree(trace.log);
  cudaFree(trace.totals);
  std::vector<unsigned long long> profile_totals(2 * per_role);
  check(cudaMemcpy(profile_totals.data(), profile.totals, 2 * per_role * 8, cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  cudaFree(profile.totals);
  const StageResult stages = stage_result(log, records);
  const StageMeans means = stage_means(totals);
  const TargetStats ts = target_->stats();

  const double seconds = ms / 1e3;
  js << ", \"kernel_ms\": " << ms << ", \"iops\": " << static_cast<double>(ios) / seconds
     << ", \"errors\": " << counters[0] << ", \"data_mismatches\": " << counters[1]
     << ", \"stage_records\": " << stages.records << ", \"dropped_records\": " << stages.dropped
     << ", \"stages\": {";
  bool firstc = true;
  for (const auto& [name, d] : stages.stages) {
    js << (firstc ? "" : ", ") << "\"" << name << "\": " << json_distribution(d);
    firstc = false;
  }
  js << "}";
  if (o_.trace == 2) {
    js << ", \"stage_means\": {";
    firstc = true;
    for (const auto& [name, mean] : means.intervals) {
      js << (firstc ? "" : ", ") << "\"" << name << "\": " << mean;
      firstc = false;
    }
    js << "}, \"stage_mean_counts\": {";
    firstc = true;
    for (const auto& [name, count] : means.counts) {
      js << (firstc ? "" : ", ") << "\"" << name << "\": " << count;
      firstc = false;
    }
    js << "}";
  }
  if (o_.trace == 3) js << ", \"op_profile\": " << op_profile_json(profile_totals, ios);
  js << ", \"target\": " << target_json(ts) << "}";
  out.json = js.str();
  out.ok = counters[0] == 0 && counters[1] == 0 && ts.violations.empty() && ts.completed == ios;
  std::printf(
      "%-26s %5u warps %8llu I/Os %9.0f IOPS  e2e p50 %8.0f ns  mean %8.0f ns  svc p50 %7.0f ns"
      "  errors %u mismatches %u violations %zu dropped %llu\n",
      sc.name.c_str(), warps, static_cast<unsigned long long>(ios),
      static_cast<double>(ios) / seconds,
      stages.stages.count("end_to_end") ? stages.stages.at("end_to_end").p50 : 0.0,
      stages.stages.count("end_to_end") ? stages.stages.at("end_to_end").mean : 0.0,
      ts.service_ns.p50, counters[0], counters[1], ts.violations.size(),
      static_cast<unsigned long long>(stages.dropped));
  std::fflush(stdout);
  return out;
}

// A host view of an address the controller handed out for the GPU (its rings
// and doorbells live in pinned, mapped host memory).
// Under unified addressing a mapped allocation has one address on both sides,
// which is what the runtime answers when it cannot say more.
volatile unsigned char* host_view(std::uint64_t device_address) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, reinterpret_cast<void*>(device_address)) != cudaSuccess ||
      attr.hostPointer == nullptr) {
    (void)cudaGetLastError();  // not sticky: keep it from a later check
    return reinterpret_cast<volatile unsigned char*>(device_address);
  }
  return static_cast<volatile unsigned char*>(attr.hostPointer);
}

// Controller-only case: the target alone, fed by host threads that play a
// trivial, fixed submitter (no strategy, no GPU code). Feeder f owns queues
// f, f + feeders, ...; for each it keeps `depth` reads outstanding: it takes
// the CQEs whose phase tag has flipped, releases them with one CQ head
// doorbell, writes as many new SQEs and rings the SQ tail doorbell once. The
// data still goes to GPU memory by the target's copies, as in the strategy
// cases, into buffers adjacent within a batch as a warp's are; the GPU
// itself runs nothing.
CaseResult Backend::run_controller_case(std::uint32_t depth) {
  if (o_.target == "gpu") {
    throw std::logic_error("run_controller_case: the GPU target's cases run per packing and wait");
  }
  CaseResult out;
  const std::uint32_t queues = o_.queues;
  const std::uint32_t entries = o_.entries;
  const std::uint32_t feeders = std::min(o_.feeders, queues);
  const std::uint64_t ios = std::max<std::uint64_t>(o_.ios, std::uint64_t{queues} * depth);
  target_->stop();
  target_->delete_io_queues();
  target_->reset_stats();
  struct Ring {
    volatile unsigned char* sq;
    volatile unsigned char* cq;
    volatile std::uint32_t* sq_doorbell;
    volatile std::uint32_t* cq_doorbell;
    std::uint16_t qid;
  };
  std::vector<Ring> rings(queues);
  std::vector<std::uint64_t> cq_device(queues);  // the CQ rings as the GPU addresses them
  for (std::uint32_t i = 0; i < queues; ++i) {
    const IoQueueRings r = target_->create_io_queue(static_cast<std::uint16_t>(i + 1), entries);
    cq_device[i] = r.cq_device;
    rings[i] = {host_view(r.sq_device), host_view(r.cq_device),
                reinterpret_cast<volatile std::uint32_t*>(host_view(r.sq_doorbell_device)),
                reinterpret_cast<volatile std::uint32_t*>(host_view(r.cq_doorbell_device)), r.qid};
  }
  const std::uint64_t buffer_count = buffers_bytes_ / buffer_stride_;
  const std::uint32_t lbas_per_io = o_.bs / target_->lba_bytes();
  const std::uint64_t blocks = target_->capacity_lbas() / lbas_per_io;
  // Each queue's share of the I/Os (the first ones take the remainder).
  std::vector<std::uint64_t> quota(queues, ios / queues);
  for (std::uint64_t i = 0; i < ios % queues; ++i) ++quota[i];
  std::atomic<std::uint64_t> errors{0};
  std::atomic<bool> go{false};

  auto feed = [&](std::uint32_t f) {
    struct State {
      std::uint32_t sq_tail = 0, cq_head = 0;
      bool phase = true;
      std::uint64_t submitted = 0, completed = 0;
      std::vector<std::uint16_t> free_cids;
    };
    std::vector<std::uint32_t> owned;
    for (std::uint32_t q = f; q < queues; q += feeders) owned.push_back(q);
    std::vector<State> st(owned.size());
    for (State& s : st) {
      for (std::uint32_t c = depth; c-- > 0;) s.free_cids.push_back(static_cast<std::uint16_t>(c));
    }
    std::uint64_t rng = o_.seed * 0x9E3779B97F4A7C15ull + f + 1;
    std::uint64_t left = 0;
    for (std::uint32_t q : owned) left += quota[q];
    while (!go.load(std::memory_order_acquire)) {
    }
    while (left > 0) {
      for (std::size_t k = 0; k < owned.size(); ++k) {
        const std::uint32_t q = owned[k];
        State& s = st[k];
        Ring& r = rings[q];
        bool reaped = false;
        for (;;) {
          nvme::CompletionEntry e;
          std::memcpy(&e, const_cast<const unsigned char*>(r.cq) + std::size_t{s.cq_head} * 16,
                      sizeof e);
          if ((e.phase() != 0) != s.phase) break;
          std::atomic_thread_fence(std::memory_order_acquire);
          if (e.status() != nvme::Status::Success) errors.fetch_add(1);
          s.free_cids.push_back(e.cid);
          ++s.completed;
          --left;
          reaped = true;
          if (++s.cq_head == entries) {
            s.cq_head = 0;
            s.phase = !s.phase;
          }
        }
        if (reaped) *r.cq_doorbell = s.cq_head;
        bool wrote = false;
        while (!s.free_cids.empty() && s.submitted < quota[q]) {
          const std::uint16_t cid = s.free_cids.back();
          s.free_cids.pop_back();
          rng ^= rng << 13;
          rng ^= rng >> 7;
          rng ^= rng << 17;
          // The buffer of the SQ slot: a batch's buffers are adjacent, as a
          // warp's are in the strategy cases, so the target merges their
          // copies the same way (one copy per batch, not per command).
          const std::uint64_t slot = std::uint64_t{q} * entries + s.sq_tail;
          const std::uint64_t buffer = (o_.scatter_buffers ? 2 * slot : slot) % buffer_count;
          const nvme::SubmissionEntry e = nvme::make_read(
              cid, 1, (rng % blocks) * lbas_per_io, static_cast<std::uint16_t>(lbas_per_io - 1),
              reinterpret_cast<std::uint64_t>(buffers_) + buffer * buffer_stride_, 0);
          std::memcpy(const_cast<unsigned char*>(r.sq) + std::size_t{s.sq_tail} * 64, &e, sizeof e);
          s.sq_tail = (s.sq_tail + 1) % entries;
          ++s.submitted;
          wrote = true;
        }
        if (wrote) {
          std::atomic_thread_fence(std::memory_order_release);
          *r.sq_doorbell = s.sq_tail;
        }
      }
    }
  };

  // GPU warps polling the CQ rings meanwhile (--host-pollers).
  const std::uint32_t pollers = o_.host_pollers;
  std::uint64_t* ring_table = nullptr;
  unsigned long long *poll_loads = nullptr, *poll_ns = nullptr;
  unsigned* stop_host = nullptr;
  unsigned* stop_device = nullptr;
  cudaStream_t poll_stream = nullptr;
  if (pollers > 0) {
    check(cudaMalloc(&ring_table, queues * sizeof(std::uint64_t)), "cudaMalloc (poll rings)");
    check(cudaMalloc(&poll_loads, pollers * sizeof(unsigned long long)), "cudaMalloc (polls)");
    check(cudaMalloc(&poll_ns, pollers * sizeof(unsigned long long)), "cudaMalloc (polls)");
    check(
        cudaHostAlloc(reinterpret_cast<void**>(&stop_host), sizeof(unsigned), cudaHostAllocMapped),
        "cudaHostAlloc (poll stop flag)");
    *stop_host = 0;
    check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&stop_device), stop_host, 0),
          "cudaHostGetDevicePointer (poll stop flag)");
    check(cudaStreamCreateWithFlags(&poll_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  target_->start();
  std::vector<std::thread> threads;
  for (std::uint32_t f = 0; f < feeders; ++f) threads.emplace_back(feed, f);
  if (pollers > 0) {
    check(cudaMemcpy(ring_table, cq_device.data(), queues * sizeof(std::uint64_t),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy (poll rings)");
    if (o_.host_pollers_next) {
      poll_next_cq_entry<<<pollers, 32, 0, poll_stream>>>(ring_table, queues, entries, stop_device,
                                                          poll_loads, poll_ns);
    } else {
      poll_cq_rings<<<pollers, 32, 0, poll_stream>>>(ring_table, queues, entries, stop_device,
                                                     poll_loads, poll_ns);
    }
    check(cudaGetLastError(), "poll_cq_rings launch");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the pollers are running
  }
  const auto started = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  target_->stop();
  const TargetStats ts = target_->stats();
  double poll_loads_per_s = 0, poll_load_ns = 0;
  if (pollers > 0) {
    *static_cast<volatile unsigned*>(stop_host) = 1;
    check(cudaStreamSynchronize(poll_stream), "poll_cq_rings");
    std::vector<unsigned long long> l(pollers), n(pollers);
    check(cudaMemcpy(l.data(), poll_loads, pollers * sizeof l[0], cudaMemcpyDeviceToHost), "copy");
    check(cudaMemcpy(n.data(), poll_ns, pollers * sizeof n[0], cudaMemcpyDeviceToHost), "copy");
    for (std::uint32_t i = 0; i < pollers; ++i) {
      poll_loads_per_s += static_cast<double>(l[i]) / (static_cast<double>(n[i]) / 1e9);
      poll_load_ns += static_cast<double>(n[i]) / static_cast<double>(l[i]) / pollers;
    }
    cudaFree(ring_table);
    cudaFree(poll_loads);
    cudaFree(poll_ns);
    cudaFreeHost(stop_host);
    cudaStreamDestroy(poll_stream);
  }

  std::ostringstream js;
  js << "{\"strategy\": \"controller_only\", \"depth\": " << depth << ", \"queues\": " << queues
     << ", \"queue_entries\": " << entries << ", \"feeders\": " << feeders
     << ", \"target_threads\": " << o_.target_threads << ", \"host_pollers\": " << pollers
     << ", \"host_poll\": \"" << (o_.host_pollers_next ? "next" : "sweep") << "\""
     << ", \"poll_loads_per_s\": " << poll_loads_per_s << ", \"poll_load_ns\": " << poll_load_ns
     << ", \"scatter_buffers\": " << (o_.scatter_buffers ? "true" : "false")
     << ", \"bs\": " << o_.bs << ", \"ios\": " << ios << ", \"wall_ms\": " << seconds * 1e3
     << ", \"iops\": " << static_cast<double>(ios) / seconds << ", \"errors\": " << errors.load()
     << ", \"target\": " << target_json(ts) << "}";
  out.json = js.str();
  out.ok = errors.load() == 0 && ts.violations.empty() && ts.completed == ios;
  std::printf(
      "controller_only depth %4u  %2u target threads  %8llu I/Os %9.0f IOPS  svc mean %7.0f ns"
      "  batch %.1f cmds, line %.0f + %.0f ns/cmd, gap %.0f ns  violations %zu\n",
      depth, o_.target_threads, static_cast<unsigned long long>(ios),
      static_cast<double>(ios) / seconds, ts.service_ns.mean, ts.batch_commands.mean,
      ts.batch_fixed_ns, ts.batch_per_command_ns, ts.batch_gap_ns.mean, ts.violations.size());
  std::fflush(stdout);
  return out;
}

void write_results(const Options& o, const cudaDeviceProp& prop, Backend& backend,
                   const std::vector<std::string>& cases, int driver, int runtime);

int main_impl(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "gpunvme-hw: no CUDA device (%s): nothing to measure, skipping\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return kNoDevice;
  }
  if (o.device >= count) bad("--device", std::to_string(o.device), "no such device");
  // With a persistent kernel running (the GPU target's, or the per-role
  // service warps' kernel, which leaves only when the compute kernel is
  // done), a launch that makes the driver grow or shrink the local-memory
  // pool would wait for it for ever: keep the pool at its largest (see
  // Backend::run_case).
  if (o.target == "gpu" || o.kernel == "per-role") {
    check(cudaSetDeviceFlags(cudaDeviceLmemResizeToMax), "cudaSetDeviceFlags");
  }
  check(cudaSetDevice(o.device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, o.device), "cudaGetDeviceProperties");
  if (!prop.canMapHostMemory) {
    std::fprintf(stderr, "gpunvme-hw: %s cannot map host memory: skipping\n", prop.name);
    return kNoDevice;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);

  Backend backend(o, prop);
  std::vector<std::string> cases;
  bool ok = true;
  // The file is rewritten after every case, so that a case that hangs (the
  // process then exits) leaves the finished ones behind.
  for (std::uint32_t depth : o.controller_depths) {
    if (o.target != "gpu") {
      CaseResult r = backend.run_controller_case(depth);
      ok = ok && r.ok;
      cases.push_back(r.json);
      write_results(o, prop, backend, cases, driver, runtime);
      continue;
    }
    for (std::uint32_t wpb : o.feed_warps_per_block) {
      for (const std::string& wait : o.feed_waits) {
        CaseResult r = backend.run_gpu_controller_case(depth, wpb, wait);
        ok = ok && r.ok;
        cases.push_back(r.json);
        write_results(o, prop, backend, cases, driver, runtime);
      }
    }
  }
  for (const std::string& name :
       o.controller_depths.empty() ? o.strategies : std::vector<std::string>{}) {
    StrategyCase sc;
    strategy_case(name, sc);
    for (std::uint32_t warps : o.warps) {
      CaseResult r = backend.run_case(sc, warps);
      ok = ok && r.ok;
      cases.push_back(r.json);
      write_results(o, prop, backend, cases, driver, runtime);
    }
  }
  std::printf("wrote %s (%zu cases)%s\n", o.out.c_str(), cases.size(),
              ok ? "" : "; some cases FAILED");
  return ok ? 0 : 1;
}

// Controller-only case against the GPU target: feed_gpu_target, one warp per
// queue on the SMs the target leaves, keeps `depth` reads per queue in flight
// in whole rounds (see the kernel). Nothing of the six strategies runs.
CaseResult Backend::run_gpu_controller_case(std::uint32_t depth, std::uint32_t warps_per_block,
                                            const std::string& wait) {
  CaseResult out;
  const std::uint32_t queues = o_.queues;
  const std::uint32_t entries = o_.entries;
  const std::uint64_t ios = std::max<std::uint64_t>(o_.ios, std::uint64_t{queues} * depth);
  target_->stop();
  target_->delete_io_queues();
  target_->reset_stats();
  std::vector<FeedRing> rings(queues);
  const bool cq_scan = wait == "cq_scan";
  // bam_ticket's queue state (sim/core/algo/queue_state.h) for the cq_scan
  // wait: its CIDs are SQ slots.
  const std::uint32_t cid_space = algo::cid_space_for(
      algo::named_strategy(algo::NamedStrategy::BamTicket).cid, 0, entries, 1, 1);
  DeviceArena arena(cq_scan ? std::uint64_t{queues} *
                                      (algo::QueuePair::counter_bytes() + 3ull * entries * 4 +
                                       cid_space * 4ull + cid_space / 8 + 1024) +
                                  (1 << 20)
                            : 256);
  arena.reset();
  std::vector<algo::QueuePair> table(queues);
  for (std::uint32_t i = 0; i < queues; ++i) {
    const IoQueueRings r = target_->create_io_queue(static_cast<std::uint16_t>(i + 1), entries);
    if (cq_scan) {
      algo::QueuePair& qp = table[i];
      take_rings(qp, i, r, entries);
      algo::place_queue_state(qp, cid_space, false, [&](std::uint64_t b, std::uint64_t al) {
        return arena.allocate(b, al);
      });
    }
    rings[i].sq = reinterpret_cast<unsigned char*>(r.sq_device);
    rings[i].cq = reinterpret_cast<const unsigned char*>(r.cq_device);
    rings[i].sq_doorbell = reinterpret_cast<std::uint32_t*>(r.sq_doorbell_device);
    rings[i].cq_doorbell = reinterpret_cast<std::uint32_t*>(r.cq_doorbell_device);
    rings[i].quota = ios / queues + (i < ios % queues ? 1 : 0);
  }
  FeedArgs a{};
  constexpr int kFeedCounters = 8;
  check(cudaMalloc(&a.counters, kFeedCounters * sizeof(unsigned long long)),
        "cudaMalloc (feed counters)");
  check(cudaMemset(a.counters, 0, kFeedCounters * sizeof(unsigned long long)),
        "cudaMemset (feed counters)");
  check(cudaMalloc(&a.feeder_sm, queues * sizeof(std::uint32_t)), "cudaMalloc (feeder SMs)");
  a.gap_ns = o_.feed_gap_ns;
  a.gap_random = o_.feed_gap_random ? 1 : 0;
  a.poll_sleep_ns = o_.feed_poll_sleep_ns;
  a.queue_pairs = cq_scan ? arena.put(table) : nullptr;
  constexpr int per_role = platform::CudaOpProfile::kPerRole;
  platform::CudaOpProfile profile;
  const bool profiled = cq_scan && o_.trace == 3;
  if (profiled) {
    check(cudaMalloc(&profile.totals, 2 * per_role * 8), "cudaMalloc (op profile)");
    check(cudaMemset(profile.totals, 0, 2 * per_role * 8), "cudaMemset (op profile)");
    a.profile = arena.put(std::vector<platform::CudaOpProfile>{profile});
  }
  FeedRing* ring_table = nullptr;
  check(cudaMalloc(&ring_table, queues * sizeof(FeedRing)), "cudaMalloc (feed rings)");
  check(cudaMemcpy(ring_table, rings.data(), queues * sizeof(FeedRing), cudaMemcpyHostToDevice),
        "cudaMemcpy (feed rings)");
  a.rings = ring_table;
  a.queues = queues;
  a.entries = entries;
  a.depth = depth;
  a.lbas_per_io = o_.bs / target_->lba_bytes();
  a.blocks = target_->capacity_lbas() / a.lbas_per_io;
  a.buffers = static_cast<unsigned char*>(buffers_);
  a.buffer_count = buffers_bytes_ / buffer_stride_;
  a.buffer_stride = buffer_stride_;
  a.scatter = o_.scatter_buffers ? 1 : 0;
  a.check_data =
      std::uint64_t{queues} * entries * (o_.scatter_buffers ? 2 : 1) <= a.buffer_count ? 1 : 0;
  a.seed = o_.seed;
  unsigned long long* clock = nullptr;
  check(cudaMalloc(&clock, sizeof(unsigned long long)), "cudaMalloc (clock)");
  read_globaltimer<<<1, 1>>>(clock);
  check(cudaGetLastError(), "read_globaltimer launch");
  unsigned long long now = 0;
  check(cudaMemcpy(&now, clock, sizeof now, cudaMemcpyDeviceToHost), "cudaMemcpy (clock)");
  cudaFree(clock);
  a.deadline_ns = now + static_cast<unsigned long long>(o_.timeout_s * 1e9);
  // The feeder's local memory is in place before the target holds its SMs
  // (see run_case): one empty launch first.
  // With o_.feed_scratch the blocks take the strategy kernels' per-warp
  // shared memory (and cq_scan's Lanes<> live there).
  const std::uint32_t feed_blocks = (queues + warps_per_block - 1) / warps_per_block;
  const std::uint32_t feed_threads = 32u * warps_per_block;
  const std::size_t feed_smem =
      o_.feed_scratch ? std::size_t{warps_per_block} * GPUNVME_WARP_SCRATCH_BYTES : 0;
  FeedArgs none = a;
  none.queues = 0;
  feed_gpu_target<<<1, feed_threads, feed_smem>>>(none);
  check(cudaGetLastError(), "feed_gpu_target launch (local memory)");
  check(cudaDeviceSynchronize(), "feed_gpu_target (local memory)");
  target_->start();
  cudaEvent_t begin, end;
  check(cudaEventCreate(&begin), "cudaEventCreate");
  check(cudaEventCreate(&end), "cudaEventCreate");
  check(cudaEventRecord(begin), "cudaEventRecord");
  feed_gpu_target<<<feed_blocks, feed_threads, feed_smem>>>(a);
  check(cudaGetLastError(), "feed_gpu_target launch");
  check(cudaEventRecord(end), "cudaEventRecord");
  // The feeder gives up at its deadline; wait a little longer than that.
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaEventQuery(end);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) check(q, "feed_gpu_target");
    if (std::chrono::steady_clock::now() - started >
        std::chrono::duration<double>(o_.timeout_s + 10)) {
      throw std::runtime_error("feed_gpu_target did not end after its deadline");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin, end), "cudaEventElapsedTime");
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  target_->stop();
  const TargetStats ts = target_->stats();
  unsigned long long counters[kFeedCounters] = {};
  check(cudaMemcpy(counters, a.counters, sizeof counters, cudaMemcpyDeviceToHost),
        "cudaMemcpy (feed counters)");
  std::vector<std::uint32_t> feeder_sm(queues);
  check(cudaMemcpy(feeder_sm.data(), a.feeder_sm, queues * sizeof(std::uint32_t),
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy (feeder SMs)");
  cudaFree(a.counters);
  cudaFree(a.feeder_sm);
  cudaFree(ring_table);
  std::vector<unsigned long long> profile_totals(2 * per_role);
  if (profiled) {
    check(
        cudaMemcpy(profile_totals.data(), profile.totals, 2 * per_role * 8, cudaMemcpyDeviceToHost),
        "cudaMemcpy (op profile)");
    cudaFree(profile.totals);
  }
  // Feeder warps that shared an SM with a serving warp (the target's blocks
  // keep other blocks that use shared memory off their SMs; the feeder uses
  // none, so the block scheduler may place it there).
  std::uint32_t feeders_on_target_sms = 0;
  for (std::uint32_t sm : feeder_sm) {
    for (const TargetStats::Thread& t : ts.threads) {
      if (t.sm >= 0 && static_cast<std::uint32_t>(t.sm) == sm) {
        ++feeders_on_target_sms;
        break;
      }
    }
  }
  std::ostringstream sms;
  for (std::uint32_t i = 0; i < queues; ++i) sms << (i ? ", " : "") << feeder_sm[i];
  // The most feeder warps that shared one SM.
  std::map<std::uint32_t, std::uint32_t> warps_on_sm;
  std::uint32_t most_on_one_sm = 0;
  for (std::uint32_t sm : feeder_sm) most_on_one_sm = std::max(most_on_one_sm, ++warps_on_sm[sm]);
  // The target's mean batch time: its batch line passes through the mean
  // batch (least squares), so intercept + slope x mean size.
  const double batch_ns_mean = ts.batch_fixed_ns + ts.batch_per_command_ns * ts.batch_commands.mean;
  const double round_mean = counters[3] > 0 ? static_cast<double>(counters[4]) / counters[3] : 0.0;
  // The cq_scan wait sees its CQEs through scans, not one by one: no first
  // CQE time.
  std::ostringstream first_cqe;
  if (cq_scan) {
    first_cqe << "null";
  } else {
    first_cqe << (counters[3] > 0 ? static_cast<double>(counters[5]) / counters[3] : 0.0);
  }
  const std::string first_cqe_json = first_cqe.str();
  // The SM clock over the case: the feeder warps' SM cycles over their
  // %globaltimer time (one clock domain for all SMs).
  const double sm_clock_mhz =
      counters[7] > 0 ? 1e3 * static_cast<double>(counters[6]) / counters[7] : 0.0;
  const double seconds = static_cast<double>(ms) / 1e3;
  std::ostringstream js;
  js << "{\"strategy\": \"controller_only\", \"feeder\": \"gpu_rounds\", \"depth\": " << depth
     << ", \"queues\": " << queues << ", \"queue_entries\": " << entries
     << ", \"feeders\": " << queues << ", \"target_threads\": " << o_.gpu_target_warps
     << ", \"target_sms\": " << o_.gpu_target_sms << ", \"host_pollers\": 0"
     << ", \"feed_gap_ns\": " << o_.feed_gap_ns
     << ", \"feed_gap_random\": " << (o_.feed_gap_random ? "true" : "false")
     << ", \"feed_poll_sleep_ns\": " << o_.feed_poll_sleep_ns << ", \"feed_wait\": \"" << wait
     << "\", \"feed_warps_per_block\": " << warps_per_block
     << ", \"feed_scratch\": " << (o_.feed_scratch ? "true" : "false")
     << ", \"feeder_warps_most_on_one_sm\": " << most_on_one_sm
     << ", \"feeder_sms_used\": " << warps_on_sm.size() << ", \"feeder_sms\": [" << sms.str() << "]"
     << ", \"feeders_on_target_sms\": " << feeders_on_target_sms
     << ", \"sm_clock_mhz\": " << sm_clock_mhz
     << ", \"scatter_buffers\": " << (o_.scatter_buffers ? "true" : "false")
     << ", \"bs\": " << o_.bs << ", \"ios\": " << ios << ", \"wall_ms\": " << seconds * 1e3
     << ", \"iops\": " << static_cast<double>(ios) / seconds << ", \"errors\": " << counters[0]
     << ", \"data_mismatches\": " << counters[1]
     << ", \"data_checked\": " << (a.check_data != 0 ? "true" : "false")
     << ", \"timed_out_warps\": " << counters[2] << ", \"rounds\": " << counters[3]
     << ", \"round_ns_mean\": "
     << (counters[3] > 0 ? static_cast<double>(counters[4]) / counters[3] : 0.0)
     << ", \"round_first_cqe_ns_mean\": " << first_cqe_json
     << ", \"target_batch_ns_mean\": " << batch_ns_mean
     << ", \"wait_beyond_batch_ns_mean\": " << round_mean - batch_ns_mean
     << (profiled ? ", \"op_profile\": " + op_profile_json(profile_totals, ios) : std::string())
     << ", \"target\": " << target_json(ts) << "}";
  out.json = js.str();
  out.ok = counters[0] == 0 && counters[1] == 0 && counters[2] == 0 && ts.violations.empty() &&
           ts.completed == ios;
  std::printf(
      "controller_only depth %4u  %3u queues  %2u target warps  wait %s, %u warps/block (at most "
      "%u on an SM)  %8llu I/Os %10.0f IOPS  svc mean "
      "%7.0f ns  batch %.1f cmds, line %.0f + %.0f ns/cmd, gap %.0f ns  round %.0f ns (first "
      "CQE %.0f, beyond the batch %.0f)  SM clock %.0f MHz  feeders on target SMs %u  errors %llu "
      "mismatches %llu timed out %llu violations %zu\n",
      depth, queues, o_.gpu_target_warps, wait.c_str(), warps_per_block, most_on_one_sm,
      static_cast<unsigned long long>(ios), static_cast<double>(ios) / seconds, ts.service_ns.mean,
      ts.batch_commands.mean, ts.batch_fixed_ns, ts.batch_per_command_ns, ts.batch_gap_ns.mean,
      counters[3] > 0 ? static_cast<double>(counters[4]) / counters[3] : 0.0,
      counters[3] > 0 ? static_cast<double>(counters[5]) / counters[3] : 0.0,
      round_mean - batch_ns_mean, sm_clock_mhz, feeders_on_target_sms, counters[0], counters[1],
      counters[2], ts.violations.size());
  std::fflush(stdout);
  return out;
}

void write_results(const Options& o, const cudaDeviceProp& prop, Backend& backend,
                   const std::vector<std::string>& cases, int driver, int runtime) {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  static const std::string smi = read_command(
      "nvidia-smi --query-gpu=driver_version,pcie.link.gen.current,pcie.link.width.current "
      "--format=csv,noheader 2>/dev/null");
  // The machine instance: the GPU's UUID and the host's boot id (a lent
  // machine handed back and started again boots afresh).
  char uuid[64];
  const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  std::snprintf(uuid, sizeof uuid,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  static const std::string boot_id =
      read_command("cat /proc/sys/kernel/random/boot_id 2>/dev/null");
  static const std::string host = read_command("hostname 2>/dev/null");
  const nvme::Cap cap = backend.target().cap();
  std::FILE* f = std::fopen(o.out.c_str(), "w");
  if (f == nullptr) bad("--out", o.out, "cannot write the file");
  std::fprintf(f, "{\n  \"schema\": \"%s\",\n  \"date\": \"%s\",\n",
               o.controller_depths.empty() ? "gpunvme.hw/1" : "gpunvme.hw_controller/1", date);
  std::fprintf(f,
               "  \"device\": {\"name\": \"%s\", \"compute_capability\": \"%d.%d\", \"sms\": %d, "
               "\"l2_bytes\": %d, \"global_memory_bytes\": %zu, \"driver_api\": %d, "
               "\"runtime\": %d, \"nvidia_smi\": \"%s\", \"uuid\": \"%s\"},\n"
               "  \"machine\": {\"hostname\": \"%s\", \"boot_id\": \"%s\"},\n",
               json_escape(prop.name).c_str(), prop.major, prop.minor, prop.multiProcessorCount,
               prop.l2CacheSize, prop.totalGlobalMem, driver, runtime, json_escape(smi).c_str(),
               uuid, json_escape(host).c_str(), json_escape(boot_id).c_str());
  std::fprintf(f,
               "  \"target\": {\"kind\": \"%s\", \"threads\": %u, \"dstrd\": %u, \"mqes\": %u, "
               "\"lba_bytes\": %u, \"file_bytes\": %llu, \"file_created\": %s, %s},\n",
               backend.target().kind().c_str(),
               o.target == "gpu" ? o.gpu_target_warps : o.target_threads, cap.dstrd, cap.mqes,
               backend.target().lba_bytes(), static_cast<unsigned long long>(backend.file_bytes()),
               o.target == "host" && o.file.empty() ? "true" : "false",
               backend.target().description().c_str());
  std::fprintf(f,
               "  \"program\": {\"name\": \"gpunvme-hw\", \"seed\": %llu, \"ios_per_case\": %llu, "
               "\"clock\": \"%%globaltimer ns\"},\n",
               static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(o.ios));
  // The kernels the strategy cases ran in (controller-only runs use their
  // feeder kernel whatever this names).
  std::fprintf(f, "  \"harness\": {\"kernel\": \"%s\", \"doc\": \"%s\"},\n  \"cases\": [\n",
               o.kernel.c_str(),
               o.kernel == "per-role"
                   ? "per-role: a compute kernel compiled for the case's strategy, its agent or "
                     "polling warps in a kernel of their own, launched side by side on "
                     "non-blocking streams (the case's kernels field names them)"
                   : "combined: one kernel of every role and strategy, the strategy chosen at "
                     "run time");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::fprintf(f, "    %s%s\n", cases[i].c_str(), i + 1 < cases.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

}  // namespace
}  // namespace gpunvme::hw

int main(int argc, char** argv) {
  try {
    return gpunvme::hw::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpunvme-hw: error: %s\n", e.what());
    return 1;
  }
}
