#include "sim/core/platform/host_threads.h"

#include <fmt/format.h>

namespace gpunvme::platform {

HostArena::HostArena(std::uint64_t base, std::size_t bytes)
    : base_(base),
      bytes_((bytes + 7) / 8 * 8),
      words_(new std::uint64_t[(bytes + 7) / 8]()),
      next_(base) {}

std::uint64_t HostArena::allocate(std::uint64_t bytes, std::uint64_t alignment) {
  const std::uint64_t start = (next_ + alignment - 1) / alignment * alignment;
  if (!contains(start, bytes)) {
    throw std::length_error(fmt::format("host arena of {} B exhausted", bytes_));
  }
  next_ = start + bytes;
  return start;
}

std::uint8_t* HostArena::at(std::uint64_t addr, std::uint64_t len) {
  if (!contains(addr, len)) {
    throw std::out_of_range(fmt::format("access 0x{:x} (+{} B) outside the host arena", addr, len));
  }
  return reinterpret_cast<std::uint8_t*>(words_.get()) + (addr - base_);
}

// Bulk copies go word by word with relaxed atomics (aligned 4-byte words
// where possible, bytes at the edges): a concurrent writer is a race the
// protocol resolves (phase tags, ready marks), not undefined behaviour.
void HostArena::read(std::uint64_t addr, void* data, std::size_t len) {
  std::uint8_t* src = at(addr, len);
  auto* out = static_cast<std::uint8_t*>(data);
  std::size_t i = 0;
  while (i < len) {
    if ((addr + i) % 4 == 0 && len - i >= 4) {
      const std::uint32_t v =
          __atomic_load_n(reinterpret_cast<std::uint32_t*>(src + i), __ATOMIC_RELAXED);
      std::memcpy(out + i, &v, 4);
      i += 4;
    } else {
      out[i] = __atomic_load_n(src + i, __ATOMIC_RELAXED);
      ++i;
    }
  }
}

void HostArena::write(std::uint64_t addr, const void* data, std::size_t len) {
  std::uint8_t* dst = at(addr, len);
  const auto* in = static_cast<const std::uint8_t*>(data);
  std::size_t i = 0;
  while (i < len) {
    if ((addr + i) % 4 == 0 && len - i >= 4) {
      std::uint32_t v;
      std::memcpy(&v, in + i, 4);
      __atomic_store_n(reinterpret_cast<std::uint32_t*>(dst + i), v, __ATOMIC_RELAXED);
      i += 4;
    } else {
      __atomic_store_n(dst + i, in[i], __ATOMIC_RELAXED);
      ++i;
    }
  }
}

std::uint32_t HostArena::load_acquire(std::uint64_t addr) {
  return __atomic_load_n(reinterpret_cast<std::uint32_t*>(at(addr, 4)), __ATOMIC_ACQUIRE);
}

void HostArena::store_release(std::uint64_t addr, std::uint32_t value) {
  __atomic_store_n(reinterpret_cast<std::uint32_t*>(at(addr, 4)), value, __ATOMIC_RELEASE);
}

}  // namespace gpunvme::platform
