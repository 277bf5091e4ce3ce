// What a wait costs on the GPU when its readiness predicate reads many words
// of GPU memory, through the platform class and the algorithm vocabulary the
// strategies run on (sim/core/platform/cuda_warp.cuh, sim/core/algo), with no
// strategy and no target. submit_per_thread (submission.h) waits with a
// predicate that loops over the lanes still needing an SQ slot, one
// gate_open each (a load of the slot's gate word; the second load only when
// the first finds the gate open), then loads the queue's turn word; the
// CudaWarp wait evaluates it again and again (cuda_warp.cuh wait_until), so
// a wait's poll period is one evaluation of the predicate, its loads one
// after another (each || waits for the load before it).
//
// - scan_period: W warps in blocks of 256 threads (8 warps an SM, as
//   gpunvme-hw places compute warps), every warp waiting with that predicate
//   for k lanes whose gates stay closed, through
//   CudaWarp::wait_until_deadline for kScanWindowNs; the predicate counts its
//   evaluations. Figure: a warp's time per evaluation (the window over the
//   evaluations), the median over the warps, k = 0 (the turn word alone) to
//   32. Queues: each block its own (words: per_block) or, as gpunvme-hw's
//   PerSm mapping with 32 queues puts them at 528 warps, block % 32 (words:
//   per_32_queues: 66 blocks, two or three SMs polling one queue's words).
// - reaction: one waiting warp (block 0) and one writer warp (block 1, another
//   SM); the writer opens the gate of the waiter's last scanned lane (k - 1) at
//   a time it records, the waiter records when its wait returns. Figure: the
//   median over 256 rounds of (seen - written).
//
//   wait_predicate_scan OUT.json
//
// Each figure is the median over five launches after a warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "hw_bench.cuh"
#include "sim/core/algo/io_common.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

namespace algo = gpunvme::algo;
using gpunvme::platform::CudaWarp;

constexpr int kLaunches = 5;
constexpr unsigned kEntries = 256;
constexpr unsigned kBlockThreads = 256;
constexpr unsigned long long kScanWindowNs = 200000;
constexpr unsigned kMaxWarps = 528;
constexpr unsigned kMaxBlocks = kMaxWarps / 8;
constexpr unsigned kSharedQueues = 32;

// One queue's words: its turn word on a line of its own, then its entries'
// slot gates (4 bytes each, as QueuePair::slot_gate).
struct QueueWords {
  unsigned turn;
  unsigned pad[31];
  unsigned gate[kEntries];
};

// submit_per_thread's wait predicate (submission.h) with need_turn empty and
// no reaping: every lane of need_slot checks its gate, then the turn word.
// The tickets are one lap ahead of the gates, so every gate stays closed
// until a writer opens one.
__device__ __forceinline__ bool slot_or_turn(CudaWarp& p, const algo::QueuePair& q,
                                             algo::LaneMask need_slot,
                                             const algo::Lanes<std::uint32_t>& ticket) {
  bool go = false;
  algo::for_each_lane(p, need_slot,
                      [&](int lane) { go = go || algo::detail::gate_open(p, q, ticket[lane]); });
  const std::uint32_t turn = p.load_u32(q.turn);
  return go || turn == 0xFFFFFFFFu;
}

__device__ algo::QueuePair queue_of(QueueWords* words) {
  algo::QueuePair q;
  q.entries = kEntries;
  q.turn = reinterpret_cast<std::uint64_t>(&words->turn);
  q.slot_gate = reinterpret_cast<std::uint64_t>(&words->gate[0]);
  return q;
}

__global__ void k_scan_period(unsigned warps, unsigned lanes, unsigned queues, unsigned* arrived,
                              QueueWords* words, unsigned long long* evaluations,
                              unsigned long long* span_ns) {
  algo::init_warp_scratch();
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (w >= warps) return;
  CudaWarp p;
  const algo::QueuePair q = queue_of(words + blockIdx.x % queues);
  algo::Lanes<std::uint32_t> ticket;
  // Consecutive tickets, one lap ahead of the gates (all 0).
  ticket[threadIdx.x % 32u] = kEntries + (w % 8u) * 32u + threadIdx.x % 32u;
  __syncwarp();
  const algo::LaneMask need_slot = algo::lanes_below(lanes);
  wait_for_all_warps(arrived, warps);
  unsigned long long n = 0;
  const algo::Timestamp start = p.clock();
  p.wait_until_deadline(
      [&] {
        ++n;
        return slot_or_turn(p, q, need_slot, ticket);
      },
      start + kScanWindowNs * 1000u, nullptr, 0);
  const algo::Timestamp end = p.clock();
  if (threadIdx.x % 32u == 0) {
    evaluations[w] = n;
    span_ns[w] = (end - start) / 1000u;
  }
}

