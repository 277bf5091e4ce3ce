// A software NVMe controller for the hardware backend: host CPU threads that
// poll the doorbell registers of a BAR0 image in pinned, GPU-mapped host
// memory, fetch 64 B submission entries from SQs in that memory, serve reads
// by pread() from a real file into pinned staging and a copy into the GPU
// buffer the PRPs name (writes the other way), and post 16 B completion
// entries with phase tags, SQ head (SQHD) and status, byte-exactly as the
// NVMe base specification (2.0, sections 3.1 and 4) lays them out. The GPU
// code cannot tell it from a controller whose queues sit in host memory:
// it stores to doorbells at 1000h + (2y or 2y+1) * (4 << CAP.DSTRD) and
// polls CQ phase tags.
//
// It checks the host side as it goes and records every violation (a doorbell
// value outside the ring, an SQ overrun, a CQ head moved past the tail, a CID
// reused while outstanding). Bad commands get the status a controller gives:
// Invalid Command Opcode, Invalid Namespace or Format, LBA Out of Range,
// Invalid Field in Command (transfer too long), Data Transfer Error (a PRP
// outside the GPU memory registered for DMA).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/queue_invariants.h"
#include "sim/frontend/hardware/nvme_target.h"

namespace gpunvme::hw {

class SoftController : public NvmeTarget {
 public:
  struct Options {
    std::string file;       // backing file: the namespace (read, and written by writes)
    bool writable = false;  // open the file for writing too
    std::uint32_t lba_bytes = 512;
    std::uint32_t threads = 4;  // serving threads; queue q by thread (q - 1) % threads
    std::uint8_t dstrd = 0;     // CAP.DSTRD: doorbell stride 4 << dstrd bytes
    std::uint32_t max_queues = 1024;
    std::uint32_t max_entries = 65536;     // CAP.MQES + 1
    std::uint32_t max_transfer = 1 << 17;  // MDTS: 128 KiB (32 pages)
    std::uint32_t batch = 64;              // SQEs a thread serves per pass of one queue
    // GPU memory the controller may DMA to or from (PRPs must fall inside).
    std::uint64_t dma_base = 0;
    std::uint64_t dma_bytes = 0;
  };

  explicit SoftController(Options options);
  ~SoftController() override;
  SoftController(const SoftController&) = delete;
  SoftController& operator=(const SoftController&) = delete;

  std::string kind() const override { return "soft_controller"; }
  std::string description() const override;
  nvme::Cap cap() const override { return cap_; }
  std::uint64_t bar0_device() const override { return bar0_device_; }
  IoQueueRings create_io_queue(std::uint16_t qid, std::uint32_t entries) override;
  void delete_io_queues() override;
  void start() override;
  void stop() override;
  TargetStats stats() const override;  // call while stopped
  void reset_stats() override;

  std::uint64_t capacity_lbas() const override { return capacity_lbas_; }
  std::uint32_t lba_bytes() const override { return options_.lba_bytes; }

 private:
  struct Command {
    std::uint16_t cid;
    nvme::Status status;
    std::int64_t fetched_ns;
    std::int64_t data_ns;
  };
  struct Queue {
    bool exists = false;
    std::uint32_t entries = 0;
    unsigned char* sq = nullptr;  // pinned host memory (host view)
    unsigned char* cq = nullptr;
    std::uint32_t sq_tail = 0, sq_head = 0, cq_tail = 0, cq_head = 0;
    bool phase = true;
    nvme::OutstandingCids cids;
    std::vector<Command> waiting;  // served, waiting for CQ room
  };
  struct Worker {
    void* stream = nullptr;            // cudaStream_t
    unsigned char* staging = nullptr;  // pinned: batch x max_transfer
    std::vector<double> service_ns, data_ns;
    std::vector<std::pair<double, double>> batches;  // (commands, ns from fetch to last CQE)
    // Back-to-back batches: the thread's time from one batch's last CQE to
    // its next batch's first fetch, when no whole pass over its queues found
    // nothing in between (overhead between batches, not idleness).
    std::vector<double> batch_gap_ns;
    std::vector<double> batch_copies;  // copy operations of each batch
    std::int64_t last_batch_end_ns = 0;
    std::int64_t first_batch_ns = 0;  // 0: none yet
    std::uint64_t batch_passes = 0;   // passes that served SQEs (whole or not)
    double busy_ns = 0;               // their time
    bool idle_since_batch = true;
    std::uint64_t fetched = 0, completed = 0, errors = 0, sq_updates = 0;
    std::vector<std::string> violations;
  };

  void serve(std::uint32_t thread);
  bool poll_queue(std::uint16_t qid, Worker& w);
  volatile std::uint32_t* doorbell(std::uint16_t qid, bool cq) const;
  nvme::Status transfer(const nvme::SubmissionEntry& e, Worker& w, unsigned char* staging,
                        std::vector<std::pair<std::uint64_t, std::uint32_t>>& segments);
  void violation(Worker& w, std::string what);

  Options options_;
  nvme::Cap cap_{};
  int fd_ = -1;
  std::uint64_t capacity_lbas_ = 0;
  unsigned char* bar0_ = nullptr;  // pinned host memory (host view)
  std::uint64_t bar0_device_ = 0;
  std::uint64_t bar0_bytes_ = 0;
  std::vector<Queue> queues_;
  std::vector<Worker> workers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
};

}  // namespace gpunvme::hw
