// The GPU side of error handling: a thread whose command completed with an
// error status cannot recover on its own (seed 000: freezing a queue,
// aborting a command or resetting the controller need the host), so it
// reports the error to a host thread through the error mailbox
// (sim/core/protocol/gpu_error_mailbox.h) and waits for the verdict.
//
// While it waits, the failed command keeps its CID and SQ slot
// (WarpContext::hold_failed): the slot's gate stays closed, so a thread
// whose ticket laps onto it waits too; release_held() ends the hold once
// the verdict is in. A retry is a new NVMe command: once the CQE is
// consumed the controller has let go of the CID (NVMe 1.4, section 4.2:
// a CID is unique among the commands outstanding on its SQ), so the retry
// takes a new SQ slot and whatever CID the scheme gives that slot:
// sq_slot and the counter schemes a fresh one, thread_pool the same one
// (its CID is the thread's I/O slot), warp_partition the lowest free local
// id (often the same, freed by release_held just before).
#pragma once

#include <cstdint>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/algo/lanes.h"
#include "sim/core/protocol/gpu_error_mailbox.h"

namespace gpunvme::algo {

// Where a path's error mailbox lives.
struct ErrorMailbox {
  std::uint64_t ring = 0;      // GpuErrorRecord entries, pinned host memory
  std::uint32_t entries = 0;   // of the ring
  std::uint64_t tail = 0;      // GPU word: positions claimed
  std::uint64_t verdicts = 0;  // GpuErrorVerdict per (thread, I/O slot), GPU memory
};

GPUNVME_HD inline std::uint64_t verdict_address(const ErrorMailbox& m, std::uint32_t index) {
  return m.verdicts + std::uint64_t{index} * nvme::kGpuErrorVerdictSize;
}

// Reports the failed commands of `lanes`: one record each (record[lane],
// whose sequence is filled in here). One lane claims the ring positions for
// the warp (one device-scope atomic), the lanes write their record bodies
// to host memory, a system-scope fence orders them before the sequence
// words that make them valid. sequence[lane] receives what the verdict
// will carry.
template <class P>
GPUNVME_HD void signal_errors(P& p, const ErrorMailbox& m, LaneMask lanes,
                              Lanes<nvme::GpuErrorRecord>& record, Lanes<std::uint32_t>& sequence) {
  const std::uint32_t base = p.atomic_add_u32(m.tail, lane_count(lanes));
  for_each_lane(p, lanes, [&](int lane) {
    sequence[lane] = base + lane_rank(lanes, lane) + 1u;
    record[lane].sequence = sequence[lane];
  });
  p.for_lanes(lanes, [&](int lane) {
    const std::uint64_t entry =
        m.ring + std::uint64_t{(sequence[lane] - 1u) % m.entries} * nvme::kGpuErrorRecordSize;
    p.store_bytes(entry + nvme::kGpuErrorBodyOffset,
                  reinterpret_cast<const std::uint8_t*>(&record[lane]) + nvme::kGpuErrorBodyOffset,
                  nvme::kGpuErrorRecordSize - nvme::kGpuErrorBodyOffset);
  });
  p.fence_system();
  p.for_lanes(lanes, [&](int lane) {
    const std::uint64_t entry =
        m.ring + std::uint64_t{(sequence[lane] - 1u) % m.entries} * nvme::kGpuErrorRecordSize;
    p.store_u32(entry, sequence[lane]);
  });
}

// Waits until every lane of `lanes` has its verdict (the word at
// verdict_index[lane] carries sequence[lane]); action[lane] receives it.
template <class P>
GPUNVME_HD void await_verdicts(P& p, const ErrorMailbox& m, LaneMask lanes,
                               const Lanes<std::uint32_t>& verdict_index,
                               const Lanes<std::uint32_t>& sequence, Lanes<std::uint16_t>& action) {
  WaitSet set;
  for_each_lane(p, lanes, [&](int lane) {
    set.add(verdict_address(m, verdict_index[lane]), nvme::kGpuErrorVerdictSize);
  });
  const auto answered = [&] {
    bool all = true;
    for_each_lane(p, lanes, [&](int lane) {
      const auto v =
          p.template load<nvme::GpuErrorVerdict>(verdict_address(m, verdict_index[lane]));
      all = all && v.sequence == sequence[lane];
    });
    return all;
  };
  detail::wait_on(p, set, answered);
  p.for_lanes(lanes, [&](int lane) {
    const auto v = p.template load<nvme::GpuErrorVerdict>(verdict_address(m, verdict_index[lane]));
    action[lane] = v.action;
  });
}

// Ends the hold on the failed commands of `lanes` in `io` (kept by
// WarpContext::hold_failed): records their delivery when `delivered` (the
// error goes back to the requester; a retried command is not delivered:
// its retry is), then gives their CIDs and SQ slots back.
template <class P>
GPUNVME_HD void release_held(P& p, WarpContext& w, Lanes<Pending>& io, LaneMask lanes,
                             bool delivered) {
  if (lanes == 0) return;
  if (delivered) {
    record_lanes(p, lanes, [&](int lane) {
      detail::record(p, w.queue(io[lane].queue), io[lane].cid, Stage::Delivered);
    });
  }
  detail::release_cids(p, w, io, lanes);
  // A queue its owner drains has no slot gates (its tickets are the warp's).
  if (strategy_of<P>(w).completion != Completion::OwnerDrain) {
    p.for_lanes(lanes, [&](int lane) {
      detail::release_slot(p, w.queue(io[lane].queue), io[lane].ticket);
    });
  }
}

}  // namespace gpunvme::algo
