#include "models/pcie/iotlb.h"

#include <stdexcept>
#include <string>

namespace gpunvme::pcie {

Iotlb::Iotlb(std::uint32_t entries, std::uint64_t page_bytes)
    : capacity_(entries), page_bytes_(page_bytes) {
  if (entries == 0) throw std::invalid_argument("iotlb: at least one entry is needed");
  if (page_bytes == 0 || (page_bytes & (page_bytes - 1)) != 0) {
    throw std::invalid_argument("iotlb: page size " + std::to_string(page_bytes) +
                                " is not a power of two");
  }
}

bool Iotlb::lookup(const Key& key) {
  ++lookups_;
  auto it = where_.find(key);
  if (it != where_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second);
    return true;
  }
  ++misses_;
  if (where_.size() == capacity_) {
    where_.erase(recency_.back());
    recency_.pop_back();
  }
  recency_.push_front(key);
  where_.emplace(key, recency_.begin());
  return false;
}

std::uint64_t Iotlb::translate(std::size_t source, std::uint64_t addr, std::uint64_t len,
                               std::uint32_t pasid) {
  const std::uint64_t first = addr / page_bytes_;
  const std::uint64_t last = len == 0 ? first : (addr + (len - 1)) / page_bytes_;
  std::uint64_t missed = 0;
  for (std::uint64_t page = first;; ++page) {
    if (!lookup(Key{source, pasid, page})) ++missed;
    if (page == last) break;
  }
  return missed;
}

}  // namespace gpunvme::pcie
