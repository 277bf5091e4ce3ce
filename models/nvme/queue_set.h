// The controller's queues: the state of each submission and completion
// queue (where its ring lives, head, tail, phase, the CIDs outstanding on
// it) by queue id, and an index of the rings by address, for the check that
// no data DMA lands in one.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/queue_invariants.h"
#include "sim/kernel/time.h"

namespace gpunvme::nvme {

struct SubmissionQueue {
  bool exists = false;
  std::uint64_t base = 0;
  std::uint32_t entries = 0;
  std::uint16_t cqid = 0;
  QueuePriority priority = QueuePriority::Medium;
  bool in_cmb = false;
  std::uint32_t tail = 0;       // from the doorbell
  std::uint32_t head = 0;       // next entry to fetch
  std::uint32_t fetching = 0;   // entries requested, not yet arrived
  std::uint32_t in_flight = 0;  // fetched, not yet completed
  OutstandingCids cids;
  // Per outstanding CID: the slot it was fetched from and when, so that a
  // command that never completes can be reported by slot and fetch time
  // (the slot itself may be reused meanwhile, so it cannot be the key).
  // Valid while `cids` holds the CID. In pages of CIDs made on first use: a
  // hash map's node per command was an allocation per command.
  struct FetchRecord {
    std::uint32_t slot = 0;
    Picoseconds at = 0;
  };
  static constexpr std::size_t kCidsPerPage = 256;
  using FetchPage = std::array<FetchRecord, kCidsPerPage>;
  std::vector<std::unique_ptr<FetchPage>> fetched_from;  // 65536 / kCidsPerPage pages
  std::vector<Picoseconds> rung_at;                      // per slot: when its doorbell arrived
  std::uint64_t fetched = 0;
  // A Delete I/O SQ waiting for the queue's commands to finish.
  std::function<void()> on_drained;
  bool shadow_awake = false;  // EventIdx says "no MMIO needed"
  // Phase tag of the lap the fetch position is in (flips each time the head
  // wraps): an indexed CQ's entry carries the phase of its command's lap.
  bool fetch_phase = true;
  // Warp doorbells (Create I/O SQ WDB): runs announced beyond the tail, by
  // first slot (entry count).
  bool warp_doorbells = false;
  std::map<std::uint32_t, std::uint32_t> announced_runs;
  // Wide CIDs (Create I/O SQ WCID): the outstanding 32-bit CIDs with their
  // fetch records, in place of `cids` and `fetched_from` (ordered, so that
  // a command that never completes is reported as a 16-bit queue's is).
  bool wide_cids = false;
  std::map<std::uint32_t, FetchRecord> wide_outstanding;

  // A queue of `entries` slots at `base`: exists, nothing outstanding.
  void open(std::uint64_t ring_base, std::uint32_t ring_entries);
};

struct CompletionQueue {
  bool exists = false;
  std::uint64_t base = 0;
  std::uint32_t entries = 0;
  std::uint32_t tail = 0;
  std::uint32_t head = 0;  // from the doorbell
  bool phase = true;
  bool in_cmb = false;
  bool irq_enabled = false;
  std::uint16_t vector = 0;
  std::uint32_t bound_sqs = 0;
  // Indexed completion (Create I/O CQ ICQ): entries go to their command's SQ
  // slot index, never held back.
  bool indexed = false;
  std::deque<CompletionEntry> waiting;  // held back while the CQ is full
};

class QueueSet {
 public:
  QueueSet() = default;
  // Queue ids 0 (admin) to max_qid.
  explicit QueueSet(std::size_t max_qid) : sqs_(max_qid + 1), cqs_(max_qid + 1) {}

  std::size_t count() const { return sqs_.size(); }
  SubmissionQueue& sq(std::size_t qid) { return sqs_[qid]; }
  const SubmissionQueue& sq(std::size_t qid) const { return sqs_[qid]; }
  CompletionQueue& cq(std::size_t qid) { return cqs_[qid]; }
  const CompletionQueue& cq(std::size_t qid) const { return cqs_[qid]; }
  // Whether queue `qid` exists (false for ids beyond the set).
  bool sq_exists(std::size_t qid) const { return qid < sqs_.size() && sqs_[qid].exists; }
  bool cq_exists(std::size_t qid) const { return qid < cqs_.size() && cqs_[qid].exists; }

  // The ring index follows the queues: call ring_created once a queue's
  // ring is set up, ring_deleted (with the base it had) once its state is
  // dropped, index_rings after a change to many queues.
  void ring_created(std::uint16_t qid, bool sq);
  void ring_deleted(std::uint64_t base);
  void index_rings();

  // The ring a DMA of `len` bytes at `addr` overlaps, and the first slot it
  // touches. The rings do not overlap one another, so the one starting last
  // below the DMA's end is the only candidate. Where two rings start at one
  // address (a host error the controller does not reject) the later in
  // queue id order, an SQ before its CQ, is named.
  struct RingHit {
    std::uint16_t qid;
    bool sq;
    std::uint64_t slot;
  };
  std::optional<RingHit> ring_overlapping(std::uint64_t addr, std::uint64_t len) const;

 private:
  struct Ring {
    std::uint64_t end;
    std::uint16_t qid;
    bool sq;
    std::uint32_t entry_bytes;
  };
  Ring sq_ring(std::uint16_t qid) const;
  Ring cq_ring(std::uint16_t qid) const;

  std::vector<SubmissionQueue> sqs_;  // index = qid, 0 = admin
  std::vector<CompletionQueue> cqs_;
  // Creating and deleting a queue updates the index by one ring (rebuilding
  // it each time made creating n queues cost O(n^2): half of a 20 K I/O run
  // with 1024 queues per SSD), except while two rings share a base, when it
  // rebuilds, so that the same ring is named either way.
  std::map<std::uint64_t, Ring> rings_;
  bool rings_share_a_base_ = false;
};

}  // namespace gpunvme::nvme
