// The GPU: its memory (exposed to peers through its BAR), the streaming
// multiprocessors' warp schedulers, the L2 atomic units that serialize
// operations on one address while distinct addresses proceed in parallel,
// and the per-operation costs the simulated platform charges. Warps run the
// algorithm library through sim/system/machine/sim_warp.h.
//
// Resources are next-available-time servers (principle 3): one per warp
// scheduler (an instruction issues per cycle) and one per atomic address (one
// operation per service interval). Latencies come from the parameters, which
// cite measurements (configs/measurements/) or datasheets; GPU profiles live
// in configs/gpu/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "models/pcie/pcie_specs.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/kernel/component.h"
#include "sim/kernel/interval_server.h"
#include "sim/kernel/memory_space.h"
#include "sim/kernel/params/param_table.h"
#include "sim/kernel/server.h"

namespace gpunvme::gpu {

// A gpu node's parameters, typed (table: gpu_params.def, then
// models/pcie/bar_target_params.def); times in picoseconds. Its
// copy_engine_* parameters are pcie::dma_engine_config's.
struct GpuParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/gpu/gpu_params.def"
#include "models/pcie/bar_target_params.def"
#undef GPUNVME_PARAM
  pcie::PortCredits credits;
  static GpuParams from(const ParamValues& values);
};

const ComponentSpec& gpu_spec();

// The unit of the GPU's read requests over PCIe: a warp's loads of one
// 128 B line in one instruction go out as one request.
inline constexpr std::uint64_t kPcieReadLineBytes = 128;

// The queue entry whose write entry_store_ns prices (an NVMe SQE; a command
// capsule is one too): a store_bytes pays it once per whole entry it moves.
inline constexpr std::uint64_t kEntryStoreBytes = nvme::kSqEntrySize;

// Costs of the operations a warp issues, in picoseconds, from the parameters.
struct GpuCosts {
  Picoseconds cycle;        // one SM clock cycle
  Picoseconds atomic_near;  // uncontended atomic, line in the SM's near L2 partition
  Picoseconds atomic_far;   // the same on the far partition
  Picoseconds atomic_same_address_interval;
  Picoseconds load_latency;        // L2 hit
  Picoseconds store_issue;         // one 16 B-per-lane store to GPU memory
  Picoseconds pcie_store_issue;    // one posted store to host memory or a device BAR
  Picoseconds entry_store;         // a lane's write of a 64 B queue entry, at least
  Picoseconds first_lane_pass;     // one lane first_lane passes over
  Picoseconds pcie_load_overhead;  // GPU-internal part of a load that crosses PCIe
  Picoseconds fence_block;
  Picoseconds fence_gpu;                      // nothing outstanding
  Picoseconds fence_gpu_after_store;          // a store to GPU memory since the last fence
  Picoseconds fence_system;                   // nothing outstanding (or only GPU-memory stores)
  Picoseconds fence_system_after_pcie_store;  // a posted PCIe store since the last fence
  Picoseconds fence_l1_reload;                // descriptors read again after a GPU or system fence
  Picoseconds lane_loop_iteration;            // one pass of a warp-uniform loop over lanes
  Picoseconds agent_lane_loop_iteration;      // the same in io_agents' agent warps
  Picoseconds turn_pass;                      // own code around a lane's PerCommand turn
  Picoseconds turn_descriptor;                // the turn's reads of its queue descriptor
  Picoseconds cq_scan_co_waiter;              // a CqScan wait's cost per co-waiting warp
  double cross_sm_turn_breaks;  // turns after which a holder leaves its run, all others elsewhere
  Picoseconds host_poll_read;   // one poll of host memory, few pollers
  Picoseconds host_read_interval;       // 1 / host_reads_per_us: one read served
  Picoseconds host_line_read_interval;  // a read's hold on its 64 B line of host memory
  double copy_op_host_reads;            // host reads a copy operation waits for in turn
  Picoseconds host_poll_fence_system;   // added to a system fence while warps poll host memory
  std::uint32_t host_pollers_before_fence_cost;  // pollers a fence bears for little
  Picoseconds host_poller_fence_gpu;     // added to a GPU fence per warp polling beyond those
  Picoseconds host_poller_fence_system;  // added to a system fence per warp polling beyond those
};

class Gpu : public Component {
 public:
  Gpu(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
      MemorySpace& memory);

  std::size_t node() const { return node_; }
  const GpuCosts& costs() const { return costs_; }
  const Region& memory_region() const { return *memory_region_; }
  bool owns(std::uint64_t addr, std::uint64_t len) const {
    return memory_region_->contains(addr, len);
  }

