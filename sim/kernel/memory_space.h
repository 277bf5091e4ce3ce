// The one PCIe address space of a simulated machine: which node owns each
// address range (host DRAM, GPU memory behind its BAR, an SSD's registers or
// controller memory buffer), the contents of the ranges that hold protocol
// structures, and watches. Polling is a watch: a poller wakes on the write it
// waits for instead of spinning through simulated loads (principle 3).
#pragma once

#include <cstdint>
#include <functional>
#include <deque>
#include <map>
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
  using WatchId = std::uint64_t;

  // Places a region at the next free, `alignment`-aligned base; returns it.
  const Region& allocate(std::uint64_t size, std::size_t owner, RegionKind kind, std::string name,
                         std::uint64_t alignment = 1ull << 21);
  // The region holding [addr, addr+len), or nullptr when none holds all of it.
  const Region* find(std::uint64_t addr, std::uint64_t len = 1) const;

  // Contents; unwritten bytes read as zero. Writes fire matching watches.
  void write(std::uint64_t addr, const void* data, std::size_t len);
  void read(std::uint64_t addr, void* data, std::size_t len) const;
  template <typename T>
  T load(std::uint64_t addr) const {
    T value;
    read(addr, &value, sizeof(T));
    return value;
  }
  template <typename T>
  void store(std::uint64_t addr, const T& value) {
    write(addr, &value, sizeof(T));
  }

  // Calls `on_write` (once, then forgets it) when a write touches
  // [addr, addr+len).
  WatchId watch(std::uint64_t addr, std::uint64_t len, std::function<void()> on_write);
  void cancel(WatchId id);

  std::uint64_t bytes_stored() const { return pages_.size() * kPageBytes; }

 private:
  static constexpr std::uint64_t kPageBytes = 4096;
  struct Watch {
    std::uint64_t addr;
    std::uint64_t len;
    std::function<void()> on_write;
  };
  void fire_watches(std::uint64_t addr, std::uint64_t len);

  std::deque<Region> regions_;  // sorted by base, never overlapping; references stay valid
  std::uint64_t next_base_ = 1ull << 32;
  std::unordered_map<std::uint64_t, std::vector<std::uint8_t>> pages_;
  std::map<std::uint64_t, std::vector<WatchId>> watches_by_page_;
  std::unordered_map<WatchId, Watch> watches_;
  WatchId next_watch_ = 1;
};

}  // namespace gpunvme
