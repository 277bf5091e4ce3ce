#include "sim/kernel/memory_space.h"

#include <algorithm>
#include <cstring>

namespace gpunvme {

const Region& MemorySpace::allocate(std::uint64_t size, std::size_t owner, RegionKind kind,
                                    std::string name, std::uint64_t alignment) {
  std::uint64_t base = (next_base_ + alignment - 1) / alignment * alignment;
  next_base_ = base + size;
  regions_.push_back(Region{base, size, owner, kind, std::move(name)});
  return regions_.back();
}

const Region* MemorySpace::find(std::uint64_t addr, std::uint64_t len) const {
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](std::uint64_t a, const Region& r) { return a < r.base; });
  if (it == regions_.begin()) return nullptr;
  --it;
  return it->contains(addr, len) ? &*it : nullptr;
}

void MemorySpace::write(std::uint64_t addr, const void* data, std::size_t len) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  std::uint64_t a = addr;
  std::size_t left = len;
  while (left > 0) {
    std::uint64_t page = a / kPageBytes;
    std::size_t offset = a % kPageBytes;
    std::size_t chunk = std::min<std::size_t>(left, kPageBytes - offset);
    auto& storage = pages_[page];
    if (storage.empty()) storage.assign(kPageBytes, 0);
    std::memcpy(storage.data() + offset, bytes, chunk);
    bytes += chunk;
    a += chunk;
    left -= chunk;
  }
  fire_watches(addr, len);
}

void MemorySpace::read(std::uint64_t addr, void* data, std::size_t len) const {
  auto* bytes = static_cast<std::uint8_t*>(data);
  while (len > 0) {
    std::uint64_t page = addr / kPageBytes;
    std::size_t offset = addr % kPageBytes;
    std::size_t chunk = std::min<std::size_t>(len, kPageBytes - offset);
    auto it = pages_.find(page);
    if (it == pages_.end()) {
      std::memset(bytes, 0, chunk);
    } else {
      std::memcpy(bytes, it->second.data() + offset, chunk);
    }
    bytes += chunk;
    addr += chunk;
    len -= chunk;
  }
}

MemorySpace::WatchId MemorySpace::watch(std::uint64_t addr, std::uint64_t len,
                                        std::function<void()> on_write) {
  WatchId id = next_watch_++;
  watches_.emplace(id, Watch{addr, len, std::move(on_write)});
  for (std::uint64_t page = addr / kPageBytes; page <= (addr + len - 1) / kPageBytes; ++page) {
    watches_by_page_[page].push_back(id);
  }
  return id;
}

void MemorySpace::cancel(WatchId id) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  const Watch& w = it->second;
  for (std::uint64_t page = w.addr / kPageBytes; page <= (w.addr + w.len - 1) / kPageBytes;
       ++page) {
    auto& ids = watches_by_page_[page];
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) watches_by_page_.erase(page);
  }
  watches_.erase(it);
}

void MemorySpace::fire_watches(std::uint64_t addr, std::uint64_t len) {
  if (watches_.empty() || len == 0) return;
  std::vector<WatchId> due;
  for (std::uint64_t page = addr / kPageBytes; page <= (addr + len - 1) / kPageBytes; ++page) {
    auto it = watches_by_page_.find(page);
    if (it == watches_by_page_.end()) continue;
    for (WatchId id : it->second) {
      const Watch& w = watches_.at(id);
      if (w.addr < addr + len && addr < w.addr + w.len) due.push_back(id);
    }
  }
  // Fire in registration order so results do not depend on hash layout.
  std::sort(due.begin(), due.end());
  due.erase(std::unique(due.begin(), due.end()), due.end());
  for (WatchId id : due) {
    auto it = watches_.find(id);
    if (it == watches_.end()) continue;
    std::function<void()> callback = std::move(it->second.on_write);
    cancel(id);
    callback();
  }
}

}  // namespace gpunvme
