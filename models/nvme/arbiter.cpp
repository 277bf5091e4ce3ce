#include "models/nvme/arbiter.h"

#include <limits>

namespace gpunvme::nvme {

Arbiter::Arbiter(std::uint8_t burst_log2) {
  arbitration_.burst_log2 = burst_log2;
  refill_credits();
}

void Arbiter::set_mechanism(ArbitrationMechanism mechanism) {
  if (mechanism == mechanism_) return;
  mechanism_ = mechanism;
  // Re-sort the waiting SQs into the new mechanism's classes, keeping their
  // order.
  std::deque<std::uint16_t> all;
  for (auto& list : ready_) {
    for (std::uint16_t qid : list) all.push_back(qid);
    list.clear();
  }
  for (std::uint16_t qid : all) ready_[class_of(qid)].push_back(qid);
  refill_credits();
}

void Arbiter::set_arbitration(const Arbitration& arbitration) {
  arbitration_ = arbitration;
  refill_credits();
}

std::uint32_t Arbiter::burst() const {
  if (arbitration_.burst_unlimited()) return std::numeric_limits<std::uint32_t>::max();
  return 1u << arbitration_.burst_log2;
}

void Arbiter::add_queue(std::uint16_t qid, QueuePriority priority) {
  if (qid >= present_.size()) {
    priority_.resize(qid + 1u, QueuePriority::Medium);
    waiting_.resize(qid + 1u, false);
    present_.resize(qid + 1u, false);
  }
  priority_[qid] = priority;
  present_[qid] = true;
  waiting_[qid] = false;
}

void Arbiter::remove_queue(std::uint16_t qid) {
  if (qid >= present_.size() || !present_[qid]) return;
  if (waiting_[qid]) {
    auto& list = ready_[class_of(qid)];
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (*it == qid) {
        list.erase(it);
        break;
      }
    }
  }
  present_[qid] = false;
  waiting_[qid] = false;
}

int Arbiter::class_of(std::uint16_t qid) const {
  if (mechanism_ == ArbitrationMechanism::RoundRobin || qid == 0) return 0;
  return 1 + static_cast<int>(priority_[qid]);  // urgent 1, high 2, medium 3, low 4
}

void Arbiter::mark_ready(std::uint16_t qid) {
  if (qid >= present_.size() || !present_[qid] || waiting_[qid]) return;
  waiting_[qid] = true;
  ready_[class_of(qid)].push_back(qid);
}

std::optional<std::uint16_t> Arbiter::pop(int cls) {
  auto& list = ready_[cls];
  if (list.empty()) return std::nullopt;
  const std::uint16_t qid = list.front();
  list.pop_front();
  waiting_[qid] = false;
  return qid;
}

bool Arbiter::any_ready() const {
  for (const auto& list : ready_) {
    if (!list.empty()) return true;
  }
  return false;
}

void Arbiter::refill_credits() {
  credits_ = {arbitration_.high_weight_zero_based + 1u, arbitration_.medium_weight_zero_based + 1u,
              arbitration_.low_weight_zero_based + 1u};
}

std::optional<std::uint16_t> Arbiter::next(bool io_allowed) {
  if (!io_allowed) {
    // Only the admin SQ may go, and it is in the turn order exactly when it
    // is marked waiting: the fetch engine asks each time its command slots
    // are full, and the walk past every ready I/O SQ was the cost of asking.
    if (waiting_.empty() || !waiting_[0]) return std::nullopt;
    auto& list = ready_[0];
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (*it == 0) {
        list.erase(it);
        waiting_[0] = false;
        return std::uint16_t{0};
      }
    }
    return std::nullopt;
  }
  if (mechanism_ == ArbitrationMechanism::RoundRobin) return pop(0);
  // Strict priority: admin, then urgent.
  if (auto qid = pop(0)) return qid;
  if (auto qid = pop(1)) return qid;
  // Weighted classes take turns one at a time (high, medium, low, high, ...)
  // while they have credits; a round ends when no ready class has any.
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (int i = 0; i < 3; ++i) {
      const int c = (weighted_cursor_ + i) % 3;
      if (ready_[2 + c].empty() || credits_[c] == 0) continue;
      --credits_[c];
      weighted_cursor_ = (c + 1) % 3;
      return pop(2 + c);
    }
    if (ready_[2].empty() && ready_[3].empty() && ready_[4].empty()) return std::nullopt;
    refill_credits();
  }
  return std::nullopt;
}

}  // namespace gpunvme::nvme
