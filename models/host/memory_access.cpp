#include "models/host/memory_access.h"

#include <algorithm>

namespace gpunvme::host {

Picoseconds independent_lines_stall(const CoreMemoryTiming& memory, std::uint32_t fill_buffers,
                                    std::uint64_t lines) {
  const std::uint64_t buffers = std::max<std::uint32_t>(fill_buffers, 1);
  const std::uint64_t rounds = (lines + buffers - 1) / buffers;
  return memory.load_to_use * rounds;
}

Picoseconds dependent_lines_stall(const CoreMemoryTiming& memory, std::uint64_t lines) {
  return memory.load_to_use * lines;
}

double core_bytes_per_ns(const CoreMemoryTiming& memory, std::uint32_t fill_buffers) {
  if (memory.load_to_use == 0) return 0.0;
  return static_cast<double>(fill_buffers) * kCacheLineBytes / ps_to_ns(memory.load_to_use);
}

std::uint64_t ring_lines(std::uint32_t first, std::uint32_t count, std::uint32_t entries,
                         std::uint32_t entry_bytes) {
  if (count == 0 || entries == 0) return 0;
  count = std::min(count, entries);
  auto span = [entry_bytes](std::uint64_t from, std::uint64_t n) -> std::uint64_t {
    const std::uint64_t begin = from * entry_bytes;
    const std::uint64_t end = (from + n) * entry_bytes;  // exclusive
    return (end - 1) / kCacheLineBytes - begin / kCacheLineBytes + 1;
  };
  first %= entries;
  const std::uint32_t to_end = entries - first;
  if (count <= to_end) return span(first, count);
  return span(first, to_end) + span(0, count - to_end);
}

}  // namespace gpunvme::host
