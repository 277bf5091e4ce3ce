// The one PCIe address space of a simulated machine: which node owns each
// address range (host DRAM, GPU memory behind its BAR, an SSD's registers or
// controller memory buffer), the contents of the ranges that hold protocol
// structures, and watches. Polling is a watch: a poller wakes on the write it
// waits for instead of spinning through simulated loads (principle 3).
//
// Every simulated load, store and wait predicate goes through here, so the
// hot paths avoid hashing and allocation: recently used pages (and their
// watch lists) are found through direct-mapped caches, and watches live in a
// slot table whose slots are reused.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpunvme {

enum class RegionKind { HostMemory, DeviceMemory, Registers, ControllerMemoryBuffer };

struct Region {
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  std::size_t owner = 0;  // node index in the topology
  RegionKind kind = RegionKind::HostMemory;
  std::string name;
  bool contains(std::uint64_t addr, std::uint64_t len) const {
    return addr >= base && len <= size && addr - base <= size - len;
  }
};

class MemorySpace {
 public:
  // Never 0: callers keep 0 for "no watch".
  using WatchId = std::uint64_t;

  // Places a region at the next free, `alignment`-aligned base; returns it.
  const Region& allocate(std::uint64_t size, std::size_t owner, RegionKind kind, std::string name,
                         std::uint64_t alignment = 1ull << 21);
  // The region holding [addr, addr+len), or nullptr when none holds all of it.
  const Region* find(std::uint64_t addr, std::uint64_t len = 1) const;

  // Contents; unwritten bytes read as zero. Writes fire matching watches.
  void write(std::uint64_t addr, const void* data, std::size_t len);
  void read(std::uint64_t addr, void* data, std::size_t len) const {
    if (const std::uint8_t* bytes = cached_bytes(addr, len)) {
      std::memcpy(data, bytes, len);
      return;
    }
    read_slow(addr, data, len);
  }
  // Always inline: a warp's loads and polls call it once per lane, and the
  // call would cost as much as the cached copy.
  template <typename T>
  [[gnu::always_inline]] T load(std::uint64_t addr) const {
    // Not through read(): a copy of a size known here compiles to a move,
    // where read()'s copy of a run-time length calls memcpy.
    T value;
    if (const std::uint8_t* bytes = cached_bytes(addr, sizeof(T))) {
      std::memcpy(&value, bytes, sizeof(T));
    } else {
      read_slow(addr, &value, sizeof(T));
    }
    return value;
  }
  template <typename T>
  void store(std::uint64_t addr, const T& value) {
    write(addr, &value, sizeof(T));
  }

  // Calls `on_write` (once, then forgets it) when a write touches
  // [addr, addr+len). Watches a write touches fire in registration order.
  WatchId watch(std::uint64_t addr, std::uint64_t len, std::function<void()> on_write);
  // The same with a plain function: `on_write(context, id)`, where id is the
  // watch's own (for rearm or park from inside the callback). No
  // std::function to build, move and destroy per watch.
  using WatchFunction = void (*)(void* context, WatchId id);
  WatchId watch(std::uint64_t addr, std::uint64_t len, WatchFunction on_write, void* context);
  // From inside watch `id`'s own callback: keeps the watch for the next
  // write, as if it were registered anew now (same range and callback, and
  // its place in the firing order moves to the end). Cheaper than watch().
  void rearm(WatchId id);
  // Parks watch `id` (live, or from inside its own callback): it no longer
  // fires, but keeps its slot and its place in the pages' watch lists, so
  // that resume() makes it live again without the cost of watch() and
  // cancel(). A waiter that watches the same ranges wait after wait parks
  // its watches between waits.
  void park(WatchId id);
  // Makes parked watch `id` live again, as if registered anew now (same
  // range and callback, last in the firing order).
  void resume(WatchId id);
  // Cancels a live or parked watch.
  void cancel(WatchId id);

  std::uint64_t bytes_stored() const { return pages_.size() * kPageBytes; }
  // Where the next region may start: regions are placed in address order, so
  // the regions allocated between two readings lie between them.
  std::uint64_t next_base() const { return next_base_; }

  // Change detection for whoever re-evaluates a function of memory (wait
  // predicates): writes are numbered, and each line of kLineBytes remembers
  // the number of the last write that touched it (0: never written). A
  // function that read only lines whose stamps are at most the write count
  // it was evaluated at would read the same values again.
  static constexpr std::uint64_t kLineBytes = 64;
  std::uint64_t write_count() const { return writes_; }
  std::uint64_t line_stamp(std::uint64_t line) const {
    const std::uint64_t addr = line * kLineBytes;
    const Page* p = page_if_present(addr / kPageBytes);
    return p == nullptr ? 0 : p->stamps[(addr % kPageBytes) / kLineBytes];
  }

