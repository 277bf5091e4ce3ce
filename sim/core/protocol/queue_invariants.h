// The checks every NVMe target makes on what the host does to its queues: a
// doorbell write (SQ tail, CQ head), a queue creation, a command's CID, and
// the slot a completion is posted to. Each check names the broken rule and
// what a controller reports for it, a completion status or an asynchronous
// event; the target decides what else to do (stop a simulation, record a
// violation and go on).
//
// NVM Express Base Specification 1.4:
// - 4.1 and 4.1.1/4.1.2: a ring of N entries holds at most N - 1; its head
//   and tail are in [0, N).
// - 5.2.1, Figure 146 (Asynchronous Event Information, Error Status): a
//   doorbell write to a queue that does not exist is "Write to Invalid
//   Doorbell Register" (00h); a value beyond the ring, an SQ tail that adds
//   commands to a full SQ, or a CQ head that removes entries from an empty
//   CQ is "Invalid Doorbell Write Value" (01h).
// - 5.3, 5.4 (Create I/O CQ/SQ): Invalid Queue Identifier for a queue id of
//   0, beyond the granted number, or already in use; Invalid Queue Size for
//   fewer than 2 entries or more than CAP.MQES + 1.
// - 4.2 and 4.6.1.2.1: a CID in use on its SQ is Command ID Conflict (03h).
// - 4.6: the controller posts to a CQ slot only once the host consumed the
//   previous lap's entry there; that entry's phase tag is the opposite of
//   the current one (or zero on the first lap).
//
// Header-only, no SystemC: the simulated controller, the host-thread
// software target and the hardware backend's software controller (compiled
// by nvcc for CUDA host code) use the same rules.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/protocol/nvme_queue.h"
#include "sim/core/protocol/nvme_status.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

enum class QueueError : std::uint8_t {
  None,
  NoSuchQueue,        // doorbell of a queue that was not created
  ValueBeyondRing,    // doorbell value >= the queue's entries
  SqOverrun,          // SQ tail adds more entries than the ring has free
  CqHeadPassesTail,   // CQ head releases entries the controller has not posted
  InvalidQueueId,     // create: qid 0, beyond the granted queues, or in use
  InvalidQueueSize,   // create: fewer than 2 entries or beyond CAP.MQES + 1
  CidInUse,           // command fetched with a CID still outstanding on its SQ
  CidNotOutstanding,  // completion of a CID that is not outstanding (completed twice)
  CqSlotNotConsumed,  // CQ slot still holds an entry of the current phase
};

// Asynchronous Event Information for the Error Status event type (5.2.1,
// Figure 146), or None for errors that are no asynchronous event.
enum class AsyncErrorEvent : std::uint8_t {
  WriteToInvalidDoorbellRegister = 0x00,
  InvalidDoorbellWriteValue = 0x01,
  None = 0xFF,
};

GPUNVME_HD constexpr AsyncErrorEvent async_event_for(QueueError error) {
  switch (error) {
    case QueueError::NoSuchQueue: return AsyncErrorEvent::WriteToInvalidDoorbellRegister;
    case QueueError::ValueBeyondRing:
    case QueueError::SqOverrun:
    case QueueError::CqHeadPassesTail: return AsyncErrorEvent::InvalidDoorbellWriteValue;
    default: return AsyncErrorEvent::None;
  }
}

// The completion status of the command the error belongs to, or Success for
// errors that no command carries (doorbell writes, the controller's own
// bookkeeping).
GPUNVME_HD constexpr Status status_for(QueueError error) {
  switch (error) {
    case QueueError::InvalidQueueId: return Status::InvalidQueueIdentifier;
    case QueueError::InvalidQueueSize: return Status::InvalidQueueSize;
    case QueueError::CidInUse: return Status::CommandIdConflict;
    default: return Status::Success;
  }
}

// An SQ tail doorbell write of `value` to a queue of `entries` entries whose
// controller has fetched up to `head` and was last told `tail`.
struct SqTailCheck {
  QueueError error;
  std::uint32_t unfetched;  // entries rung before the write and not yet fetched
  std::uint32_t added;      // entries the write adds (0 when the value is beyond the ring)
};

