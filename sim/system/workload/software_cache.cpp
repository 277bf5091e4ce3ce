#include "sim/system/workload/software_cache.h"

#include <algorithm>
#include <stdexcept>

namespace gpunvme {

SoftwareCache::SoftwareCache(std::uint32_t slots) : slots_(std::max<std::uint32_t>(slots, 1)) {}

std::optional<SoftwareCache::Hold> SoftwareCache::acquire(std::uint64_t line) {
  auto it = index_.find(line);
  if (it != index_.end()) {
    Slot& s = slots_[it->second];
    ++s.users;
    s.referenced = true;
    ++hits_;
    return Hold{it->second, true};
  }
  // Two sweeps are enough: the first clears every reference bit it passes.
  const std::uint64_t n = slots_.size();
  for (std::uint64_t step = 0; step < 2 * n; ++step) {
    const std::uint32_t i = hand_;
    hand_ = static_cast<std::uint32_t>((hand_ + 1) % n);
    Slot& s = slots_[i];
    if (s.users != 0) continue;
    if (s.referenced) {
      s.referenced = false;
      continue;
    }
    if (s.line != kEmpty) {
      index_.erase(s.line);
      ++evictions_;
    }
    s.line = line;
    s.users = 1;
    s.referenced = true;
    index_[line] = i;
    ++misses_;
    return Hold{i, false};
  }
  return std::nullopt;
}

void SoftwareCache::invalidate(std::uint32_t slot) {
  Slot& s = slots_.at(slot);
  if (s.line == kEmpty) return;
  index_.erase(s.line);
  s.line = kEmpty;
  s.referenced = false;
}

void SoftwareCache::release(std::uint32_t slot) {
  if (slots_.at(slot).users == 0) throw std::logic_error("cache slot released more than held");
  --slots_[slot].users;
}

}  // namespace gpunvme
