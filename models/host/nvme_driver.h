// The host's NVMe driver: brings a controller up through its registers and
// admin queue, then creates and deletes I/O queues, as Linux's nvme driver
// or SPDK's does at start-up.
//
// Bring-up: MMIO reads of CAP and CSTS (non-posted PCIe reads of BAR0 from
// the CPU), AQA/ASQ/ACQ and CC written as posted writes, CSTS polled until
// RDY, then admin commands through an admin queue pair in host memory:
// Identify Controller and Namespace, Set Features Number of Queues, and
// optionally Set Features Arbitration and Doorbell Buffer Config. Queue
// creation sends Create I/O CQ for every requested pair, then Create I/O SQ
// (two batches: the admin queue may run several commands at once, and no SQ
// is created before its CQ exists).
//
// Everything runs in simulated time; each call queues an operation that
// starts when the previous one has finished and calls back when it is done.
// A failure during bring-up (CSTS.CFS, a failed Identify) throws
// std::runtime_error out of the simulation.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "models/nvme/controller.h"
#include "models/pcie/fabric.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_registers.h"
#include "sim/kernel/component.h"
#include "sim/kernel/memory_space.h"

namespace gpunvme::host {

// Where a queue's rings (or another driver-owned structure) live.
enum class QueuePlacement { host, gpu, cmb };
const char* to_string(QueuePlacement placement);
// "host", "gpu" or "cmb"; std::invalid_argument otherwise.
QueuePlacement queue_placement_from_string(const std::string& name);

struct IoQueueSpec {
  std::uint16_t qid = 1;
  std::uint32_t entries = 1024;  // SQ and CQ alike
  // Where the driver allocates the rings whose base below is 0.
  QueuePlacement placement = QueuePlacement::host;
  std::uint64_t sq_base = 0;
  std::uint64_t cq_base = 0;
  nvme::QueuePriority priority = nvme::QueuePriority::Medium;
  // MSI-X for the CQ (polled queues, as GPU consumers use, have none).
  bool interrupts = false;
  std::uint16_t vector = 0;  // with interrupts: 0 selects vector = qid
  // Indexed completion (Create I/O CQ ICQ, a proposed extension the
  // controller must offer): each entry lands at its command's SQ slot.
  bool indexed_completion = false;
  // Warp doorbells (Create I/O SQ WDB, a proposed extension the controller
  // must offer): the tail doorbell also takes run announcements.
  bool warp_doorbells = false;
  // Batch completion notification (Create I/O CQ BCN, a proposed extension
  // the controller must offer): successes flip bits of the bitmap at
  // `completion_bitmap` (zeroed, 64 B aligned) covering `bitmap_cids` CIDs;
  // the CQ ring receives failed commands only.
  std::uint64_t completion_bitmap = 0;  // 0: an ordinary CQ
  std::uint32_t bitmap_cids = 0;
  // Wide CIDs (Create I/O SQ WCID, a proposed extension the controller must
  // offer): the SQ's commands carry 32-bit CIDs.
  bool wide_cids = false;
};

// A created (or refused) queue pair and where a submitter finds it.
struct IoQueue {
  nvme::Status status = nvme::Status::Success;  // of Create I/O CQ, else Create I/O SQ
  std::uint16_t qid = 0;
  std::uint32_t entries = 0;
  std::uint64_t sq_base = 0;
  std::uint64_t cq_base = 0;
  std::uint64_t sq_doorbell = 0;
  std::uint64_t cq_doorbell = 0;
};

struct BringUpOptions {
  std::uint16_t io_queues = 1;  // asked of Set Features Number of Queues
  // Admin queue size: Linux's NVME_AQ_DEPTH is 32.
  std::uint32_t admin_entries = 32;
  // CC.AMS = weighted round robin with urgent class; the controller must
  // offer it (CAP.AMS), otherwise bring-up throws.
  bool weighted_round_robin = false;
  // Set Features Arbitration with these values (otherwise the controller's
  // reset values stay).
  bool set_arbitration = false;
  nvme::Arbitration arbitration{3, 0, 0, 0};
  // Doorbell Buffer Config: shadow doorbell and EventIdx buffers at this
  // placement (host or gpu).
  bool shadow_doorbells = false;
  QueuePlacement shadow_placement = QueuePlacement::host;
  // Program MSI-X vectors to post to host memory (the admin CQ always
  // signals vector 0; I/O CQs when their spec asks).
  bool interrupts = true;
};

// What bring-up learned from the registers and Identify.
struct ControllerInfo {
  nvme::Cap cap{};
  std::uint32_t version = 0;
  std::uint64_t max_transfer_bytes = 0;  // from MDTS; 0 = no limit
  std::uint32_t io_sqs_granted = 0;
  std::uint32_t io_cqs_granted = 0;
  bool sgl_supported = false;
  bool shadow_doorbells = false;
  bool volatile_write_cache = false;
  std::uint64_t capacity_lbas = 0;
  std::uint32_t lba_bytes = 0;
};

class NvmeDriver : public Component {
 public:
  using Done = std::function<void()>;
  using AdminDone = std::function<void(const nvme::CompletionEntry&)>;

