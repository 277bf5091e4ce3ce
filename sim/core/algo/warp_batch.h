// Warp-collective batch submission with ticket-ordered doorbells.
//
// The warp's leader takes one ticket for n consecutive slots (n at most
// entries - 1, so that a batch never waits on a slot it holds itself), the
// lanes fill their entries in parallel, a system fence makes them visible to
// the SSD, and the warp publishes the tail when the turn counter reaches its
// ticket: one doorbell per warp, always in slot order (seed 001's
// warp-collective batch: 32 commands, one doorbell).
#pragma once

#include <cstdint>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_common.h"

namespace gpunvme::algo {
namespace detail {

// Waits until the slot of every lane of `chunk` (its ticket) is free, reaping
// the warp's own completions meanwhile: a batch's slots must all be free
// before the warp fills them.
template <class P>
GPUNVME_HD void wait_for_open_slots(P& p, WarpContext& w, const QueuePair& q, LaneMask chunk,
                                    const Lanes<std::uint32_t>& ticket) {
  for (;;) {
    const LaneMask open = p.ballot(chunk, [&](int lane) { return gate_open(p, q, ticket[lane]); });
    if (open == chunk) return;
    if (reap(p, w)) continue;
    WaitSet set;
    set.add(q.slot_gate, std::uint64_t{q.entries} * 4);
    add_reap_ranges<P>(set, w);
    wait_on(p, set, [&] {
      bool all = true;
      for_each_lane(p, chunk, [&](int lane) { all = all && gate_open(p, q, ticket[lane]); });
      return all || reap_possible(p, w);
    });
  }
}

template <class P>
GPUNVME_HD void submit_warp_batch(P& p, WarpContext& w, std::uint32_t queue_index, LaneMask group,
                                  const Lanes<IoRequest>& request, Lanes<Pending>& io,
                                  Timestamp requested) {
  const QueuePair& q = w.queue(queue_index);
  while (group != 0) {
    const LaneMask chunk =
        first_lanes(group, min_u32(min_u32(w.max_batch, q.entries - 1u), lane_count(group)));
    const std::uint32_t n = lane_count(chunk);
    const std::uint32_t first = p.atomic_add_u32(q.ticket, n);
    Lanes<std::uint32_t> ticket;
    for_each_lane(p, chunk, [&](int lane) { ticket[lane] = first + lane_rank(chunk, lane); });
    for_each_lane(p, chunk, [&](int lane) {
      io[lane] = Pending{queue_index, ticket[lane], 0, 0, kClaimed};
    });

    wait_for_open_slots(p, w, q, chunk, ticket);

    // CIDs once the slots are held (see submit_per_thread).
    Lanes<std::uint32_t> cid;
    build_sqes(p, w, q, chunk, ticket, request, requested, true, cid, io);
    record_lanes(p, chunk, [&](int lane) { record(p, q, cid[lane], Stage::SqeBuilt); });

    // Publish the tail in ticket order.
    auto my_turn = [&] { return p.load_u32(q.turn) == first; };
    while (!my_turn()) {
      if (reap(p, w)) continue;
      WaitSet set;
      set.add(q.turn, 4);
      add_reap_ranges<P>(set, w);
      wait_on(p, set, [&] { return my_turn() || reap_possible(p, w); });
    }
    record_lanes(p, chunk, [&](int lane) { record(p, q, cid[lane], Stage::SqTailSynced); });
    ring_sq(p, q, first % q.entries, (first + n) % q.entries);
    // The next turn's doorbell must not overtake this one on its way to PCIe.
    p.fence_system();
    p.store_u32(q.turn, first + n);
    for_each_lane(p, chunk, [&](int lane) {
      record(p, q, cid[lane], Stage::DoorbellRung);
      io[lane].state = kOutstanding;
    });
    group &= ~chunk;
  }
}

}  // namespace detail
}  // namespace gpunvme::algo
