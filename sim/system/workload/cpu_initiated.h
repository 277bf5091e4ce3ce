// The CPU-initiated I/O paths: host cores build and submit every NVMe
// command, as the Linux driver, io_uring or SPDK do.
//
// - gds (GPUDirect Storage): the command's data pointer is GPU memory, so the
//   SSD DMAs straight into (or out of) the GPU;
// - bounce (seed 000's eight steps): the SSD DMAs into a pinned host buffer
//   and a GPU copy engine moves the data to GPU memory (for writes, first from
//   the GPU to the buffer).
//
// With request_origin = gpu each request starts on the GPU: a GPU thread
// posts a 64 B request to its core's ring in host memory (a posted PCIe
// write) and a polling core sees it request_notice_ns later; once the data is
// in place the core posts a completion flag to GPU memory (gds) or the copy
// engine's completion does (bounce), and the GPU thread sees it one GPU load
// later. With request_origin = cpu host threads issue and consume the I/O.
//
// The queues (SQs, CQs, PRP lists) and the GPU's request rings live in the host
// memory nearest the SSDs, or where the scenario's host_queues puts them (a
// host_memory or a cxl_memory). The cpu node's per-I/O costs were fitted with
// them in local DRAM, so its cache misses there are inside those costs; queues
// in a slower memory add, per pass, the difference of the cores' stalls
// (models/host/memory_access.h) on the lines they touch: a submission pass owns
// its commands' SQE and PRP-list lines before the doorbell's write barrier, a
// completion pass loads its CQE lines, and a polling core's load of a GPU
// request's descriptor delays its notice. Those accesses also take the memory's
// bandwidth, shared with DMA (Fabric::core_access), and wait while it is busy.
//
// Cores are next-available-time servers (models/host/cpu_cores.h). A core
// takes every request waiting for it in one pass (one system call for the
// batch; per command the cuFile call and GPU buffer look-up (gds), the file
// system, the driver's submit and the DMA map; one doorbell per queue), and
// reaps completions in passes: polling passes start when an entry lands;
// with interrupts, each queue's vector fires by the NVMe Interrupt
// Coalescing rule (models/host/interrupt_coalescing.h; every entry when it
// is off) and each handler run pays interrupt_ns, however many interrupts
// arrived while it was pending or running (they merge, as a latched MSI-X
// vector does). The bounce path pays a copy launch per copy and, once the
// copy engine is done, the cost of learning so. Core time is booked per
// stage (HostCost) for the results' breakdown. Core c submits to queue
// c mod queues of each SSD; the queue's own core reaps it. Queues live in
// host memory (CID = SQ slot).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/host/cpu_cores.h"
#include "models/host/interrupt_coalescing.h"
#include "models/host/memory_access.h"
#include "models/host/nvme_driver.h"
#include "models/nvmf/nvmf.h"
#include "sim/kernel/component.h"
#include "sim/system/workload/command_watchdog.h"
#include "sim/system/workload/io_path.h"
#include "sim/system/workload/path_stages.h"

namespace gpunvme {

class CpuInitiatedPath : public Component, public IoPath {
 public:
  // Target: an NVMe-oF target's side of a remote I/O (remote_io_path.h):
  // the SSD moves the data between its flash and the target's buffers
  // (storage host memory, or the DPU's), where the target's NIC reads or
  // wrote it; the target's servers (host or Arm cores polling, or the
  // offloading NIC's command contexts) pay its per-I/O time, half at
  // submission and half at completion (no published split; an even one
  // assumed), and requests come from the network (never from a GPU).
  enum class Mode { Gds, Bounce, Target };

  // `target` gives the target's servers, costs and memory (Mode::Target only).
  CpuInitiatedPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
                   Mode mode, std::uint64_t max_io_bytes, const nvmf::TargetSite* target = nullptr);
  ~CpuInitiatedPath() override;

  void start(std::function<void()> ready) override;
  void submit(const BlockIo& io, IoDone done) override;
  void close() override {}

