// all_threads' lane turns when several SMs share one queue, as its PerSm
// mapping shares them at 528 warps beside the GPU-resident target (four
// blocks on most of the 32 queues): lane_loops_and_turns.cu's
// queue_lane_turns_descriptor pattern (submission.h's turn code, the queue a
// QueuePair in GPU memory) with `share` blocks of 256 threads (8 warps, one
// SM each) on every queue, through the platform class and the algorithm
// vocabulary, with no target and no strategy.
//
//   shared_queue_turns OUT.json
//
// Figure per (warps, share): ns per turn per queue, per queue from the last
// start of its warps to their last end over the turns they took, the median
// over the queues, the median over five launches after a warm-up; and the
// share of turns that follow the same warp's previous turn.
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
constexpr unsigned kMaxWarps = 528;
constexpr unsigned kMaxBlocks = kMaxWarps / 8;

struct QueueWords {
  unsigned ticket;
  unsigned pad0[31];
  unsigned turn;
  unsigned pad1[31];
  unsigned doorbell;
  unsigned pad2[31];
};

__global__ void k_shared_turns(unsigned warps, unsigned rounds, unsigned queues, unsigned* arrived,
                               const algo::QueuePair* descriptors, unsigned long long* start_ns,
                               unsigned long long* end_ns, unsigned* follows, unsigned* sink) {
  algo::init_warp_scratch();
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
  if (w >= warps) return;
  CudaWarp p;
  algo::IoRequest request;
  request.bytes = 4096;
  request.buffer = 0x100000000ull + std::uint64_t{threadIdx.x} * 4096u;
  wait_for_all_warps(arrived, warps);
  const unsigned long long t0 = globaltimer();
  unsigned x = 0, after_own = 0, previous = ~0u;
  const algo::QueuePair& dq = descriptors[blockIdx.x % queues];
  algo::Lanes<algo::Pending> io;
  for (unsigned r = 0; r < rounds; ++r) {
    algo::Lanes<std::uint32_t> ticket;
    p.for_lanes(algo::kAllLanes, [&](int lane) { ticket[lane] = p.atomic_add_u32(dq.ticket, 1u); });
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
      if (mine == 0) continue;
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
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x % 32u == 0) {
    start_ns[w] = t0;
    end_ns[w] = t1;
    follows[w] = after_own;
    sink[w] = x;
  }
}

struct Figure {
  double ns_per_turn = 0;
  double ns_per_turn_max = 0;
  double after_own_share = 0;
};

