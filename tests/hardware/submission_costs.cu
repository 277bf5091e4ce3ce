// What the GPU side of one command costs, operation by operation, through
// the platform class and the algorithm vocabulary the strategies run on
// (sim/core/platform/cuda_warp.cuh, sim/core/algo/), with no queue shared
// with a target, no target and no strategy. One warp alone (one block of 32
// threads), its operations in a loop; each figure is the loop's time per
// iteration with the bare loop's time (the same loop doing only its
// iteration arithmetic) taken off:
//
// - sqe_store: p.for_lanes(first L lanes) { detail::write_sqe(...) } (the
//   SQE build and 64 B store of build_sqes, io_common.h) into a 64-entry SQ
//   ring in GPU memory or in pinned host memory, for L = 1, 8 and 32 lanes;
//   alone (the stores' sustained issue), with p.fence_system() after each
//   (build_sqes' fence: the figure is the pair minus the fence alone), and
//   the fence alone;
// - ballot: p.ballot(all lanes, ...) with the lane selection of the turn
//   loops (first_lane, the chosen lane's ticket): predicate on registers,
//   on a load of one GPU word (every lane's load, as all_threads' turn
//   ballot makes it), and divergent (odd lanes load the word, even lanes
//   compare registers: two paths); p.for_lanes(all lanes) writing one
//   Lanes<uint32_t> word per lane; and all_threads' turn loop without its
//   atomics, doorbell and fence (until all 32 lanes had their turn: ballot
//   of the turn against each lane's ticket, first_lane, p.turn_pass(), the
//   next turn), the turn in a register or in a GPU word (loaded in the
//   ballot, p.store_u32 of turn + 1): figures per turn;
// - cq_scan: p.check(own_cqe_waiting(p, q, io, lane 0)) (completion.h: a
//   cq_scan waiter's predicate evaluated outside a wait, the op profile's
//   "peek") over a 64-entry CQ of 16 B entries in pinned host memory or in
//   GPU memory with N = 1, 4, 8, 16, 32 entries posted from the head and
//   none consumed: the waiter's CID in the last posted entry (N entry loads
//   and N consumed-mark loads) or in none (N + 1 entry loads: the first
//   unposted entry ends the scan);
// - agent_intake: io_agents' intake of 32 requests (agent_loop's step 2,
//   io_agents.h, written out here with the same platform calls: the ready
//   ballot over the request ring, the descriptors' loads, the nested count
//   of earlier requests per queue, the room ballot with two agent-table
//   loads per lane, the gate stores, the slot assignment, write_sqe and the
//   agent-table store per lane), requests spread over 4 queues whose SQs
//   are in GPU memory or pinned host memory; no doorbell, no stage records.
//   Figures per pass of 32 requests and per request.
//
//   submission_costs OUT.json
//
// Each figure is the median over five launches after a warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "agent_intake.cuh"
#include "hw_bench.cuh"
#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

namespace algo = gpunvme::algo;
namespace nvme = gpunvme::nvme;
using gpunvme::platform::CudaWarp;

constexpr int kLaunches = 5;
constexpr std::uint32_t kRingEntries = 64;

__device__ unsigned lane_id() { return threadIdx.x % 32u; }

// Every lane's request: a 4 KiB read (one PRP entry, no list).
__device__ algo::IoRequest lane_request(unsigned lane) {
  algo::IoRequest r;
  r.opcode = nvme::NvmOpcode::Read;
  r.slba = std::uint64_t{lane} * 8u;
  r.nlb_zero_based = 7;
  r.buffer = 0x10000000ull + std::uint64_t{lane} * 4096u;
  r.bytes = 4096;
  r.queue = 0;
  return r;
}

// The median of kLaunches timed launches, per iteration (hw_bench.cuh).
template <class Launch>
double median_ns_per_iteration(Launch&& launch, unsigned long long* d_ns, unsigned iterations) {
  return median_launch_ns(launch, d_ns, iterations, kLaunches);
}

// ------------------------------------------------------------------ SQE store

enum SqePattern : int { kSqeBare, kSqeStore, kSqeFence, kSqeStoreFence, kSqePatterns };
constexpr unsigned kSqeIterations = 512;