  std::string name() const override {
    return mode_ == Mode::Gds ? "gds" : mode_ == Mode::Bounce ? "bounce" : "nvmf_target";
  }
  std::string strategy() const override;
  std::uint64_t submitted() const override { return submitted_; }
  std::uint64_t completed() const override { return stages_.completed(); }
  std::uint64_t errors() const override { return errors_; }
  std::uint64_t bytes() const override { return bytes_; }
  std::uint64_t timeouts() const override { return timeouts_; }
  std::uint64_t reset_aborted() const override { return reset_aborted_; }
  const LatencyHistogram& end_to_end() const override { return stages_.end_to_end(); }
  nlohmann::json stages() const override { return stages_.stages_json(); }
  std::vector<std::string> stage_order() const override { return stages_.stage_order(); }
  FioLatency& fio_latency() override { return stages_.fio_latency(); }
  const FioLatency& fio_latency() const override { return stages_.fio_latency(); }
  const platform::WarpCounters& counters() const override { return no_warps_; }
  nlohmann::json sections(Picoseconds elapsed) const override;

  const host::CpuCores& cores() const { return *cores_; }
  const host::CpuIoCosts& costs() const { return costs_; }

 private:
  // Stage indices of an I/O (PathStages times).
  enum Stage : int {
    kRequested = 0,
    kNoticed,    // a core has the request
    kCopiedIn,   // bounce writes: the data is in the host buffer
    kSubmitted,  // SQE written, doorbell posted
    kCqePosted,  // the completion entry is in host memory
    kReaped,     // a core has consumed it
    kCopiedOut,  // bounce reads: the data is in GPU memory
    kDelivered,  // the requester knows
    kStageCount
  };
  struct Request {
    BlockIo io;
    IoDone done;
    std::uint32_t queue = 0;
    std::uint32_t slot = 0;
    Picoseconds times[kStageCount];
  };
  struct Queue {
    std::uint32_t ssd = 0;
    std::uint16_t qid = 0;
    std::uint32_t core = 0;  // reaps it
    std::uint32_t entries = 0;
    std::uint64_t sq_base = 0;
    std::uint64_t cq_base = 0;
    std::uint64_t sq_doorbell = 0;
    std::uint64_t cq_doorbell = 0;
    std::uint64_t irq_word = 0;
    std::uint64_t prp_lists = 0;  // one list page per slot
    std::size_t memory = 0;       // the node holding its SQ, CQ and PRP lists
    // SQ positions and CQ positions are monotonic counters (ring index =
    // position mod entries). CIDs are tags from a free list, as blk-mq
    // hands them out: at most entries - 1 commands are outstanding, so the
    // SQ never overflows.
    std::uint32_t sq_tail = 0;               // positions claimed by submission passes
    std::uint32_t published = 0;             // tail written to the doorbell
    std::vector<bool> written;               // per SQ slot: entry written, not yet published
    std::uint32_t cq_head = 0;               // CQ entries consumed
    std::uint32_t arrived = 0;               // CQ entries that have landed
    std::uint32_t reserved = 0;              // tags in use
    std::vector<std::uint16_t> tags;         // free CIDs
    std::vector<std::uint32_t> tag_request;  // request index per CID
    bool reap_scheduled = false;
    // With interrupts: the vector's coalescing state, whether an interrupt
    // waits for the handler, and whether an aggregation-time expiry is
    // scheduled.
    host::InterruptCoalescer coalescer{1, 0};
    bool irq_pending = false;
    bool expiry_scheduled = false;
    MemorySpace::WatchId arrival_watch = 0;
  };
  struct Core {
    std::deque<std::uint32_t> waiting;  // requests to submit, in arrival order
    bool pass_scheduled = false;
    std::uint64_t ring = 0;  // host memory the GPU posts its requests to
    std::uint64_t posted = 0;
  };

