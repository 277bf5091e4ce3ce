// What the strategies' own code and their turn order cost on the GPU, through
// the platform class and the algorithm vocabulary the strategies run on
// (sim/core/platform/cuda_warp.cuh, sim/core/algo/lanes.h), with no queue,
// no target and no strategy:
//
// - loops over a warp's lanes in warp-uniform code (algo::for_each_lane over
//   Lanes<T> in the warp's shared scratch), one warp alone: a check of every
//   lane's state (strategy.h's all-completed test), a write of every lane's
//   Pending record (submission.h), and io_agents' nested count (for each lane,
//   a loop over the lanes below it). Each figure is per pass of the loop, as
//   the simulator counts passes (for_each_lane's lane_loop(n)), after the
//   bare loop's own time is taken off;
// - the same loops run by 1, 8, 32, 132 and 528 warps at once, placed as
//   gpunvme-hw places compute warps (256 threads a block: 8 warps share an
//   SM), each warp on its own data: a pass's cost while the SM's warps share
//   its issue slots;
// - N warps (one per block, every warp resident) contending on one word:
//   an atomic add each (atomics), a ticket then a turn each (take a ticket,
//   wait until the turn word equals it, store a doorbell word, system fence,
//   store turn + 1: the per-command turn of all_threads with one lane per
//   warp), and all_threads' turn as its 32 lanes take it (every lane a
//   ticket, then one ballot of the turn word per turn: the lane whose ticket
//   it is takes it), with and without __nanosleep back-off between a warp's
//   polls. Figures: the span from the last warp's start to the last warp's
//   end over the operations done (the word's throughput), and for turns the
//   share of turns that follow the same warp's previous turn;
// - all_threads' lane turns as its queues are shared (queue_turns): warps in
//   blocks of 256 threads as gpunvme-hw places compute warps (8 warps an SM),
//   each block with its own ticket, turn and doorbell words and its own SQ
//   (all_threads maps queues PerSm, so the 8 warps of an SM share one), at 1,
//   8, 32, 132 and 528 warps: every lane a ticket, then (variant sqe) each
//   lane's SQE built into its slot by algo::detail::write_sqe and a system
//   fence (build_sqes), then the lane turns as above. Figures per queue: a
//   block's span from its last warp's start to its last warp's end over the
//   turns its warps took (the queue's time per command on its serial chain),
//   the median and the largest over the full blocks.
//
//   lane_loops_and_turns OUT.json
//
// Each figure is the median over five launches after a warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hw_bench.cuh"
#include "sim/core/algo/io_common.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

namespace algo = gpunvme::algo;
using gpunvme::platform::CudaWarp;

constexpr int kLaunches = 5;

// ---------------------------------------------------------------- lane loops

constexpr int kLoopIterations = 2048;

enum LoopPattern : int { kLoopBare, kLoopCheck, kLoopWrite, kLoopNested, kLoopPatterns };
const char* const kLoopNames[kLoopPatterns] = {"lane_loop_bare", "lane_loop_check_state",
                                               "lane_loop_write_pending", "lane_loop_nested_count"};
// Passes of for_each_lane per iteration, as the simulator counts them.
constexpr int kLoopPasses[kLoopPatterns] = {0, 32, 32, 32 + 31 * 32 / 2};
const char* const kLoopDocs[kLoopPatterns] = {
    "the iteration alone (x += v on a warp-uniform value): subtracted from the others",
    "for_each_lane(all 32): all = all && io[lane].state == v, io a Lanes<Pending>",
    "for_each_lane(all 32): io[lane] = Pending{q, ticket + lane, 0, 0, v}",
    "for_each_lane(all 32) { for_each_lane(lanes below lane) count d[l].queue == d[lane].queue; "
    "ticket[lane] = base + count } (io_agents' request intake): 32 + 496 passes"};

