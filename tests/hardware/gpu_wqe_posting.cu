// What it costs a warp to post RDMA send work-queue entries as the
// gpu_network path does (sim/core/algo/gpu_network.h, post_reads, run here
// unchanged on the CUDA platform of sim/core/platform/cuda_warp.cuh), with no
// NIC: the "doorbell register" is a word of pinned host memory that a host
// thread polls and consumes, as the software NVMe target polls its
// submission queue doorbells.
//
//   gpu_wqe_posting OUT.json
//
// Each warp owns one queue pair: a 1024-entry send queue of 64 B mlx5 SEND
// WQEs and their 64 B NVMe-oF command capsules (sim/core/protocol/
// rdma_entries.h), a doorbell record, and a doorbell word on its own 4 KiB
// page of pinned host memory. The send queue, capsules and record lie in
// pinned host memory (cudaHostAlloc, case "host") or in GPU memory
// (cudaMalloc, case "gpu"). Each post is one post_reads call: the lanes of
// the batch write their capsule and WQE, a system fence, the doorbell
// record, a system fence, and the doorbell write (8 B of the last WQE's
// control segment, or with "blueflame" and a batch of one, the whole 64 B
// WQE read back from the queue).
//
// The host thread reads each warp's doorbell word in turn; on a new WQE
// index it checks, for a host-memory queue, every new WQE's opcode, index and
// QP number and its capsule's command identifier (what a consumer relying on
// the fences would read), and hands the slots back by writing a consumed
// count the warp reads when its ring is full. The time a warp waits for
// slots is outside the per-post figures.
//
// Per post (warp 0's lane 0, clock64 around each platform call, cycles
// turned into ns by the loop's clock64 over its %globaltimer): entry writes
// (the for_lanes of stores), the two system fences, the record store, the
// doorbell store, and the whole post_reads call; mean over every post of
// every warp. Per case also the kernel's posts per second (all warps, the
// loop's %globaltimer span) and the host's arrival rate (WQEs and doorbell
// changes seen per second between the first and the last change it saw).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "hw_bench.cuh"
#include "sim/core/algo/gpu_network.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

using gpunvme::algo::LaneMask;
using gpunvme::algo::Lanes;
using gpunvme::algo::NetRead;
using gpunvme::algo::NicQueuePair;
using gpunvme::algo::NicQueueState;
namespace rdma = gpunvme::rdma;

constexpr std::uint32_t kSendEntries = 1024;
constexpr std::uint32_t kPostsPerWarp = 512;
constexpr std::uint32_t kFirstQpn = 0x100;

enum Phase : int { kEntries, kFence1, kRecord, kFence2, kDoorbell, kBlueflameLoad, kPost, kPhases };
const char* const kPhaseNames[kPhases] = {"entry_writes",    "fence_system_1", "doorbell_record",
                                          "fence_system_2",  "doorbell_write", "blueflame_wqe_load",
                                          "post_reads_total"};

// The CUDA platform with each call post_reads makes timed into a phase.
// Calls made inside a for_lanes body count to the entry writes.
class TimedWarp {
 public:
  __device__ TimedWarp(gpunvme::platform::CudaWarp& w, std::uint64_t doorbell, long long* cycles)
      : w_(w), doorbell_(doorbell), cycles_(cycles) {}

  template <class F>
  __device__ void for_lanes(LaneMask mask, F&& body) {
    const long long t0 = clock64();
    in_lanes_ = true;
    w_.for_lanes(mask, body);
    in_lanes_ = false;
    cycles_[kEntries] += clock64() - t0;
  }
  __device__ void store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
    if (in_lanes_) return w_.store_bytes(addr, data, len);
    const long long t0 = clock64();
    w_.store_bytes(addr, data, len);
    cycles_[addr == doorbell_ ? kDoorbell : kRecord] += clock64() - t0;
  }
  __device__ void store_u32(std::uint64_t addr, std::uint32_t value) {
    const long long t0 = clock64();
    w_.store_u32(addr, value);
    cycles_[kRecord] += clock64() - t0;
  }
  __device__ void fence_system() {
    const long long t0 = clock64();
    w_.fence_system();
    cycles_[fences_ % 2 == 0 ? kFence1 : kFence2] += clock64() - t0;
    ++fences_;
  }
  template <class T>
  __device__ T load(std::uint64_t addr) {
    const long long t0 = clock64();
    const T value = w_.template load<T>(addr);
    cycles_[kBlueflameLoad] += clock64() - t0;
    return value;
  }

 private:
  gpunvme::platform::CudaWarp& w_;
  std::uint64_t doorbell_;
  long long* cycles_;
  bool in_lanes_ = false;
  unsigned fences_ = 0;
};

