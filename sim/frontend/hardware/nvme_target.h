// What the hardware backend needs from an NVMe controller, whichever kind it
// is: a register window (BAR0) the GPU can store to, I/O queue pairs whose
// rings the controller reads and writes, and what it saw while serving.
//
// Three kinds plug in here:
//  - SoftController (soft_controller.h): host CPU threads polling doorbells in
//    pinned, GPU-mapped host memory, serving data from a file. Runs on any
//    CUDA GPU that can map host memory.
//  - GpuTarget (gpu_target.h): a persistent kernel on SMs of its own polling
//    doorbells in GPU memory, serving data from a namespace image in HBM.
//  - a physical controller whose BAR0 is mapped into the GPU's address space
//    and whose queues the GPU reaches by peer-to-peer DMA, as BaM does
//    through its kernel module (or VFIO). Not built here: README.md in this
//    folder lists what it needs (datacenter GPU, IOMMU and ACS settings, a
//    PCIe switch) and what an implementation of this interface does.
//
// Addresses handed to the GPU are device addresses (what a kernel
// dereferences); the GPU-side algorithms (sim/core/algo) see nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_registers.h"
#include "sim/frontend/hardware/target_extensions.h"

namespace gpunvme::hw {

// Where a queue's rings ended up (the controller decides: a software
// controller needs them in host memory it can poll; a physical one may take
// them in GPU memory, as BaM places them, or in its CMB).
enum class RingMemory { host_pinned, gpu, cmb };
inline const char* to_string(RingMemory m) {
  switch (m) {
    case RingMemory::host_pinned: return "host";
    case RingMemory::gpu: return "gpu";
    case RingMemory::cmb: return "cmb";
  }
  return "?";
}

struct IoQueueRings {
  std::uint16_t qid = 0;
  std::uint32_t entries = 0;
  std::uint64_t sq_device = 0;  // SQ ring as the GPU addresses it (entries x 64 B)
  std::uint64_t cq_device = 0;  // CQ ring (entries x 16 B)
  std::uint64_t sq_doorbell_device = 0;
  std::uint64_t cq_doorbell_device = 0;
  RingMemory memory = RingMemory::host_pinned;
};

// Latency summary of the controller's own work, in ns (host clock).
struct Distribution {
  std::uint64_t count = 0;
  double mean = 0, min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Distribution summarize(std::vector<double> samples);

struct TargetStats {
  std::uint64_t fetched = 0;              // SQEs read
  std::uint64_t completed = 0;            // CQEs posted
  std::uint64_t errors = 0;               // CQEs with a status other than Success
  std::uint64_t sq_doorbell_updates = 0;  // new tail values seen (a software target sees values,
                                          // not writes: two writes between polls count once)
  Distribution service_ns;                // SQE fetched -> CQE posted (data transfer included)
  Distribution data_ns;                   // the data part: pread + copy into GPU memory
  // Batches (the SQEs a thread fetched from one queue in one pass, served
  // together): their sizes, and the least-squares line of a batch's time
  // (fetch of its first SQE to its last CQE posted) against its size, which
  // splits the service time into a per-batch and a per-command part.
  std::uint64_t batches = 0;
  Distribution batch_commands;
  // Copy operations per batch (a batch's data merged where both sides
  // continue the previous copy): each waits on the GPU's copy engine.
  Distribution batch_copies;
  double batch_fixed_ns = 0;        // the line's intercept
  double batch_per_command_ns = 0;  // its slope
  // A thread's time from one batch's last CQE to its next batch's first
  // fetch, for batches served back to back (no empty pass over its queues
  // in between): what it spends between batches when there is work.
  Distribution batch_gap_ns;
  // Per serving thread: a target's threads need not run at one speed, and
  // the run ends with the slowest, so their means alone understate its
  // length. Times from the earliest batch of any thread.
  struct Thread {
    std::uint64_t completed = 0;  // CQEs it posted
    std::uint64_t batches = 0;    // passes that served at least one SQE
    double busy_ns = 0;           // time in those passes (fetch to last CQE posted)
    double first_batch_ns = 0;    // its first batch's start
    double last_batch_end_ns = 0;
    int sm = -1;  // the SM a GPU target's serving warp ran on; -1: a host thread
  };
  std::vector<Thread> threads;
  std::vector<std::string> violations;  // protocol errors by the host side
};

// What every target shares: the CAP it reports (MQES from `max_entries`,
// contiguous queues, round robin only, 4 KiB pages, the NVM command set; NVMe
// base spec 2.0, 3.1.1), and its BAR0 image as the driver's bring-up leaves it
// (CAP, VS 2.0, CC.EN = 1 with 64 B SQEs and 16 B CQEs, CSTS.RDY = 1, every
// doorbell 0) up to queue `max_queues`'s doorbells.
nvme::Cap target_cap(std::uint32_t max_entries, std::uint8_t dstrd);
std::vector<unsigned char> bar0_image(const nvme::Cap& cap, std::uint32_t max_queues);

// Fills `out`'s batch figures from the batches (commands, ns from the first
// SQE fetched to the last CQE posted): their count and sizes, and the
// least-squares line of a batch's time against its size.
void fit_batch_line(const std::vector<std::pair<double, double>>& batches, TargetStats& out);

class NvmeTarget {
 public:
  virtual ~NvmeTarget() = default;
  virtual std::string kind() const = 0;
  // Where its rings, doorbells and data live and how it serves, as JSON
  // fields ("rings", "doorbells", "data", "doc") for the results file.
  virtual std::string description() const = 0;
  virtual nvme::Cap cap() const = 0;
  // BAR0 as the GPU addresses it: CAP at 0, doorbells from 0x1000.
  virtual std::uint64_t bar0_device() const = 0;
  // Creates I/O queue pair `qid` (1-based) of `entries` entries. Throws
  // std::runtime_error when the controller refuses.
  virtual IoQueueRings create_io_queue(std::uint16_t qid, std::uint32_t entries) = 0;
  // The proposed NVMe extensions it offers (target_extensions.h); none
  // unless a target says otherwise.
  virtual ExtensionSupport extensions() const { return {}; }
  // Creates the I/O queue pair of the Create I/O CQ `create_cq` and Create
  // I/O SQ `create_sq` (sim/core/protocol layouts; their PRP1 is ignored:
  // the target places the rings), with the extensions their CDW11 bits ask
  // for. Throws std::runtime_error naming the status and the reason when the
  // target refuses (check_queue_pair).
  IoQueueRings create_io_queue_pair(const nvme::SubmissionEntry& create_cq,
                                    const nvme::SubmissionEntry& create_sq);
  // Doorbell Buffer Config with the shadow words polled by the target: from
  // then on it reads each queue's SQ tail and CQ head from the shadow buffer
  // (PRP1) instead of its doorbell registers, and keeps each SQ's EventIdx
  // (PRP2) one behind the tail it has seen. Until delete_io_queues(). Throws
  // std::runtime_error when refused (check_doorbell_buffer_config).
  void configure_doorbell_buffer(const nvme::SubmissionEntry& doorbell_buffer_config);
  // Deletes every I/O queue (between runs); the controller must be idle.
  virtual void delete_io_queues() = 0;
  virtual void start() = 0;
  virtual void stop() = 0;
  // Statistics since the last reset.
  virtual TargetStats stats() const = 0;
  virtual void reset_stats() = 0;
  // The namespace: its size in LBAs and the LBA size.
  virtual std::uint64_t capacity_lbas() const = 0;
  virtual std::uint32_t lba_bytes() const = 0;
  // SMs the target holds for itself while started (none for a target off
  // the GPU): the GPU code must fit on the others.
  virtual std::uint32_t reserved_sms() const { return 0; }

 protected:
  // A queue pair whose extensions check_queue_pair accepted. A target that
  // offers none needs only the plain form.
  virtual IoQueueRings create_extended_io_queue(std::uint16_t qid, std::uint32_t entries,
                                                const QueueExtensions& extensions) {
    (void)extensions;
    return create_io_queue(qid, entries);
  }
  // Shadow buffers check_doorbell_buffer_config accepted.
  virtual void use_shadow_doorbells(const ShadowBuffers& buffers) { (void)buffers; }
};

}  // namespace gpunvme::hw
