// The most host memory a run may use. Configurations are estimated against it
// before anything large is allocated (sim/system/run/setup_checks.h), and loaders of
// user data whose size they only learn while reading (graph files) check it
// as they grow, so that a bad input is a ConfigError rather than a machine
// that runs out of memory.
#pragma once

#include <cstdint>

namespace gpunvme {

// Half of this machine's physical memory (sysconf), or 8 GiB where that
// cannot be read.
std::uint64_t default_max_memory_bytes();

// The cap in force for this process (default_max_memory_bytes() until set);
// forked sweep workers inherit it.
std::uint64_t max_memory_bytes();
void set_max_memory_bytes(std::uint64_t bytes);

}  // namespace gpunvme
