// Where io_agents' agent pass spends its time, with no compute warps and no
// NVMe target kernel: it tells whether the agent loop costs about twice
// the intake microbenchmark (submission_costs' agent_intake, 17.6 us per pass
// of 32) inside gpunvme-hw's io_kernel (43.6 us per pass in its op profile)
// because io_kernel's code generation is worse (255 registers, a 13,648 B
// stack frame, spills) or because the rest of the pass (drains, doorbells,
// the loop) costs the difference. This program compiles the same code in
// small kernels and times it alone:
//
// - intake: io_agents' intake of 32 requests, exactly submission_costs'
//   k_agent_intake (agent_loop's step 2 written out with the same platform
//   calls; no drain, no doorbell, no stage records); figure per pass of 32
//   requests with the bare loop taken off.
// - loop: algo::agent_loop itself (sim/core/algo/io_agents.h, unchanged, as
//   io_kernel's service warps call it: one agent warp owning 4 queues of 256
//   entries, batch_size 32, batch timeout 0, CQ doorbell batch 1, queue table,
//   ring and queues in GPU memory) in a kernel of its own (k_agent_loop),
//   against an echo warp (k_echo, another SM) that reads each SQ tail doorbell word,
//   checks the CID of every new SQE and posts its CQE (phase and CID in one
//   32-bit store), then sets the shutdown word once every request has
//   completed. The ring holds kLoopPasses x 32 requests, all ready before
//   the launch, spread over the 4 queues in turn; the agent takes 32 a pass
//   (4 x 255 slots never run out), drains the completions that arrived,
//   rings the doorbells. Figure: the agent kernel's time (CUDA events; its
//   own %globaltimer around agent_loop beside it), per 32 requests and per request (the last
//   completions' wait included: one echo round trip over kLoopPasses passes). Run unprofiled and
//   with the op profile of gpunvme-hw --trace 3 (the same CudaOpProfile, role 1 = service warps),
//   whose per-kind split (other, ballot, for_lanes, fence_system, ...) is the one the README
//   quotes.
// - io_kernel: the same agent pass in gpunvme-hw's own io_kernel (this file
//   includes sim/frontend/hardware/gpunvme_hw.cu, its main renamed), launched
//   with no compute warps and one service warp (agents, the same 4 queues,
//   ring, local index, batch size and CQ doorbell batch), against the same
//   echo kernel: the agent loop under io_kernel's code generation (255
//   registers, 13,648 B stack frame, spills) with nothing else changed.
// - agent_kernel: the same again in gpunvme-hw's per-role agent kernel
//   (--kernel per-role: io_agents' agent warps in a kernel of their own,
//   launched beside the strategy's compute kernel), the same arguments: the
//   agent loop as the per-role runs compile it.
//
// The agent kernel and the echo kernel are two launches on two non-blocking
// streams (one block each, on different SMs), the agent's first, every kernel
// loaded before (CUDA_MODULE_LOADING=EAGER: lazy loading would hold the echo's
// first launch until the agent kernel ends); both
// agent figures are also timed with CUDA events around the agent kernel, the
// same way for both kernels.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -o agent_pass \
//        tests/hardware/agent_pass.cu sim/frontend/hardware/soft_controller.cpp \
//        sim/frontend/hardware/nvme_target.cpp sim/frontend/hardware/gpu_target.cu
//   agent_pass OUT.json
//
// Each figure is the median over five launches after a warm-up. Every reply
// word must hold status 0 (value 1 in its low half) and every echoed SQE its
// slot's CID, or the program fails.
#include <cuda_runtime.h>

// gpunvme-hw's translation unit, io_kernel included, with its main renamed.
#define main gpunvme_hw_main
#include "sim/frontend/hardware/gpunvme_hw.cu"
#undef main

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "agent_intake.cuh"
#include "hw_bench.cuh"
#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

namespace algo = gpunvme::algo;
namespace nvme = gpunvme::nvme;
namespace platform = gpunvme::platform;
using gpunvme::platform::CudaWarp;

constexpr int kLaunches = 5;
constexpr std::uint32_t kRingEntries = 64;  // intake's SQs, as submission_costs
using agent_intake_bench::kAgentQueues;     // the loop's queues too

// ------------------------------------------------ intake (submission_costs)

