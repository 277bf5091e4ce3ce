#include "sim/system/workload/fio_latency.h"

#include <algorithm>

namespace gpunvme {

void FioLatency::record(Picoseconds requested, Picoseconds submitted, Picoseconds delivered) {
  if (delivered < ramp_end_) {
    ++ramped_;
    return;
  }
  const Picoseconds handed_over = std::clamp(submitted, requested, delivered);
  slat_.record(handed_over - requested);
  clat_.record(delivered - handed_over);
  lat_.record(delivered - requested);
}

nlohmann::json FioLatency::json(const std::vector<double>& percentiles) const {
  return {{"ramp_end_ns", ps_to_ns(ramp_end_)},
          {"ramp_ios", ramped_},
          {"slat_ns", slat_.fio_ns(percentiles)},
          {"clat_ns", clat_.fio_ns(percentiles)},
          {"lat_ns", lat_.fio_ns(percentiles)}};
}

}  // namespace gpunvme
