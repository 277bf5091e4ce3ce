// Completion policies: how a thread learns that its command finished, who
// consumes CQ entries and who moves the CQ head.
//
// - CidFlags (indexed completion): whoever takes the queue's CQ lock drains
//   every new entry (phase tag check) into a per-CID flag, publishes the head
//   and rings the CQ head doorbell (batched); requesters poll their own flag.
// - PollingWarps: dedicated warps drain their queues into the same flags.
// - CqScan: a requester scans the CQ window for its own CID (phase check,
//   skipping entries already consumed), marks the entry consumed, and a lock
//   winner moves the head over the consumed prefix. BaM's design.
// - OwnerDrain: the queue's only user drains it; no flags, no lock.
// - SlotIndexed (indexed completion, a proposed NVMe extension: seed 003's
//   "completion = &cq[my_sq_slot]"): the controller writes each CQE at the
//   CQ slot of its command's SQ slot, with the phase tag of that SQ lap, so
//   a requester polls its own slot (ticket t: CQ slot t % N, phase of lap
//   t / N); no lock, no CQ head and no CQ head doorbell. The slot is free
//   for the next lap once the requester releases its SQ slot, which it does
//   only after reading the entry.
//
// In every case the requester consumes its completion: it resets what it
// read, fences, then gives its CID and SQ slot back (io_common.h).
#pragma once

#include <cstdint>

#include "sim/core/algo/batch_completion.h"
#include "sim/core/algo/io_common.h"