using agent_intake_bench::k_agent_intake;
using agent_intake_bench::kAgentPasses;
using agent_intake_bench::kAgentRingEntries;

// ------------------------------------------------- agent_loop with an echo

constexpr unsigned kLoopPasses = 1024;
constexpr std::uint32_t kLoopRequests = 32 * kLoopPasses;
constexpr std::uint32_t kLoopQueueEntries = 256;  // gpunvme-hw's io_agents cases

struct LoopArgs {
  const algo::QueuePair* queues;
  algo::AgentRing ring;
  const std::uint32_t* local_index;
  std::uint64_t shutdown;
  const platform::CudaOpProfile* profile;  // null: unprofiled
  unsigned long long* out_ns;
  unsigned* echo;  // [0] completions posted, [1] CID mismatches, [2] timed out, [3] progress
};

__global__ void k_echo(LoopArgs a) {
  const unsigned lane = threadIdx.x % 32u;
  std::uint32_t seen[kAgentQueues] = {};
  std::uint32_t done = 0;
  unsigned mismatches = 0;
  bool timed_out = false;
  const unsigned long long start = globaltimer();
  while (done < kLoopRequests) {
    for (std::uint32_t i = 0; i < kAgentQueues; ++i) {
      const algo::QueuePair& q = a.queues[i];
      const std::uint32_t tail = *reinterpret_cast<volatile const std::uint32_t*>(q.sq_doorbell);
      const std::uint32_t fresh = (tail + q.entries - seen[i] % q.entries) % q.entries;
      if (fresh == 0) continue;
      __threadfence();
      for (std::uint32_t base = 0; base < fresh; base += 32) {
        const std::uint32_t k = base + lane;
        if (k < fresh) {
          const std::uint32_t position = seen[i] + k;
          const std::uint32_t slot = position % q.entries;
          const std::uint32_t cdw0 = *reinterpret_cast<volatile const std::uint32_t*>(
              q.sq_base + std::uint64_t{slot} * 64);
          const std::uint32_t cid = cdw0 >> 16;
          if (cid != slot) ++mismatches;
          const std::uint32_t phase = algo::detail::expected_phase(position, q.entries);
          auto* e = reinterpret_cast<volatile std::uint32_t*>(q.cq_base + std::uint64_t{slot} * 16);
          e[2] = ((position + 1) % q.entries) | (std::uint32_t{q.qid} << 16);
          e[3] = cid | (phase << 16);  // CID and phase tag in one word
        }
      }
      __syncwarp();
      seen[i] += fresh;
      done += fresh;
    }
    if (lane == 0) *reinterpret_cast<volatile unsigned*>(a.echo + 3) = done;
    if (globaltimer() - start > 5000000000ull) {
      timed_out = true;
      break;
    }
  }
  for (int o = 16; o > 0; o /= 2) mismatches += __shfl_down_sync(0xFFFFFFFFu, mismatches, o);
  __threadfence();
  if (lane == 0) {
    a.echo[0] = done;
    a.echo[1] = mismatches;
    a.echo[2] = timed_out ? 1u : 0u;
    __threadfence();
    *reinterpret_cast<volatile std::uint32_t*>(a.shutdown) = 1;
  }
}

__global__ void k_agent_loop(LoopArgs a) {
  algo::init_warp_scratch();
  CudaWarp p(0, nullptr, a.profile, 1);
  algo::AgentContext c;
  c.w.queues = a.queues;
  c.w.queue_count = kAgentQueues;
  c.w.cq_doorbell_batch = 1;  // gpunvme-hw's value
  c.w.max_batch = 32;
  c.w.iodepth = 1;
  c.ring = a.ring;
  algo::AgentQueue owned[kAgentQueues];
  for (std::uint32_t k = 0; k < kAgentQueues; ++k) {
    owned[k] = algo::AgentQueue{};
    owned[k].queue = k;
  }
  c.owned = owned;
  c.owned_count = kAgentQueues;
  c.local_index = a.local_index;
  c.batch_size = 32;
  c.batch_timeout = 0;
  c.shutdown = a.shutdown;
  __syncwarp();
  const unsigned long long t0 = globaltimer();
  algo::agent_loop(p, c);
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  p.flush_op_profile();
  if (threadIdx.x == 0) *a.out_ns = t1 - t0;
}