__global__ void k_sqe(int pattern, std::uint32_t lanes, algo::QueuePair q,
                      unsigned long long* out_ns, unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p;
  algo::Lanes<algo::IoRequest> request;
  request[lane_id()] = lane_request(lane_id());
  __syncwarp();
  const algo::LaneMask mask = algo::lanes_below(lanes);
  unsigned x = 0;
  const unsigned long long t0 = globaltimer();
  for (unsigned i = 0; i < kSqeIterations; ++i) {
    x += i;
    if (pattern == kSqeStore || pattern == kSqeStoreFence) {
      p.for_lanes(mask, [&](int lane) {
        const std::uint32_t ticket = i * lanes + static_cast<std::uint32_t>(lane);
        algo::detail::write_sqe(p, q, ticket % q.entries, (x + ticket) & 0xFFFFu, request[lane]);
      });
    }
    if (pattern == kSqeFence || pattern == kSqeStoreFence) p.fence_system();
  }
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x == 0) {
    *out_ns = t1 - t0;
    *sink = x;
  }
}

// ---------------------------------------------------------------- ballots

enum BallotPattern : int {
  kBallotBare,
  kBallotRegister,
  kBallotGpuLoad,
  kBallotDivergent,
  kForLanesRegister,
  kTurnLoopRegister,
  kTurnLoopGpuWord,
  kBallotPatterns
};
const char* const kBallotNames[kBallotPatterns] = {"bare",
                                                   "ballot_register",
                                                   "ballot_gpu_load",
                                                   "ballot_divergent_gpu_load",
                                                   "for_lanes_register",
                                                   "turn_loop_register",
                                                   "turn_loop_gpu_word"};
const char* const kBallotDocs[kBallotPatterns] = {
    "the iteration alone: subtracted from the others",
    "mine = p.ballot(all, ticket[lane] == v); x += ticket[first_lane(mine)]: one lane matches",
    "mine = p.ballot(all, p.load_u32(W) == ticket[lane]) (W in GPU memory); x += "
    "ticket[first_lane(mine)]",
    "mine = p.ballot(all, odd lanes p.load_u32(W) == ticket[lane], even lanes ticket[lane] == "
    "v): two paths; x += ticket[first_lane(mine)]",
    "p.for_lanes(all, ticket[lane] = x + lane)",
    "until all 32 lanes had their turn: mine = p.ballot(waiting, ticket[lane] == turn); "
    "p.turn_pass(); lane = first_lane(mine); turn = ticket[lane] + 1; waiting &= ~mine: per turn",
    "as turn_loop_register with the turn in GPU word W: the ballot's lanes load it, the chosen "
    "lane's turn p.store_u32(W, ticket + 1): per turn (all_threads' turn loop, submission.h, "
    "without its tickets' atomics, doorbell and system fence)"};
constexpr unsigned kBallotIterations = 1024;
constexpr unsigned kTurnLoopIterations = 64;  // 32 turns each

