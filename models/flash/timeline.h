// A resource booked ahead of time: the list of intervals in which it is busy.
//
// A plain next-available-time server (one "free at" time) books work in call
// order. Flash needs more: a read queued behind a busy die is booked on its
// channel far in the future, and a read to an idle die on the same channel,
// issued a moment later, must not wait behind that booking. So each die and
// channel keeps its future busy intervals and a booking takes the earliest gap
// that fits, starting no earlier than the work is ready. This is still no
// event: each call computes and records its own start time.
//
// Bookings that end at or before the caller's current time are dropped, so the
// list holds only work still ahead, and touching intervals are merged, so a
// saturated resource keeps a single interval. Storage is reserved up front and
// grows only past its high-water mark.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpunvme::flash {

class Timeline {
 public:
  explicit Timeline(std::size_t reserve = 16) { spans_.reserve(reserve); }

  // Books `duration` picoseconds at the earliest time >= `ready` that overlaps
  // no existing booking, and returns the start. `now` is the caller's current
  // time (never decreasing across calls); bookings ending at or before it are
  // forgotten. A zero duration books nothing and returns `ready`.
  std::uint64_t book(std::uint64_t now, std::uint64_t ready, std::uint64_t duration);

  // Total picoseconds ever booked.
  std::uint64_t busy_ps() const { return busy_ps_; }
  // End of the last booking still held, or 0.
  std::uint64_t last_end() const { return spans_.size() > head_ ? spans_.back().end : 0; }
  // Intervals still held (for tests of the merging).
  std::size_t live_intervals() const { return spans_.size() - head_; }

 private:
  struct Span {
    std::uint64_t start;
    std::uint64_t end;  // exclusive
  };
  void retire(std::uint64_t now);

  std::vector<Span> spans_;  // sorted by start, disjoint, never touching
  std::size_t head_ = 0;     // spans_[0, head_) have ended and are ignored
  std::uint64_t busy_ps_ = 0;
};

}  // namespace gpunvme::flash
