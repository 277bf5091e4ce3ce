// NVMe Interrupt Coalescing (Set Features, Feature Identifier 08h) as the
// host sees it: completion entries posted to a CQ are aggregated per
// interrupt vector, and the vector fires when `threshold` entries are
// pending (Aggregation Threshold, THR + 1) or when the oldest pending entry
// has waited the Aggregation Time (TIME, in 100 us units), whichever comes
// first. TIME = 0 means no delay: every entry fires at once, as with the
// feature at its reset value (Linux's nvme driver leaves it there).
//
// The rule is pure bookkeeping on simulated times, so a caller drives it:
// post() each entry as it lands, and when deadline() comes before the next
// entry, expire() at that time.
#pragma once

#include <cstdint>
#include <limits>

#include "sim/kernel/time.h"

namespace gpunvme::host {

class InterruptCoalescer {
 public:
  static constexpr Picoseconds kNoDeadline = std::numeric_limits<Picoseconds>::max();
  static constexpr Picoseconds kTimeUnit = 100'000'000;  // 100 us in ps

  // `threshold` entries per interrupt (1 = every entry); `time_units` of
  // 100 us (0 = no delay).
  InterruptCoalescer(std::uint32_t threshold, std::uint32_t time_units);

  bool coalescing() const { return threshold_ > 1 && time_ > 0; }

  // An entry landed at `at`. True when the vector fires now; fired() then
  // gives how many entries the interrupt covers.
  bool post(Picoseconds at);
  // When the pending entries fire if no further entry comes (kNoDeadline
  // with none pending).
  Picoseconds deadline() const;
  // The aggregation time ran out at `at` (= deadline()): the vector fires
  // for every pending entry. Returns how many.
  std::uint32_t expire(Picoseconds at);

  std::uint32_t pending() const { return pending_; }
  std::uint32_t fired() const { return fired_; }
  std::uint64_t interrupts() const { return interrupts_; }
  std::uint64_t entries() const { return entries_; }
  // Interrupts raised because the threshold was reached / the time ran out
  // (with coalescing on).
  std::uint64_t by_threshold() const { return by_threshold_; }
  std::uint64_t by_time() const { return by_time_; }

 private:
  void fire();

  std::uint32_t threshold_;
  Picoseconds time_;
  std::uint32_t pending_ = 0;
  Picoseconds oldest_ = 0;
  std::uint32_t fired_ = 0;
  std::uint64_t interrupts_ = 0;
  std::uint64_t entries_ = 0;
  std::uint64_t by_threshold_ = 0;
  std::uint64_t by_time_ = 0;
};

}  // namespace gpunvme::host
