// The timing primitive of every throughput-limited resource: a server that
// takes work in the order it is booked and is busy until a known time.
//
// Booking does not schedule an event; it computes when the work starts (the
// later of when it is ready and when the server frees up) and when it ends,
// and moves the server's free time to that end. Models that need more than
// first-come-first-served (flash dies filling gaps between bookings, PCIe
// ports with credit pacing) keep their own structure around one or more of
// these servers.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/kernel/time.h"

namespace gpunvme {

class NextFreeServer {
 public:
  struct Booking {
    Picoseconds ready;
    Picoseconds start;
    Picoseconds end;
    Picoseconds queued() const { return start - ready; }
  };

  // Work of `service` picoseconds, ready at `ready`: starts when the server
  // is free, ends `service` later.
  Booking book(Picoseconds ready, Picoseconds service) {
    const Picoseconds start = std::max(ready, free_at_);
    free_at_ = start + service;
    busy_ps_ += service;
    ++bookings_;
    return {ready, start, free_at_};
  }

  // Holds the server idle until `until` without counting it as busy time
  // (a gap the resource must keep between jobs, e.g. a poll interval).
  void hold_until(Picoseconds until) { free_at_ = std::max(free_at_, until); }

  Picoseconds free_at() const { return free_at_; }
  bool busy_at(Picoseconds now) const { return free_at_ > now; }
  Picoseconds busy_ps() const { return busy_ps_; }
  std::uint64_t bookings() const { return bookings_; }

 private:
  Picoseconds free_at_ = 0;
  Picoseconds busy_ps_ = 0;
  std::uint64_t bookings_ = 0;
};

}  // namespace gpunvme
