// What one warp's collective platform calls cost on the GPU, through the
// same platform class the strategies run on (sim/core/platform/cuda_warp.cuh,
// no trace, no op profile): ballots whose lanes load a word of GPU memory,
// for_lanes whose lanes store, and the warp-uniform turn of a lane (the
// leader's store of a shared word, a fence, then every lane loading that word
// again). No queue, no target, no strategy: each pattern is one loop of
// platform calls on words nothing else touches.
//
//   warp_collectives OUT.json
//
// One warp in one block; each figure is the median over seven launches (after
// a warm-up) of the loop's %globaltimer time over its iterations. Each
// iteration's value feeds the next (the compared value and the stored value
// depend on the previous ballot), so no call can start before the one before
// it has returned (the top bit of the previous result enters the next value).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hw_bench.cuh"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

constexpr int kIterations = 4096;
constexpr int kLaunches = 7;

enum Pattern : int {
  kEmpty,                // the loop alone (a warp-uniform add)
  kBallotNoLoad,         // ballot of a register predicate
  kBallotLoadShared,     // ballot: every lane loads the same word
  kBallotLoadOwn,        // ballot: lane l loads word l of one line
  kStoreThenBallot,      // leader stores word A, then ballot: every lane loads A
  kStoreFenceGpuBallot,  // leader stores A, __threadfence(), ballot loads A
  kStoreFenceSysBallot,  // leader stores A, __threadfence_system(), ballot loads A
  kTurnStep,             // leader stores B (doorbell word), system fence, stores A, ballot loads A
  kForLanesEmpty,        // for_lanes over 32 lanes, empty body
  kForLanesStore,        // for_lanes: lane l stores word l of one line
  kLeaderStore,          // leader's store of one word alone
  kFenceSystem,          // __threadfence_system() alone
  kFenceGpu,             // __threadfence() alone
  kFenceGpuBallot,       // __threadfence(), ballot: every lane loads A (address in a register)
  kFenceGpuDescBallot,   // __threadfence(), ballot: every lane loads the word a descriptor names
  kFenceSysBallot,       // as kFenceGpuBallot with __threadfence_system()
  kFenceSysDescBallot,   // as kFenceGpuDescBallot with __threadfence_system()
  kDescBallot,           // ballot of the descriptor's word with no fence
  kPatterns
};

const char* const kNames[kPatterns] = {"empty_loop",
                                       "ballot_no_load",
                                       "ballot_load_shared_word",
                                       "ballot_load_own_word",
                                       "store_then_ballot_load",
                                       "store_fence_gpu_ballot_load",
                                       "store_fence_system_ballot_load",
                                       "turn_step",
                                       "for_lanes_empty",
                                       "for_lanes_store_own_word",
                                       "leader_store",
                                       "fence_system",
                                       "fence_gpu",
                                       "fence_gpu_ballot_load",
                                       "fence_gpu_ballot_load_via_descriptor",
                                       "fence_system_ballot_load",
                                       "fence_system_ballot_load_via_descriptor",
                                       "ballot_load_via_descriptor"};

const char* const kDocs[kPatterns] = {
    "loop overhead: x += v, v = i ^ (top bit of x)",
    "p.ballot(all, lane < (i & 31)): the vote alone",
    "p.ballot(all, load_u32(A) == i): 32 lanes load one 4 B word of GPU memory nothing writes",
    "p.ballot(all, load_u32(A + 4 * lane) == i): 32 lanes load consecutive words of one line",
    "p.store_u32(A, i) by the leader, then p.ballot(all, load_u32(A) == i): a lane reading back "
    "the word its warp's leader just stored",
    "as store_then_ballot_load with p.fence_gpu() between the store and the ballot",
    "as store_then_ballot_load with p.fence_system() between the store and the ballot",
    "p.store_u32(B, i) (a doorbell word in GPU memory), p.fence_system(), p.store_u32(A, i + 1), "
    "p.ballot(all, load_u32(A) == i + 1): the warp-uniform turn of one lane as a lane-per-command "
    "submission takes it, with no queue",
    "p.for_lanes(all, {}): the warp barrier that ends a for_lanes",
    "p.for_lanes(all, store_u32(A + 4 * lane, i)): 32 lanes store consecutive words",
    "p.store_u32(A, i) by the leader alone",
    "p.fence_system() alone, nothing stored before it in the iteration",
    "p.fence_gpu() alone",
    "p.fence_gpu(), then p.ballot(all, load_u32(A) == i), A in a register",
    "p.fence_gpu(), then p.ballot(all, load_u32(d->word) == i), d a descriptor in GPU memory "
    "(as a QueuePair is): the fence is a compiler barrier, so the descriptor is read again",
    "p.fence_system(), then p.ballot(all, load_u32(A) == i), A in a register",
    "p.fence_system(), then p.ballot(all, load_u32(d->word) == i) as "
    "fence_gpu_ballot_load_via_descriptor",
    "p.ballot(all, load_u32(d->word) == i) with no fence: the descriptor stays in registers"};

struct Descriptor {
  std::uint64_t word;  // the address of the word to load
  std::uint64_t other[7];
};