// Medians over the launches of the median over the warps of a warp's time
// per evaluation, and of its evaluations.
struct ScanFigure {
  double ns_per_evaluation = 0;
  double ns_per_evaluation_max = 0;
};

ScanFigure run_scan_period(unsigned warps, unsigned lanes, unsigned queues, unsigned* d_arrived,
                           QueueWords* d_words, unsigned long long* d_evaluations,
                           unsigned long long* d_span) {
  const unsigned tpb = std::min(kBlockThreads, warps * 32u);
  const unsigned blocks = (warps * 32u + tpb - 1) / tpb;
  std::vector<double> medians, maxes;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(d_arrived, 0, sizeof(unsigned)));
    CK(cudaMemset(d_words, 0, kMaxBlocks * sizeof(QueueWords)));
    k_scan_period<<<blocks, tpb, std::size_t{tpb / 32u} * GPUNVME_WARP_SCRATCH_BYTES>>>(
        warps, lanes, std::min(queues, blocks), d_arrived, d_words, d_evaluations, d_span);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> n(warps), span(warps);
    CK(cudaMemcpy(n.data(), d_evaluations, warps * sizeof n[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(span.data(), d_span, warps * sizeof span[0], cudaMemcpyDeviceToHost));
    if (launch == 0) continue;  // warm-up
    std::vector<double> per(warps);
    for (unsigned i = 0; i < warps; ++i) per[i] = double(span[i]) / double(std::max(1ull, n[i]));
    std::sort(per.begin(), per.end());
    medians.push_back(per[per.size() / 2]);
    maxes.push_back(per.back());
  }
  std::sort(medians.begin(), medians.end());
  std::sort(maxes.begin(), maxes.end());
  return {medians[medians.size() / 2], maxes[maxes.size() / 2]};
}

// ------------------------------------------------------------------ reaction

constexpr unsigned kReactionRounds = 256;

struct Handshake {
  unsigned waiting;  // round the waiter has started waiting in, + 1
  unsigned pad0[31];
  unsigned long long written_ns[kReactionRounds];
  unsigned long long seen_ns[kReactionRounds];
};

__global__ void k_reaction(unsigned lanes, QueueWords* words, Handshake* h) {
  algo::init_warp_scratch();
  CudaWarp p;
  const algo::QueuePair q = queue_of(words);
  const unsigned last = lanes - 1u;
  if (blockIdx.x == 1) {
    // The writer: once the waiter waits in round r, a pause that varies with
    // r, then the gate of the waiter's lane `last` opens for its lap r + 1.
    for (unsigned r = 0; r < kReactionRounds; ++r) {
      if (threadIdx.x == 0) {
        while (*static_cast<volatile unsigned*>(&h->waiting) != r + 1u) {
        }
        __nanosleep(200u + (r * 7919u) % 1800u);
        const unsigned long long t = globaltimer();
        *static_cast<volatile unsigned*>(&words->gate[last]) = r + 2u;
        h->written_ns[r] = t;
      }
      __syncwarp();
    }
    return;
  }
  algo::Lanes<std::uint32_t> ticket;
  const algo::LaneMask need_slot = algo::lanes_below(lanes);
  for (unsigned r = 0; r < kReactionRounds; ++r) {
    // Lap r + 2 for every lane: closed until the writer opens lane `last`'s.
    // gate_open also reads the next slot's gate (lap r + 2 of slot last + 1,
    // opened with it below: the writer's slot + 1 is kept open).
    ticket[threadIdx.x % 32u] = (r + 2u) * kEntries + threadIdx.x % 32u;
    __syncwarp();
    if (threadIdx.x == 0) {
      words->gate[last + 1u] = r + 2u;
      __threadfence();
      *static_cast<volatile unsigned*>(&h->waiting) = r + 1u;
    }
    __syncwarp();
    p.wait_until([&] { return slot_or_turn(p, q, need_slot, ticket); }, q.slot_gate, kEntries * 4u);
    const unsigned long long seen = globaltimer();
    if (threadIdx.x == 0) h->seen_ns[r] = seen;
  }
}