  // `cpu_node` issues the MMIO accesses (a cpu node; the driver runs there).
  // `host_memory_node` holds the admin queues and driver buffers; with npos
  // they go to `gpu`'s memory instead. `gpu` is needed for the gpu placement.
  NvmeDriver(const sc_core::sc_module_name& name, nvme::Controller& controller,
             pcie::Fabric& fabric, MemorySpace& memory, std::size_t cpu_node,
             std::size_t host_memory_node, gpu::Gpu* gpu = nullptr);

  static constexpr std::size_t kNoHostMemory = static_cast<std::size_t>(-1);

  // Memory for rings and buffers at a placement. Fresh memory reads as zero,
  // as a CQ must before the controller's first pass.
  std::uint64_t allocate(QueuePlacement placement, std::uint64_t bytes,
                         std::uint64_t alignment = 4096);

  void bring_up(const BringUpOptions& options, Done done);
  void create_io_queues(std::vector<IoQueueSpec> specs,
                        std::function<void(std::vector<IoQueue>)> done);
  // Delete I/O SQ, then Delete I/O CQ; reports the first failure.
  void delete_io_queue_pair(std::uint16_t qid, std::function<void(nvme::Status)> done);
  // Any admin command; the driver assigns its CID.
  void admin(const nvme::SubmissionEntry& sqe, AdminDone done);
  // An MMIO read of a controller register (4 or 8 bytes).
  void read_register(std::uint32_t offset, std::uint32_t bytes,
                     std::function<void(std::uint64_t)> done);

  const ControllerInfo& info() const { return info_; }
  nvme::Controller& controller() { return controller_; }
  // With shadow doorbells: where a submitter writes the new tail/head, and
  // where it reads the controller's EventIdx.
  std::uint64_t shadow_doorbell(nvme::DoorbellKind kind, std::uint16_t qid) const;
  std::uint64_t event_idx(nvme::DoorbellKind kind, std::uint16_t qid) const;
  // Where MSI-X vector `vector` posts its message (0 without interrupts).
  std::uint64_t msix_address(std::uint16_t vector) const {
    return msix_base_ == 0 ? 0 : msix_base_ + 4ull * vector;
  }
  std::uint64_t admin_commands() const { return admin_commands_; }
  std::uint64_t mmio_reads() const { return mmio_reads_; }

 private:
  using Operation = std::function<void(Done next)>;
  struct Batch {
    std::vector<nvme::CompletionEntry> results;
    std::size_t left = 0;
    std::function<void(std::vector<nvme::CompletionEntry>)> done;
  };

  void enqueue(Operation operation);
  void run_next();
  void write_register(std::uint32_t offset, const void* data, std::uint32_t bytes);
  void wait_ready(bool ready, Done done);
  void submit_batch(std::vector<nvme::SubmissionEntry> sqes,
                    std::function<void(std::vector<nvme::CompletionEntry>)> done);
  void push_backlog();
  void arm_completion_watch();
  void drain_admin_cq();
  void identify(Done done);
  [[noreturn]] void fail(const std::string& what) const;

  nvme::Controller& controller_;
  pcie::Fabric& fabric_;
  MemorySpace& memory_;
  std::size_t cpu_node_;
  std::size_t host_memory_node_;
  gpu::Gpu* gpu_;
  std::uint64_t cmb_next_ = 0;

  std::deque<Operation> operations_;
  bool busy_ = false;

  ControllerInfo info_;
  BringUpOptions options_;
  std::uint64_t msix_base_ = 0;
  std::uint64_t shadow_base_ = 0;
  std::uint64_t event_idx_base_ = 0;

  // Admin queue pair.
  std::uint64_t asq_ = 0;
  std::uint64_t acq_ = 0;
  std::uint32_t admin_entries_ = 0;
  std::uint32_t sq_tail_ = 0;
  std::uint32_t sq_head_ = 0;  // from SQHD
  std::uint32_t cq_head_ = 0;
  std::uint8_t cq_phase_ = 1;
  std::uint16_t next_cid_ = 0;
  std::map<std::uint16_t, std::pair<std::shared_ptr<Batch>, std::size_t>> outstanding_;
  std::deque<std::pair<nvme::SubmissionEntry, std::pair<std::shared_ptr<Batch>, std::size_t>>>
      backlog_;
  MemorySpace::WatchId cq_watch_ = 0;
  bool drain_scheduled_ = false;

  std::uint64_t admin_commands_ = 0;
  std::uint64_t mmio_reads_ = 0;
};

}  // namespace gpunvme::host
