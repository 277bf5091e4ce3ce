// A GPU software cache of SSD lines, as BaM keeps one in GPU memory: fixed
// slots of one line (= one I/O) each, a reference count per slot (a slot in
// use by a thread cannot be evicted) and CLOCK replacement (a hand sweeps the
// slots; a referenced slot loses its reference bit and is passed over once,
// an unreferenced one with no users is the victim).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gpunvme {

class SoftwareCache {
 public:
  explicit SoftwareCache(std::uint32_t slots);

  struct Hold {
    std::uint32_t slot;
    bool hit;  // false: the line must be loaded into the slot
  };
  // Takes a reference on `line`, loading it into a slot if it is absent.
  // nullopt when every slot is in use (all reference counts above zero).
  std::optional<Hold> acquire(std::uint64_t line);
  void release(std::uint32_t slot);
  // The slot's line never arrived (its read failed): it no longer holds the
  // line, so the next acquire of the line misses and reads it again. Holders
  // keep their reference until they release it.
  void invalidate(std::uint32_t slot);

  std::uint32_t slots() const { return static_cast<std::uint32_t>(slots_.size()); }
  std::uint32_t users(std::uint32_t slot) const { return slots_[slot].users; }
  bool contains(std::uint64_t line) const { return index_.count(line) != 0; }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }
  std::uint64_t evictions() const { return evictions_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t line = kEmpty;
    std::uint32_t users = 0;
    bool referenced = false;
  };
  std::vector<Slot> slots_;
  std::unordered_map<std::uint64_t, std::uint32_t> index_;
  std::uint32_t hand_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
  std::uint64_t evictions_ = 0;
};

}  // namespace gpunvme