struct WarpOut {
  long long cycles[kPhases];
  unsigned long long ns_start, ns_end;
  long long clock_start, clock_end;
  unsigned long long credit_waits;
};

// One warp per block, launched with GPUNVME_WARP_SCRATCH_BYTES of dynamic
// shared memory (the warp's Lanes<T>). `consumed` holds each warp's consumed-WQE count, on
// its own 64 B line of pinned host memory.
__global__ void k_post(const NicQueuePair* pairs, std::uint32_t batch, std::uint32_t posts,
                       const volatile unsigned* consumed, WarpOut* out) {
  const unsigned w = blockIdx.x;
  gpunvme::algo::init_warp_scratch();
  __syncwarp();
  const NicQueuePair q = pairs[w];
  gpunvme::platform::CudaWarp cuda;
  long long cycles[kPhases] = {};
  TimedWarp p(cuda, q.doorbell, cycles);
  NicQueueState s{};
  const LaneMask mask = batch >= 32 ? 0xFFFFFFFFu : ((1u << batch) - 1u);
  Lanes<NetRead> reads;  // warp-shared: each lane fills its own entry
  const unsigned lane = threadIdx.x % 32u;
  reads[lane].nlb_zero_based = 7;
  reads[lane].bytes = 4096;
  reads[lane].buffer = 0x100000000ull + (std::uint64_t{w} * 32 + lane) * 4096;
  std::uint32_t credit = 0;  // the last consumed count read
  unsigned long long credit_waits = 0;
  __syncwarp();
  const unsigned long long ns0 = globaltimer();
  const long long c0 = clock64();
  bool stalled = false;  // the host stopped consuming: give up, the case fails
  for (std::uint32_t i = 0; i < posts && !stalled; ++i) {
    while (s.send_produced + batch - credit > kSendEntries) {
      if (globaltimer() - ns0 > 10'000'000'000ull) {
        stalled = true;
        break;
      }
      unsigned v = 0;
      if (threadIdx.x == 0) v = consumed[w * 16];
      credit = __shfl_sync(0xFFFFFFFFu, v, 0);
      ++credit_waits;
      if (s.send_produced + batch - credit > kSendEntries) __nanosleep(200);
    }
    if (stalled) break;
    reads[lane].cid = static_cast<std::uint16_t>((s.send_produced + lane) & 0xFFFFu);
    reads[lane].slba = (std::uint64_t{w} << 32) + s.send_produced + lane;
    __syncwarp();
    const long long t0 = clock64();
    gpunvme::algo::post_reads(p, q, s, mask, reads);
    cycles[kPost] += clock64() - t0;
  }
  const long long c1 = clock64();
  const unsigned long long ns1 = globaltimer();
  if (threadIdx.x == 0) {
    for (int k = 0; k < kPhases; ++k) out[w].cycles[k] = cycles[k];
    out[w].ns_start = ns0;
    out[w].ns_end = ns1;
    out[w].clock_start = c0;
    out[w].clock_end = c1;
    out[w].credit_waits = credit_waits;
  }
}

struct HostSeen {
  unsigned long long wqes = 0;
  unsigned long long doorbells = 0;  // changes of a doorbell word observed
  unsigned long long bad = 0;        // WQEs or capsules that failed the check
  double first_s = 0, last_s = 0;
};