  std::uint32_t sms() const { return sms_; }
  std::uint32_t max_warps_per_sm() const { return max_warps_per_sm_; }
  std::uint32_t schedulers_per_sm() const { return schedulers_per_sm_; }
  // The SM thread block `block` runs on (block_sm_order). Blocks beyond the
  // first sms go round again, as the block scheduler fills SMs in waves.
  std::uint32_t block_sm(std::uint32_t block) const;
  // The SM block `block` of a launch of `launch_blocks` blocks runs on: the
  // launch's own placement where the profile has one for that size
  // (placed_launch_blocks), else block_sm(block).
  std::uint32_t block_sm(std::uint32_t block, std::uint32_t launch_blocks) const;

  // Carves `bytes` out of GPU memory (queues, counters, I/O buffers).
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t alignment = 256);
  // Where the next allocation starts: allocate() carves memory in address
  // order, so the allocations made between two readings lie between them.
  std::uint64_t next_free() const { return next_free_; }

  // Books `cycles` issue cycles on warp scheduler `scheduler` of SM `sm`, no
  // earlier than `at`; returns when the instruction issues.
  Picoseconds book_issue(std::uint32_t sm, std::uint32_t scheduler, Picoseconds at,
                         std::uint32_t cycles);

  // Books one atomic issued by SM `sm` on `addr` at the L2 unit that owns
  // the address; returns when its result is back at the SM.
  Picoseconds book_atomic(std::uint64_t addr, Picoseconds issue, std::uint32_t sm);
  // Uncontended latency of an atomic from SM `sm` on `addr`: the L2 is split
  // in two partitions, and a line in the far one costs more.
  Picoseconds atomic_latency(std::uint32_t sm, std::uint64_t addr) const;

  // The GPU's reads over PCIe in flight, in 128 B line requests: warps
  // spinning on host memory (a wait whose predicate reads it) keep one each
  // all the time they wait (the simulator does not issue those polls; it
  // counts the pollers), and the lines of the reads warps issue are in
  // flight until they return.
  // Warps whose completion policy scans the CQ (CqScan) waiting now, by SM:
  // each slows the others' waits (cq_scan_co_waiter_ns).
  void add_cq_scan_waiter(std::uint32_t sm) { ++cq_scan_waiters_.at(sm); }
  void remove_cq_scan_waiter(std::uint32_t sm) { --cq_scan_waiters_.at(sm); }
  std::uint32_t cq_scan_waiters(std::uint32_t sm) const { return cq_scan_waiters_.at(sm); }
  // The warps that have taken a PerCommand turn on the queue whose turn word
  // is `turn_word`: registers `warp` (on SM `sm`) there if it is new and
  // returns the share of the queue's other warps that run on another SM
  // (0 while it is alone). Drives cross_sm_turn_breaks.
  double turn_sharers_elsewhere(std::uint64_t turn_word, const void* warp, std::uint32_t sm);
  void add_host_poller() { ++host_pollers_; }
  void remove_host_poller() { --host_pollers_; }
  std::uint32_t host_pollers() const { return host_pollers_; }
  // The warps polling host memory now beyond host_pollers_before_fence_cost:
  // each lengthens a fence by host_poller_fence_gpu_ns or _system_ns.
  std::uint32_t host_pollers_lengthening_fences() const {
    const std::uint32_t free = costs_.host_pollers_before_fence_cost;
    return host_pollers_ > free ? host_pollers_ - free : 0;
  }
  void add_host_read() { ++host_reads_; }
  void remove_host_read() { --host_reads_; }
  std::uint64_t host_reads_in_flight() const { return std::uint64_t{host_pollers_} + host_reads_; }
  // The host-memory lines (64 B, MemorySpace lines) a poller reads on each
  // poll: reads of one line are served one after the other, so the warps
  // polling a line share it. Lines of GPU memory are not counted.
  void add_host_poll_lines(const std::uint64_t* lines, std::size_t count);
  void remove_host_poll_lines(const std::uint64_t* lines, std::size_t count);
  // Warps polling `line` now.
  std::uint32_t host_line_pollers(std::uint64_t line) const;
  // Over the host lines polled now for which `counted(line)` holds, the
  // warps polling each beyond the first: sum of (pollers - 1).
  std::uint64_t extra_host_line_pollers(const std::function<bool(std::uint64_t)>& counted) const;
  // A waiting warp whose predicate read two or more host lines (a scan of
  // a ring, entry after entry, rather than a poll of one entry): its host
  // lines, under a key add_host_sweep returns and remove_host_sweep takes.
  // Kept only once track_host_sweeps() is set (by a machine whose software
  // target's copies depend on them).
  void set_track_host_sweeps(bool track) { track_host_sweeps_ = track; }
  bool tracks_host_sweeps() const { return track_host_sweeps_; }
  std::uint64_t add_host_sweep(const std::uint64_t* lines, std::size_t count);
  void remove_host_sweep(std::uint64_t key);
  // Over the rings that `ring_of` maps lines to (a negative value: no ring
  // counted), the sweeping warps that read two or more lines of each ring,
  // beyond the first such warp on it: sum over rings of (sweepers - 1).
  std::uint64_t extra_ring_sweepers(
      const std::function<std::int64_t(std::uint64_t)>& ring_of) const;
  // The most warps polling any one of `lines` (at least 1: the asking
  // poller).
  std::uint32_t busiest_host_line(const std::uint64_t* lines, std::size_t count) const;
  // The period of one poll of host memory: the unloaded read, or, once the
  // reads in flight outrun the rate they are served at, the time to serve
  // one of each (the closed-loop bound of W readers with one read each),
  // or, for a poller whose busiest line `line_pollers` warps poll, the time
  // that line takes to serve one read of each of them.
  Picoseconds host_poll_period(std::uint32_t line_pollers = 1) const {
    return std::max({costs_.host_poll_read, host_reads_in_flight() * costs_.host_read_interval,
                     Picoseconds{line_pollers} * costs_.host_line_read_interval});
  }
  // The earliest a read over PCIe issued now completes: behind the reads in
  // flight, then its own.
  Picoseconds host_read_queue_floor() const {
    return (host_reads_in_flight() + 1) * costs_.host_read_interval;
  }
  // What the reads in flight add to one copy-engine operation: it waits
  // behind them copy_op_host_reads times.
  Picoseconds copy_op_poll_delay() const {
    return static_cast<Picoseconds>(
        costs_.copy_op_host_reads *
        static_cast<double>(host_reads_in_flight() * costs_.host_read_interval));
  }

  // Fast mode (scenario fidelity = fast): warps book issue slots and atomics
  // at their own times, which run ahead of the simulation's by up to
  // `quantum`; the servers then take bookings out of time order
  // (IntervalServer). Set before any warp runs; exact mode is the default.
  void set_fast_mode(Picoseconds quantum);
  bool fast_mode() const { return fast_quantum_ != 0; }
  Picoseconds fast_quantum() const { return fast_quantum_; }

  std::uint64_t atomics() const { return atomics_; }
  Picoseconds atomic_queueing_ps() const { return atomic_queueing_ps_; }
  Picoseconds issue_stall_ps() const { return issue_stall_ps_; }

 private:
  std::size_t node_;
  GpuCosts costs_;
  std::uint32_t sms_;
  std::uint32_t max_warps_per_sm_;
  std::uint32_t schedulers_per_sm_;
  const Region* memory_region_;
  std::uint64_t next_free_;
  std::vector<NextFreeServer> warp_schedulers_;  // sm * schedulers_per_sm + scheduler
  std::vector<std::uint32_t> block_sm_order_;    // empty: block b on SM b mod sms
  std::vector<std::uint32_t> sm_partition_;      // empty: SM s near partition s mod 2
  // Launches placed otherwise than block_sm_order: by launch size, the SM of
  // each block.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> placed_launches_;
  std::unordered_map<std::uint64_t, NextFreeServer> atomic_units_;  // by address
  std::uint64_t atomics_ = 0;
  std::uint32_t host_pollers_ = 0;
  std::vector<std::uint32_t> cq_scan_waiters_;  // by SM
  // By queue turn word: the warps that took a turn on it, and how many of
  // them run on each SM (a warp's share is then found without a scan).
  struct TurnSharers {
    std::unordered_set<const void*> warps;
    std::unordered_map<std::uint32_t, std::size_t> warps_on_sm;
  };
  std::unordered_map<std::uint64_t, TurnSharers> turn_sharers_;
  std::uint64_t host_reads_ = 0;  // line requests of warps' reads over PCIe in flight
  std::unordered_map<std::uint64_t, std::uint32_t> host_line_pollers_;  // by host line
  std::map<std::uint64_t, std::vector<std::uint64_t>> host_sweeps_;     // host lines, by key
  std::uint64_t next_sweep_key_ = 0;
  bool track_host_sweeps_ = false;
  Picoseconds atomic_queueing_ps_ = 0;
  Picoseconds issue_stall_ps_ = 0;
  // Fast mode's servers, in place of warp_schedulers_ and atomic_units_.
  Picoseconds fast_quantum_ = 0;  // 0: exact mode
  std::vector<IntervalServer> fast_schedulers_;
  std::unordered_map<std::uint64_t, IntervalServer> fast_atomic_units_;
  Picoseconds book_issue_fast(std::size_t issuer, Picoseconds at, std::uint32_t cycles);
  Picoseconds book_atomic_fast(std::uint64_t addr, Picoseconds issue, std::uint32_t sm);
};

}  // namespace gpunvme::gpu
