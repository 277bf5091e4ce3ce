// Warp-level SPMD vocabulary shared by the algorithms and their platforms.
// An algorithm runs once per warp; per-lane work goes through
// `p.for_lanes(mask, body)` and `p.ballot(mask, predicate)`, and per-lane
// values live in `Lanes<T>`, which every lane may read once the for_lanes or
// ballot that wrote it has returned. Control flow outside those calls is
// warp-uniform, as SIMT hardware executes it.
#pragma once

#include <array>
#include <cstdint>

#include "sim/protocol/portability.h"

namespace gpunvme::algo {

constexpr int kWarpLanes = 32;
using LaneMask = std::uint32_t;
constexpr LaneMask kAllLanes = 0xFFFFFFFFu;

template <class T>
using Lanes = std::array<T, kWarpLanes>;

GPUNVME_HD constexpr std::uint32_t lane_count(LaneMask mask) {
  std::uint32_t n = 0;
  for (; mask != 0; mask &= mask - 1) ++n;
  return n;
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
  std::uint32_t n = 0;
  while (n < 32 && (mask & (LaneMask{1} << n)) != 0) ++n;
  return n;
}

template <class F>
GPUNVME_HD void for_each_lane(LaneMask mask, F&& f) {
  for (int lane = 0; lane < kWarpLanes; ++lane) {
    if ((mask >> lane) & 1u) f(lane);
  }
}

}  // namespace gpunvme::algo
