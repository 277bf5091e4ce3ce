// What the standalone hardware microbenchmarks of this folder share. Each is
// one .cu file that nvcc builds alone (tests/hardware/run_hw.sh), so this
// header needs only CUDA.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

// A CUDA runtime call that must succeed: otherwise the program names the
// call's place and error and exits 1.
#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// The chip-wide nanosecond clock.
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// A volatile 16 B load (ld.volatile.global.v4): the hardware backend's load
// of a queue entry that another agent writes.
__device__ __forceinline__ uint4 load_volatile_v4(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Every warp's lane 0 counts its warp in `arrived` and spins until `warps`
// have: a launch's warps start their measured work together (all must be
// resident at once, or this waits for ever).
__device__ __forceinline__ void wait_for_all_warps(unsigned* arrived, unsigned warps) {
  if (threadIdx.x % 32u == 0) {
    atomicAdd(arrived, 1u);
    while (*static_cast<volatile unsigned*>(arrived) < warps) {
    }
  }
  __syncwarp();
}

// Device 0's properties; without a CUDA device the program says so and
// exits 77, which the harnesses count as skipped.
inline cudaDeviceProp device_or_skip(const char* program) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "%s: no CUDA device\n", program);
    std::exit(77);
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  return prop;
}

// Runs a kernel launch `launches` + 1 times and returns the median over the
// timed launches (the first warms up) of the time the kernel wrote to `d_ns`,
// divided by `divisor` (iterations, requests).
template <class Launch>
double median_launch_ns(Launch&& launch, unsigned long long* d_ns, double divisor, int launches) {
  std::vector<double> figures;
  for (int l = 0; l <= launches; ++l) {
    launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    unsigned long long ns = 0;
    CK(cudaMemcpy(&ns, d_ns, sizeof ns, cudaMemcpyDeviceToHost));
    if (l > 0) figures.push_back(double(ns) / divisor);
  }
  std::sort(figures.begin(), figures.end());
  return figures[figures.size() / 2];
}
