#include "models/nvme/queue_set.h"

#include <algorithm>

namespace gpunvme::nvme {

void SubmissionQueue::open(std::uint64_t ring_base, std::uint32_t ring_entries) {
  exists = true;
  base = ring_base;
  entries = ring_entries;
  cids.open();
  fetched_from.resize(OutstandingCids::kCids / kCidsPerPage);
  rung_at.assign(entries, 0);
}

QueueSet::Ring QueueSet::sq_ring(std::uint16_t qid) const {
  const SubmissionQueue& sq = sqs_[qid];
  return Ring{sq.base + std::uint64_t{sq.entries} * kSqEntrySize, qid, true, kSqEntrySize};
}

QueueSet::Ring QueueSet::cq_ring(std::uint16_t qid) const {
  const CompletionQueue& cq = cqs_[qid];
  return Ring{cq.base + std::uint64_t{cq.entries} * kCqEntrySize, qid, false, kCqEntrySize};
}

void QueueSet::index_rings() {
  rings_.clear();
  rings_share_a_base_ = false;
  const auto add = [this](std::uint64_t base, const Ring& ring) {
    auto [it, added] = rings_.emplace(base, ring);
    if (!added) {
      it->second = ring;
      rings_share_a_base_ = true;
    }
  };
  for (std::size_t i = 0; i < sqs_.size(); ++i) {
    const auto qid = static_cast<std::uint16_t>(i);
    if (sqs_[qid].exists) add(sqs_[qid].base, sq_ring(qid));
    if (cqs_[qid].exists) add(cqs_[qid].base, cq_ring(qid));
  }
}

void QueueSet::ring_created(std::uint16_t qid, bool sq) {
  const std::uint64_t base = sq ? sqs_[qid].base : cqs_[qid].base;
  if (!rings_share_a_base_ && rings_.emplace(base, sq ? sq_ring(qid) : cq_ring(qid)).second) {
    return;
  }
  index_rings();
}

void QueueSet::ring_deleted(std::uint64_t base) {
  if (rings_share_a_base_) {
    index_rings();
    return;
  }
  rings_.erase(base);
}

std::optional<QueueSet::RingHit> QueueSet::ring_overlapping(std::uint64_t addr,
                                                            std::uint64_t len) const {
  auto it = rings_.lower_bound(addr + len);
  if (it == rings_.begin()) return std::nullopt;
  --it;
  const Ring& ring = it->second;
  if (ring.end <= addr) return std::nullopt;
  const std::uint64_t first = std::max(addr, it->first);
  return RingHit{ring.qid, ring.sq, (first - it->first) / ring.entry_bytes};
}

}  // namespace gpunvme::nvme