namespace gpunvme::algo {
namespace detail {

// Lanes of `done` (whose statuses are set) that keep their CID and SQ slot
// because their command failed and the warp holds failed commands
// (WarpContext::hold_failed): their Delivered record and their release wait
// for release_held(). Each lane tests its own status (one ballot); without
// the hold nothing is tested.
template <class P, class Records>
GPUNVME_HD LaneMask held_failed(P& p, const WarpContext& w, const Records& io, LaneMask done) {
  if (!w.hold_failed || done == 0) return 0;
  return p.ballot(done, [&](int lane) { return io[lane].status != 0; });
}

// ---- CidFlags and PollingWarps

// Drains every CQ entry that has arrived into the per-CID flags. The caller
// holds the CQ lock (or is the queue's only poller). Returns entries drained.
template <class P>
GPUNVME_HD std::uint32_t drain_into_flags(P& p, const WarpContext& w, const QueuePair& q) {
  const std::uint32_t head = p.load_u32(q.cq_head);
  std::uint32_t consumed = 0;
  // Up to one warp-width of entries per pass: each lane loads one entry and
  // the valid ones form a prefix (the controller fills the CQ in order).
  for (;;) {
    Lanes<nvme::CompletionEntry> entry;
    const LaneMask valid = p.ballot(kAllLanes, [&](int lane) {
      const std::uint32_t position = head + consumed + static_cast<std::uint32_t>(lane);
      entry[lane] = p.template load<nvme::CompletionEntry>(cq_entry(q, position));
      return entry[lane].phase() == expected_phase(position, q.entries);
    });
    const std::uint32_t fresh = leading_run(valid);
    if (fresh == 0) break;
    const LaneMask drained = lanes_below(fresh);
    record_lanes(p, drained,
                 [&](int lane) { record(p, q, cqe_cid(q, entry[lane]), Stage::CompletionSeen); });
    // Acquire the SSD's writes (its data came before the CQE): whoever sees
    // a flag set after this fence sees the data too.
    if (consumed == 0) p.fence_system();
    consumed += fresh;
    // Publish the new head (and ring the doorbell when due) before setting
    // the flags: a requester that sees its flag may submit again at once.
    const std::uint32_t new_head = head + consumed;
    p.store_u32(q.cq_head, new_head);
    const std::uint32_t rung = p.load_u32(q.cq_rung);
    if (cq_doorbell_due(w, q, new_head, rung)) {
      ring_cq(p, q, rung % q.entries, new_head % q.entries);
      p.store_u32(q.cq_rung, new_head);
    }
    record_lanes(p, drained,
                 [&](int lane) { record(p, q, cqe_cid(q, entry[lane]), Stage::CqHeadSynced); });
    p.for_lanes(drained, [&](int lane) {
      p.store_u32(word(q.done, cqe_cid(q, entry[lane])), (entry[lane].status_field >> 1) + 1u);
    });
    if (fresh < static_cast<std::uint32_t>(kWarpLanes)) break;
  }
  return consumed;
}

// Whether the entry at queue `q`'s CQ head has arrived (phase tag check).
template <class P>
GPUNVME_HD bool completion_waiting(P& p, const QueuePair& q) {
  const std::uint32_t head = p.load_u32(q.cq_head);
  const auto e = p.template load<nvme::CompletionEntry>(cq_entry(q, head));
  return e.phase() == expected_phase(head, q.entries);
}

// Drains the CQ if nobody else is; returns whether it held the lock.
template <class P>
GPUNVME_HD bool try_drain(P& p, const WarpContext& w, const QueuePair& q) {
  if (p.atomic_cas_u32(q.cq_lock, 0u, 1u) != 0u) return false;
  drain_into_flags(p, w, q);
  // The flags and head must be visible before the lock is seen free.
  p.fence_gpu();
  p.store_u32(q.cq_lock, 0u);
  return true;
}

// True when a waiter should drain: the lock is free and an entry waits.
template <class P>
GPUNVME_HD bool drain_needed(P& p, const QueuePair& q) {
  return p.load_u32(q.cq_lock) == 0 && completion_waiting(p, q);
}

// Consumes the completions whose flags are set among `lanes` of `io`.
template <class P>
GPUNVME_HD LaneMask reap_flags(P& p, WarpContext& w, Lanes<Pending>& io, LaneMask lanes) {
  const LaneMask done = p.ballot(lanes, [&](int lane) {
    const QueuePair& q = w.queue(io[lane].queue);
    const std::uint32_t flag = p.load_u32(word(q.done, io[lane].cid));
    if (flag != 0) io[lane].status = static_cast<std::uint16_t>(flag - 1u);
    return flag != 0;
  });
  if (done == 0) return 0;
  const LaneMask held = held_failed(p, w, io, done);
  for_each_lane(p, done, [&](int lane) {
    if (((held >> lane) & 1u) == 0)
      record(p, w.queue(io[lane].queue), io[lane].cid, Stage::Delivered);
    io[lane].state = kCompleted;
  });
  p.for_lanes(done,
              [&](int lane) { p.store_u32(word(w.queue(io[lane].queue).done, io[lane].cid), 0u); });
  // The flag must read 0 before the CID or the slot can be handed out again.
  p.fence_gpu();
  const LaneMask freed = done & ~held;
  release_cids(p, w, io, freed);
  p.for_lanes(freed, [&](int lane) { release_slot(p, w.queue(io[lane].queue), io[lane].ticket); });
  return done;
}

// ---- CqScan

// Moves the CQ head over the consumed prefix if nobody else is; the winner
// re-checks after releasing the lock, so a mark set while it held the lock
// is never stranded.
template <class P>
GPUNVME_HD void advance_cq_head(P& p, const WarpContext& w, const QueuePair& q) {
  for (;;) {
    if (p.atomic_cas_u32(q.cq_lock, 0u, 1u) != 0u) return;
    const std::uint32_t old_head = p.load_u32(q.cq_head);
    std::uint32_t head = old_head;
    for (;;) {
      const LaneMask consumed = p.ballot(kAllLanes, [&](int lane) {
        const std::uint32_t position = head + static_cast<std::uint32_t>(lane);
        return p.load_u32(word(q.cq_marks, position % q.entries)) == position / q.entries + 1u;
      });
      const std::uint32_t run = leading_run(consumed);
      head += run;
      if (run < static_cast<std::uint32_t>(kWarpLanes)) break;
    }
    if (head != old_head) {
      p.store_u32(q.cq_head, head);
      const std::uint32_t rung = p.load_u32(q.cq_rung);
      if (cq_doorbell_due(w, q, head, rung)) {
        ring_cq(p, q, rung % q.entries, head % q.entries);
        p.store_u32(q.cq_rung, head);
      }
    }
    p.fence_gpu();
    p.store_u32(q.cq_lock, 0u);
    p.fence_gpu();
    if (p.load_u32(word(q.cq_marks, head % q.entries)) != head / q.entries + 1u) return;
  }
}

// Scans queue `q`'s CQ for the CIDs of lanes `mine` (all pending on `q`) and
// consumes the entries found. Returns the lanes consumed.
template <class P>
GPUNVME_HD LaneMask scan_cq(P& p, WarpContext& w, const QueuePair& q, Lanes<Pending>& io,
                            LaneMask mine) {
  const std::uint32_t head = p.load_u32(q.cq_head);
  Lanes<std::uint32_t> found_at;
  LaneMask found = 0;
  for (std::uint32_t base = 0; base < q.entries && (mine & ~found) != 0; base += kWarpLanes) {
    Lanes<nvme::CompletionEntry> entry;
    Lanes<std::uint32_t> consumed;
    const LaneMask posted = p.ballot(kAllLanes, [&](int lane) {
      const std::uint32_t position = head + base + static_cast<std::uint32_t>(lane);
      entry[lane] = p.template load<nvme::CompletionEntry>(cq_entry(q, position));
      consumed[lane] =
          p.load_u32(word(q.cq_marks, position % q.entries)) == position / q.entries + 1u;
      return entry[lane].phase() == expected_phase(position, q.entries);
    });
    LaneMask live = 0;
    for_each_lane(p, lanes_below(leading_run(posted)), [&](int lane) {
      if (consumed[lane] == 0) live |= LaneMask{1} << lane;
    });
    // Each waiting lane compares its CID with the window (a match across
    // lanes: one more warp instruction).
    found |= p.ballot(mine & ~found, [&](int mine_lane) {
      bool hit = false;
      for_each_lane(p, live, [&](int lane) {
        if (!hit && cqe_cid(q, entry[lane]) == io[mine_lane].cid) {
          hit = true;
          found_at[mine_lane] = head + base + static_cast<std::uint32_t>(lane);
          io[mine_lane].status = static_cast<std::uint16_t>(entry[lane].status_field >> 1);
        }
      });
      return hit;
    });
    if (leading_run(posted) < static_cast<std::uint32_t>(kWarpLanes)) break;
  }
  if (found == 0) return 0;
  for_each_lane(p, found, [&](int lane) {
    record(p, q, io[lane].cid, Stage::CompletionSeen);
    io[lane].state = kCompleted;
  });
  // Acquire the SSD's writes: the data came before the CQE.
  p.fence_system();
  p.for_lanes(found, [&](int lane) {
    p.store_u32(word(q.cq_marks, found_at[lane] % q.entries), found_at[lane] / q.entries + 1u);
  });
  // The consumed marks must be visible before the CIDs can be reused (a
  // later command with the same CID must not match this entry) and before
  // the lock attempt (see advance_cq_head).
  p.fence_gpu();
  const LaneMask held = held_failed(p, w, io, found);
  release_cids(p, w, io, found & ~held);
  p.for_lanes(found & ~held, [&](int lane) { release_slot(p, q, io[lane].ticket); });
  advance_cq_head(p, w, q);
  record_lanes(p, found, [&](int lane) {
    record(p, q, io[lane].cid, Stage::CqHeadSynced);
    if (((held >> lane) & 1u) == 0) record(p, q, io[lane].cid, Stage::Delivered);
  });
  return found;
}

// Whether one of `mine`'s CIDs is in queue `q`'s CQ window, not yet consumed.
template <class P>
GPUNVME_HD bool own_cqe_waiting(P& p, const QueuePair& q, const Lanes<Pending>& io, LaneMask mine) {
  const std::uint32_t head = p.load_u32(q.cq_head);
  for (std::uint32_t i = 0; i < q.entries; ++i) {
    const std::uint32_t position = head + i;
    const auto e = p.template load<nvme::CompletionEntry>(cq_entry(q, position));
    if (e.phase() != expected_phase(position, q.entries)) return false;
    if (p.load_u32(word(q.cq_marks, position % q.entries)) == position / q.entries + 1u) continue;
    bool hit = false;
    for_each_lane(p, mine, [&](int lane) { hit = hit || io[lane].cid == cqe_cid(q, e); });
    if (hit) return true;
  }
  return false;
}

// ---- OwnerDrain

// Rounds whose CID releases owner_drain batches into one warp instruction
// each (a warp with more rounds releases the rest lane by lane).
constexpr std::uint32_t kMaxOwnerRounds = 32;

// Drains the CQ of a queue the warp owns, matching each entry to the warp's
// own command by CID, and gives the CIDs of the matched commands back (any
// CID scheme: counter_lock's lock bits and warp_partition's local ids must be
// freed here, as reap_flags and scan_cq do for the shared-queue policies, or
// the scheme runs out of CIDs once cid_space commands have been issued).
// Returns entries consumed.
template <class P>
GPUNVME_HD std::uint32_t owner_drain(P& p, WarpContext& w, std::uint32_t queue_index) {
  const QueuePair& q = w.queue(queue_index);
  OwnedQueue& o = w.own(queue_index);
  std::uint32_t consumed = 0;
  for (;;) {
    // Per round, the lanes whose command this pass completes.
    LaneMask done[kMaxOwnerRounds] = {};
    Lanes<nvme::CompletionEntry> entry;
    const LaneMask valid = p.ballot(kAllLanes, [&](int lane) {
      const std::uint32_t position = o.cq_head + static_cast<std::uint32_t>(lane);
      entry[lane] = p.template load<nvme::CompletionEntry>(cq_entry(q, position));
      return entry[lane].phase() == expected_phase(position, q.entries);
    });
    const std::uint32_t fresh = leading_run(valid);
    if (fresh == 0) break;
    // Acquire the SSD's writes: the data came before the CQE.
    if (consumed == 0) p.fence_system();
    // Match entries to the warp's records: each lane looks for its own
    // commands among the fresh entries, all lanes at once (one instruction
    // in the model; on a GPU a short loop per lane, where one lane matching
    // every entry against every record takes 32 x 32 serial steps).
    const std::uint32_t batched = min_u32(w.round_count, kMaxOwnerRounds);
    for (std::uint32_t r = 0; r < batched; ++r) {
      const Lanes<Pending>& io = w.rounds[r];
      for_each_lane(p, kAllLanes, [&](int l) {
        if (io[l].state == kOutstanding && io[l].queue == queue_index) done[r] |= LaneMask{1} << l;
      });
    }
    p.for_lanes(kAllLanes, [&](int l) {
      for (std::uint32_t r = 0; r < batched; ++r) {
        Pending& mine = w.rounds[r][l];
        if (((done[r] >> l) & 1u) == 0) continue;
        std::uint32_t e = 0;
        for (; e < fresh; ++e) {
          if (cqe_cid(q, entry[e]) == mine.cid) {
            mine.status = static_cast<std::uint16_t>(entry[e].status_field >> 1);
            mine.state = kCompleted;
            break;
          }
        }
        p.lane_loop(e < fresh ? e + 1 : fresh);  // this lane's search of the drained entries
      }
    });
    record_lanes(p, lanes_below(fresh),
                 [&](int lane) { record(p, q, cqe_cid(q, entry[lane]), Stage::CompletionSeen); });
    for (std::uint32_t r = 0; r < batched; ++r) {
      const Lanes<Pending>& io = w.rounds[r];
      for_each_lane(p, done[r], [&](int l) {
        if (io[l].state != kCompleted) done[r] &= ~(LaneMask{1} << l);
      });
    }
    // Rounds past kMaxOwnerRounds: matched entry by entry, CIDs given back
    // lane by lane.
    for_each_lane(p, lanes_below(fresh), [&](int lane) {
      for (std::uint32_t r = batched; r < w.round_count; ++r) {
        Lanes<Pending>& io = w.rounds[r];
        for (int l = 0; l < kWarpLanes; ++l) {
          if (io[l].state == kOutstanding && io[l].queue == queue_index &&
              io[l].cid == cqe_cid(q, entry[lane])) {
            io[l].status = static_cast<std::uint16_t>(entry[lane].status_field >> 1);
            io[l].state = kCompleted;
            const LaneMask one = LaneMask{1} << l;
            release_cids(p, w, io, one & ~held_failed(p, w, io, one));
          }
        }
      }
    });
    o.cq_head += fresh;
    consumed += fresh;
    if (cq_doorbell_due(w, q, o.cq_head, o.cq_rung)) {
      ring_cq(p, q, o.cq_rung % q.entries, o.cq_head % q.entries);
      o.cq_rung = o.cq_head;
    }
    record_lanes(p, lanes_below(fresh), [&](int lane) {
      record(p, q, cqe_cid(q, entry[lane]), Stage::CqHeadSynced);
      if (!w.hold_failed || (entry[lane].status_field >> 1) == 0) {
        record(p, q, cqe_cid(q, entry[lane]), Stage::Delivered);
      }
    });
    // The completions are consumed: their CIDs may be handed out again.
    for (std::uint32_t r = 0; r < w.round_count && r < kMaxOwnerRounds; ++r) {
      if (done[r] != 0) {
        release_cids(p, w, w.rounds[r], done[r] & ~held_failed(p, w, w.rounds[r], done[r]));
      }
    }
    if (fresh < static_cast<std::uint32_t>(kWarpLanes)) break;
  }
  return consumed;
}

template <class P>
GPUNVME_HD bool owner_entry_waiting(P& p, WarpContext& w, std::uint32_t queue_index) {
  const QueuePair& q = w.queue(queue_index);
  const std::uint32_t head = w.own(queue_index).cq_head;
  const auto e = p.template load<nvme::CompletionEntry>(cq_entry(q, head));
  return e.phase() == expected_phase(head, q.entries);
}

// ---- SlotIndexed

// Whether the CQE of command `io` (on queue `q`) has landed at its own slot.
template <class P>
GPUNVME_HD bool slot_cqe_arrived(P& p, const QueuePair& q, const Pending& io) {
  const auto e = p.template load<nvme::CompletionEntry>(cq_entry(q, io.ticket));
  return e.phase() == expected_phase(io.ticket, q.entries);
}

// Consumes the completions that have landed at the slots of `lanes` of
// `io`. Returns the lanes consumed.
template <class P>
GPUNVME_HD LaneMask reap_slots(P& p, WarpContext& w, Lanes<Pending>& io, LaneMask lanes) {
  Lanes<std::uint16_t> status;
  const LaneMask done = p.ballot(lanes, [&](int lane) {
    const QueuePair& q = w.queue(io[lane].queue);
    const auto e = p.template load<nvme::CompletionEntry>(cq_entry(q, io[lane].ticket));
    if (e.phase() != expected_phase(io[lane].ticket, q.entries)) return false;
    status[lane] = static_cast<std::uint16_t>(e.status_field >> 1);
    return true;
  });
  if (done == 0) return 0;
  // No CQ head to move: the head step ends where the entry is seen.
  record_lanes(p, done, [&](int lane) {
    const QueuePair& q = w.queue(io[lane].queue);
    record(p, q, io[lane].cid, Stage::CompletionSeen);
    record(p, q, io[lane].cid, Stage::CqHeadSynced);
  });
  // Acquire the SSD's writes: the data came before the CQE.
  p.fence_system();
  for_each_lane(p, done, [&](int lane) {
    io[lane].status = status[lane];
    io[lane].state = kCompleted;
    if (!w.hold_failed || status[lane] == 0) {
      record(p, w.queue(io[lane].queue), io[lane].cid, Stage::Delivered);
    }
  });
  const LaneMask freed = done & ~held_failed(p, w, io, done);
  release_cids(p, w, io, freed);
  p.for_lanes(freed, [&](int lane) { release_slot(p, w.queue(io[lane].queue), io[lane].ticket); });
  return done;
}

// ---- Reaping: a warp collects its own finished commands

// Consumes whatever of the warp's outstanding commands has completed (and,
// with CidFlags, drains a queue that needs it). Returns whether anything
// moved.
template <class P>
GPUNVME_HD bool reap(P& p, WarpContext& w) {
  bool moved = false;
  switch (strategy_of<P>(w).completion) {
    case Completion::CidFlags:
    case Completion::PollingWarps: {
      for (std::uint32_t r = 0; r < w.round_count; ++r) {
        Lanes<Pending>& io = w.rounds[r];
        LaneMask out = 0;
        for_each_lane(p, kAllLanes, [&](int lane) {
          if (io[lane].state == kOutstanding) out |= LaneMask{1} << lane;
        });
        if (out != 0 && reap_flags(p, w, io, out) != 0) moved = true;
      }
      if (moved || strategy_of<P>(w).completion != Completion::CidFlags) return moved;
      // Nothing of ours is flagged: drain a queue of ours if nobody is. A
      // warp's lanes mostly share a queue: a run of lanes on one queue
      // checks it once (each check reads the CQ, maybe across PCIe).
      for (std::uint32_t r = 0; r < w.round_count && !moved; ++r) {
        Lanes<Pending>& io = w.rounds[r];
        std::uint32_t checked = ~0u;
        for_each_lane(p, kAllLanes, [&](int lane) {
          if (moved || io[lane].state != kOutstanding || io[lane].queue == checked) return;
          checked = io[lane].queue;
          const QueuePair& q = w.queue(checked);
          if (p.check([&] { return drain_needed(p, q); }) && try_drain(p, w, q)) moved = true;
        });
      }
      return moved;
    }
    case Completion::CqScan: {
      // One scan per distinct queue with outstanding commands of ours.
      for (std::uint32_t r = 0; r < w.round_count; ++r) {
        Lanes<Pending>& io = w.rounds[r];
        LaneMask out = 0;
        for_each_lane(p, kAllLanes, [&](int lane) {
          if (io[lane].state == kOutstanding) out |= LaneMask{1} << lane;
        });
        while (out != 0) {
          const std::uint32_t queue = io[first_lane(p, out)].queue;
          LaneMask same = 0;
          for_each_lane(p, out, [&](int lane) {
            if (io[lane].queue == queue) same |= LaneMask{1} << lane;
          });
          out &= ~same;
          if (p.check([&] { return own_cqe_waiting(p, w.queue(queue), io, same); }) &&
              scan_cq(p, w, w.queue(queue), io, same) != 0) {
            moved = true;
          }
        }
      }
      return moved;
    }
    case Completion::OwnerDrain: {
      for (std::uint32_t i = 0; i < w.owned_count; ++i) {
        if (p.check([&] { return owner_entry_waiting(p, w, w.owned[i].queue); }) &&
            owner_drain(p, w, w.owned[i].queue) != 0) {
          moved = true;
        }
      }
      return moved;
    }
    case Completion::SlotIndexed: {
      for (std::uint32_t r = 0; r < w.round_count; ++r) {
        Lanes<Pending>& io = w.rounds[r];
        LaneMask out = 0;
        for_each_lane(p, kAllLanes, [&](int lane) {
          if (io[lane].state == kOutstanding) out |= LaneMask{1} << lane;
        });
        if (out != 0 && reap_slots(p, w, io, out) != 0) moved = true;
      }
      return moved;
    }
    case Completion::CidBitmap: {
      for (std::uint32_t r = 0; r < w.round_count; ++r) {
        Lanes<Pending>& io = w.rounds[r];
        LaneMask out = 0;
        for_each_lane(p, kAllLanes, [&](int lane) {
          if (io[lane].state == kOutstanding) out |= LaneMask{1} << lane;
        });
        if (out != 0 && reap_batch(p, w, io, out)) moved = true;
      }
      return moved;
    }
  }
  return moved;
}

// Whether reap() would find something to do: the predicate of a reaping
// waiter.
template <class P>
GPUNVME_HD bool reap_possible(P& p, WarpContext& w) {
  if (strategy_of<P>(w).completion == Completion::OwnerDrain) {
    for (std::uint32_t i = 0; i < w.owned_count; ++i) {
      if (owner_entry_waiting(p, w, w.owned[i].queue)) return true;
    }
    return false;
  }
  std::uint32_t drain_checked = ~0u;  // lanes of a warp mostly share a queue: check it once
  for (std::uint32_t r = 0; r < w.round_count; ++r) {
    const Lanes<Pending>& io = w.rounds[r];
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      if (io[lane].state != kOutstanding) continue;
      const QueuePair& q = w.queue(io[lane].queue);
      switch (strategy_of<P>(w).completion) {
        case Completion::CidFlags:
          if (drain_checked != io[lane].queue) {
            drain_checked = io[lane].queue;
            if (drain_needed(p, q)) return true;
          }
          [[fallthrough]];
        case Completion::PollingWarps:
          if (p.load_u32(word(q.done, io[lane].cid)) != 0) return true;
          break;
        case Completion::CqScan:
          if (own_cqe_waiting(p, q, io, LaneMask{1} << lane)) return true;
          break;
        case Completion::SlotIndexed:
          if (slot_cqe_arrived(p, q, io[lane])) return true;
          break;
        case Completion::CidBitmap:
          if (batch_reap_possible(p, q, io[lane])) return true;
          break;
        default: break;
      }
    }
  }
  return false;
}

// The memory a reaping waiter watches (P: the platform, where it fixes the
// strategy; see strategy_of).
template <class P = void>
GPUNVME_HD void add_reap_ranges(WaitSet& set, WarpContext& w) {
  auto add_queue = [&](const QueuePair& q) {
    set.add(q.cq_base, std::uint64_t{q.entries} * nvme::kCqEntrySize);
    switch (strategy_of<P>(w).completion) {
      case Completion::CidFlags:
        set.add(q.cq_lock, 4);
        set.add(q.done, std::uint64_t{q.cid_space} * 4);
        break;
      case Completion::PollingWarps: set.add(q.done, std::uint64_t{q.cid_space} * 4); break;
      case Completion::CidBitmap:
        set.add(q.completion_bitmap,
                std::uint64_t{nvme::batch_bitmap_words(q.cid_space)} * nvme::kBatchBitmapWordBytes);
        set.add(q.cq_lock, 4);
        set.add(q.done, std::uint64_t{q.cid_space} * 4);
        break;
      case Completion::CqScan:
        set.add(q.cq_marks, std::uint64_t{q.entries} * 4);
        set.add(q.cq_head, 4);
        break;
      default: break;
    }
  };
  if (strategy_of<P>(w).completion == Completion::OwnerDrain) {
    for (std::uint32_t i = 0; i < w.owned_count; ++i) add_queue(w.queue(w.owned[i].queue));
    return;
  }
  // Lanes mostly share a queue: adding the previous lane's queue again would
  // add nothing (WaitSet::add skips ranges it holds).
  std::uint32_t last = ~0u;
  for (std::uint32_t r = 0; r < w.round_count; ++r) {
    const Lanes<Pending>& io = w.rounds[r];
    for (int lane = 0; lane < kWarpLanes; ++lane) {
      if (io[lane].state != kOutstanding || io[lane].queue == last) continue;
      last = io[lane].queue;
      add_queue(w.queue(last));
    }
  }
}

// Sleeps until `ready()` holds, watching `set` (or re-checking every
// microsecond when it overflowed).
template <class P, class Pred>
GPUNVME_HD void wait_on(P& p, const WaitSet& set, Pred&& ready) {
  if (set.overflow || set.count == 0) {
    p.wait_until_deadline(ready, p.clock() + 1000000u, set.flat, set.count);
  } else {
    p.wait_until_any(ready, set.flat, set.count);
  }
}

}  // namespace detail

