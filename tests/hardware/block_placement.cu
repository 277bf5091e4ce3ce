// Where the block scheduler puts one-warp blocks, and how far each lands
// from a word's L2 partition: the counterpart of the simulator's block
// placement and near/far atomic latency, for the same-address atomic
// microbenchmarks (k_contend in gpu_microbench.cu launches `warps` one-warp
// blocks on one word).
//
//   block_placement OUT.json
//
// For each block count, one launch of that many one-warp blocks: each block
// records its SM (%smid), then the blocks take turns (no contention) timing a
// dependent chain of 64 atomicAdd on each of four words, 4224 B apart (the
// first at the start of a fresh allocation, as k_contend's), with
// %globaltimer. Output: per block count, per block its SM and its ns per
// atomic on each word.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hw_bench.cuh"

namespace {

constexpr int kWords = 4;
constexpr int kStrideWords = 4224 / 4;
constexpr int kIters = 64;

__global__ void k_place(unsigned* words, unsigned* turn, unsigned* smid, float* ns_per_op) {
  if (threadIdx.x != 0) return;
  const unsigned b = blockIdx.x;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  smid[b] = sm;
  while (*reinterpret_cast<volatile unsigned*>(turn) != b) {
  }
  for (int w = 0; w < kWords; ++w) {
    unsigned* word = words + w * kStrideWords;
    unsigned v = atomicAdd(word, 1u);  // warm the line
    const unsigned long long t0 = globaltimer();
    for (int i = 0; i < kIters; ++i) v = atomicAdd(word, v & 1u);
    const unsigned long long t1 = globaltimer();
    ns_per_op[b * kWords + w] = static_cast<float>(t1 - t0) / kIters;
  }
  __threadfence();
  atomicAdd(turn, 1u);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: block_placement OUT.json\n");
    return 2;
  }
  const cudaDeviceProp prop = device_or_skip("block_placement");
  const std::vector<unsigned> counts = {1, 2, 4, 8, 16, 32, 64, 132, 264, 528};
  const unsigned max_blocks = 528;
  unsigned *d_words = nullptr, *d_turn = nullptr, *d_smid = nullptr;
  float* d_ns = nullptr;
  CK(cudaMalloc(&d_words, size_t{kWords} * kStrideWords * 4));
  CK(cudaMalloc(&d_turn, 4));
  CK(cudaMalloc(&d_smid, max_blocks * 4));
  CK(cudaMalloc(&d_ns, max_blocks * kWords * 4));
  std::string rows;
  for (unsigned n : counts) {
    CK(cudaMemset(d_words, 0, size_t{kWords} * kStrideWords * 4));
    CK(cudaMemset(d_turn, 0, 4));
    k_place<<<n, 32>>>(d_words, d_turn, d_smid, d_ns);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<unsigned> smid(n);
    std::vector<float> ns(size_t{n} * kWords);
    CK(cudaMemcpy(smid.data(), d_smid, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ns.data(), d_ns, ns.size() * 4, cudaMemcpyDeviceToHost));
    std::string sms, lat;
    for (unsigned b = 0; b < n; ++b) {
      sms += (b ? ", " : "") + std::to_string(smid[b]);
      lat += b ? ", [" : "[";
      for (int w = 0; w < kWords; ++w) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.1f", w ? ", " : "", ns[b * kWords + w]);
        lat += buf;
      }
      lat += "]";
    }
    rows += (rows.empty() ? "" : ",\n") + std::string("    {\"blocks\": ") + std::to_string(n) +
            ", \"smid\": [" + sms + "], \"ns_per_atomic\": [" + lat + "]}";
  }
  FILE* out = std::fopen(argv[1], "w");
  if (out == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  std::fprintf(out,
               "{\n  \"schema\": \"gpunvme.block_placement/1\",\n  \"device\": \"%s\",\n"
               "  \"sms\": %d,\n  \"words\": %d,\n  \"word_stride_bytes\": 4224,\n"
               "  \"iters\": %d,\n  \"launches\": [\n%s\n  ]\n}\n",
               prop.name, prop.multiProcessorCount, kWords, kIters, rows.c_str());
  std::fclose(out);
  return 0;
}
