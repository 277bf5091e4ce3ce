// The NVMe controller of one SSD: its register BAR with the doorbells, the I/O
// queue pairs, a fetch engine that reads submission entries over PCIe from
// wherever the SQ lives, round-robin arbitration across SQs, command
// processors, the flash back end, data DMA through the PCIe fabric, and
// completion entries with phase tags written back over PCIe.
//
// Invariants are checked as the run goes: a doorbell that overruns its SQ or
// moves a CQ head past the tail, a CID reused while outstanding, a command
// completed twice. A violation stops the run with a report.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <vector>

#include "models/flash/flash_array.h"
#include "models/pcie/fabric.h"
#include "sim/kernel/component.h"
#include "sim/kernel/memory_space.h"
#include "sim/protocol/nvme_entries.h"
#include "sim/results/latency_histogram.h"

namespace gpunvme::nvme {

const ComponentSpec& nvme_ssd_spec();

// A broken protocol invariant: names the queue, slot, CID and time.
class InvariantViolation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Controller : public Component, public pcie::RegisterTarget {
 public:
  Controller(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
             pcie::Fabric& fabric, MemorySpace& memory);

  std::size_t node() const { return node_; }
  const Region& registers() const { return *registers_; }
  std::uint64_t doorbell_address(bool sq, std::uint16_t qid) const;
  std::uint32_t max_queue_entries() const { return max_entries_; }
  std::uint32_t max_io_queues() const { return max_io_queues_; }
  std::uint64_t capacity_lbas() const;
  std::uint32_t lba_bytes() const { return lba_bytes_; }

  // Creates I/O queue pair `qid` (1-based) with both rings at the given PCIe
  // addresses, as Create I/O CQ and Create I/O SQ would. Throws
  // std::invalid_argument when the controller would refuse it.
  void create_io_queue_pair(std::uint16_t qid, std::uint64_t sq_base, std::uint64_t cq_base,
                            std::uint32_t entries);

  void on_register_write(std::uint64_t offset, const std::uint8_t* data,
                         std::uint32_t len) override;

  // End-of-run check: every command fetched was completed.
  void check_drained() const;
  nlohmann::json statistics(Picoseconds elapsed) const;

  std::uint64_t commands_completed() const { return completed_; }
  const LatencyHistogram& fetch_wait() const { return fetch_wait_; }
  const LatencyHistogram& service() const { return service_; }

 private:
  struct SubmissionQueue {
    bool exists = false;
    std::uint64_t base = 0;
    std::uint32_t entries = 0;
    std::uint32_t tail = 0;   // from the doorbell
    std::uint32_t head = 0;   // next entry to fetch
    std::uint32_t fetching = 0;  // entries requested over PCIe, not yet arrived
    std::vector<std::uint64_t> outstanding;  // CID bitmap
    std::vector<Picoseconds> rung_at;        // per slot: when its doorbell arrived
  };
  struct CompletionQueue {
    bool exists = false;
    std::uint64_t base = 0;
    std::uint32_t entries = 0;
    std::uint32_t tail = 0;
    std::uint32_t head = 0;  // from the doorbell
    bool phase = true;
    std::deque<CompletionEntry> waiting;  // held back while the CQ is full
  };
  struct Command {
    std::uint16_t qid;
    SubmissionEntry sqe;
    Picoseconds fetched_at;
  };

  void kick_fetch();
  void on_entries(std::uint16_t qid, std::uint32_t first, const std::uint8_t* data,
                  std::uint32_t count);
  void execute(std::shared_ptr<Command> command);
  void move_data(std::shared_ptr<Command> command, Picoseconds media_done);
  void complete(const Command& command, Status status);
  void post(std::uint16_t qid, const CompletionEntry& entry);
  [[noreturn]] void violation(const std::string& what, std::uint16_t qid, std::uint32_t slot,
                              std::uint16_t cid) const;
  Picoseconds book_processor();

  std::size_t node_;
  pcie::Fabric& fabric_;
  MemorySpace& memory_;
  const Region* registers_;
  flash::FlashArray flash_;
  std::uint32_t max_io_queues_;
  std::uint32_t max_entries_;
  std::uint8_t dstrd_;
  std::uint32_t lba_bytes_;
  std::uint64_t max_transfer_bytes_;  // 0 = no limit
  std::uint32_t fetch_burst_;
  std::uint32_t max_fetches_;
  Picoseconds command_overhead_;
  std::vector<Picoseconds> processor_free_at_;
  std::vector<SubmissionQueue> sqs_;  // index = qid
  std::vector<CompletionQueue> cqs_;
  std::uint16_t next_sq_ = 1;         // round-robin position
  std::uint32_t fetches_in_flight_ = 0;
  std::uint64_t fetched_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t doorbell_writes_ = 0;
  std::uint64_t cq_full_stalls_ = 0;
  std::uint64_t errors_ = 0;
  LatencyHistogram fetch_wait_;  // SQ doorbell arrival -> entry in the controller
  LatencyHistogram service_;     // entry in the controller -> CQE written
};

}  // namespace gpunvme::nvme
