// How long a host core stalls on cache-line accesses that miss every cache and go to a memory
// node (host DRAM or a CXL memory expander): the CPU side of host memory, beside the fabric's
// device side (models/pcie/fabric.h).
//
// A core keeps at most `fill_buffers` misses outstanding (its L1D fill buffers). Loading n
// independent lines, or owning n lines for stores that a fence then orders (the driver's write
// barrier before an MMIO doorbell waits for the stores' read-for-ownership), takes
// ceil(n / fill_buffers) rounds of the memory's load-to-use latency L; n lines each depending
// on the one before (a pointer chase) take n x L. One core therefore streams at most
// fill_buffers x 64 B per L (Little's law). The memory's own bandwidth, which device DMA shares,
// is the fabric's to book (Fabric::core_access): the wait it reports adds to these stalls.
// Left out: hardware prefetchers, the store buffer filling up (stores without a fence cost no
// stall here), the LLC (every access misses it) and DDIO placing device writes in the LLC.
#pragma once

#include <cstdint>

#include "sim/kernel/time.h"

namespace gpunvme::host {

inline constexpr std::uint32_t kCacheLineBytes = 64;

// A memory node as a host core sees it.
struct CoreMemoryTiming {
  Picoseconds load_to_use = 0;  // one missed line, idle memory
};

// Stall of a core that loads (or owns, before a fence) `lines` independent cache lines.
Picoseconds independent_lines_stall(const CoreMemoryTiming& memory, std::uint32_t fill_buffers,
                                    std::uint64_t lines);

// Stall of a core that loads `lines` lines, each address depending on the line before.
Picoseconds dependent_lines_stall(const CoreMemoryTiming& memory, std::uint64_t lines);

// The most bytes per ns one core moves from or to that memory: fill_buffers lines per
// load-to-use latency.
double core_bytes_per_ns(const CoreMemoryTiming& memory, std::uint32_t fill_buffers);

// Cache lines that the `count` ring entries of `entry_bytes` starting at entry `first` touch in
// a ring of `entries` entries whose base is line-aligned (a run that wraps touches the ring's
// end and its start).
std::uint64_t ring_lines(std::uint32_t first, std::uint32_t count, std::uint32_t entries,
                         std::uint32_t entry_bytes);

}  // namespace gpunvme::host
