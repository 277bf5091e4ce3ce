// The IOTLB of a root complex's IOMMU: a cache of page translations, shared by
// the devices below the root complex and tagged by requester and PASID (a
// device shared by several IOMMU domains tags each domain's requests with its
// PASID; VT-d 3.0 scalable mode tags IOTLB entries so), replacing the least
// recently used entry: the domains share its capacity. A request that touches a page without an
// entry pays a page walk. Lookups happen inline when a burst enters the root complex (no events of
// their own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>

namespace gpunvme::pcie {

class Iotlb {
 public:
  // Throws std::invalid_argument unless entries >= 1 and page_bytes is a power of two.
  Iotlb(std::uint32_t entries, std::uint64_t page_bytes);

  // Looks up every page [addr, addr + len) touches, in address order, for the
  // requester `source` (a node index) in address space `pasid` (0: the
  // requester's own, without a PASID); each miss installs its entry. A
  // zero-length request still names one page. Returns the number of misses.
  std::uint64_t translate(std::size_t source, std::uint64_t addr, std::uint64_t len,
                          std::uint32_t pasid = 0);

  std::uint64_t lookups() const { return lookups_; }
  std::uint64_t misses() const { return misses_; }
  std::uint32_t entries() const { return capacity_; }
  std::uint64_t page_bytes() const { return page_bytes_; }

 private:
  struct Key {
    std::size_t source;
    std::uint32_t pasid;
    std::uint64_t page;
    bool operator==(const Key& other) const {
      return source == other.source && pasid == other.pasid && page == other.page;
    }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>()(k.page * 0x9E3779B97F4A7C15ull ^ k.source ^
                                        (std::uint64_t{k.pasid} << 40));
    }
  };

  bool lookup(const Key& key);

  std::uint32_t capacity_;
  std::uint64_t page_bytes_;
  std::list<Key> recency_;  // most recently used first
  std::unordered_map<Key, std::list<Key>::iterator, KeyHash> where_;
  std::uint64_t lookups_ = 0;
  std::uint64_t misses_ = 0;
};

}  // namespace gpunvme::pcie