// A dedicated polling warp: drains the queues `mine` (indices into the
// queue table) into per-CID flags until `shutdown` (a GPU word) is set and
// nothing is left to drain. Each pass checks up to 32 queues per load
// instruction (a lane per queue).
template <class P>
GPUNVME_HD void polling_warp(P& p, const WarpContext& w, const std::uint32_t* mine,
                             std::uint32_t count, std::uint64_t shutdown) {
  for (;;) {
    bool drained = false;
    for (std::uint32_t base = 0; base < count; base += kWarpLanes) {
      const std::uint32_t n = detail::min_u32(count - base, kWarpLanes);
      const LaneMask waiting = p.ballot(lanes_below(n), [&](int lane) {
        return detail::completion_waiting(p,
                                          w.queue(mine[base + static_cast<std::uint32_t>(lane)]));
      });
      for_each_lane(p, waiting, [&](int lane) {
        detail::drain_into_flags(p, w, w.queue(mine[base + static_cast<std::uint32_t>(lane)]));
        drained = true;
      });
    }
    if (drained) continue;
    if (p.load_u32(shutdown) != 0) return;
    WaitSet set;
    for (std::uint32_t i = 0; i < count; ++i) {
      const QueuePair& q = w.queue(mine[i]);
      set.add(q.cq_base, std::uint64_t{q.entries} * nvme::kCqEntrySize);
    }
    set.add(shutdown, 4);
    auto ready = [&] {
      if (p.load_u32(shutdown) != 0) return true;
      for (std::uint32_t i = 0; i < count; ++i) {
        if (detail::completion_waiting(p, w.queue(mine[i]))) return true;
      }
      return false;
    };
    if (set.overflow) {
      p.wait_until_deadline(ready, p.clock() + 1000000u, set.flat, set.count);
    } else {
      p.wait_until_any(ready, set.flat, set.count);
    }
  }
}

}  // namespace gpunvme::algo
