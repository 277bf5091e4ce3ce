// The GPU side of batch completion notification (a proposed NVMe extension:
// seed 003's "struct batch_completion { bitmap; error_cids; }", layout and
// flow control in sim/core/protocol/nvme_batch_completion.h): completion
// policy CidBitmap.
//
// A requester reads the bitmap word of its CID and the queue's seen word of
// it: the lanes of a warp whose CIDs share a word read it with one load (32
// CIDs per word). Bit c differing from seen bit c means CID c completed
// successfully: the lane acquires the SSD's writes (one system fence), flips
// its seen bit (an atomic: other lanes' CIDs share the word), fences so that
// the flip is visible before the CID can be handed out again, then gives the
// CID and SQ slot back (io_common.h). No CQ head, no CQ head doorbell, no
// lock on the success path.
//
// Failed commands arrive as full entries in the CQ's ring: a waiter that
// finds an entry at the ring's head drains the ring under the CQ lock into
// the per-CID flags, as CidFlags does (the head and its doorbell move with
// the drain), and a requester whose bit has not flipped checks its flag once
// the ring has ever held an entry. Their status reaches the requester
// unchanged, and the error path (held failed commands) is CidFlags'.
//
// SQ slots are given back by each requester after it consumed its
// completion (the gates of io_common.h), as with every shared-queue policy;
// the batch carries no SQ head.
#pragma once

#include <cstdint>

#include "sim/core/algo/io_common.h"
#include "sim/core/protocol/nvme_batch_completion.h"

namespace gpunvme::algo {
namespace detail {

// completion.h's CidFlags pieces, which the failed ring reuses.
template <class P>
GPUNVME_HD bool try_drain(P& p, const WarpContext& w, const QueuePair& q);
template <class P>
GPUNVME_HD bool drain_needed(P& p, const QueuePair& q);
template <class P>
GPUNVME_HD LaneMask reap_flags(P& p, WarpContext& w, Lanes<Pending>& io, LaneMask lanes);

GPUNVME_HD inline std::uint64_t bitmap_word(std::uint64_t base, std::uint16_t cid) {
  return base + std::uint64_t{nvme::batch_bitmap_word(cid)} * nvme::kBatchBitmapWordBytes;
}

// Whether command `io`'s bit differs from its seen bit.
template <class P>
GPUNVME_HD bool bitmap_flipped(P& p, const QueuePair& q, const Pending& io) {
  const std::uint32_t bits = p.load_u32(bitmap_word(q.completion_bitmap, io.cid));
  const std::uint32_t seen = p.load_u32(bitmap_word(q.bitmap_seen, io.cid));
  return ((bits ^ seen) & nvme::batch_bitmap_bit(io.cid)) != 0;
}

// Whether queue `q`'s failed ring has ever held an entry (its drained head
// moved): only then can a flag of one of its CIDs be set.
template <class P>
GPUNVME_HD bool failures_drained(P& p, const QueuePair& q) {
  return p.load_u32(q.cq_head) != 0;
}

// Consumes the successful completions among `lanes` of `io` whose bits have
// flipped. Returns the lanes consumed.
template <class P>
GPUNVME_HD LaneMask reap_bitmap(P& p, WarpContext& w, Lanes<Pending>& io, LaneMask lanes) {
  Lanes<std::uint32_t> seen;
  const LaneMask done = p.ballot(lanes, [&](int lane) {
    const QueuePair& q = w.queue(io[lane].queue);
    const std::uint32_t bits = p.load_u32(bitmap_word(q.completion_bitmap, io[lane].cid));
    seen[lane] = p.load_u32(bitmap_word(q.bitmap_seen, io[lane].cid));
    return ((bits ^ seen[lane]) & nvme::batch_bitmap_bit(io[lane].cid)) != 0;
  });
  if (done == 0) return 0;
  // No CQ head to move: the head step ends where the bit is seen.
  record_lanes(p, done, [&](int lane) {
    const QueuePair& q = w.queue(io[lane].queue);
    record(p, q, io[lane].cid, Stage::CompletionSeen);
    record(p, q, io[lane].cid, Stage::CqHeadSynced);
  });
  // Acquire the SSD's writes: the data came before the bitmap word.
  p.fence_system();
  for_each_lane(p, done, [&](int lane) {
    io[lane].status = 0;
    io[lane].state = kCompleted;
    record(p, w.queue(io[lane].queue), io[lane].cid, Stage::Delivered);
  });
  // Flip each seen bit; the lane knows its value from the load above.
  p.for_lanes(done, [&](int lane) {
    const QueuePair& q = w.queue(io[lane].queue);
    const std::uint32_t bit = nvme::batch_bitmap_bit(io[lane].cid);
    const std::uint64_t addr = bitmap_word(q.bitmap_seen, io[lane].cid);
    if ((seen[lane] & bit) == 0) {
      p.atomic_or_u32(addr, bit);
    } else {
      p.atomic_and_u32(addr, ~bit);
    }
  });
  // The flip must be visible before the CID can be handed out again (its
  // next completion flips the bitmap bit back).
  p.fence_gpu();
  release_cids(p, w, io, done);
  p.for_lanes(done, [&](int lane) { release_slot(p, w.queue(io[lane].queue), io[lane].ticket); });
  return done;
}

// One reaping pass over the lanes `out` (outstanding) of `io`: successes
// from the bitmap; for the rest, each queue's failed ring drained when an
// entry waits, and the flags of failed commands. Returns whether anything
// moved.
template <class P>
GPUNVME_HD bool reap_batch(P& p, WarpContext& w, Lanes<Pending>& io, LaneMask out) {
  bool moved = reap_bitmap(p, w, io, out) != 0;
  LaneMask rest = 0;
  for_each_lane(p, out, [&](int lane) {
    if (io[lane].state == kOutstanding) rest |= LaneMask{1} << lane;
  });
  while (rest != 0) {
    const std::uint32_t queue = io[first_lane(p, rest)].queue;
    LaneMask same = 0;
    for_each_lane(p, rest, [&](int lane) {
      if (io[lane].queue == queue) same |= LaneMask{1} << lane;
    });
    rest &= ~same;
    const QueuePair& q = w.queue(queue);
    if (p.check([&] { return drain_needed(p, q); }) && try_drain(p, w, q)) moved = true;
    if (failures_drained(p, q) && reap_flags(p, w, io, same) != 0) moved = true;
  }
  return moved;
}

// Whether lane's command `io` on queue `q` has something to reap.
template <class P>
GPUNVME_HD bool batch_reap_possible(P& p, const QueuePair& q, const Pending& io) {
  if (bitmap_flipped(p, q, io)) return true;
  if (drain_needed(p, q)) return true;
  return failures_drained(p, q) && p.load_u32(word(q.done, io.cid)) != 0;
}

}  // namespace detail
}  // namespace gpunvme::algo