__global__ void k_ballot(int pattern, unsigned* word, unsigned long long* out_ns, unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p;
  const auto w = reinterpret_cast<std::uint64_t>(word);
  algo::Lanes<std::uint32_t> ticket;
  ticket[lane_id()] = lane_id();
  __syncwarp();
  const bool turn_loop = pattern == kTurnLoopRegister || pattern == kTurnLoopGpuWord;
  const unsigned iterations = turn_loop ? kTurnLoopIterations : kBallotIterations;
  unsigned x = 0;
  const unsigned long long t0 = globaltimer();
  for (unsigned i = 0; i < iterations; ++i) {
    const std::uint32_t v = i & 31u;
    switch (pattern) {
      case kBallotBare: x += v; break;
      case kBallotRegister: {
        const algo::LaneMask mine =
            p.ballot(algo::kAllLanes, [&](int lane) { return ticket[lane] == v; });
        x += mine == 0 ? 1u : ticket[algo::first_lane(mine)];
        break;
      }
      case kBallotGpuLoad: {
        // W holds 0: ticket[lane] - v matches it in lane v.
        const algo::LaneMask mine =
            p.ballot(algo::kAllLanes, [&](int lane) { return p.load_u32(w) + v == ticket[lane]; });
        x += mine == 0 ? 1u : ticket[algo::first_lane(mine)];
        break;
      }
      case kBallotDivergent: {
        const algo::LaneMask mine = p.ballot(algo::kAllLanes, [&](int lane) {
          if ((lane & 1) != 0) return p.load_u32(w) + v == ticket[lane];
          return ticket[lane] == v;
        });
        x += mine == 0 ? 1u : ticket[algo::first_lane(mine)];
        break;
      }
      case kForLanesRegister:
        p.for_lanes(algo::kAllLanes,
                    [&](int lane) { ticket[lane] = x + static_cast<std::uint32_t>(lane); });
        x += ticket[int(v)];
        break;
      case kTurnLoopRegister:
      case kTurnLoopGpuWord: {
        // Tickets i * 32 + lane: the lanes take their turns in lane order.
        p.for_lanes(algo::kAllLanes,
                    [&](int lane) { ticket[lane] = i * 32u + static_cast<std::uint32_t>(lane); });
        std::uint32_t turn = i * 32u;
        algo::LaneMask waiting = algo::kAllLanes;
        while (waiting != 0) {
          const algo::LaneMask mine = p.ballot(waiting, [&](int lane) {
            return (pattern == kTurnLoopGpuWord ? p.load_u32(w) : turn) == ticket[lane];
          });
          if (mine == 0) continue;  // a turn word another warp holds: not here
          p.turn_pass();
          const int lane = algo::first_lane(mine);
          turn = ticket[lane] + 1u;
          if (pattern == kTurnLoopGpuWord) p.store_u32(w, turn);
          x += turn;
          waiting &= ~mine;
        }
        break;
      }
      default: break;
    }
  }
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x == 0) {
    *out_ns = t1 - t0;
    *sink = x;
  }
}

// ------------------------------------------------------------------ CQ scan

constexpr unsigned kScanIterations = 64;

__global__ void k_cq_scan(bool scan, std::uint32_t target_cid, algo::QueuePair q,
                          unsigned long long* out_ns, unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p;
  algo::Lanes<algo::Pending> io;
  io[lane_id()] = algo::Pending{0, 0, target_cid, 0, algo::kOutstanding};
  __syncwarp();
  unsigned x = 0;
  const unsigned long long t0 = globaltimer();
  for (unsigned i = 0; i < kScanIterations; ++i) {
    if (scan) {
      x += p.check([&] { return algo::detail::own_cqe_waiting(p, q, io, algo::LaneMask{1}); }) ? 1u
                                                                                               : 0u;
    } else {
      x += i;
    }
  }
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x == 0) {
    *out_ns = t1 - t0;
    *sink = x;
  }
}

// ------------------------------------------------------------- agent intake

// The intake kernel and its ring sizes (agent_intake.cuh).
using agent_intake_bench::k_agent_intake;
using agent_intake_bench::kAgentPasses;
using agent_intake_bench::kAgentQueues;
using agent_intake_bench::kAgentRingEntries;

// ------------------------------------------------------------------- memory