// kLoopIterations iterations of one pattern, on the calling warp's own
// Lanes (its slice of the block's shared scratch).
__device__ __forceinline__ unsigned lane_loop_iterations(int pattern, CudaWarp& p,
                                                         algo::Lanes<algo::Pending>& io,
                                                         algo::Lanes<std::uint32_t>& ticket,
                                                         algo::Lanes<std::uint32_t>& queue_of) {
  unsigned x = 0;
  for (unsigned i = 0; i < unsigned(kLoopIterations); ++i) {
    const unsigned v = i ^ (x & 0x80000000u);
    switch (pattern) {
      case kLoopBare: x += v; break;
      case kLoopCheck: {
        bool all = true;
        algo::for_each_lane(p, algo::kAllLanes, [&](int lane) {
          all = all && io[lane].state == static_cast<std::uint8_t>(v & 1u);
        });
        x += all ? 1u : v;
        break;
      }
      case kLoopWrite:
        algo::for_each_lane(p, algo::kAllLanes, [&](int lane) {
          io[lane] = algo::Pending{v & 7u, x + static_cast<unsigned>(lane), 0, 0,
                                   static_cast<std::uint8_t>(v & 3u)};
        });
        x += io[int(v & 31u)].ticket;
        break;
      case kLoopNested:
        algo::for_each_lane(p, algo::kAllLanes, [&](int lane) {
          std::uint32_t before = 0;
          algo::for_each_lane(p, algo::lanes_below(static_cast<std::uint32_t>(lane)), [&](int l) {
            before += queue_of[l] == ((queue_of[lane] + v) & 3u) ? 1u : 0u;
          });
          ticket[lane] = x + before;
        });
        x += ticket[int(v & 31u)];
        break;
      default: break;
    }
  }
  return x;
}

__global__ void k_lane_loop(int pattern, unsigned long long* out_ns, unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p;
  algo::Lanes<algo::Pending> io;
  algo::Lanes<std::uint32_t> ticket;
  algo::Lanes<std::uint32_t> queue_of;
  queue_of[threadIdx.x % 32u] = (threadIdx.x % 32u) % 3u;
  __syncwarp();
  const unsigned long long t0 = globaltimer();
  const unsigned x = lane_loop_iterations(pattern, p, io, ticket, queue_of);
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x == 0) {
    *out_ns = t1 - t0;
    *sink = x;
  }
}

// The same loops run by `warps` warps at once, placed as gpunvme-hw places
// compute warps (blocks of kManyWarpsBlockThreads threads, so 8 warps share an
// SM; the last block's surplus warps leave at once), each warp on its own
// Lanes. Every warp starts once all have arrived, and records its own start
// and end: the time per iteration a warp sees while the SM's other warps
// compete for its issue slots.
constexpr unsigned kManyWarpsBlockThreads = 256;

__global__ void k_lane_loop_warps(int pattern, unsigned warps, unsigned* arrived,
                                  unsigned long long* start_ns, unsigned long long* end_ns,
                                  unsigned* sink) {
  algo::init_warp_scratch();
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (w >= warps) return;
  CudaWarp p;
  algo::Lanes<algo::Pending> io;
  algo::Lanes<std::uint32_t> ticket;
  algo::Lanes<std::uint32_t> queue_of;
  queue_of[threadIdx.x % 32u] = (threadIdx.x % 32u) % 3u;
  __syncwarp();
  wait_for_all_warps(arrived, warps);
  const unsigned long long t0 = globaltimer();
  const unsigned x = lane_loop_iterations(pattern, p, io, ticket, queue_of);
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x % 32u == 0) {
    start_ns[w] = t0;
    end_ns[w] = t1;
    sink[w] = x;
  }
}

struct ManyWarpsFigure {
  double mean_ns = 0;  // a warp's time per iteration, mean over the warps
  double max_ns = 0;   // the slowest warp's
};

// Medians over kLaunches timed launches (after a warm-up) of the mean and the
// largest of the warps' times per iteration.
ManyWarpsFigure run_lane_loop_warps(int pattern, unsigned warps, unsigned* d_arrived,
                                    unsigned long long* d_start, unsigned long long* d_end,
                                    unsigned* d_sink) {
  const unsigned tpb = std::min(kManyWarpsBlockThreads, warps * 32u);
  const unsigned blocks = (warps * 32u + tpb - 1) / tpb;
  std::vector<double> means;
  std::vector<double> maxes;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(d_arrived, 0, sizeof(unsigned)));
    k_lane_loop_warps<<<blocks, tpb, std::size_t{tpb / 32u} * GPUNVME_WARP_SCRATCH_BYTES>>>(
        pattern, warps, d_arrived, d_start, d_end, d_sink);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> starts(warps), ends(warps);
    CK(cudaMemcpy(starts.data(), d_start, warps * sizeof starts[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ends.data(), d_end, warps * sizeof ends[0], cudaMemcpyDeviceToHost));
    if (launch == 0) continue;  // warm-up
    double sum = 0;
    double largest = 0;
    for (unsigned i = 0; i < warps; ++i) {
      const double per_iteration = double(ends[i] - starts[i]) / kLoopIterations;
      sum += per_iteration;
      largest = std::max(largest, per_iteration);
    }
    means.push_back(sum / warps);
    maxes.push_back(largest);
  }
  std::sort(means.begin(), means.end());
  std::sort(maxes.begin(), maxes.end());
  return {means[means.size() / 2], maxes[maxes.size() / 2]};
}

