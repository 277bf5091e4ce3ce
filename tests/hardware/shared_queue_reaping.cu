// all_threads' turns when several SMs share one queue pair that a target
// serves, with the completions reaped as all_threads reaps them: the
// algorithm library's own submit() and wait() (PerCommand submission, CqScan
// completion, Counter CIDs, sim/core/algo/strategy.h) on 8 queue pairs in GPU
// memory, each served by a feeder warp on an SM of its own that plays the
// NVMe target without data: it samples the SQ tail doorbell word, fetches up
// to 32 new SQEs (bounded by CQ room, from the CQ head doorbell word), holds
// them for a batch line (fixed + per command, the GPU-resident target's
// controller-only calibration) and posts their CQEs after a device-scope
// fence, then waits a gap before its next pass. An observer warp beside each
// feeder polls the SQ tail doorbell word and stamps every tail step (one
// lane's turn) with %globaltimer; the feeder notes which warp each command
// came from (its SQE's SLBA names the warp and lane). No data, no namespace,
// no strategy choice: the case varies only how many blocks (one SM each)
// share a queue, the SQ size and the feeder's timing, and (the *_aggregated
// cases) whether the lanes' same-address atomics are aggregated into one per
// warp (AggregatedAtomicsWarp: a warp's 32 tickets one L2 operation).
//
//   shared_queue_reaping OUT.json
//
// Figures per case (medians over three launches after a warm-up): ns per
// turn per queue (first to last tail step over the steps), the share of
// turns that follow a turn of the same warp, the median and mean gap before
// a turn that follows the same warp's turn and before one that changes warp,
// the feeder's batches (mean commands, median, the share of commands in
// batches of at most 2), the compute warps' op profile (calls and ns per I/O
// by kind of call) and the whole launch's I/Os per second.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "hw_bench.cuh"
#include "sim/core/algo/queue_state.h"
#include "sim/core/algo/strategy.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

namespace algo = gpunvme::algo;
namespace nvme = gpunvme::nvme;
using gpunvme::platform::CudaOpProfile;
using gpunvme::platform::CudaWarp;

constexpr unsigned kQueues = 8;
constexpr unsigned kRounds = 8;  // rounds of 32 reads per warp
constexpr int kLaunches = 3;
constexpr unsigned kMaxWarpsPerQueue = 32;
constexpr unsigned kMaxEntries = 1024;
constexpr unsigned kTurnsPerQueue = kMaxWarpsPerQueue * 32u * kRounds;
constexpr unsigned long long kDeadlineNs = 3000000000ull;  // a feeder gives up after 3 s

// all_threads' policies fixed at compile time, as gpunvme-hw's per-role
// kernel compiles them.
class AllThreadsWarp : public CudaWarp {
 public:
  using CudaWarp::CudaWarp;
  __host__ __device__ static constexpr algo::Strategy fixed_strategy() {
    return algo::named_strategy(algo::NamedStrategy::AllThreads);
  }
};

// The same warp with its lanes' same-address atomicAdds inside for_lanes
// (all_threads' tickets, its Counter CIDs) aggregated: the lanes on one
// address elect a leader that adds for all of them with one atomic, and each
// lane takes its value by rank, so a warp's tickets are one L2 operation and
// no other warp's can come between them. A variant that tells whether the
// tickets of warps on other SMs interleaving with a warp's is what breaks its
// run of turns.
class AggregatedAtomicsWarp : public AllThreadsWarp {
 public:
  using AllThreadsWarp::AllThreadsWarp;
  template <class F>
  __device__ void for_lanes(algo::LaneMask mask, F&& body) {
    in_lanes_here_ = true;
    AllThreadsWarp::for_lanes(mask, body);
    in_lanes_here_ = false;
  }
  template <class F>
  __device__ algo::LaneMask ballot(algo::LaneMask mask, F&& predicate) {
    in_lanes_here_ = true;
    const algo::LaneMask r = AllThreadsWarp::ballot(mask, predicate);
    in_lanes_here_ = false;
    return r;
  }
  __device__ std::uint32_t atomic_add_u32(std::uint64_t addr, std::uint32_t value) {
    if (!in_lanes_here_) return AllThreadsWarp::atomic_add_u32(addr, value);
    const unsigned me = threadIdx.x % 32u;
    const unsigned peers = __match_any_sync(__activemask(), addr);
    const unsigned leader = static_cast<unsigned>(__ffs(peers) - 1);
    std::uint32_t base = 0;
    if (me == leader) base = AllThreadsWarp::atomic_add_u32(addr, value * __popc(peers));
    base = __shfl_sync(peers, base, static_cast<int>(leader));
    return base + value * static_cast<std::uint32_t>(__popc(peers & ((1u << me) - 1u)));
  }

 private:
  bool in_lanes_here_ = false;
};

struct Doorbells {
  unsigned sq_tail;
  unsigned pad0[31];
  unsigned cq_head;
  unsigned pad1[31];
};

