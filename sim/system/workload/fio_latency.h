// fio's latency figures of a run, beside the per-stage breakdown: slat
// (submission latency: the request to its command being handed to the
// device, the SQ tail doorbell write), clat (completion latency: the
// doorbell write to the requester seeing the I/O done) and lat (the two
// together). I/Os that complete before the ramp ends (fio's ramp_time) are
// left out, as fio leaves them out.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/kernel/latency_histogram.h"

namespace gpunvme {

class FioLatency {
 public:
  // I/Os delivered before `ramp_end` are not recorded (0: every I/O is).
  void set_ramp_end(Picoseconds ramp_end) { ramp_end_ = ramp_end; }
  // One I/O: when it was requested, when its doorbell was written (a time
  // before `requested`, such as 0 for a stage not reached, counts as
  // `requested`) and when its requester saw it done.
  void record(Picoseconds requested, Picoseconds submitted, Picoseconds delivered);

  const LatencyHistogram& slat() const { return slat_; }
  const LatencyHistogram& clat() const { return clat_; }
  const LatencyHistogram& lat() const { return lat_; }
  std::uint64_t ramped() const { return ramped_; }  // I/Os left out by the ramp

  // {"ramp_end_ns", "ramp_ios", "slat_ns", "clat_ns", "lat_ns"}, each
  // distribution as LatencyHistogram::fio_ns gives it.
  nlohmann::json json(const std::vector<double>& percentiles) const;

 private:
  Picoseconds ramp_end_ = 0;
  std::uint64_t ramped_ = 0;
  LatencyHistogram slat_;
  LatencyHistogram clat_;
  LatencyHistogram lat_;
};

}  // namespace gpunvme
