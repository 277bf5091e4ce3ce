// The host CPU as the CPU-initiated I/O paths use it: cores are
// next-available-time servers (a core runs one piece of I/O work at a time;
// work booked on a busy core starts when it is free), and each step of an
// I/O costs core time taken from the cpu node's parameters.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/kernel/time.h"
#include "sim/params/param_spec.h"

namespace gpunvme::host {

// Per-I/O core costs, from a cpu node's parameters.
struct CpuIoCosts {
  bool interrupts = false;        // completion = interrupt
  Picoseconds submit = 0;         // per command
  Picoseconds syscall = 0;        // per submission batch
  Picoseconds complete_poll = 0;  // per CQE, polling
  Picoseconds interrupt = 0;      // per interrupt
  Picoseconds complete_irq = 0;   // per CQE, in an interrupt
  Picoseconds dma_map = 0;        // per command, when the IOMMU translates
  Picoseconds request_notice = 0;
  Picoseconds request = 0;  // per GPU request taken from a ring
  Picoseconds notify = 0;   // per completion flag posted to the GPU
  Picoseconds copy_launch = 0;

  // Core time one read costs end to end when `batch` commands share a
  // system call and a completion pass (the per-core IOPS ceiling is its
  // inverse).
  Picoseconds per_io(std::uint32_t batch, bool mapped, bool from_gpu, bool bounce) const;
};
CpuIoCosts cpu_io_costs(const ParamValues& cpu);

class CpuCores {
 public:
  explicit CpuCores(std::uint32_t cores);

  std::uint32_t size() const { return static_cast<std::uint32_t>(free_at_.size()); }
  // Runs `work` on `core` starting no earlier than `at`; returns its end.
  Picoseconds book(std::uint32_t core, Picoseconds at, Picoseconds work);
  Picoseconds free_at(std::uint32_t core) const { return free_at_[core]; }
  Picoseconds busy(std::uint32_t core) const { return busy_[core]; }

  // Per core: busy time, utilization over `elapsed`, work items; totals.
  nlohmann::json statistics(Picoseconds elapsed) const;

 private:
  std::vector<Picoseconds> free_at_;
  std::vector<Picoseconds> busy_;
  std::vector<std::uint64_t> items_;
};

}  // namespace gpunvme::host