struct Args {
  const algo::QueuePair* table;
  Doorbells* doorbells;
  unsigned entries;
  unsigned warps;
  unsigned fixed_ns, per_command_ns, gap_ns;
  unsigned cid_local_bits;
  std::uint64_t buffers;
  unsigned* finished;
  unsigned* stop;
  unsigned* timed_out;
  CudaOpProfile profile;
  // Per queue: the warp of each command in SQ order (feeder), the time of
  // each tail step (observer), the feeder's batch sizes and their count.
  unsigned* warp_of;
  unsigned long long* step_ns;
  unsigned* batch_sizes;
  unsigned* batch_count;
  unsigned long long* first_ns;
  unsigned long long* last_ns;
  unsigned* block_sm;  // the SM each compute block ran on
};

template <unsigned kThreads, class Warp = AllThreadsWarp>
__global__ void __launch_bounds__(kThreads) k_compute(Args a) {
  algo::init_warp_scratch();
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  const unsigned lane = threadIdx.x % 32u;
  if (w >= a.warps) return;
  Warp p(0, nullptr, &a.profile, 0);
  algo::WarpContext c;
  c.queues = a.table;
  c.queue_count = kQueues;
  c.strategy = AllThreadsWarp::fixed_strategy();
  c.cq_doorbell_batch = 1;
  c.max_batch = 32;
  c.cid_local_bits = a.cid_local_bits;
  c.iodepth = 1;
  algo::Lanes<algo::Pending> round;
  c.rounds = &round;
  c.round_count = 1;
  const unsigned queue = blockIdx.x % kQueues;
  if (lane == 0) atomicMin(a.first_ns, globaltimer());
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    a.block_sm[blockIdx.x] = sm;
  }
  for (unsigned r = 0; r < kRounds; ++r) {
    algo::Lanes<algo::IoRequest> request;
    algo::IoRequest& req = request[lane];
    req.opcode = nvme::NvmOpcode::Read;
    req.slba = (std::uint64_t{w} << 5) | lane;  // the feeder reads the warp back
    req.nlb_zero_based = 0;
    req.buffer = a.buffers + (std::uint64_t{w} * 32u + lane) * 512u;
    req.bytes = 512;
    req.queue = queue;
    req.pool_index = 0;
    __syncwarp();
    round.fill(algo::Pending{});
    algo::submit(p, c, algo::kAllLanes, request, round);
    algo::wait(p, c, round, algo::kAllLanes);
    __syncwarp();
  }
  p.flush_op_profile();
  if (lane == 0) {
    atomicMax(a.last_ns, globaltimer());
    __threadfence();
    if (atomicAdd(a.finished, 1u) + 1u == a.warps) {
      *reinterpret_cast<volatile unsigned*>(a.stop) = 1u;
      __threadfence();
    }
  }
}

__device__ __forceinline__ unsigned load_volatile(const unsigned* at) {
  return *reinterpret_cast<const volatile unsigned*>(at);
}

// Block q: warp 0 the feeder of queue q, warp 1 its observer.
__global__ void k_feeder(Args a) {
  const unsigned q = blockIdx.x;
  const unsigned warp = threadIdx.x / 32u;
  const unsigned lane = threadIdx.x % 32u;
  const algo::QueuePair& qp = a.table[q];
  Doorbells& db = a.doorbells[q];
  const unsigned n = a.entries;
  const unsigned long long deadline = globaltimer() + kDeadlineNs;
  if (warp == 1) {
    if (lane != 0) return;
    unsigned last = 0, seq = 0;
    for (;;) {
      const unsigned v = load_volatile(&db.sq_tail);
      if (v != last) {
        const unsigned long long t = globaltimer();
        const unsigned steps = (v + n - last) % n;
        for (unsigned i = 0; i < steps && seq + i < kTurnsPerQueue; ++i) {
          a.step_ns[std::uint64_t{q} * kTurnsPerQueue + seq + i] = t;
        }
        seq += steps;
        last = v;
      } else if (load_volatile(a.stop) != 0 || globaltimer() > deadline) {
        return;
      }
    }
  }
  std::uint32_t sq_head = 0, cq_tail = 0;  // monotonic counts
  for (;;) {
    unsigned tail_value = 0, head_value = 0;
    if (lane == 0) {
      tail_value = load_volatile(&db.sq_tail);
      head_value = load_volatile(&db.cq_head);
    }
    tail_value = __shfl_sync(0xFFFFFFFFu, tail_value, 0);
    head_value = __shfl_sync(0xFFFFFFFFu, head_value, 0);
    const unsigned waiting = (tail_value + n - sq_head % n) % n;
    const unsigned room = n - 1u - (cq_tail % n + n - head_value) % n;
    unsigned count = waiting < room ? waiting : room;
    if (count > 32u) count = 32u;
    if (count == 0) {
      unsigned quit = 0;
      if (lane == 0) {
        quit = load_volatile(a.stop) != 0 ? 1u : 0u;
        if (quit == 0 && globaltimer() > deadline) {
          atomicAdd(a.timed_out, 1u);
          quit = 1;
        }
      }
      if (__shfl_sync(0xFFFFFFFFu, quit, 0) != 0) break;
      continue;
    }
    // The submitters wrote the SQEs before the doorbell, with a fence between.
    __threadfence();
    const unsigned long long fetched = globaltimer();
    const bool mine = lane < count;
    std::uint16_t cid = 0;
    if (mine) {
      const uint4* at =
          reinterpret_cast<const uint4*>(qp.sq_base + std::uint64_t{(sq_head + lane) % n} * 64u);
      uint4 words[4];
      for (int k = 0; k < 4; ++k) words[k] = __ldcg(at + k);
      nvme::SubmissionEntry e{};
      memcpy(&e, words, sizeof e);
      cid = e.cid();
      const std::uint64_t slba = e.cdw10 | (std::uint64_t{e.cdw11} << 32);
      const unsigned seq = sq_head + lane;
      if (seq < kTurnsPerQueue) {
        a.warp_of[std::uint64_t{q} * kTurnsPerQueue + seq] = static_cast<unsigned>(slba >> 5);
      }
    }
    // The batch line: the target's controller-only time for this many commands.
    const unsigned long long until = fetched + a.fixed_ns + std::uint64_t{a.per_command_ns} * count;
    while (globaltimer() < until) {
    }
    sq_head += count;
    if (mine) {
      const std::uint32_t position = cq_tail + lane;
      nvme::CompletionEntry c{};
      c.sqhd = static_cast<std::uint16_t>(sq_head % n);
      c.sqid = qp.qid;
      c.cid = cid;
      c.status_field = static_cast<std::uint16_t>(algo::detail::expected_phase(position, n));
      uint4 v;
      memcpy(&v, &c, sizeof v);
      __stcg(reinterpret_cast<uint4*>(qp.cq_base + std::uint64_t{position % n} * 16u), v);
    }
    __threadfence();
    cq_tail += count;
    if (lane == 0) {
      const unsigned b = a.batch_count[q]++;
      if (b < kTurnsPerQueue) a.batch_sizes[std::uint64_t{q} * kTurnsPerQueue + b] = count;
    }
    const unsigned long long gap_end = globaltimer() + a.gap_ns;
    while (globaltimer() < gap_end) {
    }
  }
}

