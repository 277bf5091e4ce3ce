// The CUDA platform: the algorithm library on a real GPU. Every thread of a
// warp runs the algorithm; inside for_lanes/ballot each thread executes its
// own lane, and Lanes<T> are warp-shared (sim/algo/lanes.h). Operations a
// warp issues outside for_lanes (a leader's atomic, a doorbell) are executed
// by the lowest active lane and their results broadcast with shuffles, so
// control flow stays warp-uniform. Addresses are device pointers (GPU memory,
// mapped host memory, a BAR mapped into the GPU's address space).
//
// Kernels using it call gpunvme::algo::init_warp_scratch() first and launch
// with GPUNVME_WARP_SCRATCH_BYTES of dynamic shared memory per warp. The
// hardware backend (sim/hardware/) runs it against an NVMe target; CMake
// option GPUNVME_CUDA only compile-checks it.
//
// Stage records (sim/algo/stages.h) go to an optional CudaStageTrace in GPU
// memory, with the same bookkeeping as the simulator's StageRecorder
// (sim/workload/stage_recorder.cpp): one live slot of timestamps per (queue,
// CID); Request clears it, Delivered copies it to the log, so the hardware's
// per-stage figures mean what the simulator's do. Those records cost about
// as much as the stages they time (dependent loads and stores per command).
// A trace in means mode keeps, per warp and stage, only the sum and count of
// the stage's timestamps (thread-local, no memory traffic per record) and
// adds them to global totals when the warp ends: every command passes every
// stage once, so the mean of an interval is the difference of two stages'
// mean timestamps, at the cost of a clock read per record.
#pragma once

#include <cstdint>

#include "sim/algo/lanes.h"
#include "sim/algo/stages.h"

namespace gpunvme::platform {

struct CudaStageTrace {
  static constexpr int kStages = static_cast<int>(algo::Stage::kCount);
  unsigned long long* live = nullptr;  // [queue * cid_slots + cid][kStages], %globaltimer ns
  std::uint32_t queues = 0;
  std::uint32_t cid_slots = 0;
  unsigned long long* log = nullptr;  // [capacity][kStages]: one record per delivered I/O
  unsigned int* count = nullptr;      // records written (may pass capacity: those are lost)
  std::uint32_t capacity = 0;
  // Means mode: no live slots or log; totals[s] sums stage s's timestamps
  // (ns after base_ns), totals[kStages + s] counts them.
  bool means_only = false;
  unsigned long long base_ns = 0;
  unsigned long long* totals = nullptr;
};

class CudaWarp {
 public:
  // With a trace the descriptor is copied into the platform object
  // (registers): a stage record then costs a clock read and one store, not
  // dependent loads of the descriptor from memory.
  __device__ explicit CudaWarp(std::uint32_t poll_backoff_ns = 0,
                               const CudaStageTrace* trace = nullptr)
      : backoff_(poll_backoff_ns), tracing_(trace != nullptr) {
    if (trace != nullptr) trace_ = *trace;
  }

  __device__ algo::Timestamp clock() const {
    std::uint64_t ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns * 1000u;
  }
  __device__ void stage(std::uint16_t q, std::uint16_t cid, algo::Stage s) {
    if (tracing_) stage_at(q, cid, s, clock());
  }
  // Recorded by the lane acting for the warp (stage calls sit in warp-uniform
  // code, so every lane makes the same call).
  __device__ void stage_at(std::uint16_t q, std::uint16_t cid, algo::Stage s, algo::Timestamp t) {
    if (!tracing_ || !leader()) return;
    constexpr int n = CudaStageTrace::kStages;
    if (trace_.means_only) {
      const int index = static_cast<int>(s);
      sums_[index] += t / 1000u - trace_.base_ns;
      ++counts_[index];
      return;
    }
    if (q >= trace_.queues || cid >= trace_.cid_slots) return;
    volatile unsigned long long* slot =
        trace_.live + (std::uint64_t{q} * trace_.cid_slots + cid) * n;
    const int index = static_cast<int>(s);
    if (s == algo::Stage::Request) {
      for (int i = 1; i < n; ++i) slot[i] = 0;
    }
    slot[index] = t / 1000u;  // ps -> ns
    if (s != algo::Stage::Delivered) return;
    const unsigned int at = atomicAdd(trace_.count, 1u);
    if (at < trace_.capacity) {
      for (int i = 0; i < n; ++i) trace_.log[std::uint64_t{at} * n + i] = slot[i];
    }
    for (int i = 0; i < n; ++i) slot[i] = 0;
  }

  // Means mode: adds this warp's stage sums to the global totals; every warp
  // calls it once, when it is done.
  __device__ void flush_stage_means() {
    if (!tracing_ || !trace_.means_only || lane() != 0) return;
    constexpr int n = CudaStageTrace::kStages;
    for (int i = 0; i < n; ++i) {
      if (counts_[i] == 0) continue;
      atomicAdd(trace_.totals + i, sums_[i]);
      atomicAdd(trace_.totals + n + i, counts_[i]);
    }
  }