  // Claims on lines, for waiters that settle a herd among themselves (fast
  // mode's waits, sim/system/machine/sim_warp.h): the waiter that goes first
  // on what a line's writes announced claims the line until it has acted,
  // and the others defer to it. A claim covers the line as it was when
  // claimed: once the line is written again (by the claimant acting, or with
  // news the claimant has not seen) it names no claimant. At most one
  // claimant per line; the owner is opaque here.
  const void* claimant(std::uint64_t line) const {
    if (claims_.empty()) return nullptr;
    const auto it = claims_.find(line);
    if (it == claims_.end() || it->second.stamp != line_stamp(line)) return nullptr;
    return it->second.owner;
  }
  // Claims `line` for `owner` unless another owner's claim on it stands;
  // returns whether `owner` holds it now.
  bool claim(std::uint64_t line, const void* owner) {
    const auto [it, added] = claims_.try_emplace(line, LineClaim{owner, line_stamp(line)});
    if (!added && it->second.owner != owner && it->second.stamp != line_stamp(line)) {
      it->second = LineClaim{owner, line_stamp(line)};  // the old claim has lapsed
    }
    return it->second.owner == owner;
  }
  // Gives up `owner`'s claim on `line` (nothing if another owner holds it).
  void unclaim(std::uint64_t line, const void* owner) {
    const auto it = claims_.find(line);
    if (it != claims_.end() && it->second.owner == owner) claims_.erase(it);
  }

 private:
  static constexpr std::uint64_t kPageBytes = 4096;
  // Power of two; the queue structures of hundreds of queues (rings, flags,
  // gates) are thousands of pages, all in use at once.
  static constexpr std::size_t kCacheSlots = 16384;
  struct Page {
    std::array<std::uint8_t, kPageBytes> bytes;
    std::array<std::uint64_t, kPageBytes / kLineBytes> stamps;  // per line: its last write
  };
  struct CacheLine {
    std::uint64_t page = ~std::uint64_t{0};
    Page* data = nullptr;
  };
  // The watch state that firing and park/rearm/resume touch, one dense
  // entry per slot: scanning a page's list reads only `order`.
  struct HotWatch {
    std::uint64_t order = 0;  // registration order while live (fixes the firing order), else 0
    WatchFunction function = nullptr;  // with `context`; else the Watch's on_write
    void* context = nullptr;
    std::uint32_t generation = 1;  // bumped whenever the slot is freed
    std::uint16_t firing = 0;      // its callback runs now (nested when a callback writes)
    bool rearmed = false;
    bool parked = false;
    bool live() const { return order != 0; }
  };
  struct Watch {
    std::uint64_t addr = 0;
    std::uint64_t len = 0;
    std::function<void()> on_write;
  };
  // One entry of a page's watch list: enough to test the overlap without
  // touching the watch itself.
  struct PageWatch {
    std::uint64_t addr;
    std::uint64_t end;
    std::uint32_t slot;
  };
  struct WatchLine {
    std::uint64_t page = ~std::uint64_t{0};
    std::vector<PageWatch>* list = nullptr;  // nullptr: no watch list for the page
  };
  struct Due {
    std::uint64_t order;
    std::uint32_t slot;
  };

  // Fast path, inline: where [addr, addr+len) lies within one recently used
  // page, its bytes; else nullptr.
  const std::uint8_t* cached_bytes(std::uint64_t addr, std::size_t len) const {
    const std::uint64_t page = addr / kPageBytes;
    const std::size_t offset = addr % kPageBytes;
    const CacheLine& line = cache_[page & (kCacheSlots - 1)];
    return line.page == page && offset + len <= kPageBytes ? line.data->bytes.data() + offset
                                                           : nullptr;
  }
  void read_slow(std::uint64_t addr, void* data, std::size_t len) const;
  Page* page_if_present(std::uint64_t page) const;
  Page& page_for_write(std::uint64_t page);
  std::vector<PageWatch>* watch_list(std::uint64_t page);
  void fire_watches(std::uint64_t addr, std::uint64_t len);
  std::uint32_t link(std::uint64_t addr, std::uint64_t len);  // a new live watch's slot
  HotWatch* hot_of(WatchId id);                               // nullptr for a stale id
  void unlink(std::uint32_t slot);  // removes a watch from its pages and frees the slot
  static std::uint32_t slot_of(WatchId id) { return static_cast<std::uint32_t>(id); }
  static std::uint32_t generation_of(WatchId id) { return static_cast<std::uint32_t>(id >> 32); }

  std::deque<Region> regions_;  // sorted by base, never overlapping; references stay valid
  // The region find() returned last: consecutive transfers mostly target the
  // same one (a queue's entries, an SSD's doorbells), and checking it first
  // spares the search of the deque.
  mutable const Region* last_found_ = nullptr;
  std::uint64_t next_base_ = 1ull << 32;
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> pages_;  // pages never go away
  mutable std::vector<CacheLine> cache_ =
      std::vector<CacheLine>(kCacheSlots);  // on the heap: large
  // Lists are kept once made, even empty, so the cache's pointers stay valid
  // (unordered_map nodes do not move).
  std::unordered_map<std::uint64_t, std::vector<PageWatch>> watches_by_page_;
  std::vector<WatchLine> watch_cache_ = std::vector<WatchLine>(kCacheSlots);
  std::deque<Watch> watches_;  // slots; a deque keeps a firing watch's callback in place
  std::vector<HotWatch> hot_;  // per slot
  std::vector<std::uint32_t> free_slots_;
  std::size_t live_watches_ = 0;
  std::uint64_t next_order_ = 1;
  std::uint64_t writes_ = 0;
  struct LineClaim {
    const void* owner;
    std::uint64_t stamp;  // the line's write stamp when claimed
  };
  std::unordered_map<std::uint64_t, LineClaim> claims_;
  // Scratch lists for fire_watches, one per nesting level (a callback may write).
  std::vector<std::vector<Due>> due_scratch_;
  std::size_t fire_depth_ = 0;
};

}  // namespace gpunvme
