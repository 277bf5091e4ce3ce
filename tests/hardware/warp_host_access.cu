// One warp's accesses to pinned host memory, as the algorithms make them,
// and what other warps polling host memory do to them: the counterparts of
// the simulated warp's PCIe reads inside a ballot (32 lanes reading one CQE
// each, as four 32-bit words or one 16-byte load), its SQE stores (32 lanes,
// 64 B each, as 4-byte or 16-byte stores) and its fences.
//
//   warp_host_access OUT.json
//
// Warp 0 of a block measures; P other warps (0, 1, 3 or 7), in the same
// block (same SM) or in blocks of their own (other SMs), spin on volatile
// reads of host memory meanwhile, as warps waiting on a CQ in host memory
// do. Each figure is the median over five launches of the mean time of one
// operation over 256 repetitions (%globaltimer).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hw_bench.cuh"

namespace {

constexpr int kReps = 256;
constexpr int kLaunches = 5;

enum Pattern : int {
  kRead1Lane,         // lane 0 reads a 4 B word
  kRead32Words,       // 32 lanes read consecutive 4 B words (one 128 B line)
  kReadCqeAsWords,    // 32 lanes read a 16 B entry each, as four 4 B loads
  kReadCqeAsVector,   // 32 lanes read a 16 B entry each, as one 16 B load
  kSqeStoresWords,    // 32 lanes store a 64 B entry each, 4 B stores, then a system fence
  kSqeStoresVectors,  // the same with 16 B stores
  kFenceSystem,       // __threadfence_system() alone
  kFenceGpu,          // __threadfence() alone
  kDoorbell,          // lane 0 stores 4 B to host memory, then a system fence
  kPatterns
};
const char* const kPatternNames[kPatterns] = {"read_1_lane_4B",
                                              "read_32_lanes_4B",
                                              "read_32_lanes_16B_as_4B_words",
                                              "read_32_lanes_16B_vector",
                                              "store_32_lanes_64B_as_4B_words_then_fence_system",
                                              "store_32_lanes_64B_as_16B_vectors_then_fence_system",
                                              "fence_system",
                                              "fence_gpu",
                                              "store_1_lane_4B_then_fence_system"};

// Warp 0 of block 0 measures `pattern`; every other warp launched polls
// host memory (its own 128 B line) until warp 0 is done.
__global__ void measure(int pattern, unsigned* host, unsigned* poll_lines, volatile unsigned* stop,
                        unsigned long long* out) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (warp != 0) {
    volatile unsigned* mine = poll_lines + warp * 32;
    unsigned sink = 0;
    while (*stop == 0) sink += *mine;
    if (sink == 0xFFFFFFFFu) out[1] = sink;  // keeps the polls live
    return;
  }
  volatile unsigned* h = host;
  unsigned acc = 0;
  unsigned long long t0 = 0;
  for (int rep = -16; rep < kReps; ++rep) {
    if (rep == 0) t0 = globaltimer();
    switch (pattern) {
      case kRead1Lane: {
        unsigned v = lane == 0 ? h[rep & 255] : 0;
        acc += __shfl_sync(0xFFFFFFFFu, v, 0);
        break;
      }
      case kRead32Words: acc += __ballot_sync(0xFFFFFFFFu, h[lane] == 0xFFFFFFFFu); break;
      case kReadCqeAsWords: {
        volatile unsigned* e = h + lane * 4;
        const unsigned w3 = e[3], w2 = e[2], w1 = e[1], w0 = e[0];
        acc += __ballot_sync(0xFFFFFFFFu, (w0 ^ w1 ^ w2 ^ w3) == 0xFFFFFFFFu);
        break;
      }
      case kReadCqeAsVector: {
        uint4 v;
        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(host + lane * 4));
        acc += __ballot_sync(0xFFFFFFFFu, (v.x ^ v.y ^ v.z ^ v.w) == 0xFFFFFFFFu);
        break;
      }
      case kSqeStoresWords: {
        volatile unsigned* e = h + 4096 + lane * 16;
        for (int i = 0; i < 16; ++i) e[i] = static_cast<unsigned>(rep + i);
        __threadfence_system();
        break;
      }
      case kSqeStoresVectors: {
        unsigned* e = host + 4096 + lane * 16;
        for (int i = 0; i < 4; ++i) {
          const unsigned x = static_cast<unsigned>(rep + 4 * i);
          asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(e + 4 * i), "r"(x),
                       "r"(x + 1), "r"(x + 2), "r"(x + 3)
                       : "memory");
        }
        __threadfence_system();
        break;
      }
      case kFenceSystem: __threadfence_system(); break;
      case kFenceGpu: __threadfence(); break;
      case kDoorbell:
        if (lane == 0) h[8192] = static_cast<unsigned>(rep);
        __threadfence_system();
        break;
    }
    __syncwarp();
  }
  const unsigned long long t1 = globaltimer();
  if (lane == 0) {
    out[0] = t1 - t0 + (acc == 0x7FFFFFFFu ? 1 : 0);
    *stop = 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: warp_host_access OUT.json\n");
    return 2;
  }
  const cudaDeviceProp prop = device_or_skip("warp_host_access");
  unsigned *host = nullptr, *mapped = nullptr, *poll_host = nullptr, *poll_mapped = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&host), 64 << 10, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), host, 0));
  CK(cudaHostAlloc(reinterpret_cast<void**>(&poll_host), 64 * 128, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&poll_mapped), poll_host, 0));
  unsigned* stop = nullptr;
  unsigned long long* out = nullptr;
  CK(cudaMalloc(&stop, 4));
  CK(cudaMalloc(&out, 16));

  struct Setup {
    const char* where;
    int pollers;
  };
  const Setup setups[] = {{"none", 0},    {"same_sm", 1},   {"same_sm", 3},
                          {"same_sm", 7}, {"other_sms", 1}, {"other_sms", 7}};
  std::string rows;
  for (const Setup& s : setups) {
    for (int p = 0; p < kPatterns; ++p) {
      std::vector<double> means;
      for (int l = 0; l < kLaunches; ++l) {
        CK(cudaMemset(stop, 0, 4));
        // Same SM: one block of 1 + P warps. Other SMs: 1 + P blocks of one
        // warp each (the scheduler spreads them over SMs).
        const bool same = std::string(s.where) == "same_sm";
        const int blocks = same ? 1 : 1 + s.pollers;
        const int threads = same ? 32 * (1 + s.pollers) : 32;
        measure<<<blocks, threads>>>(p, mapped, poll_mapped, stop, out);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long ns = 0;
        CK(cudaMemcpy(&ns, out, 8, cudaMemcpyDeviceToHost));
        means.push_back(static_cast<double>(ns) / kReps);
      }
      std::sort(means.begin(), means.end());
      char row[400];
      std::snprintf(row, sizeof row,
                    "%s\n    {\"pattern\": \"%s\", \"pollers\": %d, \"pollers_where\": \"%s\", "
                    "\"ns\": %.1f, \"min_ns\": %.1f, \"max_ns\": %.1f}",
                    rows.empty() ? "" : ",", kPatternNames[p], s.pollers, s.where,
                    means[kLaunches / 2], means.front(), means.back());
      rows += row;
      std::printf("%-52s pollers %d %-9s %8.1f ns\n", kPatternNames[p], s.pollers, s.where,
                  means[kLaunches / 2]);
    }
  }
  FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  std::fprintf(f,
               "{\n  \"schema\": \"gpunvme.warp_host_access/1\",\n  \"device\": \"%s\",\n"
               "  \"method\": \"warp 0 of block 0 repeats one access pattern on pinned mapped "
               "host memory %d times (16 warm-up repetitions first, __syncwarp between); ns is "
               "the median over %d launches of the mean time per repetition (%%globaltimer). "
               "Reads end in a ballot or shuffle of the loaded values, so each repetition waits "
               "for them. Meanwhile P other warps spin on volatile 4 B reads of host memory: in "
               "the same block (same SM) or in blocks of their own (other SMs)\",\n"
               "  \"rows\": [%s\n  ]\n}\n",
               prop.name, kReps, kLaunches, rows.c_str());
  std::fclose(f);
  return 0;
}
