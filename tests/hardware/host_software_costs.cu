// Host-side software costs, measured on a GPU machine (run_host_costs.sh):
//  (b) GPU->CPU->GPU round trip: a one-thread kernel writes a sequence number
//      to a flag in mapped pinned host memory; a host thread spinning on it
//      writes the number back to a reply word (mapped pinned host memory) the
//      kernel spins on. The kernel times each round trip with %globaltimer.
//      A second kernel times dependent loads of a pinned host word (the GPU's
//      own poll read across PCIe), to split the round trip.
//  (c) cudaMemcpyAsync launch cost (host time per call) and the cost of a
//      small copy plus cudaStreamSynchronize, and of sync on an idle stream.
//  (d) pread of 4 KiB .. 1 MiB from a page-cache-hot file and with O_DIRECT.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "host_cost_timing.h"

__device__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
__global__ void round_trip(volatile unsigned* flag, volatile unsigned* reply,
                           unsigned long long* rt, int n) {
  for (int i = 1; i <= n; ++i) {
    unsigned long long t0 = gtime();
    *flag = i;
    __threadfence_system();
    while (*reply != (unsigned)i) {
    }
    rt[i - 1] = gtime() - t0;
  }
}
__global__ void host_load_latency(volatile unsigned* word, unsigned long long* out, int n) {
  unsigned sum = 0;
  unsigned long long t0 = gtime();
  for (int i = 0; i < n; ++i) sum += *word;  // dependent through volatile
  out[0] = gtime() - t0;
  out[1] = sum;
}
int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "/tmp";
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  // ---- (b) round trip
  {
    unsigned *flag, *reply, *dflag, *dreply;
    CK(cudaHostAlloc(&flag, 64, cudaHostAllocMapped));
    CK(cudaHostAlloc(&reply, 64, cudaHostAllocMapped));
    *flag = 0;
    *reply = 0;
    CK(cudaHostGetDevicePointer(&dflag, flag, 0));
    CK(cudaHostGetDevicePointer(&dreply, reply, 0));
    const int n = 20000;
    unsigned long long* drt;
    CK(cudaMalloc(&drt, n * 8));
    std::vector<double> host_gap;    // host: seeing flag i -> seeing flag i+1
    std::vector<double> host_react;  // host: seeing flag -> reply stored
    host_gap.reserve(n);
    host_react.reserve(n);
    std::thread host([&] {
      volatile unsigned* f = flag;
      volatile unsigned* r = reply;
      double last = 0;
      for (unsigned i = 1; i <= (unsigned)n; ++i) {
        while (*f != i) {
        }
        double t = now_ns();
        *r = i;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        double t2 = now_ns();
        host_react.push_back(t2 - t);
        if (last != 0) host_gap.push_back(t - last);
        last = t;
      }
    });
    round_trip<<<1, 1>>>(dflag, dreply, drt, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    host.join();
    std::vector<unsigned long long> rt(n);
    CK(cudaMemcpy(rt.data(), drt, n * 8, cudaMemcpyDeviceToHost));
    std::vector<double> v(rt.begin() + 1000, rt.end());  // skip warm-up
    print("gpu_cpu_gpu_round_trip_gpu_timed", "iterations", n - 1000, stats(v), v.size());
    std::vector<double> g(host_gap.begin() + 1000, host_gap.end());
    print("host_flag_to_flag_interval", "iterations", g.size(), stats(g), g.size());
    std::vector<double> h(host_react.begin() + 1000, host_react.end());
    print("host_reply_store_and_fence", "iterations", h.size(), stats(h), h.size());
    // GPU's dependent load of a pinned host word.
    std::vector<double> lat;
    for (int rep = 0; rep < 50; ++rep) {
      const int loads = 2000;
      host_load_latency<<<1, 1>>>(dflag, drt, loads);
      CK(cudaGetLastError());
      unsigned long long out[2];
      CK(cudaMemcpy(out, drt, 16, cudaMemcpyDeviceToHost));
      if (rep >= 5) lat.push_back((double)out[0] / loads);
    }
    print("gpu_load_of_pinned_host_word", "loads_per_sample", 2000, stats(lat), lat.size());
    CK(cudaFree(drt));
    CK(cudaFreeHost(flag));
    CK(cudaFreeHost(reply));
  }
  // ---- (c) cudaMemcpyAsync launch and sync costs
  {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t maxb = 1 << 20;
    char* pinned;
    CK(cudaHostAlloc(&pinned, maxb, 0));
    char* pageable = (char*)malloc(maxb);
    memset(pinned, 1, maxb);
    memset(pageable, 2, maxb);
    char* dev;
    CK(cudaMalloc(&dev, maxb));
    for (size_t bytes : {4096ul, 65536ul, 1048576ul}) {
      for (int dir2 = 0; dir2 < 2; ++dir2) {
        cudaMemcpyKind kind = dir2 == 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        const char* dname = dir2 == 0 ? "h2d" : "d2h";
        // launch cost: host time of one cudaMemcpyAsync call, queue not full
        std::vector<double> launch, sync_after, total, idle_sync, pageable_total;
        for (int i = 0; i < 2200; ++i) {
          double t0 = now_ns();
          if (dir2 == 0)
            CK(cudaMemcpyAsync(dev, pinned, bytes, kind, s));
          else
            CK(cudaMemcpyAsync(pinned, dev, bytes, kind, s));
          double t1 = now_ns();
          CK(cudaStreamSynchronize(s));
          double t2 = now_ns();
          CK(cudaStreamSynchronize(s));
          double t3 = now_ns();
          if (i >= 200) {
            launch.push_back(t1 - t0);
            sync_after.push_back(t2 - t1);
            total.push_back(t2 - t0);
            idle_sync.push_back(t3 - t2);
          }
        }
        for (int i = 0; i < 1100; ++i) {
          double t0 = now_ns();
          if (dir2 == 0)
            CK(cudaMemcpy(dev, pageable, bytes, kind));
          else
            CK(cudaMemcpy(pageable, dev, bytes, kind));
          double t1 = now_ns();
          if (i >= 100) pageable_total.push_back(t1 - t0);
        }
        char name[128];
        snprintf(name, sizeof name, "cudaMemcpyAsync_launch_pinned_%s", dname);
        print(name, "bytes", bytes, stats(launch), launch.size());
        snprintf(name, sizeof name, "cudaStreamSynchronize_after_copy_pinned_%s", dname);
        print(name, "bytes", bytes, stats(sync_after), sync_after.size());
        snprintf(name, sizeof name, "copy_launch_plus_sync_pinned_%s", dname);
        print(name, "bytes", bytes, stats(total), total.size());
        snprintf(name, sizeof name, "cudaStreamSynchronize_idle_stream");
        print(name, "bytes", bytes, stats(idle_sync), idle_sync.size());
        snprintf(name, sizeof name, "cudaMemcpy_pageable_%s", dname);
        print(name, "bytes", bytes, stats(pageable_total), pageable_total.size());
      }
    }
    // back-to-back launches without sync: throughput of the launch path
    {
      std::vector<double> per;
      for (int rep = 0; rep < 20; ++rep) {
        double t0 = now_ns();
        for (int i = 0; i < 500; ++i)
          CK(cudaMemcpyAsync(dev, pinned, 4096, cudaMemcpyHostToDevice, s));
        double t1 = now_ns();
        CK(cudaStreamSynchronize(s));
        if (rep >= 2) per.push_back((t1 - t0) / 500);
      }
      print("cudaMemcpyAsync_launch_back_to_back_h2d", "bytes", 4096, stats(per), per.size());
    }
    CK(cudaFree(dev));
    CK(cudaFreeHost(pinned));
    free(pageable);
    CK(cudaStreamDestroy(s));
  }
  // ---- (d) pread: page-cache hot and O_DIRECT
  {
    std::string path = std::string(dir) + "/gpunvme_pread.bin";
    const size_t file_bytes = 256ul << 20;
    int fd = write_test_file(path, file_bytes, 7);
    if (fd < 0) return 1;
    void* aligned;
    if (posix_memalign(&aligned, 4096, 1 << 20)) return 1;
    unsigned long long x = 88172645463325252ull;
    auto rnd = [&] { return xorshift64(x); };
    for (int direct = 0; direct < 2; ++direct) {
      int rfd = direct ? open(path.c_str(), O_RDONLY | O_DIRECT) : fd;
      if (rfd < 0) {
        perror("open O_DIRECT");
        continue;
      }
      for (size_t bytes : {4096ul, 16384ul, 65536ul, 262144ul, 1048576ul}) {
        std::vector<double> v;
        const int n = bytes >= 262144 ? 600 : 3000;
        for (int i = 0; i < n; ++i) {
          off_t off = (off_t)((rnd() % (file_bytes / bytes)) * bytes);
          double t0 = now_ns();
          ssize_t got = pread(rfd, aligned, bytes, off);
          double t1 = now_ns();
          if (got != (ssize_t)bytes) {
            perror("pread");
            break;
          }
          if (i >= n / 10) v.push_back(t1 - t0);
        }
        if (!v.empty())
          print(direct ? "pread_o_direct" : "pread_page_cache", "bytes", bytes, stats(v), v.size());
      }
      if (direct) close(rfd);
    }
    close(fd);
    unlink(path.c_str());
  }
  return 0;
}