double run_lane_loop(int pattern, unsigned long long* d_ns, unsigned* d_sink) {
  return median_launch_ns(
      [&] { k_lane_loop<<<1, 32, GPUNVME_WARP_SCRATCH_BYTES>>>(pattern, d_ns, d_sink); }, d_ns,
      kLoopIterations, kLaunches);
}

// ------------------------------------------------------------- one word, N warps

enum WordPattern : int { kAtomicAdd, kWarpTurn, kLaneTurns, kWordPatterns };
const char* const kWordNames[kWordPatterns] = {"atomic_add_one_word", "warp_ticket_turn",
                                               "lane_ticket_turns"};
const char* const kWordDocs[kWordPatterns] = {
    "x += p.atomic_add_u32(W, 1) in a loop: ns per atomic of all warps together",
    "t = p.atomic_add_u32(T, 1); p.wait_until(load(turn) == t); p.store_u32(D, t); "
    "p.fence_system(); p.store_u32(turn, t + 1): ns per turn of all warps together",
    "p.for_lanes(all, ticket[lane] = atomic_add_u32(T, 1)); then until every lane has had its "
    "turn: mine = p.ballot(waiting, load(turn) == ticket[lane]); the lane whose turn it is "
    "stores D, p.fence_system(), stores turn + 1 (all_threads' turn, submission.h); with no "
    "match the warp polls again after the back-off: ns per turn of all warps together"};

struct Words {
  unsigned arrived;
  unsigned pad0[31];
  unsigned word;  // the atomics' word, and the tickets'
  unsigned pad1[31];
  unsigned turn;
  unsigned pad2[31];
  unsigned doorbell;
  unsigned pad3[31];
};

__global__ void k_one_word(int pattern, unsigned warps, unsigned rounds, unsigned backoff_ns,
                           Words* w, unsigned long long* start_ns, unsigned long long* end_ns,
                           unsigned* follows, unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p(backoff_ns);
  const auto word = reinterpret_cast<std::uint64_t>(&w->word);
  const auto turn = reinterpret_cast<std::uint64_t>(&w->turn);
  const auto doorbell = reinterpret_cast<std::uint64_t>(&w->doorbell);
  // Every warp starts once all are resident and have arrived.
  if (threadIdx.x == 0) {
    atomicAdd(&w->arrived, 1u);
    while (*static_cast<volatile unsigned*>(&w->arrived) < warps) {
    }
  }
  __syncwarp();
  const unsigned long long t0 = globaltimer();
  unsigned x = 0;
  unsigned after_own = 0;
  unsigned previous = ~0u;
  switch (pattern) {
    case kAtomicAdd:
      for (unsigned r = 0; r < rounds; ++r) x += p.atomic_add_u32(word, 1u + (x & 0x80000000u));
      break;
    case kWarpTurn:
      for (unsigned r = 0; r < rounds; ++r) {
        const std::uint32_t t = p.atomic_add_u32(word, 1u);
        p.wait_until([&] { return p.load_u32(turn) == t; }, turn, 4);
        p.store_u32(doorbell, t);
        p.fence_system();
        p.store_u32(turn, t + 1u);
        after_own += t == previous + 1u ? 1u : 0u;
        previous = t;
        x += t;
      }
      break;
    case kLaneTurns:
      for (unsigned r = 0; r < rounds; ++r) {
        algo::Lanes<std::uint32_t> ticket;
        p.for_lanes(algo::kAllLanes, [&](int lane) { ticket[lane] = p.atomic_add_u32(word, 1u); });
        algo::LaneMask waiting = algo::kAllLanes;
        while (waiting != 0) {
          const algo::LaneMask mine =
              p.ballot(waiting, [&](int lane) { return p.load_u32(turn) == ticket[lane]; });
          if (mine == 0) {
            if (backoff_ns != 0) p.nanosleep(backoff_ns);
            continue;
          }
          const std::uint32_t t = ticket[algo::first_lane(mine)];
          p.store_u32(doorbell, t);
          p.fence_system();
          p.store_u32(turn, t + 1u);
          after_own += t == previous + 1u ? 1u : 0u;
          previous = t;
          x += t;
          waiting &= ~mine;
        }
      }
      break;
    default: break;
  }
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x == 0) {
    start_ns[blockIdx.x] = t0;
    end_ns[blockIdx.x] = t1;
    follows[blockIdx.x] = after_own;
    sink[blockIdx.x] = x;
  }
}

