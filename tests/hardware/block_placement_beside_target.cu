// Where the block scheduler puts the compute kernel's thread blocks, alone
// and beside a persistent kernel that holds SMs as the GPU-resident target's
// serving kernel does (sim/frontend/hardware/gpu_target.cu: `sms` blocks of
// serving_warps / sms warps, each taking all the shared memory a block may
// have, launched first on a stream of its own). With no strategy and no
// target: each block records its SM (%smid) and stays until every block of
// its launch has arrived, so that every block is placed while all are
// resident (as the strategies' warps, which run for the whole case).
//
//   block_placement_beside_target OUT.json
//
// Cases: one-warp blocks alone (the layout of block_placement.cu's
// launches), blocks of 256 threads alone, and blocks of 256 threads launched
// after an occupier of 8 blocks of 128 threads (the target's 8 SMs and 32
// serving warps), each with 8 warps' GPUNVME_WARP_SCRATCH_BYTES of dynamic
// shared memory as gpunvme-hw's compute kernel takes; 17, 66 and 124 blocks
// (132 and 528 warps, and every SM the occupier leaves); then every launch
// size of gpunvme-hw's strategy cases alone and beside the occupier (one
// block of 32 threads; 1, 4, 17 and 66 blocks of 256). Each launch is made
// three times.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "hw_bench.cuh"
#include "sim/core/algo/lanes.h"

namespace {

__global__ void k_occupy(unsigned* smid, volatile unsigned* release) {
  extern __shared__ unsigned char occupier_shared[];
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    smid[blockIdx.x] = sm;
    occupier_shared[0] = static_cast<unsigned char>(sm);
    while (*release == 0u) {
    }
  }
  __syncthreads();
}

__global__ void k_place(unsigned blocks, unsigned* smid, unsigned* arrived) {
  extern __shared__ unsigned char scratch[];
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    smid[blockIdx.x] = sm;
    scratch[0] = static_cast<unsigned char>(sm);
    atomicAdd(arrived, 1u);
    while (*static_cast<volatile unsigned*>(arrived) < blocks) {
    }
  }
  __syncthreads();
}

struct Placement {
  std::vector<unsigned> occupier;
  std::vector<unsigned> blocks;
};

Placement place(unsigned blocks, unsigned threads, bool occupier, int occupier_smem) {
  unsigned *d_smid = nullptr, *d_occ = nullptr, *d_arrived = nullptr, *d_release = nullptr;
  CK(cudaMalloc(&d_smid, blocks * sizeof(unsigned)));
  CK(cudaMalloc(&d_occ, 8 * sizeof(unsigned)));
  CK(cudaMalloc(&d_arrived, sizeof(unsigned)));
  CK(cudaMalloc(&d_release, sizeof(unsigned)));
  CK(cudaMemset(d_arrived, 0, sizeof(unsigned)));
  CK(cudaMemset(d_release, 0, sizeof(unsigned)));
  cudaStream_t occ_stream, place_stream;
  CK(cudaStreamCreateWithFlags(&occ_stream, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&place_stream, cudaStreamNonBlocking));
  if (occupier) {
    k_occupy<<<8, 128, occupier_smem, occ_stream>>>(d_occ, d_release);
    CK(cudaGetLastError());
  }
  const std::size_t smem = std::size_t{threads / 32u} * GPUNVME_WARP_SCRATCH_BYTES;
  k_place<<<blocks, threads, smem, place_stream>>>(blocks, d_smid, d_arrived);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(place_stream));
  const unsigned one = 1;
  CK(cudaMemcpy(d_release, &one, sizeof one, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());
  Placement p;
  p.blocks.resize(blocks);
  CK(cudaMemcpy(p.blocks.data(), d_smid, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
  if (occupier) {
    p.occupier.resize(8);
    CK(cudaMemcpy(p.occupier.data(), d_occ, 8 * sizeof(unsigned), cudaMemcpyDeviceToHost));
  }
  CK(cudaStreamDestroy(occ_stream));
  CK(cudaStreamDestroy(place_stream));
  CK(cudaFree(d_smid));
  CK(cudaFree(d_occ));
  CK(cudaFree(d_arrived));
  CK(cudaFree(d_release));
  return p;
}

void print_list(FILE* f, const std::vector<unsigned>& v) {
  std::fprintf(f, "[");
  for (std::size_t i = 0; i < v.size(); ++i) std::fprintf(f, "%s%u", i ? ", " : "", v[i]);
  std::fprintf(f, "]");
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "block_placement_beside_target.json";
  const cudaDeviceProp prop = device_or_skip("block_placement_beside_target");
  const int occupier_smem = static_cast<int>(prop.sharedMemPerBlockOptin);
  CK(cudaFuncSetAttribute(k_occupy, cudaFuncAttributeMaxDynamicSharedMemorySize, occupier_smem));
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.block_placement_beside_target/1\", \"program\": "
               "\"tests/hardware/block_placement_beside_target.cu\",\n \"device\": {\"name\": "
               "\"%s\", \"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n"
               " \"occupier\": {\"blocks\": 8, \"threads_per_block\": 128, \"shared_bytes\": %d},\n"
               " \"warp_scratch_bytes\": %d,\n \"launches\": [\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, occupier_smem,
               int(GPUNVME_WARP_SCRATCH_BYTES));
  struct Case {
    unsigned blocks, threads;
    bool occupier;
  };
  const unsigned sms = static_cast<unsigned>(prop.multiProcessorCount);
  // The first five cases are those of the 2026-11-28 runs; the others are
  // the remaining launch sizes of gpunvme-hw's strategy cases (1, 8, 32,
  // 132 and 528 warps: one block of 32 threads, then 1, 4, 17 and 66 blocks
  // of 256), alone (the host-thread target) and beside the occupier (the
  // GPU-resident target).
  const Case cases[] = {{sms, 32, false},     {sms, 256, false}, {17, 256, true}, {66, 256, true},
                        {sms - 8, 256, true}, {1, 32, false},    {1, 256, false}, {4, 256, false},
                        {17, 256, false},     {66, 256, false},  {1, 32, true},   {1, 256, true},
                        {4, 256, true}};
  bool first = true;
  for (const Case& c : cases) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      const Placement p = place(c.blocks, c.threads, c.occupier, occupier_smem);
      std::fprintf(f, "%s  {\"blocks\": %u, \"threads_per_block\": %u, \"beside_occupier\": %s, ",
                   first ? "" : ",\n", c.blocks, c.threads, c.occupier ? "true" : "false");
      first = false;
      std::fprintf(f, "\"repeat\": %d, \"occupier_smid\": ", repeat);
      print_list(f, p.occupier);
      std::fprintf(f, ", \"smid\": ");
      print_list(f, p.blocks);
      std::fprintf(f, "}");
      std::printf("%3u blocks x %3u threads%s (repeat %d):", c.blocks, c.threads,
                  c.occupier ? " beside the occupier" : "", repeat);
      if (c.occupier) {
        std::printf(" occupier");
        for (unsigned s : p.occupier) std::printf(" %u", s);
        std::printf(" |");
      }
      for (unsigned s : p.blocks) std::printf(" %u", s);
      std::printf("\n");
    }
  }
  std::fprintf(f, "\n ]\n}\n");
  std::fclose(f);
  return 0;
}
