// The GPU: its memory (exposed to peers through its BAR), the L2 atomic units
// that serialize operations on one address while distinct addresses proceed
// in parallel, and the per-operation costs the simulated platform charges.
// Warps run the algorithm library through sim/platform/sim_warp.h.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "sim/kernel/component.h"
#include "sim/kernel/memory_space.h"

namespace gpunvme::gpu {

const ComponentSpec& gpu_spec();

// Costs of the operations a warp issues, in picoseconds, from the parameters.
struct GpuCosts {
  Picoseconds atomic_latency;
  Picoseconds atomic_same_address_interval;
  Picoseconds load_latency;
  Picoseconds store_issue;
  Picoseconds fence_gpu;
  Picoseconds fence_system;
  Picoseconds mmio_store_issue;
  Picoseconds zero_copy_read;
  Picoseconds instruction;  // one warp instruction at the SM clock
};

class Gpu : public Component {
 public:
  Gpu(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
      MemorySpace& memory);

  std::size_t node() const { return node_; }
  const GpuCosts& costs() const { return costs_; }
  const Region& memory_region() const { return *memory_region_; }

  // Carves `bytes` out of GPU memory (queues, counters, I/O buffers).
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t alignment = 256);

  // Books one atomic on `addr` at the L2 unit that owns it; returns when its
  // result is back at the SM.
  Picoseconds book_atomic(std::uint64_t addr, Picoseconds issue);

  std::uint64_t atomics() const { return atomics_; }
  Picoseconds atomic_queueing_ps() const { return atomic_queueing_ps_; }

 private:
  std::size_t node_;
  GpuCosts costs_;
  const Region* memory_region_;
  std::uint64_t next_free_;
  std::unordered_map<std::uint64_t, Picoseconds> atomic_unit_free_at_;
  std::uint64_t atomics_ = 0;
  Picoseconds atomic_queueing_ps_ = 0;
};

}  // namespace gpunvme::gpu