__global__ void k_pattern(int pattern, unsigned* words, const Descriptor* d,
                          unsigned long long* out_ns, unsigned* sink) {
  gpunvme::platform::CudaWarp p;
  const auto a = reinterpret_cast<std::uint64_t>(words);
  const std::uint64_t b = a + 4096;  // another line, another 4 KiB page
  unsigned x = 0;
  __syncwarp();
  const unsigned long long t0 = globaltimer();
  for (unsigned i = 0; i < unsigned(kIterations); ++i) {
    const unsigned v = i ^ (x & 0x80000000u);
    switch (pattern) {
      case kEmpty: x += v; break;
      case kBallotNoLoad:
        x += p.ballot(0xFFFFFFFFu, [&](int lane) { return unsigned(lane) < (v & 31u); });
        break;
      case kBallotLoadShared:
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(a) == v; });
        break;
      case kBallotLoadOwn:
        x += p.ballot(0xFFFFFFFFu, [&](int lane) { return p.load_u32(a + 4u * lane) == v; });
        break;
      case kStoreThenBallot:
        p.store_u32(a, v);
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(a) != v; });
        break;
      case kStoreFenceGpuBallot:
        p.store_u32(a, v);
        p.fence_gpu();
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(a) != v; });
        break;
      case kStoreFenceSysBallot:
        p.store_u32(a, v);
        p.fence_system();
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(a) != v; });
        break;
      case kTurnStep:
        p.store_u32(b, v);
        p.fence_system();
        p.store_u32(a, v + 1u);
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(a) != v + 1u; });
        break;
      case kForLanesEmpty:
        p.for_lanes(0xFFFFFFFFu, [&](int lane) { x += unsigned(lane) & v & 0u; });
        break;
      case kForLanesStore:
        p.for_lanes(0xFFFFFFFFu, [&](int lane) { p.store_u32(a + 4u * lane, v); });
        break;
      case kLeaderStore: p.store_u32(a, v); break;
      case kFenceSystem: p.fence_system(); break;
      case kFenceGpu: p.fence_gpu(); break;
      case kFenceGpuBallot:
        p.fence_gpu();
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(a) == v; });
        break;
      case kFenceGpuDescBallot:
        p.fence_gpu();
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(d->word) == v; });
        break;
      case kFenceSysBallot:
        p.fence_system();
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(a) == v; });
        break;
      case kFenceSysDescBallot:
        p.fence_system();
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(d->word) == v; });
        break;
      case kDescBallot:
        x += p.ballot(0xFFFFFFFFu, [&](int) { return p.load_u32(d->word) == v; });
        break;
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

double run_pattern(int pattern, unsigned* words, const Descriptor* d, unsigned long long* d_ns,
                   unsigned* d_sink) {
  std::vector<double> per_iteration;
  for (int launch = 0; launch <= kLaunches; ++launch) {
    CK(cudaMemset(words, 0xFF, 8192));
    k_pattern<<<1, 32>>>(pattern, words, d, d_ns, d_sink);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    unsigned long long ns = 0;
    CK(cudaMemcpy(&ns, d_ns, sizeof ns, cudaMemcpyDeviceToHost));
    if (launch > 0) per_iteration.push_back(double(ns) / kIterations);  // launch 0: warm-up
  }
  std::sort(per_iteration.begin(), per_iteration.end());
  return per_iteration[per_iteration.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "warp_collectives.json";
  const cudaDeviceProp prop = device_or_skip("warp_collectives");
  unsigned* words = nullptr;
  unsigned long long* d_ns = nullptr;
  unsigned* d_sink = nullptr;
  CK(cudaMalloc(&words, 8192));
  CK(cudaMalloc(&d_ns, sizeof(unsigned long long)));
  CK(cudaMalloc(&d_sink, sizeof(unsigned)));
  Descriptor host_d{};
  host_d.word = reinterpret_cast<std::uint64_t>(words) + 2048;
  Descriptor* d = nullptr;
  CK(cudaMalloc(&d, sizeof(Descriptor)));
  CK(cudaMemcpy(d, &host_d, sizeof host_d, cudaMemcpyHostToDevice));
  double figures[kPatterns];
  for (int k = 0; k < kPatterns; ++k) figures[k] = run_pattern(k, words, d, d_ns, d_sink);
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.warp_collectives/1\", \"program\": "
               "\"tests/hardware/warp_collectives.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"iterations\": %d, "
               "\"launches\": %d,\n \"figures\": {\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kIterations, kLaunches);
  for (int k = 0; k < kPatterns; ++k) {
    std::fprintf(f,
                 "  \"%s\": {\"value\": %.2f, \"unit\": \"ns per iteration\", \"doc\": \"%s\"}%s\n",
                 kNames[k], figures[k], kDocs[k], k + 1 < kPatterns ? "," : "");
    std::printf("%-32s %8.1f ns\n", kNames[k], figures[k]);
  }
  std::fprintf(f, " }\n}\n");
  std::fclose(f);
  CK(cudaFree(words));
  CK(cudaFree(d_ns));
  CK(cudaFree(d_sink));
  CK(cudaFree(d));
  return 0;
}
