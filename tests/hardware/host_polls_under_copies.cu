// Many GPU warps polling a completion ring in pinned host memory while host
// threads serve batches of copies to the GPU, as the software NVMe
// controller's threads do: how the pollers' reads of host memory and the
// copies share the path between host memory and the GPU.
//
// W warps (one per block, spread over the SMs) each read the 16 B entries of
// one of 32 rings of 256 entries (warp w reads ring w % 32), one entry after
// the other, as a CQ-scanning waiter does: every lane loads the same entry
// (ld.volatile.v4, the hardware backend's wait-predicate load) and the next
// address depends on the value read, so a warp has one read in flight. A
// variant has each lane read its own entry (one warp load covers 32 entries,
// as a CQ scan window does), another polls rings in device memory. Meanwhile
// T host threads each serve batches: 64 cudaMemcpyAsync of 4 KiB from pinned
// staging to scattered GPU buffers (or one 256 KiB copy), then one
// cudaStreamSynchronize, back to back.
//
//   host_polls_under_copies OUT.json
//
// Each row: the pollers' loads per second (all warps), their mean time per
// load, and the copy threads' batches per second and mean batch time, over a
// window in the middle of a 600 ms polling kernel; the median over 3
// repetitions (min and max beside it).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hw_bench.cuh"

namespace {

constexpr int kRings = 32, kEntries = 256, kWindow = 64;
constexpr int kBatchCopies = 64;
constexpr size_t kCopyBytes = 4096, kBatchBytes = kBatchCopies * kCopyBytes;
constexpr size_t kScatterStride = 64 << 10;  // GPU destinations this far apart never merge
constexpr int kMaxCopyThreads = 4;

// Warp = block. Polls for duration_ns of its own clock; loads[b] and ns[b]
// are its count of warp loads and the time they took.
__global__ void poll_rings(const uint4* rings, bool lanes_distinct, unsigned window,
                           unsigned long long duration_ns, unsigned long long* loads,
                           unsigned long long* ns) {
  const uint4* ring = rings + (blockIdx.x % kRings) * kEntries;
  unsigned pos = (blockIdx.x / kRings) % window;
  const unsigned lane = threadIdx.x;
  unsigned long long count = 0;
  const unsigned long long t0 = globaltimer();
  unsigned long long t = t0;
  while (t - t0 < duration_ns) {
    for (int i = 0; i < 32; ++i) {
      const uint4 e = load_volatile_v4(ring + (pos + (lanes_distinct ? lane : 0)) % kEntries);
      // The entries hold zeros: the next position depends on the value read.
      pos = (pos + 1 + (e.w >> 31)) % window;
    }
    count += 32;
    t = globaltimer();
  }
  if (lane == 0) {
    loads[blockIdx.x] = count + (pos == 0xFFFFFFFFu ? 1 : 0);
    ns[blockIdx.x] = t - t0;
  }
}

struct Row {
  const char* pollers_memory;  // "host", "device" or "none"
  bool lanes_distinct;
  unsigned window;  // entries a warp cycles over: 64 (16 lines), 4 (one line), 1 (one entry)
  int warps;
  int copy_threads;
  bool scattered;  // 64 copies of 4 KiB per batch, else one of 256 KiB
};

struct Result {
  double poll_loads_per_s = 0, poll_load_ns = 0, batches_per_s = 0, batch_us = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: host_polls_under_copies OUT.json\n");
    return 2;
  }
  const cudaDeviceProp prop = device_or_skip("host_polls_under_copies");
  constexpr int kMaxWarps = 2112, kReps = 3;
  constexpr unsigned long long kKernelNs = 600'000'000ull;
  constexpr auto kSettle = std::chrono::milliseconds(150);
  constexpr auto kWindowTime = std::chrono::milliseconds(300);