struct Case {
  const char* name;
  unsigned share;          // blocks (SMs) per queue
  unsigned block_threads;  // 256: 8 warps a block; 1024: the queue's 32 warps on one SM
  unsigned entries;
  unsigned fixed_ns, per_command_ns, gap_ns;
  bool aggregated = false;  // AggregatedAtomicsWarp
};

struct Figures {
  double ns_per_turn = 0, same_warp_share = 0;
  double gap_same_median = 0, gap_same_mean = 0, gap_change_median = 0, gap_change_mean = 0;
  double batch_mean = 0, batch_median = 0, small_batch_command_share = 0;
  double iops = 0;
  unsigned long long timed_out = 0;
  unsigned sms_per_queue_min = 0;  // the fewest distinct SMs a queue's blocks ran on
  unsigned sms_total = 0;          // distinct SMs of all compute blocks
  double calls_per_io[CudaOpProfile::kKinds] = {};
  double ns_per_io[CudaOpProfile::kKinds] = {};
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

struct Device {
  unsigned char* arena = nullptr;
  std::size_t arena_bytes = 0;
  Doorbells* doorbells = nullptr;
  algo::QueuePair* table = nullptr;
  unsigned *finished = nullptr, *stop = nullptr, *timed_out = nullptr;
  unsigned long long* totals = nullptr;
  unsigned *warp_of = nullptr, *batch_sizes = nullptr, *batch_count = nullptr;
  unsigned long long *step_ns = nullptr, *first_ns = nullptr, *last_ns = nullptr;
  unsigned char* buffers = nullptr;
  unsigned* block_sm = nullptr;
};

// Waits for a launch's two kernels. One that has not ended after
// kLaunchLimitS is reported, with the feeders' and compute warps' progress
// copied on a third stream while they still run, and the program exits 3
// (rather than be killed by the run script's timeout with nothing said).
constexpr double kLaunchLimitS = 10.0;
void wait_or_report(const Case& c, int launch, const Device& d, unsigned n,
                    cudaStream_t feed_stream, cudaStream_t compute_stream) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t feed = cudaStreamQuery(feed_stream);
    const cudaError_t compute = cudaStreamQuery(compute_stream);
    if (feed != cudaErrorNotReady && compute != cudaErrorNotReady) {
      CK(cudaDeviceSynchronize());
      std::fprintf(stderr, "%s launch %d ended\n", c.name, launch);
      return;
    }
    const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
    if (waited.count() < kLaunchLimitS) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    cudaStream_t look;
    CK(cudaStreamCreateWithFlags(&look, cudaStreamNonBlocking));
    unsigned finished = 0, stopped = 0, timed_out = 0;
    std::vector<unsigned> batches(kQueues);
    std::vector<Doorbells> bells(kQueues);
    CK(cudaMemcpyAsync(&finished, d.finished, 4, cudaMemcpyDeviceToHost, look));
    CK(cudaMemcpyAsync(&stopped, d.stop, 4, cudaMemcpyDeviceToHost, look));
    CK(cudaMemcpyAsync(&timed_out, d.timed_out, 4, cudaMemcpyDeviceToHost, look));
    CK(cudaMemcpyAsync(batches.data(), d.batch_count, kQueues * 4, cudaMemcpyDeviceToHost, look));
    CK(cudaMemcpyAsync(bells.data(), d.doorbells, kQueues * sizeof(Doorbells),
                       cudaMemcpyDeviceToHost, look));
    CK(cudaStreamSynchronize(look));
    std::fprintf(stderr,
                 "%s launch %d: not ended after %.0f s (feeder %s, compute %s); warps finished "
                 "%u, stop %u, feeders timed out %u\n",
                 c.name, launch, waited.count(), feed == cudaErrorNotReady ? "running" : "ended",
                 compute == cudaErrorNotReady ? "running" : "ended", finished, stopped, timed_out);
    for (unsigned q = 0; q < kQueues; ++q) {
      std::fprintf(stderr, "  queue %u: feeder batches %u, SQ tail %u, CQ head %u (of %u)\n", q,
                   batches[q], bells[q].sq_tail, bells[q].cq_head, n);
    }
    std::exit(3);
  }
}

