// Warp-level SPMD vocabulary shared by the algorithms and their platforms.
// An algorithm runs once per warp; per-lane work goes through
// `p.for_lanes(mask, body)` and `p.ballot(mask, predicate)`, and per-lane
// values live in `Lanes<T>`, which every lane may read once the for_lanes or
// ballot that wrote it has returned. Control flow outside those calls is
// warp-uniform, as SIMT hardware executes it.
//
// A platform P offers (see sim/system/machine/sim_warp.h for the documented one):
//   clock(), stage(q, cid, Stage), stage_at(q, cid, Stage, t)
//   for_lanes(mask, body(lane)), ballot(mask, predicate(lane)) -> LaneMask
//   atomic_add_u32 / atomic_cas_u32 / atomic_or_u32 / atomic_and_u32 (GPU scope)
//   load_u32, load<T>, store_u32, store_bytes   (GPU memory, host memory, CMB)
//   lane_loop(n)       (the warp's own loop over n lanes; see for_each_lane)
//   turn_pass()        (the warp's own code around one lane's PerCommand turn)
//   turn_run_breaks(turn_word) -> bool  (whether a warp's run of PerCommand
//                      turns breaks after this one: it reaps before its next)
//   recording(), observe_u32  (whether stage records are kept; a read made
//                              only for a record)
//   fence_block, fence_gpu, fence_system, mmio_store_u32, nanosleep(ns)
//   wait_until(ready, addr, len, ...), wait_until_any(ready, ranges, count),
//   wait_until_deadline(ready, t, ranges, count) -> bool
//   check(ready) -> ready()  (a readiness predicate evaluated once, outside
//                             a wait, to decide whether to act)
// Operations outside for_lanes/ballot are issued once for the warp (by one
// lane on SIMT hardware, the result broadcast).
//
// Readiness predicates (is a gate open, has a completion arrived) are
// written once, with plain loads, and what their loads cost is the
// platform's business: evaluated by a wait they are polls (the wait accounts
// for them), evaluated through check() they are the warp's own reads. Their
// compares and loops over lanes cost nothing in either place.
#pragma once

#include <cstdint>
#include <new>

#include "sim/core/protocol/portability.h"

