#include "models/pcie/flow_control.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <stdexcept>

namespace gpunvme::pcie {

namespace {
// Credits in signed arithmetic, so that a caller taking more than is free (the pool does not
// forbid it) shows as a shortfall instead of wrapping around.
struct Balance {
  std::int64_t header;
  std::int64_t data;
};

Balance balance(const Credits& capacity, const Credits& pending, const Credits& scheduled) {
  return {static_cast<std::int64_t>(capacity.header) - static_cast<std::int64_t>(pending.header) -
              static_cast<std::int64_t>(scheduled.header),
          static_cast<std::int64_t>(capacity.data) - static_cast<std::int64_t>(pending.data) -
              static_cast<std::int64_t>(scheduled.data)};
}

// Whether `free` covers `need` in every finite credit type of `capacity`.
bool covers(const Credits& capacity, const Balance& free, const Credits& need) {
  return (capacity.header == 0 || free.header >= static_cast<std::int64_t>(need.header)) &&
         (capacity.data == 0 || free.data >= static_cast<std::int64_t>(need.data));
}
}  // namespace

CreditPool::CreditPool(Credits capacity) : capacity_(capacity) {}

Credits CreditPool::clamp(Credits need) const {
  need.header = capacity_.header == 0 ? 0 : std::min(need.header, capacity_.header);
  need.data = capacity_.data == 0 ? 0 : std::min(need.data, capacity_.data);
  return need;
}

void CreditPool::forget_past(Picoseconds now) {
  while (first_release_ < releases_.size() && releases_[first_release_].first <= now) {
    scheduled_.header -= releases_[first_release_].second.header;
    scheduled_.data -= releases_[first_release_].second.data;
    ++first_release_;
  }
  // Drop the forgotten prefix once it is at least half the vector: amortised O(1) per release.
  if (first_release_ == releases_.size()) {
    releases_.clear();
    first_release_ = 0;
  } else if (first_release_ >= 16 && 2 * first_release_ >= releases_.size()) {
    releases_.erase(releases_.begin(),
                    releases_.begin() + static_cast<std::ptrdiff_t>(first_release_));
    first_release_ = 0;
  }
}

Credits CreditPool::free_at(Picoseconds now) {
  forget_past(now);
  const Balance free = balance(capacity_, pending_, scheduled_);
  return {static_cast<std::uint64_t>(std::max<std::int64_t>(free.header, 0)),
          static_cast<std::uint64_t>(std::max<std::int64_t>(free.data, 0))};
}

std::optional<Picoseconds> CreditPool::earliest(const Credits& clamped, Picoseconds now) {
  forget_past(now);
  Balance free = balance(capacity_, pending_, scheduled_);
  if (covers(capacity_, free, clamped)) return now;
  // Even once every known release is back, pending bursts would still hold too much.
  if (!covers(capacity_, balance(capacity_, pending_, {}), clamped)) return std::nullopt;
  for (std::size_t i = first_release_; i < releases_.size(); ++i) {
    const auto& [when, credits] = releases_[i];
    free.header += static_cast<std::int64_t>(credits.header);
    free.data += static_cast<std::int64_t>(credits.data);
    if (covers(capacity_, free, clamped)) return when;
  }
  throw std::logic_error("credit pool: releases do not add up to the scheduled credits");
}

void CreditPool::take(const Credits& clamped) {
  pending_.header += clamped.header;
  pending_.data += clamped.data;
}

void CreditPool::release_at(const Credits& clamped, Picoseconds when) {
  if (clamped.header > pending_.header || clamped.data > pending_.data) {
    throw std::logic_error("credit pool: releasing credits that were never taken");
  }
  pending_.header -= clamped.header;
  pending_.data -= clamped.data;
  if (clamped.header == 0 && clamped.data == 0) return;
  scheduled_.header += clamped.header;
  scheduled_.data += clamped.data;
  // After every release due no later than `when`, as std::multimap::emplace places it; the
  // search runs from the back, where nearly every release lands.
  auto at = releases_.end();
  const auto first = releases_.begin() + static_cast<std::ptrdiff_t>(first_release_);
  while (at != first && std::prev(at)->first > when) --at;
  releases_.emplace(at, when, clamped);
}

}  // namespace gpunvme::pcie