Figure run(unsigned warps, unsigned share, unsigned* d_arrived, QueueWords* d_queues,
           unsigned char* d_sqs, algo::QueuePair* d_descriptors, unsigned long long* d_start,
           unsigned long long* d_end, unsigned* d_follows, unsigned* d_sink) {
  const unsigned tpb = std::min(kBlockThreads, warps * 32u);
  const unsigned warps_per_block = tpb / 32u;
  const unsigned blocks = (warps * 32u + tpb - 1) / tpb;
  const unsigned queues = std::max(1u, blocks / share);
  // About 8 k lane turns per queue and launch.
  const unsigned rounds = std::max(2u, 256u / (warps_per_block * share));
  std::vector<algo::QueuePair> descriptors(queues);
  for (unsigned b = 0; b < queues; ++b) {
    algo::QueuePair& q = descriptors[b];
    const auto words = reinterpret_cast<std::uint64_t>(d_queues + b);
    q.trace_id = b;
    q.sq_base = reinterpret_cast<std::uint64_t>(d_sqs) +
                std::uint64_t{b} * kEntries * gpunvme::nvme::kSqEntrySize;
    q.entries = kEntries;
    q.ticket = words + offsetof(QueueWords, ticket);
    q.turn = words + offsetof(QueueWords, turn);
    q.sq_doorbell = words + offsetof(QueueWords, doorbell);
  }
  CK(cudaMemcpy(d_descriptors, descriptors.data(), queues * sizeof(algo::QueuePair),
                cudaMemcpyHostToDevice));
  std::vector<double> medians, maxes, shares;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(d_arrived, 0, sizeof(unsigned)));
    CK(cudaMemset(d_queues, 0, kMaxBlocks * sizeof(QueueWords)));
    k_shared_turns<<<blocks, tpb, std::size_t{warps_per_block} * GPUNVME_WARP_SCRATCH_BYTES>>>(
        warps, rounds, queues, d_arrived, d_descriptors, d_start, d_end, d_follows, d_sink);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> starts(warps), ends(warps);
    std::vector<unsigned> f(warps);
    CK(cudaMemcpy(starts.data(), d_start, warps * sizeof starts[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ends.data(), d_end, warps * sizeof ends[0], cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(f.data(), d_follows, warps * sizeof f[0], cudaMemcpyDeviceToHost));
    if (launch == 0) continue;
    std::vector<unsigned long long> last_start(queues, 0), last_end(queues, 0);
    std::vector<unsigned> turns(queues, 0);
    for (unsigned i = 0; i < warps; ++i) {
      const unsigned q = (i / warps_per_block) % queues;
      last_start[q] = std::max(last_start[q], starts[i]);
      last_end[q] = std::max(last_end[q], ends[i]);
      turns[q] += rounds * 32u;
    }
    std::vector<double> per_queue;
    for (unsigned q = 0; q < queues; ++q) {
      per_queue.push_back(double(last_end[q] - last_start[q]) / turns[q]);
    }
    std::sort(per_queue.begin(), per_queue.end());
    medians.push_back(per_queue[per_queue.size() / 2]);
    maxes.push_back(per_queue.back());
    unsigned long long own = 0;
    for (unsigned v : f) own += v;
    shares.push_back(double(own) / (double(warps) * rounds * 32));
  }
  std::sort(medians.begin(), medians.end());
  std::sort(maxes.begin(), maxes.end());
  std::sort(shares.begin(), shares.end());
  return {medians[medians.size() / 2], maxes[maxes.size() / 2], shares[shares.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "shared_queue_turns.json";
  const cudaDeviceProp prop = device_or_skip("shared_queue_turns");
  unsigned *d_arrived = nullptr, *d_follows = nullptr, *d_sink = nullptr;
  unsigned long long *d_start = nullptr, *d_end = nullptr;
  QueueWords* d_queues = nullptr;
  unsigned char* d_sqs = nullptr;
  algo::QueuePair* d_descriptors = nullptr;
  CK(cudaMalloc(&d_arrived, sizeof(unsigned)));
  CK(cudaMalloc(&d_follows, kMaxWarps * sizeof(unsigned)));
  CK(cudaMalloc(&d_sink, kMaxWarps * sizeof(unsigned)));
  CK(cudaMalloc(&d_start, kMaxWarps * sizeof(unsigned long long)));
  CK(cudaMalloc(&d_end, kMaxWarps * sizeof(unsigned long long)));
  CK(cudaMalloc(&d_queues, kMaxBlocks * sizeof(QueueWords)));
  CK(cudaMalloc(&d_sqs, std::size_t{kMaxBlocks} * kEntries * gpunvme::nvme::kSqEntrySize));
  CK(cudaMalloc(&d_descriptors, kMaxBlocks * sizeof(algo::QueuePair)));
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.shared_queue_turns/1\", \"program\": "
               "\"tests/hardware/shared_queue_turns.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"launches\": %d,\n"
               " \"doc\": \"lane_loops_and_turns.cu's queue_lane_turns_descriptor pattern with "
               "`share` blocks of 256 threads on each queue (block b on queue b mod blocks / "
               "share): ns_per_turn the median over the queues of (their warps' last end - last "
               "start) / their turns, ns_per_turn_max the slowest queue's, each the median over "
               "the launches; after_own_turn_share: turns that follow the same warp's previous "
               "turn\",\n \"rows\": [\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kLaunches);
  bool first = true;
  const unsigned cases[][2] = {{8, 1},   {16, 2},  {32, 4},  {132, 1}, {128, 2},
                               {128, 4}, {528, 1}, {528, 2}, {528, 4}};
  for (const auto& c : cases) {
    const Figure r = run(c[0], c[1], d_arrived, d_queues, d_sqs, d_descriptors, d_start, d_end,
                         d_follows, d_sink);
    std::fprintf(f,
                 "%s  {\"warps\": %u, \"blocks_per_queue\": %u, \"ns_per_turn\": %.2f, "
                 "\"ns_per_turn_max\": %.2f, \"after_own_turn_share\": %.4f}",
                 first ? "" : ",\n", c[0], c[1], r.ns_per_turn, r.ns_per_turn_max,
                 r.after_own_share);
    first = false;
    std::printf("%4u warps, %u blocks a queue: %8.1f ns/turn (max %8.1f), %.3f after own turn\n",
                c[0], c[1], r.ns_per_turn, r.ns_per_turn_max, r.after_own_share);
  }
  std::fprintf(f, "\n ]\n}\n");
  std::fclose(f);
  CK(cudaFree(d_arrived));
  CK(cudaFree(d_follows));
  CK(cudaFree(d_sink));
  CK(cudaFree(d_start));
  CK(cudaFree(d_end));
  CK(cudaFree(d_queues));
  CK(cudaFree(d_sqs));
  CK(cudaFree(d_descriptors));
  return 0;
}
