// The CUDA platform: the algorithm library on a real GPU. Every thread of a
// warp runs the algorithm; inside for_lanes/ballot each thread executes its
// own lane, and Lanes<T> are warp-shared (sim/core/algo/lanes.h). Operations a
// warp issues outside for_lanes (a leader's atomic, a doorbell) are executed
// by the lowest active lane and their results broadcast with shuffles, so
// control flow stays warp-uniform. Addresses are device pointers (GPU memory,
// mapped host memory, a BAR mapped into the GPU's address space).
//
// Kernels using it call gpunvme::algo::init_warp_scratch() first and launch
// with GPUNVME_WARP_SCRATCH_BYTES of dynamic shared memory per warp. The
// hardware backend (sim/frontend/hardware/) runs it against an NVMe target; CMake
// option GPUNVME_CUDA only compile-checks it.
//
// Stage records (sim/core/algo/stages.h) go to an optional CudaStageTrace in GPU
// memory, with the same bookkeeping as the simulator's StageRecorder
// (sim/system/workload/stage_recorder.cpp): one live slot of timestamps per (queue,
// CID); Request clears it, Delivered copies it to the log, so the hardware's
// per-stage figures mean what the simulator's do. Those records cost about
// as much as the stages they time (dependent loads and stores per command).
// A trace in means mode keeps, per warp and stage, only the sum and count of
// the stage's timestamps (thread-local, no memory traffic per record) and
// adds them to global totals when the warp ends: every command passes every
// stage once, so the mean of an interval is the difference of two stages'
// mean timestamps, at the cost of a clock read per record.
//
// An op profile (CudaOpProfile) splits each warp's time by platform call:
// the SM cycles spent in atomics, loads, peeks, stores, fences, MMIO stores,
// for_lanes, ballots and waits made in warp-uniform code (calls inside a
// for_lanes, ballot or wait count to it), and, as the rest, the warp's own code
// between them (loops over Lanes<T>, address arithmetic, request set-up).
// Two clock reads per call; a call's memory latency lands in its own
// bucket because each returns through a shuffle or a warp barrier that
// waits for the value.
#pragma once

#include <cstdint>

#include "sim/core/algo/lanes.h"
#include "sim/core/algo/stages.h"

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

// The kinds of platform call an op profile tells apart.
enum class OpKind : int {
  kAtomic,
  kLoad,
  kPeek,
  kStore,
  kFenceBlockOrGpu,
  kFenceSystem,
  kMmioStore,
  kForLanes,
  kBallot,
  kWait,
  kSleep,
  kCount
};
constexpr const char* kOpKindNames[] = {"atomic",    "load",         "peek",       "store",
                                        "fence_gpu", "fence_system", "mmio_store", "for_lanes",
                                        "ballot",    "wait",         "nanosleep"};

struct CudaOpProfile {
  static constexpr int kKinds = static_cast<int>(OpKind::kCount);
  // Per role (0 compute warps, 1 service warps): kKinds cycle sums, kKinds
  // call counts, the warps' total cycles and total %globaltimer ns (their
  // ratio converts cycles to ns), and the number of warps.
  static constexpr int kPerRole = 2 * kKinds + 3;
  unsigned long long* totals = nullptr;  // [2][kPerRole]
};

class CudaWarp {
 public:
  // With a trace the descriptor is copied into the platform object
  // (registers): a stage record then costs a clock read and one store, not
  // dependent loads of the descriptor from memory.
  __device__ explicit CudaWarp(std::uint32_t poll_backoff_ns = 0,
                               const CudaStageTrace* trace = nullptr,
                               const CudaOpProfile* profile = nullptr, int profile_role = 0)
      : backoff_(poll_backoff_ns), tracing_(trace != nullptr), profiling_(profile != nullptr) {
    if (trace != nullptr) trace_ = *trace;
    if (profile != nullptr) {
      profile_totals_ = profile->totals + profile_role * CudaOpProfile::kPerRole;
      profile_start_ns_ = clock() / 1000u;
      profile_start_cycles_ = clock64();
    }
  }