  std::uint32_t allocate_request();
  std::uint64_t bounce_buffer(std::uint32_t request);
  void noticed(std::uint32_t request);
  void ready_to_submit(std::uint32_t request);
  void kick(std::uint32_t core);
  void submission_pass(std::uint32_t core);
  void write_command(Queue& q, std::uint32_t slot, std::uint32_t request);
  void arm_arrival(std::uint32_t queue);
  void schedule_reap(std::uint32_t queue);
  void reap_pass(std::uint32_t queue);
  void raise_interrupt(std::uint32_t queue);
  void schedule_expiry(std::uint32_t queue);
  void copy_done(std::uint32_t core, std::function<void()> then);
  void after_reap(std::uint32_t request, std::uint16_t status);
  void deliver_to_gpu(std::uint32_t request, std::uint16_t status);
  void finish(std::uint32_t request, std::uint16_t status);
  bool mapped(std::uint32_t ssd) const { return dma_map_[ssd]; }
  // Cache lines a command's SQE and PRP list take (stored by the submitting core).
  std::uint64_t command_lines(std::uint32_t request) const;
  // A core's access of `lines` independent lines of queue memory `node`: returns the time it
  // costs beyond the same access in the reference DRAM (0 there), and books the lines on the
  // memory's bandwidth when they cost more. `store`: lines owned for stores, else loaded.
  Picoseconds touch_queue_memory(std::size_t node, std::uint64_t lines, bool store);
  host::CoreMemoryTiming core_timing(std::size_t node) const;
  nlohmann::json queue_memory_json() const;

  const RunConfig& config_;
  Machine& machine_;
  Mode mode_;
  gpu::Gpu& gpu_;
  std::uint64_t max_io_bytes_;
  std::uint64_t buffer_stride_;
  bool from_gpu_;
  std::size_t cpu_node_;
  std::size_t memory_node_;
  std::size_t
      mmio_node_;  // writes SSD doorbells and registers: cpu_node_, or a target's DPU or NIC
  std::size_t buffer_node_;    // where bounce buffers live (scenario host_buffers)
  std::size_t queue_node_;     // where this path's own driver puts queues (scenario host_queues)
  std::size_t ring_node_ = 0;  // where the GPU's request rings live
  bool report_queue_memory_ = false;
  // What the cores' accesses to queue memory cost, per node.
  struct QueueMemoryUse {
    host::CoreMemoryTiming timing;  // the node's, read from its parameters once
    std::uint64_t lines_loaded = 0;
    std::uint64_t lines_stored = 0;
    Picoseconds stall = 0;            // the cores' stalls on these lines there
    Picoseconds reference_stall = 0;  // the same lines in the reference DRAM
    Picoseconds bandwidth_wait = 0;   // waits for the memory while DMA kept it busy
    Picoseconds charged = 0;          // beyond the fitted costs: stall - reference + waits
  };
  std::map<std::size_t, QueueMemoryUse> queue_memory_;
  host::CoreMemoryTiming reference_memory_;  // the DRAM the cpu's costs were fitted with
  host::CpuIoCosts costs_;
  std::shared_ptr<host::CpuCores> cores_;  // a target's are shared (Machine::shared_model)
  std::vector<Core> core_state_;
  std::vector<nvme::Controller*> ssds_;
  std::vector<bool> dma_map_;
  // Per SSD: the driver that created its queues, this path's own or one that
  // tenants share (Machine::shared_driver).
  std::vector<host::NvmeDriver*> drivers_;
  std::vector<std::unique_ptr<host::NvmeDriver>> own_drivers_;
  std::size_t drivers_ready_ = 0;
  std::uint32_t queues_per_ssd_ = 1;
  std::vector<Queue> queues_;  // queue i of SSD k at k * queues_per_ssd + i
  std::vector<Request> requests_;
  std::vector<std::uint32_t> free_requests_;
  std::vector<std::uint64_t> bounce_chunks_;  // host regions of kBounceChunk buffers
  std::uint64_t gpu_flags_ = 0;               // GPU words completion flags are posted to
  PathStages stages_;
  std::function<void()> ready_;
  platform::WarpCounters no_warps_;
  std::uint64_t submitted_ = 0;
  std::uint64_t errors_ = 0;
  std::uint64_t timeouts_ = 0;
  std::uint64_t reset_aborted_ = 0;
  std::uint64_t bytes_ = 0;
  // Per SSD: the driver's per-command timeout, when its faults can lose a
  // command (null otherwise). Queue = index into queues_, CID = tag.
  std::vector<std::unique_ptr<CommandWatchdog>> watchdogs_;
  std::uint64_t submit_passes_ = 0;
  std::uint64_t reap_passes_ = 0;
  std::uint64_t doorbells_ = 0;
  std::uint64_t copies_ = 0;
  std::uint64_t mapped_commands_ = 0;
  std::uint64_t handler_runs_ = 0;
  host::HostCostLedger ledger_;
};

}  // namespace gpunvme
