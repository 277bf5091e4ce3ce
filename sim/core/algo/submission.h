// Submission policies for queues shared by many warps, and for a queue a warp
// owns. Each takes a group of lanes whose commands go to one queue.
//
// - PerCommand: every thread takes its own ticket (one atomic per thread on
//   the queue's ticket word), fills its entry, fences, waits until the
//   published tail reaches its ticket and rings the doorbell for its one
//   command (seed 003's submit_io, made correct by the turn order).
// - TicketReady (BaM style): every thread takes a ticket, fills its entry,
//   fences and marks its slot ready; whoever wins the tail lock publishes the
//   run of ready entries after the current tail with one doorbell, and
//   re-checks after releasing the lock.
// - WarpBatch (sim/core/algo/warp_batch.h): one ticket for the warp's lanes.
// - Exclusive: the warp owns the queue; no shared counters at all.
#pragma once

#include <cstdint>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_common.h"

namespace gpunvme::algo {
namespace detail {

// Publishes the run of ready entries after the tail, if the tail lock is
// free. A warp that fails to take the lock leaves: the holder re-checks the
// next slot after releasing it, so no ready entry is stranded.
template <class P>
GPUNVME_HD void publish_ready(P& p, const QueuePair& q) {
  for (;;) {
    if (p.atomic_cas_u32(q.tail_lock, 0u, 1u) != 0u) return;
    const std::uint32_t tail = p.load_u32(q.turn);
    std::uint32_t end = tail;
    for (;;) {
      const LaneMask ready = p.ballot(kAllLanes, [&](int lane) {
        const std::uint32_t t = end + static_cast<std::uint32_t>(lane);
        return p.load_u32(word(q.ready, t % q.entries)) == t / q.entries + 1u;
      });
      const std::uint32_t run = leading_run(ready);
      end += run;
      if (run < static_cast<std::uint32_t>(kWarpLanes)) break;
    }
    if (end != tail) {
      ring_sq(p, q, tail % q.entries, end % q.entries);
      // The next doorbell, maybe from another SM, must not overtake this one.
      p.fence_system();
      p.store_u32(q.turn, end);
      for (std::uint32_t t = tail; t != end; ++t) record_slot(p, q, t, Stage::DoorbellRung);
    }
    p.fence_gpu();
    p.store_u32(q.tail_lock, 0u);
    p.fence_gpu();
    if (p.load_u32(word(q.ready, end % q.entries)) != end / q.entries + 1u) return;
  }
}

// PerCommand and TicketReady: every lane of `group` submits its own command
// to queue `queue_index`. Lanes progress independently: a lane whose slot is
// still held waits while the others go on (a lane never waits for a slot
// that a lane of its own warp holds unconsumed: the warp reaps meanwhile).
template <class P>
GPUNVME_HD void submit_per_thread(P& p, WarpContext& w, std::uint32_t queue_index, LaneMask group,
                                  const Lanes<IoRequest>& request, Lanes<Pending>& io,
                                  Timestamp requested) {
  const QueuePair& q = w.queue(queue_index);
  const bool ticket_ready = strategy_of<P>(w).submission == Submission::TicketReady;
  Lanes<std::uint32_t> ticket;
  p.for_lanes(group, [&](int lane) { ticket[lane] = p.atomic_add_u32(q.ticket, 1u); });
  // CIDs are chosen once a lane holds its slot: then at most entries - 1
  // lanes hold one, so a scheme with at least entries CIDs always finds a
  // free one (a lane waiting for a CID never blocks the slots of others).
  Lanes<std::uint32_t> cid;
  for_each_lane(p, group, [&](int lane) {
    io[lane] = Pending{queue_index, ticket[lane], 0, 0, kClaimed};
  });

  LaneMask need_slot = group;
  LaneMask need_turn = 0;
  while (need_slot != 0 || need_turn != 0) {
    bool progressed = false;
    if (need_slot != 0) {
      const LaneMask open =
          p.ballot(need_slot, [&](int lane) { return gate_open(p, q, ticket[lane]); });
      if (open != 0) {
        build_sqes(p, w, q, open, ticket, request, requested, false, cid, io);
        record_lanes(p, open, [&](int lane) { record(p, q, cid[lane], Stage::SqeBuilt); });
        need_slot &= ~open;
        progressed = true;
        if (ticket_ready) {
          p.for_lanes(open, [&](int lane) {
            const std::uint32_t t = ticket[lane];
            p.store_u32(word(q.ready, t % q.entries), t / q.entries + 1u);
          });
          // The mark must be visible before the lock attempt (publish_ready's
          // re-check relies on it).
          p.fence_gpu();
          for_each_lane(p, open, [&](int lane) {
            record(p, q, cid[lane], Stage::SqTailSynced);
            io[lane].state = kOutstanding;
          });
          publish_ready(p, q);
        } else {
          need_turn |= open;
        }
      }
    }
    if (need_turn != 0) {
      // Every waiting lane polls the published tail (one broadcast load); at
      // most one lane's ticket matches it.
      const LaneMask mine =
          p.ballot(need_turn, [&](int lane) { return p.load_u32(q.turn) == ticket[lane]; });
      if (mine != 0) {
        // Picking the lane, its ticket and CID, and clearing it from the
        // waiting mask: code the turn's platform calls do not cover.
        p.turn_pass();
        const int lane = first_lane(p, mine);
        const std::uint32_t t = ticket[lane];
        record(p, q, cid[lane], Stage::SqTailSynced);
        ring_sq(p, q, t % q.entries, (t + 1u) % q.entries);
        // The next doorbell, maybe from another SM, must not overtake this one.
        p.fence_system();
        p.store_u32(q.turn, t + 1u);
        record(p, q, cid[lane], Stage::DoorbellRung);
        io[lane].state = kOutstanding;
        need_turn &= ~mine;
        // Where warps of other SMs share the queue, their tickets can come
        // between this warp's: its run of turns breaks and it reaps and
        // waits before its next turn (a platform's model of that; the
        // hardware does it by itself).
        if (need_turn == 0 || !p.turn_run_breaks(q.turn)) continue;
        progressed = false;
      }
    }
    if (progressed) continue;
    if (reap(p, w)) continue;
    WaitSet set;
    set.add(q.slot_gate, std::uint64_t{q.entries} * 4);
    set.add(q.turn, 4);
    add_reap_ranges<P>(set, w);
    wait_on(p, set, [&] {
      bool go = false;
      for_each_lane(p, need_slot, [&](int lane) { go = go || gate_open(p, q, ticket[lane]); });
      const std::uint32_t turn = p.load_u32(q.turn);
      for_each_lane(p, need_turn, [&](int lane) { go = go || ticket[lane] == turn; });
      return go || reap_possible(p, w);
    });
  }
}

// Exclusive: the warp is the queue's only user. Its ticket and CQ head live
// in registers; a slot is free once the warp has consumed the command that
// held it, which the warp knows from its own records.
template <class P>
GPUNVME_HD std::uint32_t oldest_outstanding(WarpContext& w, std::uint32_t queue_index,
                                            std::uint32_t next_ticket) {
  std::uint32_t oldest = next_ticket;
  for (std::uint32_t r = 0; r < w.round_count; ++r) {
    const Lanes<Pending>& io = w.rounds[r];
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      if ((io[lane].state == kOutstanding || io[lane].state == kClaimed) &&
          io[lane].queue == queue_index && next_ticket - io[lane].ticket > next_ticket - oldest) {
        oldest = io[lane].ticket;
      }
    }
  }
  return oldest;
}

template <class P>
GPUNVME_HD void submit_exclusive(P& p, WarpContext& w, std::uint32_t queue_index, LaneMask group,
                                 const Lanes<IoRequest>& request, Lanes<Pending>& io,
                                 Timestamp requested) {
  const QueuePair& q = w.queue(queue_index);
  OwnedQueue& o = w.own(queue_index);
  while (group != 0) {
    const LaneMask chunk =
        first_lanes(group, min_u32(min_u32(w.max_batch, q.entries - 1u), lane_count(group)));
    const std::uint32_t n = lane_count(chunk);
    // Room: at most entries - 1 commands of ours between the oldest
    // unconsumed one and the new tail.
    while (o.ticket + n - oldest_outstanding<P>(w, queue_index, o.ticket) > q.entries - 1u) {
      if (reap(p, w)) continue;
      WaitSet set;
      add_reap_ranges<P>(set, w);
      wait_on(p, set, [&] { return reap_possible(p, w); });
    }
    const std::uint32_t first = o.ticket;
    o.ticket += n;
    Lanes<std::uint32_t> ticket;
    for_each_lane(p, chunk, [&](int lane) {
      ticket[lane] = first + lane_rank(chunk, lane);
      io[lane] = Pending{queue_index, ticket[lane], 0, 0, kClaimed};
    });
    Lanes<std::uint32_t> cid;
    build_sqes(p, w, q, chunk, ticket, request, requested, true, cid, io);
    for_each_lane(p, chunk, [&](int lane) {
      record(p, q, cid[lane], Stage::SqeBuilt);
      record(p, q, cid[lane], Stage::SqTailSynced);
    });
    ring_sq(p, q, first % q.entries, (first + n) % q.entries);
    for_each_lane(p, chunk, [&](int lane) {
      record(p, q, cid[lane], Stage::DoorbellRung);
      io[lane].state = kOutstanding;
    });
    group &= ~chunk;
  }
}

}  // namespace detail
}  // namespace gpunvme::algo
