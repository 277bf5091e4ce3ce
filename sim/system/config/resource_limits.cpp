#include "sim/system/config/resource_limits.h"

#include <unistd.h>

#include <atomic>

namespace gpunvme {

namespace {
std::atomic<std::uint64_t>& cap() {
  static std::atomic<std::uint64_t> bytes{default_max_memory_bytes()};
  return bytes;
}
}  // namespace

std::uint64_t default_max_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_bytes <= 0) return 8ull << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_bytes) / 2;
}

std::uint64_t max_memory_bytes() { return cap().load(std::memory_order_relaxed); }

void set_max_memory_bytes(std::uint64_t bytes) { cap().store(bytes, std::memory_order_relaxed); }

}  // namespace gpunvme
