// GPU reads of pinned host memory while host threads copy data to the GPU:
// the latency of a dependent zero-copy read chase (one thread per block, K
// blocks on K SMs, each over its own 64 KiB random cycle) with 0-4 host
// threads running back-to-back 128 KiB cudaMemcpyAsync host-to-device copies,
// as the software NVMe controller's threads do for each batch. The copy
// engine's reads of host memory share the path the chase's reads take, which
// the controller's own copies do to the GPU's polling and CQE reads.
//
//   host_read_under_copies OUT.json
//
// Writes the median over five launches of the mean read latency per
// (copy threads, chasers) and the copies per second the threads achieved.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hw_bench.cuh"

__device__ __forceinline__ unsigned load_uncached(const unsigned* p) {
  unsigned v;
  asm volatile("ld.global.cv.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Block b chases its own region; out[b] is the chase's time in ns.
__global__ void chase(const unsigned* regions, size_t region_words, int steps,
                      unsigned long long* out) {
  if (threadIdx.x != 0) return;
  const unsigned* b = regions + blockIdx.x * region_words;
  unsigned idx = 0;
  for (int i = 0; i < 50; ++i) idx = load_uncached(b + idx);
  const unsigned long long t0 = globaltimer();
  for (int i = 0; i < steps; ++i) idx = load_uncached(b + idx);
  const unsigned long long t1 = globaltimer();
  out[blockIdx.x] = t1 - t0 + (idx == 0xFFFFFFFFu ? 1 : 0);  // keeps the chase live
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: host_read_under_copies OUT.json\n");
    return 2;
  }
  const cudaDeviceProp prop = device_or_skip("host_read_under_copies");

  constexpr size_t kRegion = 64 << 10, kWords = kRegion / 4, kLine = 128;
  constexpr int kMaxChasers = 64, kSteps = 4000, kReps = 5, kMaxCopyThreads = 4;
  constexpr size_t kCopyBytes = 128 << 10;
  unsigned *host = nullptr, *mapped = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&host), kRegion * kMaxChasers, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), host, 0));
  // Each region a single random cycle over its 128 B lines (Sattolo, fixed seed).
  const unsigned nodes = kRegion / kLine, stride = kLine / 4;
  std::srand(1);
  for (int k = 0; k < kMaxChasers; ++k) {
    std::vector<unsigned> order(nodes);
    for (unsigned i = 0; i < nodes; ++i) order[i] = i;
    for (unsigned i = nodes - 1; i > 0; --i) std::swap(order[i], order[std::rand() % i]);
    unsigned* r = host + k * kWords;
    for (unsigned i = 0; i < nodes; ++i) r[order[i] * stride] = order[(i + 1) % nodes] * stride;
  }
  unsigned long long* times = nullptr;
  CK(cudaMalloc(&times, kMaxChasers * sizeof(unsigned long long)));

  // Copy threads: thread t copies while `active` > t.
  void* gpu_dst = nullptr;
  CK(cudaMalloc(&gpu_dst, kMaxCopyThreads * kCopyBytes));
  std::atomic<bool> stop{false};
  std::atomic<int> active{0};
  std::atomic<long> copies{0};
  std::vector<unsigned char*> staging(kMaxCopyThreads);
  for (auto& s : staging) CK(cudaHostAlloc(reinterpret_cast<void**>(&s), kCopyBytes, 0));
  std::vector<std::thread> copiers;
  for (int t = 0; t < kMaxCopyThreads; ++t) {
    copiers.emplace_back([&, t] {
      cudaStream_t s;
      CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      while (!stop.load()) {
        if (active.load() > t) {
          CK(cudaMemcpyAsync(static_cast<char*>(gpu_dst) + t * kCopyBytes, staging[t], kCopyBytes,
                             cudaMemcpyHostToDevice, s));
          CK(cudaStreamSynchronize(s));
          copies.fetch_add(1);
        } else {
          __builtin_ia32_pause();
        }
      }
      CK(cudaStreamDestroy(s));
    });
  }
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::string rows;
  for (int threads : {0, 1, 2, 4}) {
    active = threads;
    for (int chasers : {1, 2, 4, 8, 16, 32, 64}) {
      std::vector<double> means;
      const long copies_before = copies.load();
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < kReps; ++r) {
        chase<<<chasers, 32, 0, stream>>>(mapped, kWords, kSteps, times);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(stream));
        std::vector<unsigned long long> t(chasers);
        CK(cudaMemcpy(t.data(), times, chasers * sizeof t[0], cudaMemcpyDeviceToHost));
        double sum = 0;
        for (unsigned long long x : t) sum += static_cast<double>(x);
        means.push_back(sum / chasers / kSteps);
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::sort(means.begin(), means.end());
      char row[320];
      std::snprintf(row, sizeof row,
                    "%s\n    {\"copy_threads\": %d, \"chasers\": %d, \"read_latency_ns\": %.1f, "
                    "\"min_ns\": %.1f, \"max_ns\": %.1f, \"copies_per_s\": %.0f}",
                    rows.empty() ? "" : ",", threads, chasers, means[kReps / 2], means.front(),
                    means.back(), static_cast<double>(copies.load() - copies_before) / seconds);
      rows += row;
      std::printf("copy threads %d  chasers %2d  read latency %7.1f ns\n", threads, chasers,
                  means[kReps / 2]);
    }
  }
  stop = true;
  for (std::thread& t : copiers) t.join();

  FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  std::fprintf(f,
               "{\n  \"schema\": \"gpunvme.host_read_under_copies/1\",\n  \"device\": \"%s\",\n"
               "  \"method\": \"K blocks (one thread each, one per SM) chase their own random "
               "single cycle of 128 B lines in 64 KiB of pinned mapped host memory with "
               "ld.global.cv (each load crosses PCIe), %d steps after 50 warm; meanwhile 0-4 host "
               "threads each run back-to-back %zu KiB cudaMemcpyAsync host-to-device copies on "
               "their own stream with a cudaStreamSynchronize after each; median of %d "
               "launches of the per-load mean\",\n  \"rows\": [%s\n  ]\n}\n",
               prop.name, kSteps, kCopyBytes >> 10, kReps, rows.c_str());
  std::fclose(f);
  return 0;
}
