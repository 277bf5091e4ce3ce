#include "models/flash/timeline.h"

#include <algorithm>
#include <iterator>

namespace gpunvme::flash {

namespace {
// Spans checked from the end before falling back to a binary search.
constexpr int kBackScan = 4;
}  // namespace

void Timeline::retire(std::uint64_t now) {
  while (head_ < spans_.size() && spans_[head_].end <= now) ++head_;
  // Compact once the dead prefix dominates; erase moves elements and never
  // allocates, so the reserved storage is kept.
  if (head_ == spans_.size()) {
    spans_.clear();
    head_ = 0;
  } else if (head_ >= 32 && head_ * 2 >= spans_.size()) {
    spans_.erase(spans_.begin(), spans_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

std::uint64_t Timeline::book(std::uint64_t now, std::uint64_t ready, std::uint64_t duration) {
  retire(now);
  if (duration == 0) return ready;
  busy_ps_ += duration;

  // First live span that ends after `ready`; everything before it is over by
  // the time the work could start. Spans are disjoint and sorted, so their
  // ends increase and this is a partition point. Work nearly always arrives
  // at the frontier: the list may hold thousands of spans ahead of `now` (the
  // controller books each command's media read when it books its processing,
  // far ahead under deep queues), yet `ready` rarely falls more than a span or
  // two before the last one. So look back from the end a few spans first, and
  // binary-search what is left only when that does not reach it.
  const auto live = spans_.begin() + static_cast<std::ptrdiff_t>(head_);
  const auto ends_after_ready = [ready](const Span& s) { return s.end > ready; };
  auto first = spans_.end();
  for (int i = 0; i < kBackScan && first != live && ends_after_ready(*std::prev(first)); ++i) {
    --first;
  }
  if (first != live && ends_after_ready(*std::prev(first))) {
    first = std::partition_point(live, std::prev(first),
                                 [ready](const Span& s) { return s.end <= ready; });
  }
  std::uint64_t start = ready;
  auto it = first;
  // Walk forward until the gap before *it is long enough.
  while (it != spans_.end() && it->start < start + duration) {
    start = std::max(start, it->end);
    ++it;
  }
  const std::uint64_t end = start + duration;

  // Insert before `it`, merging with neighbours that touch.
  const bool join_prev =
      it != spans_.begin() + static_cast<std::ptrdiff_t>(head_) && std::prev(it)->end == start;
  const bool join_next = it != spans_.end() && it->start == end;
  if (join_prev && join_next) {
    std::prev(it)->end = it->end;
    spans_.erase(it);
  } else if (join_prev) {
    std::prev(it)->end = end;
  } else if (join_next) {
    it->start = start;
  } else {
    spans_.insert(it, Span{start, end});
  }
  return start;
}

}  // namespace gpunvme::flash