struct WordFigure {
  double ns_per_op = 0;        // span over the operations of all warps
  double after_own_share = 0;  // turns that follow the warp's own previous turn
};

WordFigure run_one_word(int pattern, unsigned warps, unsigned backoff_ns, Words* w,
                        unsigned long long* d_start, unsigned long long* d_end, unsigned* d_follows,
                        unsigned* d_sink) {
  // About 16 k atomics, 8 k warp turns or 16 k lane turns per launch.
  const unsigned rounds = pattern == kAtomicAdd  ? std::max(16u, 16384u / warps)
                          : pattern == kWarpTurn ? std::max(8u, 8192u / warps)
                                                 : std::max(2u, 512u / warps);
  const double ops = double(warps) * rounds * (pattern == kLaneTurns ? 32 : 1);
  std::vector<double> ns;
  std::vector<double> share;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(w, 0, sizeof(Words)));
    k_one_word<<<warps, 32, GPUNVME_WARP_SCRATCH_BYTES>>>(pattern, warps, rounds, backoff_ns, w,
                                                          d_start, d_end, d_follows, d_sink);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> starts(warps), ends(warps);
    std::vector<unsigned> f(warps);
    CK(cudaMemcpy(starts.data(), d_start, warps * sizeof starts[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ends.data(), d_end, warps * sizeof ends[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(f.data(), d_follows, warps * sizeof f[0], cudaMemcpyDeviceToHost));
    const unsigned long long first = *std::max_element(starts.begin(), starts.end());
    const unsigned long long last = *std::max_element(ends.begin(), ends.end());
    unsigned long long after_own = 0;
    for (unsigned x : f) after_own += x;
    if (launch == 0) continue;  // warm-up
    ns.push_back(double(last - first) / ops);
    share.push_back(double(after_own) / ops);
  }
  std::sort(ns.begin(), ns.end());
  std::sort(share.begin(), share.end());
  return {ns[ns.size() / 2], share[share.size() / 2]};
}

// ----------------------------------------------------- all_threads' queues

// Turns on a queue shared by the warps of one block (one SM), as all_threads
// shares its PerSm queues: kQueueTurnsBare takes the lane turns alone,
// kQueueTurnsSqe builds each lane's SQE and fences (build_sqes) first.
enum QueuePattern : int { kQueueTurnsBare, kQueueTurnsSqe, kQueueTurnsDescriptor, kQueuePatterns };
const char* const kQueueNames[kQueuePatterns] = {"queue_lane_turns", "queue_lane_turns_sqe",
                                                 "queue_lane_turns_descriptor"};
const char* const kQueueDocs[kQueuePatterns] = {
    "per round: p.for_lanes(all, ticket[lane] = atomic_add_u32(T, 1)); then lane_ticket_turns' "
    "loop (ballot of the waiting lanes against the turn word; the matching lane stores D, "
    "p.fence_system(), stores turn + 1; with no match the warp polls again after the "
    "back-off); T, turn and D the block's own (one queue per SM, all_threads' PerSm mapping)",
    "the same, with each lane's SQE written between the tickets and the turns: "
    "p.for_lanes(all, algo::detail::write_sqe(p, q, ticket[lane] % 256, ticket[lane] % 65536, "
    "4 KiB read)) into the block's 256-entry SQ in GPU memory, then p.fence_system() "
    "(build_sqes)",
    "submit_per_thread's own code (submission.h) for a group of all 32 lanes with every slot "
    "open: the queue named by an algo::QueuePair in GPU memory (the block's, as WarpContext's "
    "queue table is), tickets from q.ticket, the SQEs built as in _sqe, then the turn loop as "
    "submission.h writes it: ballot(load(q.turn) == ticket[lane]); turn_pass; first_lane; "
    "record; detail::ring_sq(p, q, t % q.entries, (t + 1) % q.entries) (the doorbell a GPU "
    "word); p.fence_system(); p.store_u32(q.turn, t + 1); record; io[lane].state = "
    "kOutstanding (a Lanes<Pending> in shared scratch)"};
constexpr unsigned kQueueEntries = 256;
constexpr unsigned kQueueBlockThreads = 256;

// One queue's words, a line each, and its SQ.
struct QueueWords {
  unsigned ticket;
  unsigned pad0[31];
  unsigned turn;
  unsigned pad1[31];
  unsigned doorbell;
  unsigned pad2[31];
};

__global__ void k_queue_turns(int pattern, unsigned warps, unsigned rounds, unsigned backoff_ns,
                              unsigned* arrived, QueueWords* queues, unsigned char* sqs,
                              const algo::QueuePair* descriptors, unsigned long long* start_ns,
                              unsigned long long* end_ns, unsigned* follows, unsigned* sink) {
  algo::init_warp_scratch();
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (w >= warps) return;
  CudaWarp p(backoff_ns);
  QueueWords* qw = queues + blockIdx.x;
  const auto ticket_word = reinterpret_cast<std::uint64_t>(&qw->ticket);
  const auto turn = reinterpret_cast<std::uint64_t>(&qw->turn);
  const auto doorbell = reinterpret_cast<std::uint64_t>(&qw->doorbell);
  algo::QueuePair q;
  q.sq_base = reinterpret_cast<std::uint64_t>(sqs) +
              std::uint64_t{blockIdx.x} * kQueueEntries * gpunvme::nvme::kSqEntrySize;
  q.entries = kQueueEntries;
  algo::IoRequest request;
  request.bytes = 4096;
  request.buffer = 0x100000000ull + std::uint64_t{threadIdx.x} * 4096u;
  // Every warp starts once all are resident and have arrived.
  wait_for_all_warps(arrived, warps);
  const unsigned long long t0 = globaltimer();
  unsigned x = 0;
  unsigned after_own = 0;
  unsigned previous = ~0u;
  if (pattern == kQueueTurnsDescriptor) {
    // As submission.h: the descriptor is read through a reference to GPU
    // memory, so its words are loaded again after every fence.
    const algo::QueuePair& dq = descriptors[blockIdx.x];
    algo::Lanes<algo::Pending> io;
    for (unsigned r = 0; r < rounds; ++r) {
      algo::Lanes<std::uint32_t> ticket;
      p.for_lanes(algo::kAllLanes,
                  [&](int lane) { ticket[lane] = p.atomic_add_u32(dq.ticket, 1u); });
      algo::Lanes<std::uint32_t> cid;
      algo::for_each_lane(p, algo::kAllLanes, [&](int lane) {
        io[lane] = algo::Pending{blockIdx.x, ticket[lane], 0, 0, algo::kClaimed};
        cid[lane] = ticket[lane] % 65536u;
      });
      p.for_lanes(algo::kAllLanes, [&](int lane) {
        request.slba = ticket[lane];
        algo::detail::write_sqe(p, dq, ticket[lane] % dq.entries, cid[lane], request);
      });
      p.fence_system();
      algo::LaneMask need_turn = algo::kAllLanes;
      while (need_turn != 0) {
        const algo::LaneMask mine =
            p.ballot(need_turn, [&](int lane) { return p.load_u32(dq.turn) == ticket[lane]; });
        if (mine == 0) {
          if (backoff_ns != 0) p.nanosleep(backoff_ns);
          continue;
        }
        p.turn_pass();
        const int lane = algo::first_lane(mine);
        const std::uint32_t t = ticket[lane];
        algo::detail::record(p, dq, cid[lane], algo::Stage::SqTailSynced);
        algo::detail::ring_sq(p, dq, t % dq.entries, (t + 1u) % dq.entries);
        p.fence_system();
        p.store_u32(dq.turn, t + 1u);
        algo::detail::record(p, dq, cid[lane], algo::Stage::DoorbellRung);
        io[lane].state = algo::kOutstanding;
        need_turn &= ~mine;
        after_own += t == previous + 1u ? 1u : 0u;
        previous = t;
        x += t;
      }
    }
  }
  for (unsigned r = 0; pattern != kQueueTurnsDescriptor && r < rounds; ++r) {
    algo::Lanes<std::uint32_t> ticket;
    p.for_lanes(algo::kAllLanes,
                [&](int lane) { ticket[lane] = p.atomic_add_u32(ticket_word, 1u); });
    if (pattern == kQueueTurnsSqe) {
      p.for_lanes(algo::kAllLanes, [&](int lane) {
        request.slba = ticket[lane];
        algo::detail::write_sqe(p, q, ticket[lane] % kQueueEntries, ticket[lane] % 65536u, request);
      });
      p.fence_system();
    }
    algo::LaneMask waiting = algo::kAllLanes;
    while (waiting != 0) {
      const algo::LaneMask mine =
          p.ballot(waiting, [&](int lane) { return p.load_u32(turn) == ticket[lane]; });
      if (mine == 0) {
        if (backoff_ns != 0) p.nanosleep(backoff_ns);
        continue;
      }
      const std::uint32_t t = ticket[algo::first_lane(mine)];
      p.store_u32(doorbell, t);
      p.fence_system();
      p.store_u32(turn, t + 1u);
      after_own += t == previous + 1u ? 1u : 0u;
      previous = t;
      x += t;
      waiting &= ~mine;
    }
  }
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x % 32u == 0) {
    start_ns[w] = t0;
    end_ns[w] = t1;
    follows[w] = after_own;
    sink[w] = x;
  }
}

