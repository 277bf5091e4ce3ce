// Warp-aware multi-command submission with warp doorbells, a proposed NVMe
// extension the SSD must offer (sim/core/protocol/nvme_warp_doorbell.h).
//
// As WarpBatch (warp_batch.h) up to the doorbell: the warp's leader takes one
// ticket for n consecutive slots (n at most 32 and entries - 1), the lanes
// fill their entries once the slots' gates open, and a system fence makes
// them visible to the SSD. Then the warp writes one doorbell naming its run
// (first slot, n) and is done: the controller puts the runs of all warps in
// slot order itself, so there is no turn counter to wait for and no fence
// between one warp's doorbell and the next warp's.
#pragma once

#include <cstdint>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/algo/warp_batch.h"
#include "sim/core/protocol/nvme_warp_doorbell.h"

namespace gpunvme::algo {
namespace detail {

template <class P>
GPUNVME_HD void submit_warp_doorbell(P& p, WarpContext& w, std::uint32_t queue_index,
                                     LaneMask group, const Lanes<IoRequest>& request,
                                     Lanes<Pending>& io, Timestamp requested) {
  const QueuePair& q = w.queue(queue_index);
  const std::uint32_t most =
      min_u32(min_u32(w.max_batch, nvme::kWarpDoorbellMaxRun), q.entries - 1u);
  while (group != 0) {
    const LaneMask chunk = first_lanes(group, min_u32(most, lane_count(group)));
    const std::uint32_t n = lane_count(chunk);
    const std::uint32_t first = p.atomic_add_u32(q.ticket, n);
    Lanes<std::uint32_t> ticket;
    for_each_lane(p, chunk, [&](int lane) {
      ticket[lane] = first + lane_rank(chunk, lane);
      io[lane] = Pending{queue_index, ticket[lane], 0, 0, kClaimed};
    });

    wait_for_open_slots(p, w, q, chunk, ticket);

    Lanes<std::uint32_t> cid;
    build_sqes(p, w, q, chunk, ticket, request, requested, true, cid, io);
    record_lanes(p, chunk, [&](int lane) {
      record(p, q, cid[lane], Stage::SqeBuilt);
      record(p, q, cid[lane], Stage::SqTailSynced);
    });
    p.mmio_store_u32(q.sq_doorbell, nvme::encode_warp_doorbell(first % q.entries, n));
    for_each_lane(p, chunk, [&](int lane) {
      record(p, q, cid[lane], Stage::DoorbellRung);
      io[lane].state = kOutstanding;
    });
    group &= ~chunk;
  }
}

}  // namespace detail
}  // namespace gpunvme::algo
