// What a warp's own GPU operations cost while other warps poll pinned host
// memory, as a strategy's waiters poll CQ rings in host memory when the
// host-thread target serves the queues. No target, no strategy, nothing
// writes the polled rings.
//
// One launch of B blocks (B = 1, 8, 33 or 132: one block per SM in the
// order launches of that size take) of 1 + k warps. Warp 0 of block 0 is the
// probe; every other warp polls: it reads the 16 B entries of one of 32 rings
// of 256 entries in pinned host memory one after another, each lane its own
// entry (ld.volatile.v4: one warp load covers 32 entries, a CQ scan's window),
// the next address depending on the value read so that a warp has one load in
// flight, and counts its loads; in the second pattern every lane reads the
// warp's one entry (16 B a load, as a CQ scan's waiter whose lanes read the
// window's entries one at a time). Warp 0 of every other block idles beside its
// pollers (so block 0's SM and the others hold k pollers alike). Once every
// warp has arrived, the probe times, one after another, chains of 64 of:
//   load_gpu      a dependent ld.volatile of GPU memory (an L2 hit),
//   atomic_gpu    a dependent atomicAdd on one GPU word,
//   fence_gpu     a volatile store to GPU memory, then __threadfence(),
//   fence_system  a volatile store to pinned host memory, then
//                 __threadfence_system() (an SQE and its fence on host queues),
//   load_host     a dependent ld.volatile of pinned host memory,
// then sets the stop word; the pollers stop at it. Each row: ns per
// operation of each chain (the median of 5 launches), and the pollers'
// loads per microsecond over the probe's time.
//
//   gpu_ops_under_host_polls OUT.json
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "hw_bench.cuh"

