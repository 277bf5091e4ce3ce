// Per-stage latency distributions of an I/O path whose steps are not the GPU
// algorithm's (the CPU-initiated paths): each I/O carries the time it reached
// each stage, and every interval runs from the previous stage it reached.
// With a trace active, each I/O and its intervals also become trace slices.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/kernel/latency_histogram.h"
#include "sim/system/workload/fio_latency.h"

namespace gpunvme {

class PathStages {
 public:
  static constexpr Picoseconds kNotReached = std::numeric_limits<Picoseconds>::max();

  // names[i] names the interval that ends at stage i + 1 (stage 0 is the
  // request); stage `submitted` is the SQ tail doorbell write, where fio's
  // slat ends and clat begins.
  PathStages(std::vector<std::string> names, std::size_t submitted);

  // `times` has names.size() + 1 entries; kNotReached for stages an I/O
  // skips. In a trace the I/O is shown on `host` (the CPU that ran its
  // host steps), with `ssd`/`queue`/`cid` naming its command.
  void record(const Picoseconds* times, const std::string& host, const std::string& ssd,
              std::uint32_t queue, std::uint16_t cid);

  std::uint64_t completed() const { return end_to_end_.count(); }
  const LatencyHistogram& end_to_end() const { return end_to_end_; }
  // Stages some I/O reached, in order, then end_to_end.
  nlohmann::json stages_json() const;
  // Every stage name, in the order an I/O passes them.
  const std::vector<std::string>& stage_order() const { return names_; }
  const FioLatency& fio_latency() const { return fio_; }
  FioLatency& fio_latency() { return fio_; }

 private:
  std::vector<std::string> names_;
  std::vector<LatencyHistogram> intervals_;
  LatencyHistogram end_to_end_;
  std::size_t submitted_;
  FioLatency fio_;
};

}  // namespace gpunvme
