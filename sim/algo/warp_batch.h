// Warp-collective batch submission with ticket-ordered doorbells and a
// cooperative CQ drain.
//
// Submission: the warp's leader reserves credits for the warp's commands (so
// the SQ never overruns and an SQ slot index is a CID that no outstanding
// command uses), takes a ticket for that many consecutive slots, the lanes
// fill their SQEs in parallel, a system fence makes the entries visible to the
// SSD, and the warp publishes the SQ tail when the turn counter reaches its
// ticket: one doorbell per warp, always in slot order.
//
// Completion: whichever warp takes the CQ lock drains every new entry (phase
// tag check), publishes the CQ head with one doorbell, gives the credits back
// and then marks each drained command done; every warp waits on its own
// commands' done flags, draining whenever nobody else is.
#pragma once

#include <cstdint>

#include "sim/algo/lanes.h"
#include "sim/algo/queue_pair.h"
#include "sim/algo/stages.h"
#include "sim/protocol/nvme_commands.h"
#include "sim/protocol/nvme_entries.h"
#include "sim/protocol/nvme_prp.h"

namespace gpunvme::algo {

struct IoRequest {
  nvme::NvmOpcode opcode = nvme::NvmOpcode::Read;
  std::uint64_t slba = 0;
  std::uint16_t nlb_zero_based = 0;
  std::uint64_t buffer = 0;  // page-aligned GPU buffer of (nlb + 1) LBAs
  std::uint32_t bytes = 0;
};

// The slots a warp's batch occupies, as returned by submit and taken by wait.
struct Batch {
  LaneMask mask = 0;
  std::uint32_t ticket = 0;
  GPUNVME_HD std::uint32_t slot(int lane, std::uint32_t entries) const {
    return (ticket + lane_rank(mask, lane)) % entries;
  }
};

namespace detail {

GPUNVME_HD constexpr std::uint32_t expected_phase(std::uint32_t consumed, std::uint32_t entries) {
  return ((consumed / entries) & 1u) == 0 ? 1u : 0u;
}

template <class P>
GPUNVME_HD bool completion_waiting(P& p, const QueuePair& q) {
  const std::uint32_t head = p.peek_u32(q.cq_head);
  const auto e = p.template peek<nvme::CompletionEntry>(
      q.cq_base + std::uint64_t{head % q.entries} * nvme::kCqEntrySize);
  return e.phase() == expected_phase(head, q.entries);
}

// Drains every CQ entry that has arrived; the caller holds the CQ lock.
template <class P>
GPUNVME_HD void drain_completions(P& p, const QueuePair& q) {
  const std::uint32_t head = p.load_u32(q.cq_head);
  std::uint32_t consumed = 0;
  // Up to one warp-width of entries per pass: each lane loads one entry and
  // the valid ones form a prefix (the controller fills the CQ in order).
  for (;;) {
    Lanes<nvme::CompletionEntry> entry{};
    const LaneMask valid = p.ballot(kAllLanes, [&](int lane) {
      const std::uint32_t index = head + consumed + static_cast<std::uint32_t>(lane);
      const std::uint64_t addr = q.cq_base + std::uint64_t{index % q.entries} * nvme::kCqEntrySize;
      entry[lane] = p.template load<nvme::CompletionEntry>(addr);
      return entry[lane].phase() == expected_phase(index, q.entries);
    });
    const std::uint32_t fresh = leading_run(valid);
    if (fresh == 0) break;
    const LaneMask drained = lanes_below(fresh);
    for_each_lane(drained,
                  [&](int lane) { p.stage(q.trace_id, entry[lane].cid, Stage::CompletionSeen); });
    consumed += fresh;
    // Publish the new head and give the credits back before waking anyone:
    // a waiter that sees its flag may submit again at once.
    const std::uint32_t new_head = head + consumed;
    p.store_u32(q.cq_head, new_head);
    p.atomic_add_u32(q.credits, 0u - fresh);
    p.mmio_store_u32(q.cq_doorbell, new_head % q.entries);
    for_each_lane(drained,
                  [&](int lane) { p.stage(q.trace_id, entry[lane].cid, Stage::CqHeadSynced); });
    p.for_lanes(drained, [&](int lane) {
      const auto status = static_cast<std::uint32_t>(entry[lane].status_field >> 1);
      p.store_u32(q.done + std::uint64_t{entry[lane].cid} * 4, status + 1u);
    });
    if (fresh < static_cast<std::uint32_t>(kWarpLanes)) break;
  }
}

// Drains the CQ if nobody else is; returns whether it held the lock.
template <class P>
GPUNVME_HD bool try_drain(P& p, const QueuePair& q) {
  if (p.atomic_cas_u32(q.cq_lock, 0u, 1u) != 0u) return false;
  drain_completions(p, q);
  // The done flags and head must be visible before the lock is seen free.
  p.fence_gpu();
  p.store_u32(q.cq_lock, 0u);
  return true;
}

// True when a waiter should drain: the lock is free and an entry waits.
template <class P>
GPUNVME_HD bool drain_needed(P& p, const QueuePair& q) {
  return p.peek_u32(q.cq_lock) == 0 && completion_waiting(p, q);
}

}  // namespace detail

// Submits one command per active lane of `mask` to queue `q` and returns once
// the doorbell covering them is rung.
template <class P>
GPUNVME_HD Batch warp_batch_submit(P& p, const QueuePair& q, LaneMask mask,
                                   const Lanes<IoRequest>& request) {
  const std::uint32_t n = lane_count(mask);
  const std::uint32_t limit = q.entries - 1;  // a full ring keeps one slot empty
  const auto requested = p.clock();

  // 1. Credits, then a ticket for n consecutive slots. While the queue is
  // full, help drain it: the credits come back only through the CQ.
  for (;;) {
    const std::uint32_t held = p.atomic_add_u32(q.credits, n);
    if (held + n <= limit) break;
    p.atomic_add_u32(q.credits, 0u - n);
    if (detail::try_drain(p, q)) continue;
    p.wait_until(
        [&] { return p.peek_u32(q.credits) + n <= limit || detail::drain_needed(p, q); },
        q.credits, 4, q.cq_lock, 4, q.cq_base, std::uint64_t{q.entries} * nvme::kCqEntrySize);
  }
  Batch batch{mask, p.atomic_add_u32(q.ticket, n)};
  for_each_lane(mask, [&](int lane) {
    const auto cid = static_cast<std::uint16_t>(batch.slot(lane, q.entries));
    p.stage_at(q.trace_id, cid, Stage::Request, requested);
    p.stage(q.trace_id, cid, Stage::CidAllocated);
  });

  // 2. Lanes build their entries in parallel; CID = SQ slot.
  p.for_lanes(mask, [&](int lane) {
    const std::uint32_t slot = batch.slot(lane, q.entries);
    const auto cid = static_cast<std::uint16_t>(slot);
    const IoRequest& r = request[lane];
    std::uint64_t prp2 = 0;
    if (r.bytes > 2 * nvme::kMinPageSize) {
      // Longer transfers need a PRP list: this slot's list page.
      const std::uint64_t list = q.prp_lists + std::uint64_t{slot} * nvme::kMinPageSize;
      std::uint64_t list_pages[1] = {list};
      const auto built = nvme::build_prp(
          r.buffer, r.bytes, nvme::kMinPageSize, list_pages, 1,
          [&](std::uint64_t addr, std::uint64_t value) { p.store_bytes(addr, &value, 8); });
      prp2 = built.prp2;
    } else if (r.bytes > nvme::kMinPageSize) {
      prp2 = r.buffer + nvme::kMinPageSize;
    }
    p.store_u32(q.done + std::uint64_t{slot} * 4, 0u);
    const nvme::SubmissionEntry sqe =
        r.opcode == nvme::NvmOpcode::Write
            ? nvme::make_write(cid, q.nsid, r.slba, r.nlb_zero_based, r.buffer, prp2)
            : nvme::make_read(cid, q.nsid, r.slba, r.nlb_zero_based, r.buffer, prp2);
    p.store_bytes(q.sq_base + std::uint64_t{slot} * nvme::kSqEntrySize, &sqe, sizeof sqe);
  });
  // The SSD reads the entries over PCIe once the doorbell reaches it: they
  // must be visible at system scope first.
  p.fence_system();
  for_each_lane(mask, [&](int lane) {
    p.stage(q.trace_id, static_cast<std::uint16_t>(batch.slot(lane, q.entries)), Stage::SqeBuilt);
  });

  // 3. Publish the tail in ticket order.
  p.wait_until([&] { return p.peek_u32(q.turn) == batch.ticket; }, q.turn, 4);
  p.load_u32(q.turn);
  for_each_lane(mask, [&](int lane) {
    p.stage(q.trace_id, static_cast<std::uint16_t>(batch.slot(lane, q.entries)),
            Stage::SqTailSynced);
  });
  p.mmio_store_u32(q.sq_doorbell, (batch.ticket + n) % q.entries);
  // The next turn's doorbell must not overtake this one on its way to PCIe.
  p.fence_system();
  p.store_u32(q.turn, batch.ticket + n);
  for_each_lane(mask, [&](int lane) {
    p.stage(q.trace_id, static_cast<std::uint16_t>(batch.slot(lane, q.entries)),
            Stage::DoorbellRung);
  });
  return batch;
}

// Waits until every command of `batch` has completed; `status` receives each
// lane's NVMe status (SC | SCT << 8 as in the CQE, 0 = success).
template <class P>
GPUNVME_HD void warp_batch_wait(P& p, const QueuePair& q, const Batch& batch,
                                Lanes<std::uint16_t>& status) {
  LaneMask pending = batch.mask;
  for (;;) {
    const LaneMask finished = p.ballot(pending, [&](int lane) {
      const std::uint32_t flag =
          p.load_u32(q.done + std::uint64_t{batch.slot(lane, q.entries)} * 4);
      if (flag != 0) status[lane] = static_cast<std::uint16_t>(flag - 1);
      return flag != 0;
    });
    for_each_lane(finished, [&](int lane) {
      p.stage(q.trace_id, static_cast<std::uint16_t>(batch.slot(lane, q.entries)),
              Stage::Delivered);
    });
    pending &= ~finished;
    if (pending == 0) return;
    if (detail::try_drain(p, q)) continue;
    // Sleep until one of our flags is set, or the lock is free while a new
    // entry waits at the head (its holder may have left before it arrived).
    p.wait_until(
        [&] {
          bool mine = false;
          for_each_lane(pending, [&](int lane) {
            mine = mine || p.peek_u32(q.done + std::uint64_t{batch.slot(lane, q.entries)} * 4) != 0;
          });
          return mine || detail::drain_needed(p, q);
        },
        q.done, std::uint64_t{q.entries} * 4, q.cq_lock, 4, q.cq_base,
        std::uint64_t{q.entries} * nvme::kCqEntrySize);
  }
}

}  // namespace gpunvme::algo
