// Simulated time is kept in integer picoseconds: the SystemC kernel runs at
// 1 ps resolution, and integers keep results byte-identical across runs.
#pragma once

#include <cmath>
#include <cstdint>

namespace gpunvme {

using Picoseconds = std::uint64_t;

constexpr Picoseconds kPsPerNs = 1000;

constexpr Picoseconds ns_to_ps(double ns) {
  return static_cast<Picoseconds>(ns * static_cast<double>(kPsPerNs) + 0.5);
}
constexpr Picoseconds us_to_ps(double us) { return ns_to_ps(us * 1000.0); }
constexpr double ps_to_ns(Picoseconds ps) { return static_cast<double>(ps) / 1000.0; }

}  // namespace gpunvme