GPUNVME_HD constexpr SqTailCheck check_sq_tail(std::uint32_t head, std::uint32_t tail,
                                               std::uint32_t value, std::uint32_t entries) {
  const std::uint32_t unfetched = ring_occupied(head, tail, entries);
  if (!doorbell_value_valid(value, entries)) {
    return {QueueError::ValueBeyondRing, unfetched, 0};
  }
  const std::uint32_t added = ring_occupied(tail, value, entries);
  // One slot always stays empty: a full ring holds entries - 1.
  const bool overrun = unfetched + added > entries - 1;
  return {overrun ? QueueError::SqOverrun : QueueError::None, unfetched, added};
}

// A CQ head doorbell write of `value` to a queue of `entries` entries whose
// host last reported `head` and whose controller has posted up to `tail`.
struct CqHeadCheck {
  QueueError error;
  std::uint32_t posted;    // entries posted and not yet released before the write
  std::uint32_t released;  // entries the write releases (0 when the value is beyond the ring)
};

GPUNVME_HD constexpr CqHeadCheck check_cq_head(std::uint32_t head, std::uint32_t tail,
                                               std::uint32_t value, std::uint32_t entries) {
  const std::uint32_t posted = ring_occupied(head, tail, entries);
  if (!doorbell_value_valid(value, entries)) {
    return {QueueError::ValueBeyondRing, posted, 0};
  }
  const std::uint32_t released = ring_occupied(head, value, entries);
  return {released > posted ? QueueError::CqHeadPassesTail : QueueError::None, posted, released};
}

// Create I/O SQ or CQ `qid` of `entries` entries, where queue ids 1..
// `highest_qid` are granted and `max_entries` is CAP.MQES + 1.
GPUNVME_HD constexpr QueueError check_queue_create(std::uint32_t qid, std::uint32_t highest_qid,
                                                   bool exists, std::uint32_t entries,
                                                   std::uint32_t max_entries) {
  if (qid == 0 || qid > highest_qid || exists) return QueueError::InvalidQueueId;
  if (entries < kMinQueueEntries || entries > max_entries) return QueueError::InvalidQueueSize;
  return QueueError::None;
}

// Posting to a CQ slot whose status half-word (DW3 bits 31:16) reads
// `previous_status_field`, with the controller's current phase `phase`.
GPUNVME_HD constexpr QueueError check_cq_post(std::uint16_t previous_status_field, bool phase) {
  return (previous_status_field & 1u) == (phase ? 1u : 0u) ? QueueError::CqSlotNotConsumed
                                                           : QueueError::None;
}

// The CIDs outstanding on one SQ, as the controller sees them: a command's
// CID is claimed when it is fetched and released when it completes.
class OutstandingCids {
 public:
  static constexpr std::uint32_t kCids = 65536;

  // Empty and ready for use (the queue was created).
  void open() { words_.assign(kCids / 64, 0); }
  // Holds nothing and no memory (the queue was deleted).
  void close() { std::vector<std::uint64_t>().swap(words_); }

  QueueError claim(std::uint16_t cid) {
    std::uint64_t& word = words_[cid / 64];
    const std::uint64_t bit = std::uint64_t{1} << (cid % 64);
    if (word & bit) return QueueError::CidInUse;
    word |= bit;
    return QueueError::None;
  }
  QueueError release(std::uint16_t cid) {
    std::uint64_t& word = words_[cid / 64];
    const std::uint64_t bit = std::uint64_t{1} << (cid % 64);
    if (!(word & bit)) return QueueError::CidNotOutstanding;
    word &= ~bit;
    return QueueError::None;
  }
  bool outstanding(std::uint16_t cid) const {
    return !words_.empty() && (words_[cid / 64] >> (cid % 64) & 1u) != 0;
  }
  // Calls fn(cid) for each outstanding CID, in increasing order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      std::uint64_t bits = words_[w];
      while (bits != 0) {
        fn(static_cast<std::uint16_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))));
        bits &= bits - 1;
      }
    }
  }

 private:
  std::vector<std::uint64_t> words_;
};

}  // namespace gpunvme::nvme