struct QueueFigure {
  double ns_per_turn = 0;      // median over the full queues of span / turns
  double ns_per_turn_max = 0;  // the slowest full queue's
  double after_own_share = 0;  // turns that follow the same warp's previous turn
};

QueueFigure run_queue_turns(int pattern, unsigned warps, unsigned backoff_ns, unsigned* d_arrived,
                            QueueWords* d_queues, unsigned char* d_sqs,
                            algo::QueuePair* d_descriptors, unsigned long long* d_start,
                            unsigned long long* d_end, unsigned* d_follows, unsigned* d_sink) {
  const unsigned tpb = std::min(kQueueBlockThreads, warps * 32u);
  const unsigned warps_per_block = tpb / 32u;
  const unsigned blocks = (warps * 32u + tpb - 1) / tpb;
  // About 8 k lane turns per queue and launch.
  const unsigned rounds = std::max(2u, 256u / warps_per_block);
  std::vector<double> medians, maxes, shares;
  std::vector<algo::QueuePair> descriptors(blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    algo::QueuePair& q = descriptors[b];
    const auto words = reinterpret_cast<std::uint64_t>(d_queues + b);
    q.trace_id = b;
    q.sq_base = reinterpret_cast<std::uint64_t>(d_sqs) +
                std::uint64_t{b} * kQueueEntries * gpunvme::nvme::kSqEntrySize;
    q.entries = kQueueEntries;
    q.ticket = words + offsetof(QueueWords, ticket);
    q.turn = words + offsetof(QueueWords, turn);
    q.sq_doorbell = words + offsetof(QueueWords, doorbell);
  }
  CK(cudaMemcpy(d_descriptors, descriptors.data(), blocks * sizeof(algo::QueuePair),
                cudaMemcpyHostToDevice));
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(d_arrived, 0, sizeof(unsigned)));
    CK(cudaMemset(d_queues, 0, blocks * sizeof(QueueWords)));
    k_queue_turns<<<blocks, tpb, std::size_t{warps_per_block} * GPUNVME_WARP_SCRATCH_BYTES>>>(
        pattern, warps, rounds, backoff_ns, d_arrived, d_queues, d_sqs, d_descriptors, d_start,
        d_end, d_follows, d_sink);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> starts(warps), ends(warps);
    std::vector<unsigned> f(warps);
    CK(cudaMemcpy(starts.data(), d_start, warps * sizeof starts[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ends.data(), d_end, warps * sizeof ends[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(f.data(), d_follows, warps * sizeof f[0], cudaMemcpyDeviceToHost));
    if (launch == 0) continue;  // warm-up
    std::vector<double> per_queue;
    unsigned long long after_own = 0;
    for (unsigned x : f) after_own += x;
    for (unsigned b = 0; b < blocks; ++b) {
      const unsigned first = b * warps_per_block;
      if (first + warps_per_block > warps) continue;  // a partly filled block: not a full queue
      unsigned long long last_start = 0, last_end = 0;
      for (unsigned i = first; i < first + warps_per_block; ++i) {
        last_start = std::max(last_start, starts[i]);
        last_end = std::max(last_end, ends[i]);
      }
      per_queue.push_back(double(last_end - last_start) / (double(warps_per_block) * rounds * 32));
    }
    std::sort(per_queue.begin(), per_queue.end());
    medians.push_back(per_queue[per_queue.size() / 2]);
    maxes.push_back(per_queue.back());
    shares.push_back(double(after_own) / (double(warps) * rounds * 32));
  }
  std::sort(medians.begin(), medians.end());
  std::sort(maxes.begin(), maxes.end());
  std::sort(shares.begin(), shares.end());
  return {medians[medians.size() / 2], maxes[maxes.size() / 2], shares[shares.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "lane_loops_and_turns.json";
  const cudaDeviceProp prop = device_or_skip("lane_loops_and_turns");
  unsigned long long* d_ns = nullptr;
  unsigned* d_sink = nullptr;
  constexpr unsigned kMaxWarps = 528;
  Words* w = nullptr;
  unsigned long long *d_start = nullptr, *d_end = nullptr;
  unsigned* d_follows = nullptr;
  CK(cudaMalloc(&d_ns, sizeof(unsigned long long)));
  CK(cudaMalloc(&d_sink, kMaxWarps * sizeof(unsigned)));
  CK(cudaMalloc(&w, sizeof(Words)));
  CK(cudaMalloc(&d_start, kMaxWarps * sizeof(unsigned long long)));
  CK(cudaMalloc(&d_end, kMaxWarps * sizeof(unsigned long long)));
  CK(cudaMalloc(&d_follows, kMaxWarps * sizeof(unsigned)));
  constexpr unsigned kMaxQueues = kMaxWarps;
  QueueWords* d_queues = nullptr;
  unsigned char* d_sqs = nullptr;
  CK(cudaMalloc(&d_queues, kMaxQueues * sizeof(QueueWords)));
  CK(cudaMalloc(&d_sqs, std::size_t{kMaxQueues} * kQueueEntries * gpunvme::nvme::kSqEntrySize));
  algo::QueuePair* d_descriptors = nullptr;
  CK(cudaMalloc(&d_descriptors, kMaxQueues * sizeof(algo::QueuePair)));

  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.lane_loops_and_turns/1\", \"program\": "
               "\"tests/hardware/lane_loops_and_turns.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"launches\": %d,\n"
               " \"lane_loops\": {\"iterations\": %d, \"figures\": {\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kLaunches,
               kLoopIterations);
  double loop_ns[kLoopPatterns];
  for (int k = 0; k < kLoopPatterns; ++k) loop_ns[k] = run_lane_loop(k, d_ns, d_sink);
  for (int k = 0; k < kLoopPatterns; ++k) {
    const double per_pass =
        kLoopPasses[k] == 0 ? 0.0 : (loop_ns[k] - loop_ns[kLoopBare]) / kLoopPasses[k];
    std::fprintf(f,
                 "  \"%s\": {\"ns_per_iteration\": %.2f, \"passes\": %d, \"ns_per_pass\": %.3f, "
                 "\"doc\": \"%s\"}%s\n",
                 kLoopNames[k], loop_ns[k], kLoopPasses[k], per_pass, kLoopDocs[k],
                 k + 1 < kLoopPatterns ? "," : "");
    std::printf("%-28s %9.1f ns/iteration %7.2f ns/pass\n", kLoopNames[k], loop_ns[k], per_pass);
  }
  const unsigned warp_counts[] = {1, 8, 32, 132, 528};
  std::fprintf(f,
               " }},\n \"lane_loops_many_warps\": {\"iterations\": %d, \"threads_per_block\": %u, "
               "\"doc\": \"the lane loops above run by W warps at once in blocks of %u threads (8 "
               "warps an SM, as gpunvme-hw places compute warps), each warp on its own Lanes, all "
               "starting together: ns_per_iteration_mean and _max are the mean and the largest of "
               "the warps' own times per iteration, ns_per_pass = (mean - the bare loop's mean at "
               "the same W) / passes; medians over the launches\",\n  \"rows\": [\n",
               kLoopIterations, kManyWarpsBlockThreads, kManyWarpsBlockThreads);
  for (unsigned warps : warp_counts) {
    ManyWarpsFigure figures[kLoopPatterns];
    for (int k = 0; k < kLoopPatterns; ++k) {
      figures[k] = run_lane_loop_warps(k, warps, &w->arrived, d_start, d_end, d_sink);
    }
    for (int k = 0; k < kLoopPatterns; ++k) {
      const double per_pass =
          kLoopPasses[k] == 0 ? 0.0
                              : (figures[k].mean_ns - figures[kLoopBare].mean_ns) / kLoopPasses[k];
      const bool last = warps == warp_counts[4] && k + 1 == kLoopPatterns;
      std::fprintf(f,
                   "   {\"pattern\": \"%s\", \"warps\": %u, \"ns_per_iteration_mean\": %.2f, "
                   "\"ns_per_iteration_max\": %.2f, \"passes\": %d, \"ns_per_pass\": %.3f}%s\n",
                   kLoopNames[k], warps, figures[k].mean_ns, figures[k].max_ns, kLoopPasses[k],
                   per_pass, last ? "" : ",");
      std::printf("%-28s %4u warps %9.1f ns/iteration (max %9.1f) %7.2f ns/pass\n", kLoopNames[k],
                  warps, figures[k].mean_ns, figures[k].max_ns, per_pass);
    }
  }
  std::fprintf(f, "  ]},\n \"one_word\": [\n");
  const unsigned backoffs[] = {0, 256};
  bool first_row = true;
  for (int k = 0; k < kWordPatterns; ++k) {
    for (unsigned b : backoffs) {
      if (k == kAtomicAdd && b != 0) continue;  // atomics do not wait
      for (unsigned warps : warp_counts) {
        const WordFigure r = run_one_word(k, warps, b, w, d_start, d_end, d_follows, d_sink);
        std::fprintf(f,
                     "%s  {\"pattern\": \"%s\", \"warps\": %u, \"backoff_ns\": %u, "
                     "\"ns_per_op\": %.2f, \"after_own_turn_share\": %.4f}",
                     first_row ? "" : ",\n", kWordNames[k], warps, b, r.ns_per_op,
                     r.after_own_share);
        first_row = false;
        std::printf("%-22s %4u warps backoff %3u ns: %8.1f ns/op, %.3f after own turn\n",
                    kWordNames[k], warps, b, r.ns_per_op, r.after_own_share);
      }
    }
  }
  std::fprintf(f, "\n ],\n \"one_word_docs\": {");
  for (int k = 0; k < kWordPatterns; ++k) {
    std::fprintf(f, "%s\n  \"%s\": \"%s\"", k ? "," : "", kWordNames[k], kWordDocs[k]);
  }
  std::fprintf(f,
               "\n },\n \"queue_turns\": {\"threads_per_block\": %u, \"entries\": %u, "
               "\"doc\": \"W warps in blocks of %u threads (8 warps an SM), each block one queue "
               "(its own ticket, turn and doorbell words and SQ), every warp starting once all "
               "have arrived; ns_per_turn: per full block, from its last warp's start to its last "
               "warp's end over the lane turns its warps took (the queue's time per command), "
               "the median over the full blocks (ns_per_turn_max the largest), each the median "
               "over the launches; after_own_turn_share: turns that follow the same warp's "
               "previous turn\",\n  \"rows\": [\n",
               kQueueBlockThreads, kQueueEntries, kQueueBlockThreads);
  first_row = true;
  for (int k = 0; k < kQueuePatterns; ++k) {
    for (unsigned b : backoffs) {
      for (unsigned warps : warp_counts) {
        const QueueFigure r = run_queue_turns(k, warps, b, &w->arrived, d_queues, d_sqs,
                                              d_descriptors, d_start, d_end, d_follows, d_sink);
        const unsigned per_queue = std::min(8u, warps);
        std::fprintf(f,
                     "%s   {\"pattern\": \"%s\", \"warps\": %u, \"warps_per_queue\": %u, "
                     "\"backoff_ns\": %u, \"ns_per_turn\": %.2f, \"ns_per_turn_max\": %.2f, "
                     "\"after_own_turn_share\": %.4f}",
                     first_row ? "" : ",\n", kQueueNames[k], warps, per_queue, b, r.ns_per_turn,
                     r.ns_per_turn_max, r.after_own_share);
        first_row = false;
        std::printf(
            "%-22s %4u warps (%u a queue) backoff %3u ns: %8.1f ns/turn (max %8.1f), "
            "%.3f after own turn\n",
            kQueueNames[k], warps, per_queue, b, r.ns_per_turn, r.ns_per_turn_max,
            r.after_own_share);
      }
    }
  }
  std::fprintf(f, "\n  ]},\n \"queue_turns_docs\": {");
  for (int k = 0; k < kQueuePatterns; ++k) {
    std::fprintf(f, "%s\n  \"%s\": \"%s\"", k ? "," : "", kQueueNames[k], kQueueDocs[k]);
  }
  std::fprintf(f, "\n }\n}\n");
  std::fclose(f);
  CK(cudaFree(d_ns));
  CK(cudaFree(d_sink));
  CK(cudaFree(w));
  CK(cudaFree(d_start));
  CK(cudaFree(d_end));
  CK(cudaFree(d_follows));
  CK(cudaFree(d_queues));
  CK(cudaFree(d_sqs));
  CK(cudaFree(d_descriptors));
  return 0;
}