  template <class F>
  __device__ void for_lanes(algo::LaneMask mask, F&& body) {
    in_lanes_ = true;
    if ((mask >> lane()) & 1u) body(static_cast<int>(lane()));
    in_lanes_ = false;
    __syncwarp();
  }
  template <class F>
  __device__ algo::LaneMask ballot(algo::LaneMask mask, F&& predicate) {
    in_lanes_ = true;
    const bool mine = ((mask >> lane()) & 1u) && predicate(static_cast<int>(lane()));
    in_lanes_ = false;
    return __ballot_sync(0xFFFFFFFFu, mine) & mask;
  }

  __device__ std::uint32_t atomic_add_u32(std::uint64_t addr, std::uint32_t value) {
    return one([&] { return atomicAdd(ptr<unsigned>(addr), value); });
  }
  __device__ std::uint32_t atomic_cas_u32(std::uint64_t addr, std::uint32_t expected,
                                          std::uint32_t desired) {
    return one([&] { return atomicCAS(ptr<unsigned>(addr), expected, desired); });
  }
  __device__ std::uint32_t atomic_or_u32(std::uint64_t addr, std::uint32_t bits) {
    return one([&] { return atomicOr(ptr<unsigned>(addr), bits); });
  }
  __device__ std::uint32_t atomic_and_u32(std::uint64_t addr, std::uint32_t bits) {
    return one([&] { return atomicAnd(ptr<unsigned>(addr), bits); });
  }
  __device__ std::uint32_t load_u32(std::uint64_t addr) {
    return one([&] { return *ptr<volatile unsigned>(addr); });
  }
  template <class T>
  __device__ T load(std::uint64_t addr) {
    static_assert(sizeof(T) % 4 == 0, "loads move whole 32-bit words");
    T value;
    auto* words = reinterpret_cast<std::uint32_t*>(&value);
    for (unsigned i = 0; i < sizeof(T) / 4; ++i) {
      words[i] = one([&] { return *ptr<volatile unsigned>(addr + 4u * i); });
    }
    return value;
  }
  __device__ void store_u32(std::uint64_t addr, std::uint32_t value) {
    if (leader()) *ptr<volatile unsigned>(addr) = value;
  }
  __device__ void store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
    if (!leader()) return;
    const auto* in = static_cast<const unsigned char*>(data);
    if (addr % 4 == 0 && len % 4 == 0) {
      for (std::size_t i = 0; i < len; i += 4) {
        unsigned v;
        memcpy(&v, in + i, 4);
        *ptr<volatile unsigned>(addr + i) = v;
      }
    } else {
      for (std::size_t i = 0; i < len; ++i) *ptr<volatile unsigned char>(addr + i) = in[i];
    }
  }
  __device__ std::uint32_t peek_u32(std::uint64_t addr) { return *ptr<volatile unsigned>(addr); }
  template <class T>
  __device__ T peek(std::uint64_t addr) {
    T value;
    auto* words = reinterpret_cast<std::uint32_t*>(&value);
    for (unsigned i = 0; i < sizeof(T) / 4; ++i) words[i] = *ptr<volatile unsigned>(addr + 4u * i);
    return value;
  }

  __device__ void fence_block() { __threadfence_block(); }
  __device__ void fence_gpu() { __threadfence(); }
  __device__ void fence_system() { __threadfence_system(); }
  __device__ void mmio_store_u32(std::uint64_t addr, std::uint32_t value) {
    if (leader()) *ptr<volatile unsigned>(addr) = value;
  }
  __device__ void nanosleep(std::uint32_t ns) { __nanosleep(ns); }

  template <class Pred, class... Ranges>
  __device__ void wait_until(Pred&& ready, Ranges...) {
    while (!uniform(ready())) __nanosleep(backoff_);
  }
  template <class Pred>
  __device__ void wait_until_any(Pred&& ready, const std::uint64_t*, std::size_t) {
    while (!uniform(ready())) __nanosleep(backoff_);
  }
  template <class Pred>
  __device__ bool wait_until_deadline(Pred&& ready, algo::Timestamp deadline, const std::uint64_t*,
                                      std::size_t) {
    for (;;) {
      if (uniform(ready())) return true;
      if (uniform(clock() >= deadline)) return false;
      __nanosleep(backoff_);
    }
  }

 private:
  __device__ static std::uint32_t lane() { return threadIdx.x % 32u; }
  // Outside for_lanes the warp's lowest lane acts for the warp; inside, each
  // lane acts for itself.
  __device__ bool leader() const { return in_lanes_ || lane() == 0; }
  template <class T>
  __device__ static T* ptr(std::uint64_t addr) {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(addr));
  }
  template <class F>
  __device__ std::uint32_t one(F&& op) {
    if (in_lanes_) return op();
    std::uint32_t r = 0;
    if (lane() == 0) r = op();
    return __shfl_sync(0xFFFFFFFFu, r, 0);
  }
  __device__ static bool uniform(bool b) { return __shfl_sync(0xFFFFFFFFu, b ? 1 : 0, 0) != 0; }

  std::uint32_t backoff_;
  bool tracing_;
  CudaStageTrace trace_{};
  unsigned long long sums_[CudaStageTrace::kStages] = {};
  unsigned long long counts_[CudaStageTrace::kStages] = {};
  bool in_lanes_ = false;
};

}  // namespace gpunvme::platform
