// A software NVMe target for the host-thread platform: threads that poll the
// doorbell registers (or shadow doorbells), fetch submission entries from the
// host arena, serve them and post completion entries with phase tags, SQHD
// and status, byte-exactly as an NVMe controller does (NVMe base spec 2.0,
// 4.1 and 4.6), completing commands out of order. Reads "transfer" data by
// writing a pattern derived from the LBA into the buffer, so a requester can
// check it saw the data its completion promised.
//
// It checks the host side as it goes and records every violation: a doorbell
// outside the ring, an SQ overrun, a CQ head moved past the tail, a CID
// reused while outstanding, an entry that fails the caller's integrity check
// (a torn SQE), a bad opcode, namespace or LBA range.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/core/platform/host_threads.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/queue_invariants.h"

namespace gpunvme::platform {

class SoftTarget : public MmioTarget {
 public:
  struct Options {
    std::uint32_t threads = 2;  // target threads; queue q is served by thread q % threads
    std::uint64_t capacity_lbas = 1ull << 30;
    std::uint32_t lba_bytes = 512;
    std::uint64_t seed = 1;         // completion order
    bool shadow_doorbells = false;  // read tails/heads from shadow words, ask for no MMIO
    // Start of the register window (distinct per target when several SSDs
    // share one MMIO router); an address outside the arena, like a BAR.
    std::uint64_t doorbell_base = 0xFEE0'0000'0000ull;
  };
  // Checks one fetched entry; false = torn or corrupted.
  using EntryCheck = std::function<bool(std::uint16_t qid, const nvme::SubmissionEntry&)>;

  // Data pattern a read leaves in the first 8 bytes of its buffer.
  static std::uint64_t data_pattern(std::uint64_t slba) { return slba ^ 0xC0FFEE5A5A5A5A5Aull; }

  SoftTarget(HostArena& arena, std::uint32_t max_queues, Options options);
  ~SoftTarget() override;
  SoftTarget(const SoftTarget&) = delete;
  SoftTarget& operator=(const SoftTarget&) = delete;

  // Register window: doorbells at doorbell_base() + 4 * (2 qid) (SQ tail) and
  // + 4 * (2 qid + 1) (CQ head), as with CAP.DSTRD = 0.
  std::uint64_t doorbell_base() const { return doorbell_base_; }
  std::uint64_t sq_doorbell(std::uint16_t qid) const { return doorbell_base_ + 8ull * qid; }
  std::uint64_t cq_doorbell(std::uint16_t qid) const { return doorbell_base_ + 8ull * qid + 4; }

  // Creates I/O queue `qid` (1-based) with rings in the arena (before start).
  // With shadow doorbells, the shadow and EventIdx words are allocated here.
  void create_queue(std::uint16_t qid, std::uint64_t sq_base, std::uint64_t cq_base,
                    std::uint32_t entries);
  std::uint64_t sq_shadow(std::uint16_t qid) const { return queues_[qid].sq_shadow; }
  std::uint64_t cq_shadow(std::uint16_t qid) const { return queues_[qid].cq_shadow; }
  std::uint64_t sq_event_idx(std::uint16_t qid) const { return queues_[qid].sq_event; }
  std::uint64_t cq_event_idx(std::uint16_t qid) const { return queues_[qid].cq_event; }

  void set_entry_check(EntryCheck check) { check_ = std::move(check); }
  void start();
  void stop();

  void mmio_write(std::uint64_t addr, std::uint32_t value) override;

  std::vector<std::string> violations() const;
  std::uint64_t completed() const { return completed_.load(); }
  std::uint64_t fetched() const { return fetched_.load(); }
  std::uint64_t doorbell_writes() const { return doorbell_writes_.load(); }
  // Commands fetched but not completed, across queues (0 when drained).
  std::uint64_t outstanding() const;

 private:
  struct Queue {
    bool exists = false;
    std::uint64_t sq_base = 0, cq_base = 0;
    std::uint32_t entries = 0;
    std::uint64_t sq_shadow = 0, cq_shadow = 0, sq_event = 0, cq_event = 0;
    // Owned by the serving thread:
    std::uint32_t sq_tail = 0;  // from the doorbell
    std::uint32_t sq_head = 0;  // next entry to fetch
    std::uint32_t cq_tail = 0;
    std::uint32_t cq_head = 0;  // from the doorbell
    bool phase = true;
    nvme::OutstandingCids cids;
    struct Held {
      std::uint16_t cid;
      nvme::Status status;
    };
    std::vector<Held> held;  // served, waiting to complete (in any order)
    std::atomic<std::uint64_t> in_flight{0};
  };

  void serve(std::uint32_t thread);
  bool poll_queue(std::uint16_t qid, std::uint64_t& rng);
  void violation(const std::string& what);

  HostArena& arena_;
  Options options_;
  std::uint64_t doorbell_base_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> doorbells_;  // [2 qid] SQ tail, [2 qid + 1] CQ head
  std::vector<Queue> queues_;
  EntryCheck check_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> fetched_{0};
  std::atomic<std::uint64_t> doorbell_writes_{0};
  mutable std::mutex violations_mutex_;
  std::vector<std::string> violations_;
};

}  // namespace gpunvme::platform