namespace gpunvme::algo {

constexpr int kWarpLanes = 32;
using LaneMask = std::uint32_t;
// Platform clocks count picoseconds (the simulator's unit; the host and CUDA
// platforms convert their timers).
using Timestamp = std::uint64_t;
constexpr LaneMask kAllLanes = 0xFFFFFFFFu;

#if defined(__CUDACC__)
// Device code: the lanes of a warp share one Lanes<T> in the warp's slice of
// dynamic shared memory (GPUNVME_WARP_SCRATCH_BYTES per warp; the kernel
// launches with that times its warps, see sim/core/platform/cuda_warp.cuh). All 32
// lanes construct it at the same point, as warp-uniform code does, and get
// the same storage from a per-warp stack; each lane initialises its own
// element.
#ifndef GPUNVME_WARP_SCRATCH_BYTES
#define GPUNVME_WARP_SCRATCH_BYTES 4096
#endif
__device__ inline unsigned char* warp_scratch() {
  extern __shared__ unsigned long long gpunvme_warp_scratch[];
  return reinterpret_cast<unsigned char*>(gpunvme_warp_scratch) +
         (threadIdx.x / 32u) * GPUNVME_WARP_SCRATCH_BYTES;
}
// Called once by every thread at kernel start.
__device__ inline void init_warp_scratch() {
  if (threadIdx.x % 32u == 0) *reinterpret_cast<std::uint32_t*>(warp_scratch()) = 16;
  __syncwarp();
}
#endif

#if defined(__CUDA_ARCH__)
template <class T>
struct Lanes {
  T* v;
  std::uint32_t previous_top;
  __device__ Lanes() {
    std::uint32_t* top = reinterpret_cast<std::uint32_t*>(warp_scratch());
    previous_top = *top;
    const std::uint32_t start = (previous_top + 15u) / 16u * 16u;
    if (start + sizeof(T) * kWarpLanes > GPUNVME_WARP_SCRATCH_BYTES) __trap();
    v = reinterpret_cast<T*>(warp_scratch() + start);
    __syncwarp();
    if (threadIdx.x % 32u == 0) *top = start + static_cast<std::uint32_t>(sizeof(T)) * kWarpLanes;
    new (&v[threadIdx.x % 32u]) T{};
    __syncwarp();
  }
  __device__ ~Lanes() {
    __syncwarp();
    if (threadIdx.x % 32u == 0) *reinterpret_cast<std::uint32_t*>(warp_scratch()) = previous_top;
    __syncwarp();
  }
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;
  __device__ T& operator[](int lane) { return v[lane]; }
  __device__ const T& operator[](int lane) const { return v[lane]; }
  __device__ void fill(const T& value) {
    v[threadIdx.x % 32u] = value;
    __syncwarp();
  }
};
#else
// One value per lane of a warp. A plain aggregate; `Lanes<T> x{}` zero-fills
// it.
template <class T>
struct Lanes {
  T v[kWarpLanes];
  T& operator[](int lane) { return v[lane]; }
  const T& operator[](int lane) const { return v[lane]; }
  void fill(const T& value) {
    for (int i = 0; i < kWarpLanes; ++i) v[i] = value;
  }
};
#endif

// The mask helpers below are the simulator's innermost loops (every
// instruction of every simulated warp visits its lanes): on the host they
// take a population count and bit scans (a few instructions for any mask)
// instead of a pass per lane; device code keeps the plain loops.
GPUNVME_HD constexpr std::uint32_t lane_count(LaneMask mask) {
#if defined(__CUDA_ARCH__)
  std::uint32_t n = 0;
  for (; mask != 0; mask &= mask - 1) ++n;
  return n;
#else
  // Bits summed in pairs, nibbles and bytes, then the four bytes added by
  // one multiplication: no call to the compiler's popcount helper, which a
  // build for the baseline x86-64 instruction set would make.
  mask = mask - ((mask >> 1) & 0x55555555u);
  mask = (mask & 0x33333333u) + ((mask >> 2) & 0x33333333u);
  mask = (mask + (mask >> 4)) & 0x0F0F0F0Fu;
  return (mask * 0x01010101u) >> 24;
#endif
}

// Position of `lane` among the set lanes of `mask` below it.
GPUNVME_HD constexpr std::uint32_t lane_rank(LaneMask mask, int lane) {
  return lane_count(mask & ((LaneMask{1} << lane) - 1u));
}

GPUNVME_HD constexpr LaneMask lanes_below(std::uint32_t n) {
  return n >= 32 ? kAllLanes : (LaneMask{1} << n) - 1u;
}

// Number of consecutive set lanes starting at lane 0.
GPUNVME_HD constexpr std::uint32_t leading_run(LaneMask mask) {
#if defined(__CUDA_ARCH__)
  std::uint32_t n = 0;
  while (n < 32 && (mask & (LaneMask{1} << n)) != 0) ++n;
  return n;
#else
  return mask == kAllLanes ? 32u : static_cast<std::uint32_t>(__builtin_ctz(~mask));
#endif
}

// Lowest set lane (mask must not be empty).
GPUNVME_HD constexpr int first_lane(LaneMask mask) {
#if defined(__CUDA_ARCH__)
  int lane = 0;
  while (((mask >> lane) & 1u) == 0) ++lane;
  return lane;
#else
  return __builtin_ctz(mask);
#endif
}

// first_lane as the algorithms run it on platform `p`: the loop passes over
// each lane below the one it finds, and the platform is told how many
// (first_lane_scan), as lane_loop tells it of a loop over lanes.
template <class P>
GPUNVME_HD int first_lane(P& p, LaneMask mask) {
  const int lane = first_lane(mask);
  p.first_lane_scan(static_cast<std::uint32_t>(lane));
  return lane;
}

// The lowest `n` set lanes of `mask`.
GPUNVME_HD constexpr LaneMask first_lanes(LaneMask mask, std::uint32_t n) {
  LaneMask out = 0;
  for (; mask != 0 && n > 0; --n) {
    const LaneMask low = mask & (~mask + 1u);
    out |= low;
    mask &= ~low;
  }
  return out;
}

// Bare iteration over the set lanes of `mask`: the platforms' for_lanes and
// ballot, and the simulator's bookkeeping around a warp. Algorithm code
// loops with for_each_lane(p, ...) or record_lanes(p, ...), whose cost the
// platform decides.
template <class F>
GPUNVME_HD void visit_lanes(LaneMask mask, F&& f) {
#if defined(__CUDA_ARCH__)
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    if ((mask >> lane) & 1u) f(lane);
  }
#else
  // Lowest lane first, as the loop over all 32 would visit them.
  for (; mask != 0; mask &= mask - 1) f(__builtin_ctz(mask));
#endif
}

// The algorithms' loop over the lanes of `mask` in warp-uniform code: every
// thread of the warp runs it (bookkeeping in Lanes<T>), so it costs the warp
// time on a GPU although it issues no memory operation; it tells the
// platform with `p.lane_loop(n)`. The platform charges it to the warp in
// warp-uniform code, to the lane inside a for_lanes or ballot body (one
// lane's loop, run beside the other lanes'), and not at all inside a
// readiness predicate.
template <class P, class F>
GPUNVME_HD void for_each_lane(P& p, LaneMask mask, F&& f) {
  p.lane_loop(lane_count(mask));
  visit_lanes(mask, f);
}

// A loop that only makes stage records for the lanes of `mask`: run only
// while the platform keeps records, and never charged (records observe the
// run, as a trace does).
template <class P, class F>
GPUNVME_HD void record_lanes(P& p, LaneMask mask, F&& f) {
  if (!p.recording()) return;
  visit_lanes(mask, f);
}

}  // namespace gpunvme::algo