  __device__ algo::Timestamp clock() const {
    std::uint64_t ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns * 1000u;
  }
  __device__ void stage(std::uint16_t q, std::uint32_t cid, algo::Stage s) {
    if (tracing_) stage_at(q, cid, s, clock());
  }
  // Recorded by the lane acting for the warp (stage calls sit in warp-uniform
  // code, so every lane makes the same call).
  __device__ void stage_at(std::uint16_t q, std::uint32_t cid, algo::Stage s, algo::Timestamp t) {
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

  // Op profile: adds this warp's figures to the totals; every warp calls it
  // once, when it is done.
  __device__ void flush_op_profile() {
    if (!profiling_ || lane() != 0) return;
    constexpr int k = CudaOpProfile::kKinds;
    const long long cycles = clock64() - profile_start_cycles_;
    const unsigned long long ns = clock() / 1000u - profile_start_ns_;
    for (int i = 0; i < k; ++i) {
      atomicAdd(profile_totals_ + i, static_cast<unsigned long long>(op_cycles_[i]));
      atomicAdd(profile_totals_ + k + i, static_cast<unsigned long long>(op_calls_[i]));
    }
    atomicAdd(profile_totals_ + 2 * k, static_cast<unsigned long long>(cycles));
    atomicAdd(profile_totals_ + 2 * k + 1, ns);
    atomicAdd(profile_totals_ + 2 * k + 2, 1ull);
  }

  template <class F>
  __device__ void for_lanes(algo::LaneMask mask, F&& body) {
    const OpScope scope(*this, OpKind::kForLanes);
    in_lanes_ = true;
    if ((mask >> lane()) & 1u) body(static_cast<int>(lane()));
    in_lanes_ = false;
    __syncwarp();
  }
  template <class F>
  __device__ algo::LaneMask ballot(algo::LaneMask mask, F&& predicate) {
    const OpScope scope(*this, OpKind::kBallot);
    in_lanes_ = true;
    const bool mine = ((mask >> lane()) & 1u) && predicate(static_cast<int>(lane()));
    in_lanes_ = false;
    return __ballot_sync(0xFFFFFFFFu, mine) & mask;
  }

  __device__ std::uint32_t atomic_add_u32(std::uint64_t addr, std::uint32_t value) {
    const OpScope scope(*this, OpKind::kAtomic);
    return one([&] { return atomicAdd(ptr<unsigned>(addr), value); });
  }
  __device__ std::uint32_t atomic_cas_u32(std::uint64_t addr, std::uint32_t expected,
                                          std::uint32_t desired) {
    const OpScope scope(*this, OpKind::kAtomic);
    return one([&] { return atomicCAS(ptr<unsigned>(addr), expected, desired); });
  }
  __device__ std::uint32_t atomic_or_u32(std::uint64_t addr, std::uint32_t bits) {
    const OpScope scope(*this, OpKind::kAtomic);
    return one([&] { return atomicOr(ptr<unsigned>(addr), bits); });
  }
  __device__ std::uint32_t atomic_and_u32(std::uint64_t addr, std::uint32_t bits) {
    const OpScope scope(*this, OpKind::kAtomic);
    return one([&] { return atomicAnd(ptr<unsigned>(addr), bits); });
  }
  __device__ std::uint32_t load_u32(std::uint64_t addr) {
    if (in_wait_ || checking_) return load<std::uint32_t>(addr);
    const OpScope scope(*this, OpKind::kLoad);
    return one([&] { return *ptr<volatile unsigned>(addr); });
  }
  // A load inside a wait predicate is every thread's own poll (the wait
  // takes lane 0's answer); inside check() it is timed as a peek, the
  // identity shuffle making the timed call wait for the value.
  template <class T>
  __device__ T load(std::uint64_t addr) {
    static_assert(sizeof(T) % 4 == 0, "loads move whole 32-bit words");
    T value;
    auto* words = reinterpret_cast<std::uint32_t*>(&value);
    if (in_wait_) {
      read_words(addr, words, sizeof(T) / 4);
      return value;
    }
    if (checking_) {
      const OpScope scope(*this, OpKind::kPeek);
      read_words(addr, words, sizeof(T) / 4);
      if (scope.timed()) {
        for (unsigned i = 0; i < sizeof(T) / 4; ++i)
          words[i] = __shfl_sync(0xFFFFFFFFu, words[i], lane());
      }
      return value;
    }
    const OpScope scope(*this, OpKind::kLoad);
    if (in_lanes_) {
      read_words(addr, words, sizeof(T) / 4);
      return value;
    }
    if (lane() == 0) read_words(addr, words, sizeof(T) / 4);
    for (unsigned i = 0; i < sizeof(T) / 4; ++i) words[i] = __shfl_sync(0xFFFFFFFFu, words[i], 0);
    return value;
  }
  __device__ void store_u32(std::uint64_t addr, std::uint32_t value) {
    const OpScope scope(*this, OpKind::kStore);
    if (leader()) *ptr<volatile unsigned>(addr) = value;
  }
  __device__ void store_bytes(std::uint64_t addr, const void* data, std::size_t len) {
    const OpScope scope(*this, OpKind::kStore);
    if (!leader()) return;
    const auto* in = static_cast<const unsigned char*>(data);
    if (addr % 4 == 0 && len % 4 == 0) {
      // 16 B stores where aligned: an SQE leaves as four writes, not sixteen.
      std::size_t i = 0;
      for (; addr % 16 == 0 && i + 16 <= len; i += 16) {
        unsigned v[4];
        memcpy(v, in + i, 16);
        asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(addr + i), "r"(v[0]),
                     "r"(v[1]), "r"(v[2]), "r"(v[3])
                     : "memory");
      }
      for (; i < len; i += 4) {
        unsigned v;
        memcpy(&v, in + i, 4);
        *ptr<volatile unsigned>(addr + i) = v;
      }
    } else {
      for (std::size_t i = 0; i < len; ++i) *ptr<volatile unsigned char>(addr + i) = in[i];
    }
  }
  // Whether stage records are kept; a read made only for them (observe_u32)
  // is made only then.
  __device__ bool recording() const { return tracing_; }
  __device__ std::uint32_t observe_u32(std::uint64_t addr) { return *ptr<volatile unsigned>(addr); }
  // A readiness predicate evaluated once, outside a wait, by every thread:
  // its loads are timed as peeks.
  template <class Pred>
  __device__ auto check(Pred&& ready) {
    checking_ = true;
    const auto result = ready();
    checking_ = false;
    return result;
  }