// A buffer in GPU memory or in pinned host memory mapped into the GPU.
struct Buffer {
  void* host = nullptr;  // pinned host memory, or null
  void* device = nullptr;
  std::size_t bytes = 0;
};
Buffer allocate(bool in_host, std::size_t bytes) {
  Buffer b;
  b.bytes = bytes;
  if (in_host) {
    CK(cudaHostAlloc(&b.host, bytes, cudaHostAllocMapped));
    std::memset(b.host, 0, bytes);
    CK(cudaHostGetDevicePointer(&b.device, b.host, 0));
  } else {
    CK(cudaMalloc(&b.device, bytes));
    CK(cudaMemset(b.device, 0, bytes));
  }
  return b;
}
void release(Buffer& b) {
  if (b.host != nullptr) {
    CK(cudaFreeHost(b.host));
  } else if (b.device != nullptr) {
    CK(cudaFree(b.device));
  }
  b = Buffer{};
}
void fill(Buffer& b, const void* data, std::size_t bytes) {
  if (b.host != nullptr) {
    std::memcpy(b.host, data, bytes);
  } else {
    CK(cudaMemcpy(b.device, data, bytes, cudaMemcpyHostToDevice));
  }
}
std::uint64_t address(const Buffer& b) { return reinterpret_cast<std::uint64_t>(b.device); }
const char* const kMemoryNames[2] = {"gpu", "host"};

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "submission_costs.json";
  const cudaDeviceProp prop = device_or_skip("submission_costs");
  unsigned long long* d_ns = nullptr;
  unsigned* d_sink = nullptr;
  CK(cudaMalloc(&d_ns, sizeof(unsigned long long)));
  CK(cudaMalloc(&d_sink, sizeof(unsigned)));
  const std::size_t scratch = GPUNVME_WARP_SCRATCH_BYTES;

  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.submission_costs/1\", \"program\": "
               "\"tests/hardware/submission_costs.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"launches\": %d,\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kLaunches);

  // (a) SQE build and store.
  std::fprintf(f, " \"sqe_store\": {\"iterations\": %u, \"ring_entries\": %u, \"rows\": [\n",
               kSqeIterations, kRingEntries);
  bool first_row = true;
  for (int in_host = 0; in_host < 2; ++in_host) {
    Buffer sq = allocate(in_host != 0, std::size_t{kRingEntries} * nvme::kSqEntrySize);
    algo::QueuePair q;
    q.sq_base = address(sq);
    q.entries = kRingEntries;
    for (std::uint32_t lanes : {1u, 8u, 32u}) {
      double ns[kSqePatterns];
      for (int k = 0; k < kSqePatterns; ++k) {
        ns[k] = median_ns_per_iteration(
            [&] { k_sqe<<<1, 32, scratch>>>(k, lanes, q, d_ns, d_sink); }, d_ns, kSqeIterations);
      }
      const double store = ns[kSqeStore] - ns[kSqeBare];
      const double fence = ns[kSqeFence] - ns[kSqeBare];
      const double store_before_fence = ns[kSqeStoreFence] - ns[kSqeFence];
      std::fprintf(f,
                   "%s  {\"memory\": \"%s\", \"lanes\": %u, \"ns_per_iteration\": {\"bare\": %.2f, "
                   "\"store\": %.2f, \"fence_system\": %.2f, \"store_fence_system\": %.2f}, "
                   "\"store_ns_per_warp\": %.2f, \"store_ns_per_lane\": %.3f, "
                   "\"fence_system_ns\": %.2f, \"store_before_fence_ns_per_warp\": %.2f, "
                   "\"store_before_fence_ns_per_lane\": %.3f}",
                   first_row ? "" : ",\n", kMemoryNames[in_host], lanes, ns[kSqeBare],
                   ns[kSqeStore], ns[kSqeFence], ns[kSqeStoreFence], store, store / lanes, fence,
                   store_before_fence, store_before_fence / lanes);
      first_row = false;
      std::printf(
          "sqe_store %-4s %2u lanes: store %8.1f ns/warp %7.2f ns/lane; fence %7.1f; "
          "store before fence %8.1f ns/warp\n",
          kMemoryNames[in_host], lanes, store, store / lanes, fence, store_before_fence);
    }
    release(sq);
  }
  std::fprintf(f, "\n ]},\n");

  // (b) Ballots and the lane selection.
  unsigned* word = nullptr;
  CK(cudaMalloc(&word, 128));
  std::fprintf(f, " \"ballots\": {\"figures\": {\n");
  double ballot_ns[kBallotPatterns];
  for (int k = 0; k < kBallotPatterns; ++k) {
    const bool turn_loop = k == kTurnLoopRegister || k == kTurnLoopGpuWord;
    ballot_ns[k] = median_ns_per_iteration(
        [&] {
          CK(cudaMemset(word, 0, 128));
          k_ballot<<<1, 32, scratch>>>(k, word, d_ns, d_sink);
        },
        d_ns, turn_loop ? kTurnLoopIterations : kBallotIterations);
  }
  for (int k = 0; k < kBallotPatterns; ++k) {
    const bool turn_loop = k == kTurnLoopRegister || k == kTurnLoopGpuWord;
    // A turn loop's iteration holds 32 turns and one for_lanes of tickets.
    // A turn loop's iteration is a for_lanes of tickets and 32 turns: the
    // for_lanes row's iteration (the bare loop included) is taken off.
    double per_op = ballot_ns[k] - ballot_ns[kBallotBare];
    if (k == kBallotBare) per_op = 0.0;
    if (turn_loop) per_op = (ballot_ns[k] - ballot_ns[kForLanesRegister]) / 32.0;
    std::fprintf(
        f, "  \"%s\": {\"ns_per_iteration\": %.2f, \"ns_per_op\": %.2f, \"doc\": \"%s\"}%s\n",
        kBallotNames[k], ballot_ns[k], per_op, kBallotDocs[k], k + 1 < kBallotPatterns ? "," : "");
    std::printf("%-26s %9.1f ns/iteration %8.2f ns/op\n", kBallotNames[k], ballot_ns[k], per_op);
  }
  std::fprintf(f, " }},\n");
  CK(cudaFree(word));

  // (c) A cq_scan waiter's scan of the CQ window.
  std::fprintf(f, " \"cq_scan\": {\"iterations\": %u, \"ring_entries\": %u, \"rows\": [\n",
               kScanIterations, kRingEntries);
  first_row = true;
  Buffer marks = allocate(false, std::size_t{kRingEntries} * 4);
  Buffer head = allocate(false, 128);
  for (int in_host = 0; in_host < 2; ++in_host) {
    Buffer cq = allocate(in_host != 0, std::size_t{kRingEntries} * nvme::kCqEntrySize);
    algo::QueuePair q;
    q.cq_base = address(cq);
    q.entries = kRingEntries;
    q.cq_head = address(head);
    q.cq_marks = address(marks);
    for (std::uint32_t posted : {1u, 4u, 8u, 16u, 32u}) {
      std::vector<nvme::CompletionEntry> entries(kRingEntries);
      for (std::uint32_t i = 0; i < kRingEntries; ++i) {
        std::memset(&entries[i], 0, sizeof entries[i]);
        entries[i].cid = static_cast<std::uint16_t>(100 + i);
        entries[i].sqid = 1;
        // Lap 0 expects phase 1: the first `posted` entries are posted.
        entries[i].status_field = i < posted ? 1u : 0u;
      }
      fill(cq, entries.data(), entries.size() * sizeof entries[0]);
      const double bare = median_ns_per_iteration(
          [&] { k_cq_scan<<<1, 32, scratch>>>(false, 0, q, d_ns, d_sink); }, d_ns, kScanIterations);
      const double hit =
          median_ns_per_iteration(
              [&] { k_cq_scan<<<1, 32, scratch>>>(true, 100 + posted - 1, q, d_ns, d_sink); }, d_ns,
              kScanIterations) -
          bare;
      unsigned found = 0;
      CK(cudaMemcpy(&found, d_sink, sizeof found, cudaMemcpyDeviceToHost));
      const double miss =
          median_ns_per_iteration(
              [&] { k_cq_scan<<<1, 32, scratch>>>(true, 0xFFFFu, q, d_ns, d_sink); }, d_ns,
              kScanIterations) -
          bare;
      unsigned found_absent = 0;
      CK(cudaMemcpy(&found_absent, d_sink, sizeof found_absent, cudaMemcpyDeviceToHost));
      if (found != kScanIterations || found_absent != 0) {
        std::fprintf(stderr, "cq_scan: the scan found %u of %u present and %u absent CIDs\n", found,
                     kScanIterations, found_absent);
        return 1;
      }
      std::fprintf(f,
                   "%s  {\"memory\": \"%s\", \"posted\": %u, \"bare_ns\": %.2f, "
                   "\"cid_in_last_posted_ns\": %.2f, \"cid_absent_ns\": %.2f, "
                   "\"cid_in_last_posted_ns_per_entry\": %.2f}",
                   first_row ? "" : ",\n", kMemoryNames[in_host], posted, bare, hit, miss,
                   hit / posted);
      first_row = false;
      std::printf(
          "cq_scan %-4s %2u posted: own CID last %9.1f ns (%7.1f per entry), absent "
          "%9.1f ns\n",
          kMemoryNames[in_host], posted, hit, hit / posted, miss);
    }
    release(cq);
  }
  release(marks);
  release(head);
  std::fprintf(f, "\n ]},\n");

  // (d) io_agents' intake of 32 requests.
  std::fprintf(f,
               " \"agent_intake\": {\"passes\": %u, \"requests_per_pass\": 32, \"queues\": %u, "
               "\"rows\": [\n",
               kAgentPasses, kAgentQueues);
  first_row = true;
  for (int in_host = 0; in_host < 2; ++in_host) {
    Buffer descriptors =
        allocate(false, std::size_t{kAgentRingEntries} * sizeof(algo::AgentRequest));
    Buffer ready = allocate(false, std::size_t{kAgentRingEntries} * 4);
    Buffer gate = allocate(false, std::size_t{kAgentRingEntries} * 4);
    const std::vector<algo::AgentRequest> d = agent_intake_bench::descriptors(kAgentRingEntries, 0);
    std::vector<std::uint32_t> ready_marks(kAgentRingEntries, 1u);  // lap 0 + 1
    fill(descriptors, d.data(), d.size() * sizeof d[0]);
    fill(ready, ready_marks.data(), ready_marks.size() * 4);
    algo::AgentRing ring;
    ring.base = address(descriptors);
    ring.entries = kAgentRingEntries;
    ring.ready = address(ready);
    ring.gate = address(gate);
    std::vector<Buffer> sqs;
    std::vector<Buffer> tables;
    std::vector<algo::QueuePair> qs(kAgentQueues);
    for (std::uint32_t i = 0; i < kAgentQueues; ++i) {
      sqs.push_back(allocate(in_host != 0, std::size_t{kRingEntries} * nvme::kSqEntrySize));
      tables.push_back(allocate(false, std::size_t{kRingEntries} * 8));
      qs[i].sq_base = address(sqs.back());
      qs[i].agent_table = address(tables.back());
      qs[i].entries = kRingEntries;
      qs[i].qid = static_cast<std::uint16_t>(i + 1);
    }
    algo::QueuePair* d_queues = nullptr;
    CK(cudaMalloc(&d_queues, qs.size() * sizeof qs[0]));
    CK(cudaMemcpy(d_queues, qs.data(), qs.size() * sizeof qs[0], cudaMemcpyHostToDevice));
    const double bare = median_ns_per_iteration(
        [&] { k_agent_intake<<<1, 32, scratch>>>(false, ring, d_queues, d_ns, d_sink); }, d_ns,
        kAgentPasses);
    const double pass =
        median_ns_per_iteration(
            [&] { k_agent_intake<<<1, 32, scratch>>>(true, ring, d_queues, d_ns, d_sink); }, d_ns,
            kAgentPasses) -
        bare;
    unsigned taken = 0;
    CK(cudaMemcpy(&taken, d_sink, sizeof taken, cudaMemcpyDeviceToHost));
    if (taken != 32u * kAgentPasses) {
      std::fprintf(stderr, "agent_intake: %u of %u requests taken\n", taken, 32u * kAgentPasses);
      return 1;
    }
    std::fprintf(f,
                 "%s  {\"sq_memory\": \"%s\", \"bare_ns_per_pass\": %.2f, \"ns_per_pass\": %.2f, "
                 "\"ns_per_request\": %.2f}",
                 first_row ? "" : ",\n", kMemoryNames[in_host], bare, pass, pass / 32.0);
    first_row = false;
    std::printf("agent_intake sq in %-4s: %9.1f ns per pass of 32, %7.1f ns per request\n",
                kMemoryNames[in_host], pass, pass / 32.0);
    CK(cudaFree(d_queues));
    for (Buffer& b : sqs) release(b);
    for (Buffer& b : tables) release(b);
    release(descriptors);
    release(ready);
    release(gate);
  }
  std::fprintf(f, "\n ]}\n}\n");
  std::fclose(f);
  CK(cudaFree(d_ns));
  CK(cudaFree(d_sink));
  return 0;
}
