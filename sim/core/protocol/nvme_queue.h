// Queue ring arithmetic for NVMe submission and completion queues, and the
// EventIdx test for shadow doorbells.
//
// NVM Express Base Specification 1.4, section 4.1 "Submission Queue &
// Completion Queue Definition": a queue of N entries (2..65536 for I/O
// queues, at most CAP.MQES + 1) is a circular buffer indexed 0..N-1. It is
// empty when head == tail and full when head == (tail + 1) mod N (4.1.1,
// 4.1.2), so at most N - 1 entries are outstanding. The consumer of a CQ finds
// new entries through the phase tag (4.6): the host zeroes the CQ, the
// controller writes P = 1 on its first pass and inverts P each time its tail
// wraps to 0.
//
// These functions are plain index arithmetic: they say nothing about memory
// ordering, which the platform layer of each algorithm provides.
#pragma once

#include <cstdint>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

constexpr std::uint32_t kMinQueueEntries = 2;
constexpr std::uint32_t kMaxQueueEntries = 65536;

GPUNVME_HD constexpr bool valid_queue_entries(std::uint32_t entries) {
  return entries >= kMinQueueEntries && entries <= kMaxQueueEntries;
}

// ---------------------------------------------------------------------------
// Index arithmetic on a ring of `size` entries; indices are in [0, size).
// ---------------------------------------------------------------------------

GPUNVME_HD constexpr std::uint32_t ring_next(std::uint32_t index, std::uint32_t size) {
  return index + 1u == size ? 0u : index + 1u;
}

GPUNVME_HD constexpr std::uint32_t ring_advance(std::uint32_t index, std::uint32_t n,
                                                std::uint32_t size) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(index) + n) % size);
}

// Entries between head (inclusive) and tail (exclusive).
GPUNVME_HD constexpr std::uint32_t ring_occupied(std::uint32_t head, std::uint32_t tail,
                                                 std::uint32_t size) {
  return tail >= head ? tail - head : size - head + tail;
}

GPUNVME_HD constexpr bool ring_empty(std::uint32_t head, std::uint32_t tail) {
  return head == tail;
}

GPUNVME_HD constexpr bool ring_full(std::uint32_t head, std::uint32_t tail, std::uint32_t size) {
  return ring_next(tail, size) == head;
}

// Slots a producer may still fill: one slot always stays empty.
GPUNVME_HD constexpr std::uint32_t ring_free_slots(std::uint32_t head, std::uint32_t tail,
                                                   std::uint32_t size) {
  return size - 1u - ring_occupied(head, tail, size);
}

// A doorbell write that names an index outside the queue is an "Invalid
// Doorbell Write Value" (asynchronous event, section 5.2).
GPUNVME_HD constexpr bool doorbell_value_valid(std::uint32_t value, std::uint32_t size) {
  return value < size;
}

// A new head reported for a queue (by a CQ head doorbell, or SQHD in a CQE)
// may only move forward over entries the producer has made available:
// (new_head - old_head) mod size <= (tail - old_head) mod size.
GPUNVME_HD constexpr bool head_update_valid(std::uint32_t old_head, std::uint32_t new_head,
                                            std::uint32_t tail, std::uint32_t size) {
  return new_head < size &&
         ring_occupied(old_head, new_head, size) <= ring_occupied(old_head, tail, size);
}

// ---------------------------------------------------------------------------
// Submission queue
// ---------------------------------------------------------------------------

// Ring state of a submission queue as either side sees it. The host owns the
// tail (and learns the head from SQHD in completions); the controller owns
// the head (and learns the tail from the SQ tail doorbell).
struct SqRing {
  std::uint32_t size;
  std::uint32_t head;
  std::uint32_t tail;

  GPUNVME_HD constexpr bool empty() const { return ring_empty(head, tail); }
  GPUNVME_HD constexpr bool full() const { return ring_full(head, tail, size); }
  GPUNVME_HD constexpr std::uint32_t occupied() const { return ring_occupied(head, tail, size); }
  GPUNVME_HD constexpr std::uint32_t free_slots() const {
    return ring_free_slots(head, tail, size);
  }

  // Host: take the slot at the tail and move the tail past it. Returns false
  // (and changes nothing) if the queue is full.
  GPUNVME_HD constexpr bool push(std::uint32_t* slot) {
    if (full()) return false;
    *slot = tail;
    tail = ring_next(tail, size);
    return true;
  }
  // Host: move the tail past `n` slots already filled. Returns false (and
  // changes nothing) if fewer than `n` slots are free.
  GPUNVME_HD constexpr bool advance_tail(std::uint32_t n) {
    if (n > free_slots()) return false;
    tail = ring_advance(tail, n, size);
    return true;
  }
  // Controller: take the entry at the head. Returns false if none is pending.
  GPUNVME_HD constexpr bool pop(std::uint32_t* slot) {
    if (empty()) return false;
    *slot = head;
    head = ring_next(head, size);
    return true;
  }
  // Controller: a new tail from the doorbell. Rejects values beyond the ring.
  GPUNVME_HD constexpr bool set_tail(std::uint32_t new_tail) {
    if (!doorbell_value_valid(new_tail, size)) return false;
    tail = new_tail;
    return true;
  }
  // Host: a new head from a completion's SQHD. Rejects heads that pass the
  // tail.
  GPUNVME_HD constexpr bool set_head(std::uint32_t new_head) {
    if (!head_update_valid(head, new_head, tail, size)) return false;
    head = new_head;
    return true;
  }
};

