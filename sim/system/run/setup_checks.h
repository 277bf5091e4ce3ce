// The checks that building a run's machine and workload would make, made on
// the resolved configuration instead, so that `gpunvme check` refuses exactly
// what `gpunvme run` would refuse at setup, and the memory a run needs is
// estimated before anything large is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/system/config/run_config.h"

namespace gpunvme {

// Device parameters the models check against each other (flash geometry,
// per-core and per-SM lists, scheduled faults), the scenario against the
// devices (span_gib, the graph's vertices and size, queue rings against GPU and
// host memory), and the memory estimate against max_memory_bytes(). Reads a
// graph file when the scenario names one. ConfigError naming the field.
void check_setup(const RunConfig& config);

// A topology of several hosts: a remote path's route (resolve_remote_route),
// or for a local path that the GPU reaches every SSD over PCIe.
void check_hosts(const RunConfig& config);

// The host memory a run is expected to take at its peak, by part.
struct MemoryEstimate {
  struct Part {
    std::string what;   // e.g. "graph (CSR and its construction)"
    std::string field;  // the JSON path that sizes it, e.g. "$.scale"
    std::uint64_t bytes = 0;
  };
  std::vector<Part> parts;
  std::uint64_t bytes() const;
};
MemoryEstimate estimate_memory(const RunConfig& config);

}  // namespace gpunvme