double run_reaction(unsigned lanes, QueueWords* d_words, Handshake* d_h) {
  std::vector<double> medians;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(d_words, 0, sizeof(QueueWords)));
    CK(cudaMemset(d_h, 0, sizeof(Handshake)));
    k_reaction<<<2, 32, GPUNVME_WARP_SCRATCH_BYTES>>>(lanes, d_words, d_h);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    Handshake h;
    CK(cudaMemcpy(&h, d_h, sizeof h, cudaMemcpyDeviceToHost));
    if (launch == 0) continue;
    std::vector<double> d(kReactionRounds);
    for (unsigned r = 0; r < kReactionRounds; ++r) d[r] = double(h.seen_ns[r]) - h.written_ns[r];
    std::sort(d.begin(), d.end());
    medians.push_back(d[d.size() / 2]);
  }
  std::sort(medians.begin(), medians.end());
  return medians[medians.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "wait_predicate_scan.json";
  const cudaDeviceProp prop = device_or_skip("wait_predicate_scan");
  unsigned* d_arrived = nullptr;
  QueueWords* d_words = nullptr;
  unsigned long long *d_evaluations = nullptr, *d_span = nullptr;
  Handshake* d_h = nullptr;
  CK(cudaMalloc(&d_arrived, sizeof(unsigned)));
  CK(cudaMalloc(&d_words, kMaxBlocks * sizeof(QueueWords)));
  CK(cudaMalloc(&d_evaluations, kMaxWarps * sizeof(unsigned long long)));
  CK(cudaMalloc(&d_span, kMaxWarps * sizeof(unsigned long long)));
  CK(cudaMalloc(&d_h, sizeof(Handshake)));
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.wait_predicate_scan/1\", \"program\": "
               "\"tests/hardware/wait_predicate_scan.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"launches\": %d,\n"
               " \"scan_period\": {\"window_ns\": %llu, \"threads_per_block\": %u, \"doc\": "
               "\"W warps (8 an SM) waiting through CudaWarp::wait_until_deadline with "
               "submit_per_thread's predicate for k lanes whose slot gates stay closed (k gate "
               "loads, then the turn word): ns_per_evaluation the median over the warps of a "
               "warp's window over its evaluations (ns_per_evaluation_max the slowest warp's), "
               "each the median over the launches; words per_block: each block its own queue's "
               "words, per_32_queues: block %% 32's\",\n  \"rows\": [\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kLaunches,
               kScanWindowNs, kBlockThreads);
  const unsigned warp_counts[] = {1, 8, 136, 528};
  const unsigned lane_counts[] = {0, 1, 2, 4, 8, 16, 32};
  bool first = true;
  for (unsigned queues : {kMaxBlocks, kSharedQueues}) {
    for (unsigned warps : warp_counts) {
      if (queues == kSharedQueues && warps != 528) continue;  // fewer blocks than 32: the same
      for (unsigned k : lane_counts) {
        const ScanFigure s =
            run_scan_period(warps, k, queues, d_arrived, d_words, d_evaluations, d_span);
        const char* words = queues == kSharedQueues ? "per_32_queues" : "per_block";
        std::fprintf(f,
                     "%s   {\"warps\": %u, \"lanes\": %u, \"words\": \"%s\", "
                     "\"ns_per_evaluation\": %.2f, \"ns_per_evaluation_max\": %.2f}",
                     first ? "" : ",\n", warps, k, words, s.ns_per_evaluation,
                     s.ns_per_evaluation_max);
        first = false;
        std::printf("scan %4u warps %2u lanes %-13s %8.1f ns/evaluation (max %8.1f)\n", warps, k,
                    words, s.ns_per_evaluation, s.ns_per_evaluation_max);
      }
    }
  }
  std::fprintf(f,
               "\n  ]},\n \"reaction\": {\"rounds\": %u, \"doc\": \"one waiting warp (wait_until "
               "with the same predicate for k lanes) and one writer warp on another SM that "
               "opens lane k - 1's gate (the last one the predicate reads) after a pause of "
               "200-2000 ns: ns_seen_after_write the median over the rounds of the waiter's "
               "return time minus the writer's time just before its store, the median over "
               "the launches\",\n  \"rows\": [\n",
               kReactionRounds);
  first = true;
  for (unsigned k : {1u, 2u, 4u, 8u, 16u, 32u}) {
    const double ns = run_reaction(k, d_words, d_h);
    std::fprintf(f, "%s   {\"lanes\": %u, \"ns_seen_after_write\": %.2f}", first ? "" : ",\n", k,
                 ns);
    first = false;
    std::printf("reaction %2u lanes: %8.1f ns from the write to the wait's return\n", k, ns);
  }
  std::fprintf(f, "\n  ]}\n}\n");
  std::fclose(f);
  CK(cudaFree(d_arrived));
  CK(cudaFree(d_words));
  CK(cudaFree(d_evaluations));
  CK(cudaFree(d_span));
  CK(cudaFree(d_h));
  return 0;
}
