// A server that takes bookings out of time order (fast mode's GPU issue
// slots and L2 atomic units): warps that run ahead of the simulation's time
// book work at their own times, which need not come in order. Each booking
// takes the earliest gap of its length at or after its ready time between
// the busy intervals already booked, as a first-come-first-served server
// would have given it had the bookings come in time order, except that work
// booked earlier at a later time keeps its place.
//
// Busy intervals that end before the horizon (the simulation's time: nothing
// is ever booked ready before it) are forgotten, so the list holds about a
// quantum's worth of bookings; adjacent intervals merge, so a saturated
// server keeps one.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/kernel/server.h"
#include "sim/kernel/time.h"

namespace gpunvme {

class IntervalServer {
 public:
  using Booking = NextFreeServer::Booking;

  // Work of `service` picoseconds, ready at `ready` (not before `horizon`):
  // starts in the first gap at or after `ready` that holds it.
  Booking book(Picoseconds ready, Picoseconds service, Picoseconds horizon) {
    forget_before(horizon);
    // Intervals are disjoint and sorted, so their ends are sorted too: skip
    // those that end at or before `ready`.
    auto it = std::partition_point(busy_.begin() + static_cast<std::ptrdiff_t>(first_), busy_.end(),
                                   [ready](const Interval& i) { return i.end <= ready; });
    Picoseconds start = ready;
    while (it != busy_.end() && it->start < start + service) {
      start = std::max(start, it->end);
      ++it;
    }
    busy_ps_ += service;
    ++bookings_;
    if (service != 0) insert(it, Interval{start, start + service});
    return {ready, start, start + service};
  }

  Picoseconds busy_ps() const { return busy_ps_; }
  std::uint64_t bookings() const { return bookings_; }
  // Busy intervals remembered (after merging): for tests.
  std::size_t intervals() const { return busy_.size() - first_; }

 private:
  struct Interval {
    Picoseconds start;
    Picoseconds end;
  };

  void forget_before(Picoseconds horizon) {
    while (first_ < busy_.size() && busy_[first_].end <= horizon) ++first_;
    // Compacts once the forgotten prefix outweighs what is kept.
    if (first_ > 32 && first_ * 2 > busy_.size()) {
      busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(first_));
      first_ = 0;
    }
  }

  // Inserts `added` before `next` (every interval before `next` ends at or
  // before added.start), merging with the neighbours it touches.
  void insert(std::vector<Interval>::iterator next, Interval added) {
    const bool joins_previous = next != busy_.begin() + static_cast<std::ptrdiff_t>(first_) &&
                                (next - 1)->end == added.start;
    const bool joins_next = next != busy_.end() && next->start == added.end;
    if (joins_previous && joins_next) {
      (next - 1)->end = next->end;
      busy_.erase(next);
    } else if (joins_previous) {
      (next - 1)->end = added.end;
    } else if (joins_next) {
      next->start = added.start;
    } else {
      busy_.insert(next, added);
    }
  }

  std::vector<Interval> busy_;  // [first_, end): disjoint, by start
  std::size_t first_ = 0;
  Picoseconds busy_ps_ = 0;
  std::uint64_t bookings_ = 0;
};

}  // namespace gpunvme
