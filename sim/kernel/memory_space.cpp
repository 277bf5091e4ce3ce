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
  // Regions never overlap: one that holds the range is the answer.
  if (last_found_ != nullptr && last_found_->contains(addr, len)) return last_found_;
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](std::uint64_t a, const Region& r) { return a < r.base; });
  if (it == regions_.begin()) return nullptr;
  --it;
  if (!it->contains(addr, len)) return nullptr;
  last_found_ = &*it;
  return last_found_;
}

// Pages are never freed, so a cached pointer stays valid; only pages that
// exist are cached (a read of an unwritten page must not create it).
MemorySpace::Page* MemorySpace::page_if_present(std::uint64_t page) const {
  CacheLine& line = cache_[page & (kCacheSlots - 1)];
  if (line.page == page) return line.data;
  auto it = pages_.find(page);
  if (it == pages_.end()) return nullptr;
  line = CacheLine{page, it->second.get()};
  return line.data;
}

MemorySpace::Page& MemorySpace::page_for_write(std::uint64_t page) {
  if (Page* present = page_if_present(page)) return *present;
  auto& storage = pages_[page];
  storage = std::make_unique<Page>();  // value-initialized: unwritten bytes read as zero, stamps 0
  cache_[page & (kCacheSlots - 1)] = CacheLine{page, storage.get()};
  return *storage;
}

void MemorySpace::write(std::uint64_t addr, const void* data, std::size_t len) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  std::uint64_t a = addr;
  std::size_t left = len;
  const std::uint64_t stamp = ++writes_;
  while (left > 0) {
    const std::uint64_t page = a / kPageBytes;
    const std::size_t offset = a % kPageBytes;
    const std::size_t chunk = std::min<std::size_t>(left, kPageBytes - offset);
    Page& target = page_for_write(page);
    std::memcpy(target.bytes.data() + offset, bytes, chunk);
    for (std::size_t line = offset / kLineBytes; line <= (offset + chunk - 1) / kLineBytes;
         ++line) {
      target.stamps[line] = stamp;
    }
    bytes += chunk;
    a += chunk;
    left -= chunk;
  }
  fire_watches(addr, len);
}

void MemorySpace::read_slow(std::uint64_t addr, void* data, std::size_t len) const {
  auto* bytes = static_cast<std::uint8_t*>(data);
  while (len > 0) {
    const std::uint64_t page = addr / kPageBytes;
    const std::size_t offset = addr % kPageBytes;
    const std::size_t chunk = std::min<std::size_t>(len, kPageBytes - offset);
    if (const Page* p = page_if_present(page)) {
      std::memcpy(bytes, p->bytes.data() + offset, chunk);
    } else {
      std::memset(bytes, 0, chunk);
    }
    bytes += chunk;
    addr += chunk;
    len -= chunk;
  }
}

std::uint32_t MemorySpace::link(std::uint64_t addr, std::uint64_t len) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(watches_.size());
    watches_.emplace_back();
    hot_.emplace_back();
  }
  Watch& w = watches_[slot];
  w.addr = addr;
  w.len = len;
  HotWatch& h = hot_[slot];
  h.order = next_order_++;
  h.rearmed = false;
  h.parked = false;
  h.firing = 0;
  ++live_watches_;
  for (std::uint64_t page = addr / kPageBytes; page <= (addr + len - 1) / kPageBytes; ++page) {
    std::vector<PageWatch>& list = watches_by_page_[page];
    watch_cache_[page & (kCacheSlots - 1)] = WatchLine{page, &list};
    list.push_back(PageWatch{addr, addr + len, slot});
  }
  return slot;
}

MemorySpace::WatchId MemorySpace::watch(std::uint64_t addr, std::uint64_t len,
                                        std::function<void()> on_write) {
  const std::uint32_t slot = link(addr, len);
  watches_[slot].on_write = std::move(on_write);
  HotWatch& h = hot_[slot];
  h.function = nullptr;
  h.context = nullptr;
  return (WatchId{h.generation} << 32) | slot;
}

MemorySpace::WatchId MemorySpace::watch(std::uint64_t addr, std::uint64_t len,
                                        WatchFunction on_write, void* context) {
  const std::uint32_t slot = link(addr, len);
  HotWatch& h = hot_[slot];
  h.function = on_write;
  h.context = context;
  return (WatchId{h.generation} << 32) | slot;
}

MemorySpace::HotWatch* MemorySpace::hot_of(WatchId id) {
  const std::uint32_t slot = slot_of(id);
  if (slot >= hot_.size() || hot_[slot].generation != generation_of(id)) return nullptr;
  return &hot_[slot];
}

void MemorySpace::rearm(WatchId id) {
  HotWatch* h = hot_of(id);
  if (h == nullptr || h->firing == 0 || h->live()) return;
  h->order = next_order_++;
  h->rearmed = true;
  h->parked = false;
  ++live_watches_;
}

