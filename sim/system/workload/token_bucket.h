// A token bucket: `rate` tokens per second flow into a bucket of `depth`
// tokens, which starts full; taking `amount` tokens needs that many in the
// bucket. Kept as the time the bucket will be full again (full_at), so that
// the level at time t is depth - (full_at - t) x rate while t < full_at; an
// amount is available once full_at - t <= (depth - amount) / rate. Taking
// it moves full_at later by amount / rate. Deterministic: times are exact
// picoseconds of the simulation, the bookkeeping a double of picoseconds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "sim/kernel/time.h"

namespace gpunvme {

class TokenBucket {
 public:
  TokenBucket() = default;
  // `rate` tokens per second (> 0), `depth` tokens (>= 1).
  TokenBucket(double rate_per_s, double depth) : ps_per_token_(1e12 / rate_per_s), depth_(depth) {}

  // The earliest time, `now` or later, at which `amount` (<= depth) tokens
  // are in the bucket.
  Picoseconds ready_at(Picoseconds now, double amount) const {
    const double when = full_at_ - (depth_ - amount) * ps_per_token_;
    if (when <= static_cast<double>(now)) return now;
    return static_cast<Picoseconds>(std::ceil(when));
  }
  // Takes `amount` tokens at `now` (the caller waited until ready_at).
  void take(Picoseconds now, double amount) {
    full_at_ = std::max(full_at_, static_cast<double>(now)) + amount * ps_per_token_;
  }

 private:
  double ps_per_token_ = 0.0;
  double depth_ = 1.0;
  double full_at_ = 0.0;
};

}  // namespace gpunvme
