#include "models/host/interrupt_coalescing.h"

#include <algorithm>

namespace gpunvme::host {

InterruptCoalescer::InterruptCoalescer(std::uint32_t threshold, std::uint32_t time_units)
    : threshold_(std::max<std::uint32_t>(threshold, 1)),
      time_(Picoseconds{time_units} * kTimeUnit) {}

bool InterruptCoalescer::post(Picoseconds at) {
  ++entries_;
  if (pending_ == 0) oldest_ = at;
  ++pending_;
  if (!coalescing() || pending_ >= threshold_) {
    if (coalescing()) ++by_threshold_;
    fire();
    return true;
  }
  return false;
}

Picoseconds InterruptCoalescer::deadline() const {
  return pending_ == 0 ? kNoDeadline : oldest_ + time_;
}

std::uint32_t InterruptCoalescer::expire(Picoseconds at) {
  if (pending_ == 0 || at < deadline()) return 0;
  ++by_time_;
  fire();
  return fired_;
}

void InterruptCoalescer::fire() {
  fired_ = pending_;
  pending_ = 0;
  ++interrupts_;
}

}  // namespace gpunvme::host