Figures run_case(const Case& c, Device& d) {
  const unsigned warps = kQueues * c.share * (c.block_threads / 32u);
  const unsigned tpb = c.block_threads;
  const unsigned blocks = warps * 32u / tpb;
  const unsigned n = c.entries;
  const unsigned cid_space = algo::cid_space_for(
      algo::named_strategy(algo::NamedStrategy::AllThreads).cid, 0, n, warps / kQueues, 1);
  std::vector<algo::QueuePair> table(kQueues);
  std::size_t used = 0;
  auto allocate = [&](std::uint64_t bytes, std::uint64_t align) {
    used = (used + align - 1) / align * align;
    const std::uint64_t at = reinterpret_cast<std::uint64_t>(d.arena) + used;
    used += bytes;
    if (used > d.arena_bytes) {
      std::fprintf(stderr, "arena too small\n");
      std::exit(1);
    }
    return at;
  };
  for (unsigned i = 0; i < kQueues; ++i) {
    algo::QueuePair& q = table[i];
    q.trace_id = i;
    q.qid = static_cast<std::uint16_t>(i + 1);
    q.entries = n;
    q.sq_base = allocate(std::uint64_t{n} * 64u, 4096);
    q.cq_base = allocate(std::uint64_t{n} * 16u, 4096);
    q.sq_doorbell = reinterpret_cast<std::uint64_t>(&d.doorbells[i].sq_tail);
    q.cq_doorbell = reinterpret_cast<std::uint64_t>(&d.doorbells[i].cq_head);
    algo::place_queue_state(q, cid_space, false, allocate);
  }
  CK(cudaMemcpy(d.table, table.data(), kQueues * sizeof(algo::QueuePair), cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(k_compute<1024>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          32 * GPUNVME_WARP_SCRATCH_BYTES));
  cudaStream_t feed_stream, compute_stream;
  CK(cudaStreamCreateWithFlags(&feed_stream, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&compute_stream, cudaStreamNonBlocking));
  {
    // An empty launch (no warps) first: whatever the driver sets up at a
    // kernel's first launch is done before a feeder runs (see main).
    Args none{};
    const std::size_t smem = std::size_t{tpb / 32u} * GPUNVME_WARP_SCRATCH_BYTES;
    if (tpb == 1024) {
      k_compute<1024><<<1, tpb, smem, compute_stream>>>(none);
    } else if (c.aggregated) {
      k_compute<256, AggregatedAtomicsWarp><<<1, tpb, smem, compute_stream>>>(none);
    } else {
      k_compute<256><<<1, tpb, smem, compute_stream>>>(none);
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  std::vector<double> per_turn, same_share, gs_med, gs_mean, gc_med, gc_mean, b_mean, b_med,
      small_share, iops;
  std::vector<double> calls[CudaOpProfile::kKinds], ns[CudaOpProfile::kKinds];
  unsigned long long timed_out_total = 0;
  unsigned sms_per_queue_min = ~0u, sms_total = 0;
  const std::size_t log_words = std::size_t{kQueues} * kTurnsPerQueue;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(d.arena, 0, used));
    CK(cudaMemset(d.doorbells, 0, kQueues * sizeof(Doorbells)));
    CK(cudaMemset(d.finished, 0, sizeof(unsigned)));
    CK(cudaMemset(d.stop, 0, sizeof(unsigned)));
    CK(cudaMemset(d.timed_out, 0, sizeof(unsigned)));
    CK(cudaMemset(d.totals, 0, 2 * CudaOpProfile::kPerRole * sizeof(unsigned long long)));
    CK(cudaMemset(d.warp_of, 0xFF, log_words * sizeof(unsigned)));
    CK(cudaMemset(d.step_ns, 0, log_words * sizeof(unsigned long long)));
    CK(cudaMemset(d.batch_sizes, 0, log_words * sizeof(unsigned)));
    CK(cudaMemset(d.batch_count, 0, kQueues * sizeof(unsigned)));
    CK(cudaMemset(d.first_ns, 0xFF, sizeof(unsigned long long)));
    CK(cudaMemset(d.last_ns, 0, sizeof(unsigned long long)));
    CK(cudaDeviceSynchronize());
    Args a{};
    a.table = d.table;
    a.doorbells = d.doorbells;
    a.entries = n;
    a.warps = warps;
    a.fixed_ns = c.fixed_ns;
    a.per_command_ns = c.per_command_ns;
    a.gap_ns = c.gap_ns;
    a.cid_local_bits = algo::local_cid_bits(1);
    a.buffers = reinterpret_cast<std::uint64_t>(d.buffers);
    a.finished = d.finished;
    a.stop = d.stop;
    a.timed_out = d.timed_out;
    a.profile.totals = d.totals;
    a.warp_of = d.warp_of;
    a.step_ns = d.step_ns;
    a.batch_sizes = d.batch_sizes;
    a.batch_count = d.batch_count;
    a.first_ns = d.first_ns;
    a.last_ns = d.last_ns;
    a.block_sm = d.block_sm;
    k_feeder<<<kQueues, 64, 0, feed_stream>>>(a);
    CK(cudaGetLastError());
    const std::size_t smem = std::size_t{tpb / 32u} * GPUNVME_WARP_SCRATCH_BYTES;
    if (tpb == 1024) {
      k_compute<1024><<<blocks, tpb, smem, compute_stream>>>(a);
    } else if (c.aggregated) {
      k_compute<256, AggregatedAtomicsWarp><<<blocks, tpb, smem, compute_stream>>>(a);
    } else {
      k_compute<256><<<blocks, tpb, smem, compute_stream>>>(a);
    }
    CK(cudaGetLastError());
    wait_or_report(c, launch, d, n, feed_stream, compute_stream);
    if (launch == 0) continue;
    const unsigned turns = warps / kQueues * 32u * kRounds;
    std::vector<unsigned> warp_of(log_words), sizes(log_words), bcount(kQueues);
    std::vector<unsigned long long> steps(log_words), totals(2 * CudaOpProfile::kPerRole);
    unsigned long long first = 0, last = 0;
    unsigned to = 0;
    CK(cudaMemcpy(warp_of.data(), d.warp_of, log_words * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(sizes.data(), d.batch_sizes, log_words * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(bcount.data(), d.batch_count, kQueues * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(steps.data(), d.step_ns, log_words * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(totals.data(), d.totals, totals.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&first, d.first_ns, 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&last, d.last_ns, 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&to, d.timed_out, 4, cudaMemcpyDeviceToHost));
    timed_out_total += to;
    {
      std::vector<unsigned> sm(blocks);
      CK(cudaMemcpy(sm.data(), d.block_sm, blocks * 4, cudaMemcpyDeviceToHost));
      std::vector<unsigned> all(sm);
      std::sort(all.begin(), all.end());
      sms_total = std::max<unsigned>(
          sms_total, static_cast<unsigned>(std::unique(all.begin(), all.end()) - all.begin()));
      for (unsigned q = 0; q < kQueues; ++q) {
        std::vector<unsigned> mine;
        for (unsigned b = q; b < blocks; b += kQueues) mine.push_back(sm[b]);
        std::sort(mine.begin(), mine.end());
        const auto distinct =
            static_cast<unsigned>(std::unique(mine.begin(), mine.end()) - mine.begin());
        sms_per_queue_min = std::min(sms_per_queue_min, distinct);
      }
    }
    std::vector<double> q_turn, gaps_same, gaps_change, batch_sizes;
    unsigned long long same = 0, pairs = 0, small_commands = 0, commands = 0;
    for (unsigned q = 0; q < kQueues; ++q) {
      const unsigned long long* t = &steps[std::size_t{q} * kTurnsPerQueue];
      const unsigned* wq = &warp_of[std::size_t{q} * kTurnsPerQueue];
      q_turn.push_back(double(t[turns - 1] - t[0]) / (turns - 1));
      for (unsigned k = 1; k < turns; ++k) {
        const double gap = double(t[k] - t[k - 1]);
        ++pairs;
        if (wq[k] == wq[k - 1]) {
          ++same;
          gaps_same.push_back(gap);
        } else {
          gaps_change.push_back(gap);
        }
      }
      for (unsigned b = 0; b < bcount[q] && b < kTurnsPerQueue; ++b) {
        const unsigned s = sizes[std::size_t{q} * kTurnsPerQueue + b];
        batch_sizes.push_back(s);
        commands += s;
        if (s <= 2) small_commands += s;
      }
    }
    per_turn.push_back(median_of(q_turn));
    same_share.push_back(double(same) / pairs);
    gs_med.push_back(median_of(gaps_same));
    gs_mean.push_back(mean_of(gaps_same));
    gc_med.push_back(median_of(gaps_change));
    gc_mean.push_back(mean_of(gaps_change));
    b_mean.push_back(mean_of(batch_sizes));
    b_med.push_back(median_of(batch_sizes));
    small_share.push_back(commands ? double(small_commands) / commands : 0);
    iops.push_back(last > first ? 1e9 * warps * 32.0 * kRounds / double(last - first) : 0);
    const int k = CudaOpProfile::kKinds;
    const double ns_per_cycle = totals[2 * k] ? double(totals[2 * k + 1]) / totals[2 * k] : 0;
    const double ios = double(warps) * 32.0 * kRounds;
    for (int i = 0; i < k; ++i) {
      calls[i].push_back(double(totals[k + i]) / ios);
      ns[i].push_back(double(totals[i]) * ns_per_cycle / ios);
    }
  }
  CK(cudaStreamDestroy(feed_stream));
  CK(cudaStreamDestroy(compute_stream));
  Figures f;
  f.ns_per_turn = median_of(per_turn);
  f.same_warp_share = median_of(same_share);
  f.gap_same_median = median_of(gs_med);
  f.gap_same_mean = median_of(gs_mean);
  f.gap_change_median = median_of(gc_med);
  f.gap_change_mean = median_of(gc_mean);
  f.batch_mean = median_of(b_mean);
  f.batch_median = median_of(b_med);
  f.small_batch_command_share = median_of(small_share);
  f.iops = median_of(iops);
  f.timed_out = timed_out_total;
  f.sms_per_queue_min = sms_per_queue_min;
  f.sms_total = sms_total;
  for (int i = 0; i < CudaOpProfile::kKinds; ++i) {
    f.calls_per_io[i] = median_of(calls[i]);
    f.ns_per_io[i] = median_of(ns[i]);
  }
  return f;
}

// The turn chain alone (shared_queue_turns.cu's pattern: submission.h's turn
// code, no target, no completions), counting what a holder's re-read of the
// turn word sees: after a warp's own turn t, when it also holds ticket t + 1,
// its next ballot should find that lane's turn at once; a ballot that does
// not is a miss, which all_threads' loop would answer by reaping and waiting.
struct TurnWords {
  unsigned ticket;
  unsigned pad0[31];
  unsigned turn;
  unsigned pad1[31];
  unsigned doorbell;
  unsigned pad2[31];
};

__global__ void __launch_bounds__(256)
    k_turn_reread(unsigned warps, unsigned* arrived, const algo::QueuePair* descriptors,
                  unsigned long long* counts) {
  algo::init_warp_scratch();
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (w >= warps) return;
  CudaWarp p;
  algo::IoRequest request;
  request.bytes = 512;
  request.buffer = 0x100000000ull + std::uint64_t{threadIdx.x} * 512u;
  wait_for_all_warps(arrived, warps);
  const algo::QueuePair& dq = descriptors[blockIdx.x % kQueues];
  unsigned long long followed = 0, missed = 0, extra_ballots = 0;
  for (unsigned r = 0; r < kRounds; ++r) {
    algo::Lanes<std::uint32_t> ticket;
    p.for_lanes(algo::kAllLanes, [&](int lane) { ticket[lane] = p.atomic_add_u32(dq.ticket, 1u); });
    p.for_lanes(algo::kAllLanes, [&](int lane) {
      request.slba = ticket[lane];
      algo::detail::write_sqe(p, dq, ticket[lane] % dq.entries, ticket[lane] % 65536u, request);
    });
    p.fence_system();
    algo::LaneMask need_turn = algo::kAllLanes;
    bool expect = false;  // the last turn was this warp's and it holds the next ticket
    bool first = false;   // the next ballot is the first re-read after that turn
    while (need_turn != 0) {
      const algo::LaneMask mine =
          p.ballot(need_turn, [&](int lane) { return p.load_u32(dq.turn) == ticket[lane]; });
      if (expect && first) {
        if (mine == 0) {
          ++missed;
        } else {
          ++followed;
        }
        first = false;
      }
      if (mine == 0) {
        if (expect) ++extra_ballots;
        continue;
      }
      const int lane = algo::first_lane(mine);
      const std::uint32_t t = ticket[lane];
      algo::detail::ring_sq(p, dq, t % dq.entries, (t + 1u) % dq.entries);
      p.fence_system();
      p.store_u32(dq.turn, t + 1u);
      need_turn &= ~mine;
      expect = false;
      algo::for_each_lane(p, need_turn, [&](int l) {
        if (ticket[l] == t + 1u) expect = true;
      });
      first = expect;
    }
  }
  if (threadIdx.x % 32u == 0) {
    atomicAdd(&counts[0], followed);
    atomicAdd(&counts[1], missed);
    atomicAdd(&counts[2], extra_ballots);
  }
}

struct Reread {
  double miss_share = 0;  // first re-reads after an own turn that missed
  double extra_ballots_per_miss = 0;
  double ns_per_turn = 0;  // whole launch: its time over the turns of one queue
};

Reread run_reread(unsigned share) {
  const unsigned warps = kQueues * share * 8u;
  const unsigned blocks = warps / 8u;
  TurnWords* words = nullptr;
  unsigned char* sqs = nullptr;
  algo::QueuePair* descriptors = nullptr;
  unsigned* arrived = nullptr;
  unsigned long long* counts = nullptr;
  CK(cudaMalloc(&words, kQueues * sizeof(TurnWords)));
  CK(cudaMalloc(&sqs, std::size_t{kQueues} * 256u * 64u));
  CK(cudaMalloc(&descriptors, kQueues * sizeof(algo::QueuePair)));
  CK(cudaMalloc(&arrived, sizeof(unsigned)));
  CK(cudaMalloc(&counts, 3 * sizeof(unsigned long long)));
  std::vector<algo::QueuePair> table(kQueues);
  for (unsigned q = 0; q < kQueues; ++q) {
    const auto base = reinterpret_cast<std::uint64_t>(words + q);
    table[q].trace_id = q;
    table[q].entries = 256;
    table[q].sq_base = reinterpret_cast<std::uint64_t>(sqs) + std::uint64_t{q} * 256u * 64u;
    table[q].ticket = base + offsetof(TurnWords, ticket);
    table[q].turn = base + offsetof(TurnWords, turn);
    table[q].sq_doorbell = base + offsetof(TurnWords, doorbell);
  }
  CK(cudaMemcpy(descriptors, table.data(), kQueues * sizeof(algo::QueuePair),
                cudaMemcpyHostToDevice));
  std::vector<double> shares, per_miss, per_turn;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(words, 0, kQueues * sizeof(TurnWords)));
    CK(cudaMemset(arrived, 0, sizeof(unsigned)));
    CK(cudaMemset(counts, 0, 3 * sizeof(unsigned long long)));
    cudaEvent_t start, stop;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&stop));
    CK(cudaEventRecord(start));
    k_turn_reread<<<blocks, 256, 8 * GPUNVME_WARP_SCRATCH_BYTES>>>(warps, arrived, descriptors,
                                                                   counts);
    CK(cudaGetLastError());
    CK(cudaEventRecord(stop));
    CK(cudaDeviceSynchronize());
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(stop));
    if (launch == 0) continue;
    unsigned long long c[3] = {};
    CK(cudaMemcpy(c, counts, sizeof c, cudaMemcpyDeviceToHost));
    const double tries = double(c[0] + c[1]);
    shares.push_back(tries > 0 ? double(c[1]) / tries : 0);
    per_miss.push_back(c[1] > 0 ? double(c[2]) / double(c[1]) : 0);
    per_turn.push_back(1e6 * ms / (double(warps / kQueues) * 32.0 * kRounds));
  }
  CK(cudaFree(words));
  CK(cudaFree(sqs));
  CK(cudaFree(descriptors));
  CK(cudaFree(arrived));
  CK(cudaFree(counts));
  return {median_of(shares), median_of(per_miss), median_of(per_turn)};
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "shared_queue_reaping.json";
  // A second argument "reread" runs only the turn chain's re-read count.
  const bool reread_only = argc > 2 && std::strcmp(argv[2], "reread") == 0;
  // The feeder and the compute kernel run at once and wait on each other, so
  // no launch may wait for a running kernel. Lazy module loading would load
  // the compute kernel only at its first launch, and a launch that grows the
  // local-memory pool waits for every running kernel (the compute kernel's
  // first does): the feeder would give up at its deadline with no command
  // served and the compute warps wait for ever. Every kernel is loaded
  // before the first launch, the pool kept at its largest, and each compute
  // kernel launched once, empty, before the feeder starts (run_case).
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);
  CK(cudaSetDeviceFlags(cudaDeviceLmemResizeToMax));
  const cudaDeviceProp prop = device_or_skip("shared_queue_reaping");
  {
    cudaFuncAttributes attr{};
    CK(cudaFuncGetAttributes(&attr, k_feeder));
    CK(cudaFuncGetAttributes(&attr, k_compute<256>));
    CK(cudaFuncGetAttributes(&attr, k_compute<1024>));
    CK(cudaFuncGetAttributes(&attr, k_compute<256, AggregatedAtomicsWarp>));
    CK(cudaFuncGetAttributes(&attr, k_turn_reread));
  }
  Device d;
  d.arena_bytes =
      std::size_t{kQueues} * (std::size_t{kMaxEntries} * 80u + 8u * 128u + 3u * kMaxEntries * 4u +
                              65536u * 4u + 65536u / 8u + 64u * 1024u);
  const std::size_t log_words = std::size_t{kQueues} * kTurnsPerQueue;
  CK(cudaMalloc(&d.arena, d.arena_bytes));
  CK(cudaMalloc(&d.doorbells, kQueues * sizeof(Doorbells)));
  CK(cudaMalloc(&d.table, kQueues * sizeof(algo::QueuePair)));
  CK(cudaMalloc(&d.finished, sizeof(unsigned)));
  CK(cudaMalloc(&d.stop, sizeof(unsigned)));
  CK(cudaMalloc(&d.timed_out, sizeof(unsigned)));
  CK(cudaMalloc(&d.totals, 2 * CudaOpProfile::kPerRole * sizeof(unsigned long long)));
  CK(cudaMalloc(&d.warp_of, log_words * sizeof(unsigned)));
  CK(cudaMalloc(&d.step_ns, log_words * sizeof(unsigned long long)));
  CK(cudaMalloc(&d.batch_sizes, log_words * sizeof(unsigned)));
  CK(cudaMalloc(&d.batch_count, kQueues * sizeof(unsigned)));
  CK(cudaMalloc(&d.first_ns, sizeof(unsigned long long)));
  CK(cudaMalloc(&d.last_ns, sizeof(unsigned long long)));
  CK(cudaMalloc(&d.block_sm, 256 * sizeof(unsigned)));
  CK(cudaMalloc(&d.buffers, std::size_t{kQueues} * kMaxWarpsPerQueue * 32u * 512u));
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  // The batch line and gap: the GPU-resident target's controller-only
  // calibration on the H200 (validate-gpu-target-perrole-h200-2026-11-28-footprint.json:
  // batch_overhead_ns 1881.2, command_overhead_ns 1222.2, batch_gap_ns 5420.2).
  const Case cases[] = {
      {"share1", 1, 256, 256, 1881, 1222, 5420},
      {"share2", 2, 256, 256, 1881, 1222, 5420},
      {"share4", 4, 256, 256, 1881, 1222, 5420},
      {"share4_entries1024", 4, 256, 1024, 1881, 1222, 5420},
      {"one_sm_32warps", 1, 1024, 256, 1881, 1222, 5420},
      {"share1_instant", 1, 256, 256, 0, 0, 0},
      {"share4_instant", 4, 256, 256, 0, 0, 0},
      {"share1_aggregated", 1, 256, 256, 1881, 1222, 5420, true},
      {"share2_aggregated", 2, 256, 256, 1881, 1222, 5420, true},
      {"share4_aggregated", 4, 256, 256, 1881, 1222, 5420, true},
  };
  std::fprintf(f,
               "{\"schema\": \"gpunvme.shared_queue_reaping/1\", \"program\": "
               "\"tests/hardware/shared_queue_reaping.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"queues\": %u, "
               "\"rounds_per_warp\": %u, \"launches\": %d,\n \"rows\": [\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kQueues, kRounds,
               kLaunches);
  bool first = true;
  for (const Case& c : cases) {
    if (reread_only) break;
    const Figures r = run_case(c, d);
    std::fprintf(f,
                 "%s  {\"case\": \"%s\", \"blocks_per_queue\": %u, \"block_threads\": %u, "
                 "\"warps_per_queue\": %u, \"entries\": %u, \"batch_fixed_ns\": %u, "
                 "\"batch_per_command_ns\": %u, \"batch_gap_ns\": %u, \"ns_per_turn\": %.1f, "
                 "\"same_warp_turn_share\": %.4f, \"gap_same_warp_median_ns\": %.1f, "
                 "\"gap_same_warp_mean_ns\": %.1f, \"gap_warp_change_median_ns\": %.1f, "
                 "\"gap_warp_change_mean_ns\": %.1f, \"batch_mean\": %.2f, \"batch_median\": "
                 "%.1f, \"small_batch_command_share\": %.4f, \"iops\": %.0f, \"timed_out\": "
                 "%llu, \"sms_per_queue_min\": %u, \"sms_total\": %u, \"aggregated_atomics\": "
                 "%s,\n   \"calls_per_io\": {",
                 first ? "" : ",\n", c.name, c.share, c.block_threads,
                 c.share * (c.block_threads / 32u), c.entries, c.fixed_ns, c.per_command_ns,
                 c.gap_ns, r.ns_per_turn, r.same_warp_share, r.gap_same_median, r.gap_same_mean,
                 r.gap_change_median, r.gap_change_mean, r.batch_mean, r.batch_median,
                 r.small_batch_command_share, r.iops, r.timed_out, r.sms_per_queue_min, r.sms_total,
                 c.aggregated ? "true" : "false");
    for (int i = 0; i < CudaOpProfile::kKinds; ++i) {
      std::fprintf(f, "%s\"%s\": %.4f", i ? ", " : "", gpunvme::platform::kOpKindNames[i],
                   r.calls_per_io[i]);
    }
    std::fprintf(f, "},\n   \"ns_per_io\": {");
    for (int i = 0; i < CudaOpProfile::kKinds; ++i) {
      std::fprintf(f, "%s\"%s\": %.1f", i ? ", " : "", gpunvme::platform::kOpKindNames[i],
                   r.ns_per_io[i]);
    }
    std::fprintf(f, "}}");
    std::fflush(f);
    first = false;
    std::printf(
        "%-20s %u blocks x %u threads a queue, %4u entries: %7.1f ns/turn, same warp %.3f, gap "
        "same %6.0f/%6.0f change %6.0f/%6.0f ns, batches %.1f (p50 %.0f, %.2f in <=2), %.2f M "
        "IOPS, timed out %llu, SMs a queue >= %u\n",
        c.name, c.share, c.block_threads, c.entries, r.ns_per_turn, r.same_warp_share,
        r.gap_same_median, r.gap_same_mean, r.gap_change_median, r.gap_change_mean, r.batch_mean,
        r.batch_median, r.small_batch_command_share, r.iops / 1e6, r.timed_out,
        r.sms_per_queue_min);
    std::fflush(stdout);
  }
  std::fprintf(f, "\n ],\n \"reread_rows\": [\n");
  for (unsigned share : {1u, 2u, 4u}) {
    const Reread r = run_reread(share);
    std::fprintf(f,
                 "%s  {\"blocks_per_queue\": %u, \"warps_per_queue\": %u, \"miss_share\": %.5f, "
                 "\"extra_ballots_per_miss\": %.3f, \"ns_per_turn_launch\": %.1f}",
                 share == 1u ? "" : ",\n", share, share * 8u, r.miss_share,
                 r.extra_ballots_per_miss, r.ns_per_turn);
    std::fflush(f);
    std::printf(
        "reread: %u blocks a queue: first re-read after an own turn missed %.4f, %.2f extra "
        "ballots a miss, %.1f ns per turn (launch)\n",
        share, r.miss_share, r.extra_ballots_per_miss, r.ns_per_turn);
    std::fflush(stdout);
  }
  std::fprintf(f, "\n ]\n}\n");
  std::fclose(f);
  return 0;
}