// ------------------------------------------------------------------- memory

void* gpu_zeroed(std::size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, bytes));
  CK(cudaMemset(p, 0, bytes));
  return p;
}
std::uint64_t addr(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

// The median of kLaunches timed launches, per `divisor` (hw_bench.cuh).
template <class Launch>
double median_ns(Launch&& launch, unsigned long long* d_ns, double divisor) {
  return median_launch_ns(launch, d_ns, divisor, kLaunches);
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "agent_pass.json";
  // Lazy module loading would load k_echo only at its first launch, which
  // waits for the running agent kernel: the pair would never meet. Load every
  // kernel before the first launch.
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  const cudaDeviceProp prop = device_or_skip("agent_pass");
  {
    cudaFuncAttributes attr{};
    CK(cudaFuncGetAttributes(&attr, k_echo));
    CK(cudaFuncGetAttributes(&attr, k_agent_loop));
    CK(cudaFuncGetAttributes(&attr, k_agent_intake));
    CK(cudaFuncGetAttributes(&attr, gpunvme::hw::io_kernel));
    CK(cudaFuncGetAttributes(&attr, gpunvme::hw::agent_kernel));
  }
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  unsigned long long* d_ns = static_cast<unsigned long long*>(gpu_zeroed(8));
  unsigned* d_sink = static_cast<unsigned*>(gpu_zeroed(4));
  const std::size_t scratch = GPUNVME_WARP_SCRATCH_BYTES;

  // (a) intake alone, as submission_costs (SQs in GPU memory).
  double intake_bare = 0, intake_pass = 0;
  {
    auto d = agent_intake_bench::descriptors(kAgentRingEntries, 0);
    void* desc = gpu_zeroed(d.size() * sizeof d[0]);
    CK(cudaMemcpy(desc, d.data(), d.size() * sizeof d[0], cudaMemcpyHostToDevice));
    std::vector<std::uint32_t> marks(kAgentRingEntries, 1u);
    void* ready = gpu_zeroed(marks.size() * 4);
    CK(cudaMemcpy(ready, marks.data(), marks.size() * 4, cudaMemcpyHostToDevice));
    void* gate = gpu_zeroed(marks.size() * 4);
    algo::AgentRing ring;
    ring.base = addr(desc);
    ring.entries = kAgentRingEntries;
    ring.ready = addr(ready);
    ring.gate = addr(gate);
    std::vector<algo::QueuePair> qs(kAgentQueues);
    for (std::uint32_t i = 0; i < kAgentQueues; ++i) {
      qs[i].sq_base = addr(gpu_zeroed(std::size_t{kRingEntries} * nvme::kSqEntrySize));
      qs[i].agent_table = addr(gpu_zeroed(std::size_t{kRingEntries} * 8));
      qs[i].entries = kRingEntries;
      qs[i].qid = static_cast<std::uint16_t>(i + 1);
    }
    auto* d_queues = static_cast<algo::QueuePair*>(gpu_zeroed(qs.size() * sizeof qs[0]));
    CK(cudaMemcpy(d_queues, qs.data(), qs.size() * sizeof qs[0], cudaMemcpyHostToDevice));
    intake_bare =
        median_ns([&] { k_agent_intake<<<1, 32, scratch>>>(false, ring, d_queues, d_ns, d_sink); },
                  d_ns, kAgentPasses);
    intake_pass =
        median_ns([&] { k_agent_intake<<<1, 32, scratch>>>(true, ring, d_queues, d_ns, d_sink); },
                  d_ns, kAgentPasses) -
        intake_bare;
    unsigned taken = 0;
    CK(cudaMemcpy(&taken, d_sink, 4, cudaMemcpyDeviceToHost));
    if (taken != 32u * kAgentPasses) {
      std::fprintf(stderr, "intake: %u of %u requests taken\n", taken, 32u * kAgentPasses);
      return 1;
    }
    std::printf("intake: %9.1f ns per pass of 32, %7.1f ns per request (bare %.1f)\n", intake_pass,
                intake_pass / 32, intake_bare);
  }

  // (b) agent_loop with an echo warp, unprofiled and profiled.
  void* replies = gpu_zeroed(std::size_t{kLoopRequests} * 8);
  auto d = agent_intake_bench::descriptors(kLoopRequests, addr(replies));
  void* desc = gpu_zeroed(d.size() * sizeof d[0]);
  CK(cudaMemcpy(desc, d.data(), d.size() * sizeof d[0], cudaMemcpyHostToDevice));
  std::vector<std::uint32_t> marks(kLoopRequests, 1u);
  void* ready = gpu_zeroed(marks.size() * 4);
  CK(cudaMemcpy(ready, marks.data(), marks.size() * 4, cudaMemcpyHostToDevice));
  void* gate = gpu_zeroed(marks.size() * 4);
  void* ring_tail = gpu_zeroed(128);
  void* shutdown = gpu_zeroed(128);
  void* doorbells = gpu_zeroed(128 * 2 * kAgentQueues);
  unsigned* d_echo = static_cast<unsigned*>(gpu_zeroed(16));
  std::vector<void*> sqs, cqs, tables;
  std::vector<algo::QueuePair> qs(kAgentQueues);
  for (std::uint32_t i = 0; i < kAgentQueues; ++i) {
    sqs.push_back(gpu_zeroed(std::size_t{kLoopQueueEntries} * nvme::kSqEntrySize));
    cqs.push_back(gpu_zeroed(std::size_t{kLoopQueueEntries} * nvme::kCqEntrySize));
    tables.push_back(gpu_zeroed(std::size_t{kLoopQueueEntries} * 8));
    qs[i].sq_base = addr(sqs[i]);
    qs[i].cq_base = addr(cqs[i]);
    qs[i].agent_table = addr(tables[i]);
    qs[i].entries = kLoopQueueEntries;
    qs[i].qid = static_cast<std::uint16_t>(i + 1);
    qs[i].trace_id = i;
    qs[i].sq_doorbell = addr(doorbells) + std::uint64_t{i} * 256;
    qs[i].cq_doorbell = addr(doorbells) + std::uint64_t{i} * 256 + 128;
  }
  auto* d_queues = static_cast<algo::QueuePair*>(gpu_zeroed(qs.size() * sizeof qs[0]));
  CK(cudaMemcpy(d_queues, qs.data(), qs.size() * sizeof qs[0], cudaMemcpyHostToDevice));
  std::vector<std::uint32_t> local(kAgentQueues);
  for (std::uint32_t i = 0; i < kAgentQueues; ++i) local[i] = i;
  auto* d_local = static_cast<std::uint32_t*>(gpu_zeroed(local.size() * 4));
  CK(cudaMemcpy(d_local, local.data(), local.size() * 4, cudaMemcpyHostToDevice));
  constexpr int kTotals = 2 * platform::CudaOpProfile::kPerRole;
  auto* d_totals = static_cast<unsigned long long*>(gpu_zeroed(kTotals * 8));
  platform::CudaOpProfile profile;
  profile.totals = d_totals;
  auto* d_profile = static_cast<platform::CudaOpProfile*>(gpu_zeroed(sizeof profile));
  CK(cudaMemcpy(d_profile, &profile, sizeof profile, cudaMemcpyHostToDevice));

  LoopArgs a{};
  a.queues = d_queues;
  a.ring.base = addr(desc);
  a.ring.entries = kLoopRequests;
  a.ring.tail = addr(ring_tail);
  a.ring.gate = addr(gate);
  a.ring.ready = addr(ready);
  a.local_index = d_local;
  a.shutdown = addr(shutdown);
  a.out_ns = d_ns;
  a.echo = d_echo;

  auto reset = [&] {
    CK(cudaMemset(gate, 0, marks.size() * 4));
    CK(cudaMemset(replies, 0, std::size_t{kLoopRequests} * 8));
    CK(cudaMemset(shutdown, 0, 128));
    CK(cudaMemset(doorbells, 0, 128 * 2 * kAgentQueues));
    CK(cudaMemset(d_echo, 0, 16));
    for (std::uint32_t i = 0; i < kAgentQueues; ++i) {
      CK(cudaMemset(sqs[i], 0, std::size_t{kLoopQueueEntries} * nvme::kSqEntrySize));
      CK(cudaMemset(cqs[i], 0, std::size_t{kLoopQueueEntries} * nvme::kCqEntrySize));
      CK(cudaMemset(tables[i], 0, std::size_t{kLoopQueueEntries} * 8));
    }
  };
  auto check = [&](const char* what) {
    unsigned echo[3] = {};
    CK(cudaMemcpy(echo, d_echo, sizeof echo, cudaMemcpyDeviceToHost));
    std::vector<std::uint64_t> r(kLoopRequests);
    CK(cudaMemcpy(r.data(), replies, r.size() * 8, cudaMemcpyDeviceToHost));
    std::uint32_t good = 0;
    for (std::uint64_t v : r) good += (v & 0xFFFFFFFFu) == 1u ? 1u : 0u;
    if (echo[0] != kLoopRequests || echo[1] != 0 || echo[2] != 0 || good != kLoopRequests) {
      std::fprintf(stderr,
                   "%s: echoed %u, CID mismatches %u, timed out %u, good replies %u of %u\n", what,
                   echo[0], echo[1], echo[2], good, kLoopRequests);
      std::exit(1);
    }
  };
  // The agent pass in k_agent_loop (kind 0), gpunvme-hw's io_kernel (kind 1)
  // or its per-role agent_kernel (kind 2), unprofiled or profiled; per launch: the agent kernel's event
  // time per 32 requests, k_agent_loop's own globaltimer figure, the split.
  namespace hw = gpunvme::hw;
  std::vector<algo::AgentQueue> owned_init(kAgentQueues);
  for (std::uint32_t i = 0; i < kAgentQueues; ++i) owned_init[i].queue = i;
  auto* d_owned =
      static_cast<algo::AgentQueue*>(gpu_zeroed(owned_init.size() * sizeof owned_init[0]));
  CK(cudaMemcpy(d_owned, owned_init.data(), owned_init.size() * sizeof owned_init[0],
                cudaMemcpyHostToDevice));
  const std::uint32_t first_h[2] = {0, kAgentQueues};
  auto* d_first = static_cast<std::uint32_t*>(gpu_zeroed(8));
  CK(cudaMemcpy(d_first, first_h, 8, cudaMemcpyHostToDevice));
  auto* d_rings = static_cast<algo::AgentRing*>(gpu_zeroed(sizeof(algo::AgentRing)));
  CK(cudaMemcpy(d_rings, &a.ring, sizeof a.ring, cudaMemcpyHostToDevice));
  std::vector<std::uint32_t> agent_of(kAgentQueues, 0u);
  auto* d_agent_of = static_cast<std::uint32_t*>(gpu_zeroed(kAgentQueues * 4));
  CK(cudaMemcpy(d_agent_of, agent_of.data(), kAgentQueues * 4, cudaMemcpyHostToDevice));
  hw::KernelArgs ka{};
  ka.queues = d_queues;
  ka.queue_count = kAgentQueues;
  ka.cq_doorbell_batch = 1;
  ka.max_batch = 32;
  ka.cid_local_bits = 5;
  ka.warps = 0;
  ka.service_warps = 1;
  ka.shutdown = addr(shutdown);
  ka.agents = true;
  ka.rings = d_rings;
  ka.agent_of_queue = d_agent_of;
  ka.agent_queues = d_owned;
  ka.agent_first = d_first;
  ka.agent_local_index = d_local;
  ka.replies = addr(replies);
  ka.batch_size = 32;
  {
    // io_kernel's local memory in place before timing (as gpunvme-hw does).
    hw::KernelArgs none{};
    hw::io_kernel<<<1, 32, scratch>>>(none);
    CK(cudaGetLastError());
    hw::agent_kernel<<<1, 32, scratch>>>(none);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  cudaStream_t s_agent, s_echo;
  CK(cudaStreamCreateWithFlags(&s_agent, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s_echo, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  // A launch that has not ended within 3 s: what the rings say, then exit 3.
  cudaStream_t s_diag;
  CK(cudaStreamCreateWithFlags(&s_diag, cudaStreamNonBlocking));
  auto watchdog = [&](const char* what) {
    const auto start = std::chrono::steady_clock::now();
    while (cudaStreamQuery(s_agent) == cudaErrorNotReady ||
           cudaStreamQuery(s_echo) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) continue;
      unsigned echo[4] = {};
      std::vector<std::uint32_t> bells(256 * kAgentQueues / 4 * 4 / 4 * 1);
      std::vector<std::uint32_t> g(kLoopRequests);
      std::vector<std::uint64_t> r(kLoopRequests);
      std::uint32_t sd = 0;
      cudaMemcpyAsync(echo, d_echo, 16, cudaMemcpyDeviceToHost, s_diag);
      cudaMemcpyAsync(bells.data(), doorbells, 256 * kAgentQueues, cudaMemcpyDeviceToHost, s_diag);
      cudaMemcpyAsync(g.data(), gate, g.size() * 4, cudaMemcpyDeviceToHost, s_diag);
      cudaMemcpyAsync(r.data(), replies, r.size() * 8, cudaMemcpyDeviceToHost, s_diag);
      cudaMemcpyAsync(&sd, shutdown, 4, cudaMemcpyDeviceToHost, s_diag);
      cudaStreamSynchronize(s_diag);
      unsigned taken = 0, good = 0;
      for (auto x : g) taken += x != 0;
      for (auto x : r) good += (x & 0xFFFFFFFFu) == 1u;
      std::printf(
          "%s: not ended after 3 s: agent %s, echo %s; echo posted %u (progress %u), mismatches "
          "%u, "
          "timed out %u; taken %u, replies %u, shutdown %u; SQ tails",
          what, cudaStreamQuery(s_agent) == cudaSuccess ? "ended" : "running",
          cudaStreamQuery(s_echo) == cudaSuccess ? "ended" : "running", echo[0], echo[3], echo[1],
          echo[2], taken, good, sd);
      for (std::uint32_t i = 0; i < kAgentQueues; ++i)
        std::printf(" %u/cq %u", bells[i * 64], bells[i * 64 + 32]);
      std::printf("\n");
      std::fflush(stdout);
      std::_Exit(3);
    }
  };
  const char* const kKernelNames[3] = {"k_agent_loop", "io_kernel", "agent_kernel"};
  constexpr int k = platform::CudaOpProfile::kKinds;
  constexpr int per_role = platform::CudaOpProfile::kPerRole;
  struct Launch {
    double event_ns_per_32 = 0, kernel_ns_per_32 = 0, warp_ns_per_32 = 0, other = 0,
           ns_per_cycle = 0;
    std::vector<double> kinds, calls;  // per 32 requests
  };
  auto run = [&](int kind, bool profiled) {
    std::vector<Launch> out;
    for (int l = 0; l <= kLaunches; ++l) {
      reset();
      CK(cudaMemset(d_totals, 0, kTotals * 8));
      CK(cudaMemset(d_ns, 0, 8));
      CK(cudaDeviceSynchronize());
      a.profile = profiled ? d_profile : nullptr;
      ka.profile = a.profile;
      CK(cudaEventRecord(e0, s_agent));
      if (kind == 0) {
        k_agent_loop<<<1, 32, scratch, s_agent>>>(a);
      } else if (kind == 1) {
        hw::io_kernel<<<1, 32, scratch, s_agent>>>(ka);
      } else {
        hw::agent_kernel<<<1, 32, scratch, s_agent>>>(ka);
      }
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1, s_agent));
      k_echo<<<1, 32, 0, s_echo>>>(a);
      CK(cudaGetLastError());
      watchdog(kKernelNames[kind]);
      CK(cudaDeviceSynchronize());
      check(kKernelNames[kind]);
      Launch r;
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      r.event_ns_per_32 = double(ms) * 1e6 / kLoopPasses;
      unsigned long long ns = 0;
      CK(cudaMemcpy(&ns, d_ns, 8, cudaMemcpyDeviceToHost));
      r.kernel_ns_per_32 = double(ns) / kLoopPasses;
      if (profiled) {
        std::vector<unsigned long long> t(kTotals);
        CK(cudaMemcpy(t.data(), d_totals, kTotals * 8, cudaMemcpyDeviceToHost));
        const unsigned long long* s = t.data() + per_role;  // role 1: service warps
        r.ns_per_cycle = s[2 * k] == 0 ? 0.0 : double(s[2 * k + 1]) / double(s[2 * k]);
        r.warp_ns_per_32 = double(s[2 * k + 1]) / kLoopPasses;
        unsigned long long in_calls = 0;
        for (int i = 0; i < k; ++i) {
          in_calls += s[i];
          r.kinds.push_back(double(s[i]) * r.ns_per_cycle / kLoopPasses);
          r.calls.push_back(double(s[k + i]) / kLoopPasses);
        }
        r.other = (double(s[2 * k]) - double(in_calls)) * r.ns_per_cycle / kLoopPasses;
      }
      if (l > 0) out.push_back(r);
    }
    std::sort(out.begin(), out.end(), [](const Launch& x, const Launch& y) {
      return x.event_ns_per_32 < y.event_ns_per_32;
    });
    return out;
  };

  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(
      f,
      "{\"schema\": \"gpunvme.agent_pass/1\", \"program\": \"tests/hardware/agent_pass.cu\", "
      "\"device\": {\"name\": \"%s\", \"sm_count\": %d, \"compute_capability\": "
      "\"%d.%d\"}, \"launches\": %d,\n",
      prop.name, prop.multiProcessorCount, prop.major, prop.minor, kLaunches);
  std::fprintf(f,
               " \"intake\": {\"passes\": %u, \"queues\": %u, \"queue_entries\": %u, "
               "\"bare_ns_per_pass\": %.2f, \"ns_per_pass\": %.2f, \"ns_per_request\": %.2f},\n",
               kAgentPasses, kAgentQueues, kRingEntries, intake_bare, intake_pass,
               intake_pass / 32);
  std::fprintf(f,
               " \"agent\": {\"requests\": %u, \"queues\": %u, \"queue_entries\": %u, \"rows\": [",
               kLoopRequests, kAgentQueues, kLoopQueueEntries);
  std::fflush(f);
  bool first = true;
  for (int kind = 0; kind < 3; ++kind) {
    for (int profiled = 0; profiled < 2; ++profiled) {
      const std::vector<Launch> v = run(kind, profiled != 0);
      const Launch& m = v[v.size() / 2];
      std::printf(
          "%-12s %-10s: %9.1f ns per 32 requests (events; launches %.1f..%.1f), %7.1f ns per "
          "request",
          kKernelNames[kind], profiled ? "profiled" : "unprofiled", m.event_ns_per_32,
          v.front().event_ns_per_32, v.back().event_ns_per_32, m.event_ns_per_32 / 32);
      if (kind == 0) std::printf("; in-kernel %.1f", m.kernel_ns_per_32);
      std::fprintf(
          f,
          "%s\n  {\"kernel\": \"%s\", \"profiled\": %s, \"event_ns_per_32_requests\": %.2f, "
          "\"event_ns_per_request\": %.2f, \"launch_range_ns_per_32\": [%.2f, %.2f]",
          first ? "" : ",", kKernelNames[kind], profiled ? "true" : "false", m.event_ns_per_32,
          m.event_ns_per_32 / 32, v.front().event_ns_per_32, v.back().event_ns_per_32);
      first = false;
      if (kind == 0)
        std::fprintf(f, ", \"in_kernel_ns_per_32_requests\": %.2f", m.kernel_ns_per_32);
      if (profiled) {
        std::printf("\n    warp %.1f ns per 32: other %.1f", m.warp_ns_per_32, m.other);
        for (int i = 0; i < k; ++i) std::printf(", %s %.1f", platform::kOpKindNames[i], m.kinds[i]);
        std::fprintf(f,
                     ", \"ns_per_cycle\": %.4f, \"warp_ns_per_32_requests\": %.2f, "
                     "\"split_ns_per_32_requests\": {\"other\": %.2f",
                     m.ns_per_cycle, m.warp_ns_per_32, m.other);
        for (int i = 0; i < k; ++i)
          std::fprintf(f, ", \"%s\": %.2f", platform::kOpKindNames[i], m.kinds[i]);
        std::fprintf(f, "}, \"calls_per_32_requests\": {");
        for (int i = 0; i < k; ++i)
          std::fprintf(f, "%s\"%s\": %.2f", i ? ", " : "", platform::kOpKindNames[i], m.calls[i]);
        std::fprintf(f, "}");
      }
      std::fprintf(f, "}");
      std::fflush(f);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  std::fprintf(f, "\n ]}\n}\n");
  std::fclose(f);
  return 0;
}