  const size_t ring_bytes = size_t{kRings} * kEntries * sizeof(uint4);
  uint4 *host_rings = nullptr, *mapped_rings = nullptr, *device_rings = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&host_rings), ring_bytes, cudaHostAllocMapped));
  std::fill_n(reinterpret_cast<unsigned char*>(host_rings), ring_bytes, 0);
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped_rings), host_rings, 0));
  CK(cudaMalloc(&device_rings, ring_bytes));
  CK(cudaMemset(device_rings, 0, ring_bytes));
  unsigned long long *loads = nullptr, *ns = nullptr;
  CK(cudaMalloc(&loads, kMaxWarps * sizeof(unsigned long long)));
  CK(cudaMalloc(&ns, kMaxWarps * sizeof(unsigned long long)));

  // Copy threads: thread t serves batches while `active` > t and counts
  // them, with their time, while `counting`.
  char* gpu_dst = nullptr;
  CK(cudaMalloc(&gpu_dst, kMaxCopyThreads * kBatchCopies * kScatterStride));
  std::vector<unsigned char*> staging(kMaxCopyThreads);
  for (auto& s : staging) {
    CK(cudaHostAlloc(reinterpret_cast<void**>(&s), kBatchBytes, 0));
    std::fill_n(s, kBatchBytes, 1);
  }
  std::atomic<bool> stop{false}, counting{false}, scattered{true};
  std::atomic<int> active{0};
  std::atomic<long> batches{0};
  std::atomic<long long> batch_ns{0};
  std::vector<std::thread> copiers;
  for (int t = 0; t < kMaxCopyThreads; ++t) {
    copiers.emplace_back([&, t] {
      cudaStream_t s;
      CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      char* dst = gpu_dst + size_t(t) * kBatchCopies * kScatterStride;
      while (!stop.load()) {
        if (active.load() <= t) {
          __builtin_ia32_pause();
          continue;
        }
        const auto b0 = std::chrono::steady_clock::now();
        if (scattered.load()) {
          for (int c = 0; c < kBatchCopies; ++c) {
            CK(cudaMemcpyAsync(dst + c * kScatterStride, staging[t] + c * kCopyBytes, kCopyBytes,
                               cudaMemcpyHostToDevice, s));
          }
        } else {
          CK(cudaMemcpyAsync(dst, staging[t], kBatchBytes, cudaMemcpyHostToDevice, s));
        }
        CK(cudaStreamSynchronize(s));
        const auto b1 = std::chrono::steady_clock::now();
        if (counting.load()) {
          batches.fetch_add(1);
          batch_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(b1 - b0).count());
        }
      }
      CK(cudaStreamDestroy(s));
    });
  }
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Warm-up: clocks and the copy path.
  active = kMaxCopyThreads;
  poll_rings<<<132, 32, 0, stream>>>(device_rings, false, kWindow, 300'000'000ull, loads, ns);
  CK(cudaStreamSynchronize(stream));

  std::vector<Row> plan;
  const char* only = std::getenv("POLLS_PLAN");  // "window": the window rows alone
  const bool all = only == nullptr || std::string(only) != "window";
  if (all) {
    for (int w : {0, 16, 66, 132, 264, 528, 1056, 2112})
      plan.push_back({"host", false, kWindow, w, 4, true});
    for (int w : {0, 132, 528, 2112}) plan.push_back({"host", false, kWindow, w, 1, true});
    for (int w : {132, 528, 2112}) plan.push_back({"host", true, kWindow, w, 4, true});
    for (int w : {528, 2112}) plan.push_back({"device", false, kWindow, w, 4, true});
    for (int w : {0, 528}) plan.push_back({"host", false, kWindow, w, 4, false});
  }
  // A warp polling one entry, or the four entries of one line, over and over.
  plan.push_back({"none", false, 1, 0, 4, true});
  for (unsigned window : {1u, 4u, 8u}) {
    for (int w : {132, 528, 2112}) plan.push_back({"host", false, window, w, 4, true});
  }

  std::string rows;
  for (const Row& row : plan) {
    std::vector<Result> reps;
    for (int r = 0; r < kReps; ++r) {
      active = row.copy_threads;
      scattered = row.scattered;
      if (row.warps > 0) {
        const uint4* rings = row.pollers_memory[0] == 'h' ? mapped_rings : device_rings;
        poll_rings<<<row.warps, 32, 0, stream>>>(rings, row.lanes_distinct, row.window, kKernelNs,
                                                 loads, ns);
        CK(cudaGetLastError());
      }
      std::this_thread::sleep_for(kSettle);
      batches = 0;
      batch_ns = 0;
      counting = true;
      const auto w0 = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(kWindowTime);
      counting = false;
      const double window_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      Result res;
      res.batches_per_s = static_cast<double>(batches.load()) / window_s;
      res.batch_us = batches.load() > 0 ? batch_ns.load() / 1e3 / batches.load() : 0;
      if (row.warps > 0) {
        CK(cudaStreamSynchronize(stream));
        std::vector<unsigned long long> l(row.warps), n(row.warps);
        CK(cudaMemcpy(l.data(), loads, row.warps * sizeof l[0], cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(n.data(), ns, row.warps * sizeof n[0], cudaMemcpyDeviceToHost));
        double rate = 0, per_load = 0;
        for (int i = 0; i < row.warps; ++i) {
          rate += static_cast<double>(l[i]) / (static_cast<double>(n[i]) / 1e9);
          per_load += static_cast<double>(n[i]) / static_cast<double>(l[i]);
        }
        res.poll_loads_per_s = rate;
        res.poll_load_ns = per_load / row.warps;
      }
      reps.push_back(res);
    }
    auto median_of = [&](double Result::*field, double* lo, double* hi) {
      std::vector<double> v;
      for (const Result& r : reps) v.push_back(r.*field);
      std::sort(v.begin(), v.end());
      *lo = v.front();
      *hi = v.back();
      return v[v.size() / 2];
    };
    double bl, bh, ul, uh, pl, ph, nl, nh;
    const double bps = median_of(&Result::batches_per_s, &bl, &bh);
    const double bus = median_of(&Result::batch_us, &ul, &uh);
    const double prate = median_of(&Result::poll_loads_per_s, &pl, &ph);
    const double pns = median_of(&Result::poll_load_ns, &nl, &nh);
    char line[640];
    std::snprintf(line, sizeof line,
                  "%s\n    {\"pollers_memory\": \"%s\", \"lanes\": \"%s\", \"window\": %u, "
                  "\"poll_warps\": %d, "
                  "\"copy_threads\": %d, \"batch\": \"%s\", \"poll_loads_per_s\": %.4g, "
                  "\"poll_load_ns\": %.1f, \"poll_load_ns_min\": %.1f, \"poll_load_ns_max\": %.1f, "
                  "\"batches_per_s\": %.1f, \"batch_us\": %.2f, \"batch_us_min\": %.2f, "
                  "\"batch_us_max\": %.2f}",
                  rows.empty() ? "" : ",", row.warps > 0 ? row.pollers_memory : "none",
                  row.lanes_distinct ? "distinct" : "same", row.window, row.warps, row.copy_threads,
                  row.scattered ? "64x4KiB" : "1x256KiB", prate, pns, nl, nh, bps, bus, ul, uh);
    rows += line;
    std::printf(
        "%-6s %-8s window %2u warps %4d  copy threads %d  %-8s  polls %9.3g/s %8.1f ns  "
        "batches %8.1f/s %9.2f us\n",
        row.pollers_memory, row.lanes_distinct ? "distinct" : "same", row.window, row.warps,
        row.copy_threads, row.scattered ? "64x4KiB" : "1x256KiB", prate, pns, bps, bus);
    std::fflush(stdout);
  }
  stop = true;
  for (std::thread& t : copiers) t.join();

  FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr) {
    std::perror(argv[1]);
    return 1;
  }
  std::fprintf(
      f,
      "{\n  \"schema\": \"gpunvme.host_polls_under_copies/1\",\n  \"device\": \"%s\",\n"
      "  \"method\": \"W warps (one per block) each read the 16 B entries of one of 32 rings of "
      "256 entries (warp w: ring w %% 32), cycling over a window of 64 entries (16 lines; 'window' "
      "1: one entry, 4: one line, 8: two lines), one after the other with ld.volatile.global.v4, "
      "the next "
      "address depending on the value read (one read in flight per warp); lanes 'same': every "
      "lane loads the warp's entry, 'distinct': lane i loads entry +i; rings in pinned mapped host "
      "memory (or device memory). Meanwhile T host threads each run back-to-back batches: 64 "
      "cudaMemcpyAsync of 4 KiB from pinned staging to GPU buffers 64 KiB apart (or one 256 KiB "
      "copy), then cudaStreamSynchronize. Poll rate and time per load over the 600 ms kernel; "
      "batches per second and mean batch time over a 300 ms window starting 150 ms into it; median "
      "of %d repetitions\",\n  \"rows\": [%s\n  ]\n}\n",
      prop.name, kReps, rows.c_str());
  std::fclose(f);
  return 0;
}