  __device__ void fence_block() {
    const OpScope scope(*this, OpKind::kFenceBlockOrGpu);
    __threadfence_block();
  }
  __device__ void fence_gpu() {
    const OpScope scope(*this, OpKind::kFenceBlockOrGpu);
    __threadfence();
  }
  __device__ void fence_system() {
    const OpScope scope(*this, OpKind::kFenceSystem);
    __threadfence_system();
  }
  __device__ void mmio_store_u32(std::uint64_t addr, std::uint32_t value) {
    const OpScope scope(*this, OpKind::kMmioStore);
    if (leader()) *ptr<volatile unsigned>(addr) = value;
  }
  // Warp-uniform loops over lanes run as they are; the op profile counts
  // their time as the warp's own code.
  __device__ void lane_loop(std::uint32_t) {}
  __device__ void turn_pass() {}  // the code itself takes its time here
  __device__ void first_lane_scan(std::uint32_t) {}
  // The hardware breaks a warp's run of turns by itself (tickets of other
  // SMs' warps between its own).
  __device__ bool turn_run_breaks(std::uint64_t) { return false; }
  __device__ void nanosleep(std::uint32_t ns) {
    const OpScope scope(*this, OpKind::kSleep);
    __nanosleep(ns);
  }

  template <class Pred, class... Ranges>
  __device__ void wait_until(Pred&& ready, Ranges...) {
    const OpScope scope(*this, OpKind::kWait);
    while (!uniform(polled(ready))) __nanosleep(backoff_);
  }
  template <class Pred>
  __device__ void wait_until_any(Pred&& ready, const std::uint64_t*, std::size_t) {
    const OpScope scope(*this, OpKind::kWait);
    while (!uniform(polled(ready))) __nanosleep(backoff_);
  }
  template <class Pred>
  __device__ bool wait_until_deadline(Pred&& ready, algo::Timestamp deadline, const std::uint64_t*,
                                      std::size_t) {
    const OpScope scope(*this, OpKind::kWait);
    for (;;) {
      if (uniform(polled(ready))) return true;
      if (uniform(clock() >= deadline)) return false;
      __nanosleep(backoff_);
    }
  }