// The consumer: polls every warp's doorbell word until `total` WQEs arrived
// (or `deadline_s` passed).
HostSeen consume(const NicQueuePair* pairs, unsigned warps, bool check_entries,
                 volatile unsigned* consumed, unsigned long long total, double deadline_s) {
  HostSeen seen;
  std::vector<std::uint32_t> last(warps, 0xFFFFu);  // WQE index last seen (mod 2^16)
  std::vector<std::uint32_t> count(warps, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto now_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  while (seen.wqes < total) {
    for (unsigned w = 0; w < warps; ++w) {
      const NicQueuePair& q = pairs[w];
      const volatile std::uint32_t* bell =
          reinterpret_cast<const volatile std::uint32_t*>(static_cast<std::uintptr_t>(q.doorbell));
      const std::uint32_t word0 = bell[0];
      if (word0 == 0) continue;
      const std::uint32_t index = (rdma::byte_swap32(word0) >> 8) & 0xFFFFu;
      if (index == last[w]) continue;
      std::atomic_thread_fence(std::memory_order_acquire);
      const std::uint32_t fresh = (index - last[w]) & 0xFFFFu;
      if (check_entries) {
        for (std::uint32_t k = 1; k <= fresh; ++k) {
          const std::uint32_t i = (last[w] + k) & 0xFFFFu;
          const std::uint32_t slot = i & (q.send_entries - 1u);
          rdma::SendWqe wqe;
          std::memcpy(&wqe,
                      reinterpret_cast<const void*>(static_cast<std::uintptr_t>(
                          q.send_queue + std::uint64_t{slot} * rdma::kWqeBasicBlock)),
                      sizeof(wqe));
          gpunvme::nvme::SubmissionEntry capsule;
          std::memcpy(&capsule,
                      reinterpret_cast<const void*>(static_cast<std::uintptr_t>(
                          q.capsules + std::uint64_t{slot} * rdma::kCommandCapsuleBytes)),
                      sizeof(capsule));
          if (wqe.ctrl.opcode() != rdma::kOpcodeSend || wqe.ctrl.wqe_index() != i ||
              wqe.ctrl.qpn() != q.qpn || capsule.cid() != i)
            ++seen.bad;
        }
      }
      last[w] = index;
      count[w] += fresh;
      consumed[w * 16] = count[w];
      seen.wqes += fresh;
      ++seen.doorbells;
      const double t = now_s();
      if (seen.doorbells == 1) seen.first_s = t;
      seen.last_s = t;
    }
    if (now_s() > deadline_s) break;
  }
  return seen;
}

struct CaseResult {
  const char* memory;
  bool blueflame;
  unsigned warps, batch;
  double phase_ns[kPhases];
  double kernel_posts_per_s, kernel_wqes_per_s, ns_per_clock;
  unsigned long long credit_waits;
  HostSeen host;
  bool complete;
};

CaseResult run_case(bool host_queue, bool blueflame, unsigned warps, unsigned batch) {
  CaseResult r{};
  r.memory = host_queue ? "host" : "gpu";
  r.blueflame = blueflame;
  r.warps = warps;
  r.batch = batch;
  const std::size_t queue_bytes = std::size_t{kSendEntries} * rdma::kWqeBasicBlock;
  const std::size_t capsule_bytes = std::size_t{kSendEntries} * rdma::kCommandCapsuleBytes;
  const std::size_t per_warp = queue_bytes + capsule_bytes + 4096;  // + the record's page
  unsigned char* rings = nullptr;
  if (host_queue) {
    CK(cudaHostAlloc(&rings, per_warp * warps, cudaHostAllocMapped));
  } else {
    CK(cudaMalloc(&rings, per_warp * warps));
  }
  // Poison: no byte of a WQE or capsule reads as a valid one before it is written.
  if (host_queue) {
    std::memset(rings, 0xA5, per_warp * warps);
  } else {
    CK(cudaMemset(rings, 0xA5, per_warp * warps));
  }
  unsigned char* bells = nullptr;  // one 4 KiB page per warp
  CK(cudaHostAlloc(&bells, std::size_t{4096} * warps, cudaHostAllocMapped));
  std::memset(bells, 0, std::size_t{4096} * warps);
  unsigned* consumed = nullptr;  // one 64 B line per warp
  CK(cudaHostAlloc(&consumed, std::size_t{64} * warps, cudaHostAllocMapped));
  std::memset(consumed, 0, std::size_t{64} * warps);
  std::vector<NicQueuePair> pairs(warps);
  for (unsigned w = 0; w < warps; ++w) {
    unsigned char* base = rings + per_warp * w;
    unsigned char* dev_base = base;
    if (host_queue) CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_base), base, 0));
    NicQueuePair& q = pairs[w];
    q.send_queue = reinterpret_cast<std::uint64_t>(dev_base);
    q.send_entries = kSendEntries;
    q.capsules = q.send_queue + queue_bytes;
    q.doorbell_record = q.capsules + capsule_bytes;
    unsigned char* bell_dev = nullptr;
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&bell_dev), bells + 4096 * w, 0));
    q.doorbell = reinterpret_cast<std::uint64_t>(bell_dev);
    q.qpn = kFirstQpn + w;
    q.lkey = 0x1111;
    q.rkey = 0x2222;
    q.blueflame = blueflame;
  }
  NicQueuePair* d_pairs = nullptr;
  WarpOut* d_out = nullptr;
  CK(cudaMalloc(&d_pairs, sizeof(NicQueuePair) * warps));
  CK(cudaMemcpy(d_pairs, pairs.data(), sizeof(NicQueuePair) * warps, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&d_out, sizeof(WarpOut) * warps));
  // The host thread's view: host addresses (unified addressing makes the
  // mapped pointers of pinned memory equal to the host ones).
  std::vector<NicQueuePair> host_pairs = pairs;
  for (unsigned w = 0; w < warps; ++w) {
    host_pairs[w].doorbell = reinterpret_cast<std::uint64_t>(bells + 4096 * w);
    if (host_queue) {
      host_pairs[w].send_queue = reinterpret_cast<std::uint64_t>(rings + per_warp * w);
      host_pairs[w].capsules = host_pairs[w].send_queue + queue_bytes;
    }
  }
  const unsigned long long total = std::uint64_t{warps} * kPostsPerWarp * batch;
  HostSeen seen;
  std::thread consumer(
      [&] { seen = consume(host_pairs.data(), warps, host_queue, consumed, total, 20.0); });
  k_post<<<warps, 32, GPUNVME_WARP_SCRATCH_BYTES>>>(d_pairs, batch, kPostsPerWarp, consumed, d_out);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  consumer.join();
  std::vector<WarpOut> out(warps);
  CK(cudaMemcpy(out.data(), d_out, sizeof(WarpOut) * warps, cudaMemcpyDeviceToHost));
  double cycles[kPhases] = {};
  double clocks = 0, nanos = 0;
  unsigned long long first_ns = ~0ull, last_ns = 0;
  for (const WarpOut& o : out) {
    for (int k = 0; k < kPhases; ++k) cycles[k] += double(o.cycles[k]);
    clocks += double(o.clock_end - o.clock_start);
    nanos += double(o.ns_end - o.ns_start);
    first_ns = std::min(first_ns, o.ns_start);
    last_ns = std::max(last_ns, o.ns_end);
    r.credit_waits += o.credit_waits;
  }
  r.ns_per_clock = nanos / clocks;
  const double posts = double(warps) * kPostsPerWarp;
  for (int k = 0; k < kPhases; ++k) r.phase_ns[k] = cycles[k] * r.ns_per_clock / posts;
  const double span_s = double(last_ns - first_ns) * 1e-9;
  r.kernel_posts_per_s = posts / span_s;
  r.kernel_wqes_per_s = posts * batch / span_s;
  r.host = seen;
  r.complete = seen.wqes == total && seen.bad == 0;
  CK(cudaFree(d_pairs));
  CK(cudaFree(d_out));
  CK(cudaFreeHost(bells));
  CK(cudaFreeHost(consumed));
  if (host_queue) {
    CK(cudaFreeHost(rings));
  } else {
    CK(cudaFree(rings));
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "gpu_wqe_posting.json";
  const cudaDeviceProp prop = device_or_skip("gpu_wqe_posting");
  int driver = 0, runtime = 0;
  CK(cudaDriverGetVersion(&driver));
  CK(cudaRuntimeGetVersion(&runtime));
  run_case(true, false, 1, 1);  // warm-up: module load, first pinned allocations
  std::vector<CaseResult> results;
  const unsigned warp_counts[] = {1, 8, 32, 132};
  for (int memory = 0; memory < 2; ++memory) {
    for (unsigned warps : warp_counts) {
      for (unsigned batch : {1u, 32u})
        results.push_back(run_case(memory == 0, false, warps, batch));
      results.push_back(run_case(memory == 0, true, warps, 1));
    }
  }
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.gpu_wqe_posting/1\", \"program\": "
               "\"tests/hardware/gpu_wqe_posting.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\", \"cuda_driver\": %d, "
               "\"cuda_runtime\": %d},\n \"send_entries\": %u, \"posts_per_warp\": %u,\n"
               " \"unit\": \"phases: ns per post (mean over every post of every warp); rates: "
               "per second\",\n \"cases\": [\n",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, driver, runtime,
               kSendEntries, kPostsPerWarp);
  std::printf("%-5s %-3s %5s %5s %8s %8s %8s %8s %8s %8s %9s %11s %11s %s\n", "mem", "bf", "warps",
              "batch", "entries", "fence1", "record", "fence2", "bell", "bf_load", "post_ns",
              "gpu_Mwqe/s", "host_Mwqe/s", "ok");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    const double host_span = r.host.last_s - r.host.first_s;
    const double host_wqes = host_span > 0 ? double(r.host.wqes) / host_span : 0.0;
    const double host_bells = host_span > 0 ? double(r.host.doorbells) / host_span : 0.0;
    std::fprintf(f,
                 "  {\"queue_memory\": \"%s\", \"blueflame\": %s, \"warps\": %u, \"batch\": %u, "
                 "\"phase_ns\": {",
                 r.memory, r.blueflame ? "true" : "false", r.warps, r.batch);
    for (int k = 0; k < kPhases; ++k)
      std::fprintf(f, "\"%s\": %.2f%s", kPhaseNames[k], r.phase_ns[k], k + 1 < kPhases ? ", " : "");
    std::fprintf(f,
                 "},\n   \"gpu_posts_per_s\": %.0f, \"gpu_wqes_per_s\": %.0f, \"ns_per_clock\": "
                 "%.5f, \"credit_polls\": %llu,\n   \"host_wqes_seen\": %llu, "
                 "\"host_doorbell_changes_seen\": %llu, \"host_bad_entries\": %llu, "
                 "\"host_wqes_per_s\": %.0f, \"host_doorbell_changes_per_s\": %.0f, "
                 "\"complete\": %s}%s\n",
                 r.kernel_posts_per_s, r.kernel_wqes_per_s, r.ns_per_clock, r.credit_waits,
                 r.host.wqes, r.host.doorbells, r.host.bad, host_wqes, host_bells,
                 r.complete ? "true" : "false", i + 1 < results.size() ? "," : "");
    std::printf("%-5s %-3s %5u %5u %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9.1f %11.2f %11.2f %s\n",
                r.memory, r.blueflame ? "bf" : "-", r.warps, r.batch, r.phase_ns[kEntries],
                r.phase_ns[kFence1], r.phase_ns[kRecord], r.phase_ns[kFence2],
                r.phase_ns[kDoorbell], r.phase_ns[kBlueflameLoad], r.phase_ns[kPost],
                r.kernel_wqes_per_s * 1e-6, host_wqes * 1e-6, r.complete ? "ok" : "INCOMPLETE");
  }
  std::fprintf(f, " ]\n}\n");
  std::fclose(f);
  for (const CaseResult& r : results)
    if (!r.complete) return 1;
  return 0;
}
