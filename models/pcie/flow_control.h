// Credit-based flow control of one receive buffer (one link direction, one TLP class: posted,
// non-posted or completion) as a next-available-time resource.
//
// PCIe (r5.0 §2.6) lets a transmitter start a TLP only when the receiver has advertised room for
// its header (one header credit) and its data (one data credit per 16 B). The receiver returns
// credits with UpdateFC DLLPs once it has forwarded or consumed the TLP. The fabric moves a burst
// of TLPs as one event per hop and works out per-TLP flow control in closed form
// (Fabric::window): a burst takes the credits of the TLPs it has outstanding at once (one credit
// loop's worth at its pace, plus any backlog behind a slower drain) when it starts on the link
// and gives them back, all at once, when its last byte has left the receiver plus the UpdateFC
// flight. That release is known only once the burst has been booked on its next hop; until then
// its credits are "pending" and a burst that needs them waits.
//
// A request larger than the whole buffer is charged the whole buffer (clamp): it streams
// through it, and the fabric paces it at the buffer per credit loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "models/pcie/link_accounting.h"
#include "sim/kernel/time.h"

namespace gpunvme::pcie {

class CreditPool {
 public:
  // A zero field means infinite credit, as a zero in an InitFC DLLP does (r5.0 §2.6.1).
  explicit CreditPool(Credits capacity = {});

  bool infinite() const { return capacity_.header == 0 && capacity_.data == 0; }
  const Credits& capacity() const { return capacity_; }

  // The credits a burst needing `need` holds: capped at the buffer (it streams through), zero
  // where the credit type is infinite.
  Credits clamp(Credits need) const;

  // Earliest time at or after `now` when `clamped` credits are free, given the releases known so
  // far; nullopt while that depends on bursts whose release time is not known yet.
  std::optional<Picoseconds> earliest(const Credits& clamped, Picoseconds now);

  // A burst starts (with its room free): its credits are held until release_at names when they
  // come back.
  void take(const Credits& clamped);
  // The held credits of one burst come back at `when`.
  void release_at(const Credits& clamped, Picoseconds when);

  // Credits free at `now` (for tests and statistics).
  Credits free_at(Picoseconds now);

 private:
  void forget_past(Picoseconds now);

  Credits capacity_;
  Credits pending_;    // held, release time not yet known
  Credits scheduled_;  // held, release time known (sum of releases_)
  // Known future releases in time order (ties in insertion order, as a multimap keeps them),
  // from index `first_release_` on. A sorted vector rather than a multimap: releases are nearly
  // always added at the back and dropped from the front, and a tree node per release was the
  // simulator's most frequent heap allocation.
  std::vector<std::pair<Picoseconds, Credits>> releases_;
  std::size_t first_release_ = 0;
};

}  // namespace gpunvme::pcie
