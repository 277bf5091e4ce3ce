#include "models/nvme/completion_poster.h"

#include <cstddef>
#include <utility>

#include "sim/core/protocol/nvme_queue.h"
#include "sim/core/protocol/queue_invariants.h"

namespace gpunvme::nvme {

CompletionPoster::CompletionPoster(QueueSet& queues, std::size_t vectors, CompletionHooks hooks)
    : queues_(queues), msix_(vectors), hooks_(std::move(hooks)) {}

void CompletionPoster::set_vector(std::uint16_t vector, std::uint64_t address, std::uint32_t data) {
  msix_[vector] = MsixEntry{address, data};
}

void CompletionPoster::post(std::uint16_t cqid, const CompletionEntry& pending) {
  CompletionQueue& cq = queues_.cq(cqid);
  if (ring_full(cq.head, cq.tail, cq.entries)) {
    ++cq_full_stalls_;
    cq.waiting.push_back(pending);
    return;
  }
  const std::uint64_t addr = cq.base + std::uint64_t{cq.tail} * kCqEntrySize;
  // The slot must hold the previous lap's entry (phase !P), or zeroes on the
  // first lap.
  if (check_cq_post(hooks_.load_status(addr + offsetof(CompletionEntry, status_field)), cq.phase) ==
      QueueError::CqSlotNotConsumed) {
    hooks_.slot_not_consumed(cqid, cq.tail, pending);
    return;
  }
  CompletionEntry entry = pending;
  entry.sqhd = static_cast<std::uint16_t>(queues_.sq(entry.sqid).head);
  entry.set_status(entry.status(), cq.phase, entry.dnr());
  cq.tail = ring_next(cq.tail, cq.entries);
  if (cq.tail == 0) cq.phase = !cq.phase;
  hooks_.write(addr, kCqEntrySize, &entry);
  signal(cq);
}

void CompletionPoster::post_at_slot(std::uint16_t cqid, const CompletionEntry& pending,
                                    std::uint32_t slot, bool phase) {
  CompletionQueue& cq = queues_.cq(cqid);
  const std::uint64_t addr = cq.base + std::uint64_t{slot} * kCqEntrySize;
  // The slot must hold the previous lap's entry of this SQ slot (phase
  // !phase), or zeroes on the first lap.
  if (check_cq_post(hooks_.load_status(addr + offsetof(CompletionEntry, status_field)), phase) ==
      QueueError::CqSlotNotConsumed) {
    hooks_.slot_not_consumed(cqid, slot, pending);
    return;
  }
  CompletionEntry entry = pending;
  entry.sqhd = static_cast<std::uint16_t>(queues_.sq(entry.sqid).head);
  entry.set_status(entry.status(), phase, entry.dnr());
  hooks_.write(addr, kCqEntrySize, &entry);
  signal(cq);
}

void CompletionPoster::signal(const CompletionQueue& cq) {
  if (cq.irq_enabled && cq.vector < msix_.size() && msix_[cq.vector].address != 0) {
    ++interrupts_;
    const MsixEntry& m = msix_[cq.vector];
    hooks_.write(m.address, 4, &m.data);
  }
}

void CompletionPoster::release_held(std::uint16_t cqid) {
  CompletionQueue& cq = queues_.cq(cqid);
  while (!cq.waiting.empty() && !ring_full(cq.head, cq.tail, cq.entries)) {
    const CompletionEntry entry = cq.waiting.front();
    cq.waiting.pop_front();
    post(cqid, entry);
  }
}

}  // namespace gpunvme::nvme