GPUNVME_HD constexpr SqRing make_sq_ring(std::uint32_t size) { return SqRing{size, 0, 0}; }

// ---------------------------------------------------------------------------
// Completion queue
// ---------------------------------------------------------------------------

// Host side of a CQ: the head it consumes from and the phase tag it expects
// there. The host zeroes the queue memory before creating it, so the first
// lap's entries are new when P == 1.
struct CqConsumer {
  std::uint32_t size;
  std::uint32_t head;
  std::uint8_t phase;

  GPUNVME_HD constexpr bool is_new(const CompletionEntry& cqe) const {
    return cqe.phase() == phase;
  }
  // Consume the entry at the head; the expected phase flips when the head
  // wraps to 0.
  GPUNVME_HD constexpr void advance() {
    head = ring_next(head, size);
    if (head == 0) phase ^= 1u;
  }
  GPUNVME_HD constexpr void advance(std::uint32_t n) {
    const std::uint64_t next = static_cast<std::uint64_t>(head) + n;
    if ((next / size) & 1ull) phase ^= 1u;
    head = static_cast<std::uint32_t>(next % size);
  }
};

GPUNVME_HD constexpr CqConsumer make_cq_consumer(std::uint32_t size) {
  return CqConsumer{size, 0, 1};
}

// Does a completion with this phase tag belong to the current lap?
GPUNVME_HD constexpr bool is_new(const CompletionEntry& cqe, std::uint8_t expected_phase) {
  return cqe.phase() == (expected_phase & 1u);
}

// Same test on the raw status half-word (or DW3 >> 16), for pollers that load
// only that part of the entry.
GPUNVME_HD constexpr bool is_new_status_field(std::uint16_t status_field,
                                              std::uint8_t expected_phase) {
  return (status_field & 1u) == (expected_phase & 1u);
}

// Controller side of a CQ: the tail it posts to, the phase tag it writes
// there, and the head the host last reported through the CQ head doorbell.
struct CqProducer {
  std::uint32_t size;
  std::uint32_t tail;
  std::uint32_t head;
  std::uint8_t phase;

  // A full CQ blocks further completions until the host frees entries.
  GPUNVME_HD constexpr bool full() const { return ring_full(head, tail, size); }
  GPUNVME_HD constexpr std::uint32_t occupied() const { return ring_occupied(head, tail, size); }
  GPUNVME_HD constexpr std::uint32_t free_slots() const {
    return ring_free_slots(head, tail, size);
  }
  // Slot and phase for the next completion; then advance(). Returns false if
  // the queue is full.
  GPUNVME_HD constexpr bool post(std::uint32_t* slot, std::uint8_t* phase_tag) {
    if (full()) return false;
    *slot = tail;
    *phase_tag = phase;
    advance();
    return true;
  }
  GPUNVME_HD constexpr void advance() {
    tail = ring_next(tail, size);
    if (tail == 0) phase ^= 1u;
  }
  // A new head from the CQ head doorbell. Rejects heads outside the ring or
  // beyond the entries posted ("Invalid Doorbell Write Value").
  GPUNVME_HD constexpr bool set_head(std::uint32_t new_head) {
    if (!head_update_valid(head, new_head, tail, size)) return false;
    head = new_head;
    return true;
  }
};

GPUNVME_HD constexpr CqProducer make_cq_producer(std::uint32_t size) {
  return CqProducer{size, 0, 0, 1};
}

// ---------------------------------------------------------------------------
// Shadow doorbells: the EventIdx test
// ---------------------------------------------------------------------------

// With Doorbell Buffer Config, the host writes each new tail/head to the
// shadow doorbell buffer and rings the MMIO doorbell only if the controller
// asked to be told: that is, if the controller's EventIdx for the queue lies in
// the window of indices the update moves past, (old_idx, new_idx]. With
// 16-bit wrapping arithmetic:
//   (u16)(new_idx - event_idx - 1) < (u16)(new_idx - old_idx)
// This is the test of the Doorbell Buffer Config command's EventIdx buffer, as
// the Linux driver implements it (nvme_dbbuf_need_event), and the same as
// virtio's vring_need_event.
GPUNVME_HD constexpr bool need_event(std::uint16_t event_idx, std::uint16_t new_idx,
                                     std::uint16_t old_idx) {
  return static_cast<std::uint16_t>(new_idx - event_idx - 1u) <
         static_cast<std::uint16_t>(new_idx - old_idx);
}

}  // namespace gpunvme::nvme