void MemorySpace::park(WatchId id) {
  HotWatch* h = hot_of(id);
  if (h == nullptr || (!h->live() && h->firing == 0)) return;
  if (h->live()) {
    h->order = 0;
    --live_watches_;
  }
  h->rearmed = false;
  h->parked = true;
}

void MemorySpace::resume(WatchId id) {
  HotWatch* h = hot_of(id);
  if (h == nullptr || !h->parked) return;
  h->parked = false;
  h->order = next_order_++;
  ++live_watches_;
}

void MemorySpace::cancel(WatchId id) {
  HotWatch* h = hot_of(id);
  if (h == nullptr) return;
  if (h->live()) {
    h->order = 0;
    --live_watches_;
  }
  h->parked = false;
  if (h->firing != 0) {
    // Its callback runs now: fire_watches frees the slot once it returns.
    h->rearmed = false;
    return;
  }
  unlink(slot_of(id));
}

void MemorySpace::unlink(std::uint32_t slot) {
  Watch& w = watches_[slot];
  for (std::uint64_t page = w.addr / kPageBytes; page <= (w.addr + w.len - 1) / kPageBytes;
       ++page) {
    std::vector<PageWatch>* list = watch_list(page);
    if (list == nullptr) continue;
    for (std::size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].slot == slot) {
        (*list)[i] = list->back();
        list->pop_back();
        break;
      }
    }
  }
  w.on_write = nullptr;
  HotWatch& h = hot_[slot];
  h.function = nullptr;
  h.context = nullptr;
  h.parked = false;
  ++h.generation;
  if (h.generation == 0) h.generation = 1;  // ids are never 0
  free_slots_.push_back(slot);
}

std::vector<MemorySpace::PageWatch>* MemorySpace::watch_list(std::uint64_t page) {
  WatchLine& line = watch_cache_[page & (kCacheSlots - 1)];
  if (line.page != page) {
    // watch() puts a page's new list in the cache, so a cached "none" stays true.
    auto it = watches_by_page_.find(page);
    line = WatchLine{page, it == watches_by_page_.end() ? nullptr : &it->second};
  }
  return line.list;
}

void MemorySpace::fire_watches(std::uint64_t addr, std::uint64_t len) {
  if (live_watches_ == 0 || len == 0) return;
  // A callback may write (and so fire watches) itself: each nesting level
  // has its own list.
  if (fire_depth_ == due_scratch_.size()) due_scratch_.emplace_back();
  std::vector<Due>& due = due_scratch_[fire_depth_];
  due.clear();
  const std::uint64_t end = addr + len;
  for (std::uint64_t page = addr / kPageBytes; page <= (end - 1) / kPageBytes; ++page) {
    const std::vector<PageWatch>* list = watch_list(page);
    if (list == nullptr) continue;
    for (const PageWatch& pw : *list) {
      if (pw.addr < end && addr < pw.end && hot_[pw.slot].live()) {
        due.push_back(Due{hot_[pw.slot].order, pw.slot});
      }
    }
  }
  if (due.empty()) return;
  // Fire in registration order so results do not depend on hash layout; a
  // watch spanning several pages was collected once per page.
  std::sort(due.begin(), due.end(), [](const Due& a, const Due& b) { return a.order < b.order; });
  due.erase(std::unique(due.begin(), due.end(),
                        [](const Due& a, const Due& b) { return a.order == b.order; }),
            due.end());
  ++fire_depth_;
  // `due` may move when a nested level adds its list, and hot_ when a
  // callback registers a watch: index, do not keep references.
  for (std::size_t i = 0; i < due_scratch_[fire_depth_ - 1].size(); ++i) {
    const Due d = due_scratch_[fire_depth_ - 1][i];
    // Cancelled (or cancelled and its slot reused) by an earlier callback.
    if (hot_[d.slot].order != d.order) continue;
    HotWatch& h = hot_[d.slot];
    // The next watch's context (a waiting warp's state, seldom cached when
    // thousands of warps wait), fetched while this one's callback runs.
    if (i + 1 < due_scratch_[fire_depth_ - 1].size()) {
      __builtin_prefetch(hot_[due_scratch_[fire_depth_ - 1][i + 1].slot].context);
    }
    h.order = 0;
    h.rearmed = false;
    --live_watches_;
    ++h.firing;
    if (h.function != nullptr) {
      const WatchFunction function = h.function;
      function(h.context, (WatchId{h.generation} << 32) | d.slot);
    } else {
      // The deque keeps the std::function in place while the callback
      // registers more watches.
      watches_[d.slot].on_write();
    }
    HotWatch& after = hot_[d.slot];
    --after.firing;
    if (after.firing == 0 && !after.rearmed && !after.live() && !after.parked) unlink(d.slot);
  }
  --fire_depth_;
}

}  // namespace gpunvme