 private:
  // Times one platform call made in warp-uniform code (depth 0) into its
  // kind's bucket; calls nested in it (a for_lanes body's loads) count to it.
  class OpScope {
   public:
    __device__ OpScope(CudaWarp& w, OpKind kind)
        : w_(w), kind_(static_cast<int>(kind)), on_(w.profiling_ && w.profile_depth_ == 0) {
      if (!on_) return;
      ++w_.profile_depth_;
      start_ = clock64();
    }
    __device__ ~OpScope() {
      if (!on_) return;
      w_.op_cycles_[kind_] += clock64() - start_;
      ++w_.op_calls_[kind_];
      --w_.profile_depth_;
    }
    __device__ bool timed() const { return on_; }
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;

   private:
    CudaWarp& w_;
    int kind_;
    bool on_;
    long long start_ = 0;
  };

  __device__ static std::uint32_t lane() { return threadIdx.x % 32u; }
  // Volatile reads of `count` words at `addr`, 16 B at a time where aligned.
  // Each volatile load of host memory is a PCIe round trip and the next one
  // waits for it (H100: a CQE read as four 4 B words takes 4.9 us, as one
  // 16 B load 1.5 us; configs/measurements/warp-host-access-h100-2026-11-24.json),
  // and one 16 B load also reads a CQE whole, as the controller wrote it.
  __device__ static void read_words(std::uint64_t addr, std::uint32_t* words, unsigned count) {
    unsigned i = 0;
    for (; (addr + 4u * i) % 16 == 0 && i + 4 <= count; i += 4) {
      asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(words[i]), "=r"(words[i + 1]), "=r"(words[i + 2]), "=r"(words[i + 3])
                   : "l"(addr + 4u * i)
                   : "memory");
    }
    for (; i < count; ++i) words[i] = *ptr<volatile unsigned>(addr + 4u * i);
  }
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
  // One evaluation of a wait predicate: its loads are polls.
  template <class Pred>
  __device__ bool polled(Pred& ready) {
    in_wait_ = true;
    const bool result = ready();
    in_wait_ = false;
    return result;
  }

  std::uint32_t backoff_;
  bool tracing_;
  CudaStageTrace trace_{};
  unsigned long long sums_[CudaStageTrace::kStages] = {};
  unsigned long long counts_[CudaStageTrace::kStages] = {};
  bool in_lanes_ = false;
  bool in_wait_ = false;   // evaluating a wait predicate
  bool checking_ = false;  // evaluating a predicate through check()
  bool profiling_;
  unsigned long long* profile_totals_ = nullptr;
  unsigned long long profile_start_ns_ = 0;
  long long profile_start_cycles_ = 0;
  int profile_depth_ = 0;
  long long op_cycles_[CudaOpProfile::kKinds] = {};
  unsigned op_calls_[CudaOpProfile::kKinds] = {};
};

}  // namespace gpunvme::platform
