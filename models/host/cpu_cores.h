// The host CPU as the CPU-initiated I/O paths use it: cores are
// next-available-time servers (a core runs one piece of I/O work at a time;
// work booked on a busy core starts when it is free), and each step of an
// I/O costs core time taken from the cpu node's parameters.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/kernel/params/param_spec.h"
#include "sim/kernel/server.h"
#include "sim/kernel/time.h"

namespace gpunvme::host {

// The stages of the host software stack an I/O's core time is spent in.
enum class HostCost : std::uint8_t {
  syscall,        // submission system call, per batch
  cufile,         // cuFile API call (gds)
  buffer_lookup,  // registered GPU buffer to bus addresses (gds)
  file_system,    // file system, O_DIRECT read/write
  driver_submit,  // block layer and NVMe driver: command into the SQ
  dma_map,        // IOMMU map and unmap
  interrupt,      // interrupt entry, softirq, wake-up, per handler run
  completion,     // completion entry reaped and the request completed
  request,        // a GPU request taken from its ring
  notify,         // completion flag stored to the GPU
  copy_launch,    // cudaMemcpyAsync between bounce buffer and GPU (bounce)
  copy_sync,      // learning that such a copy has finished (bounce)
  memory_stall,   // host-memory accesses beyond the fitted costs (queues in slower memory)
  kCount
};
const char* to_string(HostCost cost);

// Per-I/O core costs, from a cpu node's parameters.
struct CpuIoCosts {
  bool interrupts = false;        // completion = interrupt
  Picoseconds submit = 0;         // per command
  Picoseconds syscall = 0;        // per submission batch
  Picoseconds complete_poll = 0;  // per CQE, polling
  Picoseconds interrupt = 0;      // per interrupt handler run
  Picoseconds complete_irq = 0;   // per CQE, in an interrupt
  Picoseconds dma_map = 0;        // per command, when the IOMMU translates
  Picoseconds file_system = 0;    // per I/O
  Picoseconds cufile = 0;         // per I/O on the gds path
  Picoseconds buffer_lookup = 0;  // per I/O on the gds path
  Picoseconds request_notice = 0;
  Picoseconds poll_period = 0;  // of the thread that polls the GPU's rings
  Picoseconds request = 0;      // per GPU request taken from a ring
  Picoseconds notify = 0;       // per completion flag posted to the GPU
  Picoseconds copy_launch = 0;
  Picoseconds copy_sync = 0;
  std::uint32_t fill_buffers = 16;  // cache-line misses a core keeps outstanding
  // NVMe Interrupt Coalescing as the driver sets it (threshold entries,
  // time in 100 us units; 1 and 0 leave it off).
  std::uint32_t coalescing_threshold = 1;
  std::uint32_t coalescing_time_units = 0;

  // Time from a GPU request landing in host memory to the polling core
  // having it: the cache-line transfer plus, on average, half a poll loop.
  Picoseconds request_wait() const { return request_notice + poll_period / 2; }

  // Core time one read costs end to end when `ios_per_syscall` commands
  // share a system call and (with interrupts) `ios_per_interrupt`
  // completions share a handler run; the per-core IOPS ceiling is its
  // inverse. bounce = the bounce path, else gds.
  Picoseconds per_io(double ios_per_syscall, double ios_per_interrupt, bool mapped, bool from_gpu,
                     bool bounce) const;
};
CpuIoCosts cpu_io_costs(const ParamValues& cpu);

// Core time spent per HostCost stage, for the results' breakdown per I/O.
class HostCostLedger {
 public:
  void add(HostCost cost, Picoseconds time, std::uint64_t times = 1) {
    spent_[static_cast<std::size_t>(cost)] += time * times;
  }
  Picoseconds spent(HostCost cost) const { return spent_[static_cast<std::size_t>(cost)]; }
  Picoseconds total() const;
  // ns per I/O for each stage that cost anything, and their total.
  nlohmann::json per_io_ns(std::uint64_t ios) const;

 private:
  std::array<Picoseconds, static_cast<std::size_t>(HostCost::kCount)> spent_{};
};

class CpuCores {
 public:
  explicit CpuCores(std::uint32_t cores);

  std::uint32_t size() const { return static_cast<std::uint32_t>(cores_.size()); }
  // Runs `work` on `core` starting no earlier than `at`; returns its end.
  Picoseconds book(std::uint32_t core, Picoseconds at, Picoseconds work) {
    return cores_[core].book(at, work).end;
  }
  Picoseconds free_at(std::uint32_t core) const { return cores_[core].free_at(); }
  Picoseconds busy(std::uint32_t core) const { return cores_[core].busy_ps(); }

  // Per core: busy time, utilization over `elapsed`, work items; totals.
  nlohmann::json statistics(Picoseconds elapsed) const;

 private:
  std::vector<NextFreeServer> cores_;  // a booking per work item
};

}  // namespace gpunvme::host