namespace {

constexpr int kRings = 32, kEntries = 256, kChain = 64, kOps = 5, kLaunches = 5;
const char* const kOpNames[kOps] = {"load_gpu", "atomic_gpu", "fence_gpu", "fence_system",
                                    "load_host"};

struct Shared {
  unsigned arrived;
  unsigned stop;
  unsigned long long probe_ns[kOps];
  unsigned long long probe_window_ns;
  unsigned long long poller_loads;
};

__global__ void k_probe_under_polls(const uint4* rings, Shared* shared, unsigned* gpu_words,
                                    unsigned* host_words, unsigned warps, bool same_entry) {
  const unsigned warp_in_block = threadIdx.x / 32u;
  const unsigned lane = threadIdx.x % 32u;
  const unsigned warp = blockIdx.x * (blockDim.x / 32u) + warp_in_block;
  wait_for_all_warps(&shared->arrived, warps);
  volatile unsigned* stop = &shared->stop;
  if (warp_in_block != 0) {
    // A poller: ring warp % 32, entry after entry from lane's own place.
    const uint4* ring = rings + (warp % kRings) * kEntries;
    unsigned entry = same_entry ? 0u : lane, loads = 0;
    while (*stop == 0u) {
      const uint4 v = load_volatile_v4(ring + entry);
      entry = (entry + (same_entry ? 1u : 32u) + static_cast<unsigned>(v.x & 1)) % kEntries;
      ++loads;
    }
    if (lane == 0) atomicAdd(&shared->poller_loads, static_cast<unsigned long long>(loads));
    return;
  }
  if (blockIdx.x != 0 || lane != 0) return;
  // The probe.
  unsigned long long window0 = globaltimer();
  volatile unsigned* vg = gpu_words;
  volatile unsigned* vh = host_words;
  unsigned dep = 0;
  for (int op = 0; op < kOps; ++op) {
    const unsigned long long t0 = globaltimer();
    for (int i = 0; i < kChain; ++i) {
      switch (op) {
        case 0: dep = vg[(dep & 1u) * 32u]; break;
        case 1: dep = atomicAdd(gpu_words + 64 + (dep & 1u), 1u); break;
        case 2:
          vg[128 + ((i & 7) << 5)] = static_cast<unsigned>(i);
          __threadfence();
          break;
        case 3:
          vh[(i & 31) << 5] = static_cast<unsigned>(i);
          __threadfence_system();
          break;
        case 4: dep = vh[2048 + ((dep & 1u) << 5)]; break;
      }
    }
    shared->probe_ns[op] = globaltimer() - t0 + (dep & 0u);
  }
  shared->probe_window_ns = globaltimer() - window0;
  *stop = 1u;
}

struct Row {
  bool same_entry;
  unsigned blocks, pollers_per_block;
  double ns[kOps];
  double poller_loads_per_us;
};

Row measure(bool same_entry, unsigned blocks, unsigned k, const uint4* rings, unsigned* gpu_words,
            unsigned* host_words) {
  Shared* d_shared = nullptr;
  CK(cudaMalloc(&d_shared, sizeof(Shared)));
  std::vector<double> per_op[kOps], rate;
  for (int launch = 0; launch < kLaunches; ++launch) {
    CK(cudaMemset(d_shared, 0, sizeof(Shared)));
    const unsigned warps = blocks * (1 + k);
    k_probe_under_polls<<<blocks, 32 * (1 + k)>>>(rings, d_shared, gpu_words, host_words, warps,
                                                  same_entry);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    Shared h{};
    CK(cudaMemcpy(&h, d_shared, sizeof h, cudaMemcpyDeviceToHost));
    for (int op = 0; op < kOps; ++op) per_op[op].push_back(double(h.probe_ns[op]) / kChain);
    rate.push_back(double(h.poller_loads) / (double(h.probe_window_ns) / 1000.0));
  }
  CK(cudaFree(d_shared));
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Row r{same_entry, blocks, k, {}, median(rate)};
  for (int op = 0; op < kOps; ++op) r.ns[op] = median(per_op[op]);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "gpu_ops_under_host_polls.json";
  const cudaDeviceProp prop = device_or_skip("gpu_ops_under_host_polls");
  uint4* rings = nullptr;
  CK(cudaHostAlloc(&rings, sizeof(uint4) * kRings * kEntries, cudaHostAllocMapped));
  std::fill(rings, rings + kRings * kEntries, uint4{0, 0, 0, 0});
  unsigned* host_words = nullptr;
  CK(cudaHostAlloc(&host_words, 4 * 4096, cudaHostAllocMapped));
  std::fill(host_words, host_words + 4096, 0u);
  unsigned* gpu_words = nullptr;
  CK(cudaMalloc(&gpu_words, 4 * 4096));
  CK(cudaMemset(gpu_words, 0, 4 * 4096));
  uint4* d_rings = nullptr;
  unsigned* d_host_words = nullptr;
  CK(cudaHostGetDevicePointer(&d_rings, rings, 0));
  CK(cudaHostGetDevicePointer(&d_host_words, host_words, 0));
  // Warm-up: the first launch of a process pays for module loading.
  measure(false, 1, 0, d_rings, gpu_words, d_host_words);
  std::vector<Row> rows;
  for (bool same_entry : {false, true}) {
    for (unsigned blocks : {1u, 8u, 33u, 132u}) {
      for (unsigned k : {0u, 1u, 2u, 4u, 8u, 16u, 31u}) {
        if (blocks > 1 && k == 0) continue;  // the same as one block with no pollers
        rows.push_back(measure(same_entry, blocks, k, d_rings, gpu_words, d_host_words));
        const Row& r = rows.back();
        std::printf("%s %3u blocks x %2u pollers:", same_entry ? "same" : "lane", r.blocks,
                    r.pollers_per_block);
        for (int op = 0; op < kOps; ++op) std::printf(" %s %.0f", kOpNames[op], r.ns[op]);
        std::printf(" | pollers' loads/us %.1f\n", r.poller_loads_per_us);
      }
    }
  }
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.gpu_ops_under_host_polls/1\", \"program\": "
               "\"tests/hardware/gpu_ops_under_host_polls.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d},\n \"chain\": %d, \"launches\": %d,\n \"rows\": [\n",
               prop.name, prop.multiProcessorCount, kChain, kLaunches);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f,
                 "  {\"pattern\": \"%s\", \"blocks\": %u, \"pollers_per_block\": %u, "
                 "\"pollers\": %u",
                 r.same_entry ? "same_entry" : "lane_entries", r.blocks, r.pollers_per_block,
                 r.blocks * r.pollers_per_block);
    for (int op = 0; op < kOps; ++op) std::fprintf(f, ", \"%s_ns\": %.1f", kOpNames[op], r.ns[op]);
    std::fprintf(f, ", \"poller_loads_per_us\": %.2f}%s\n", r.poller_loads_per_us,
                 i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, " ]\n}\n");
  std::fclose(f);
  return 0;
}
