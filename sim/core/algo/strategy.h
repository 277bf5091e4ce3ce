// A warp's entry points into the strategy library (queue-based strategies:
// all_threads, bam_ticket, warp_batch, per_warp_queue and their variants;
// io_agents lives in sim/core/algo/io_agents.h).
//
//   submit(p, w, mask, request, io): one command per lane of `mask`, to the
//     queue request[lane].queue; lanes on the same queue are handled
//     together by the submission policy. Returns once every command is
//     published to its SSD; io[lane] records it.
//   wait(p, w, io, mask): returns once every command of `mask` in `io` has
//     completed; io[lane].status holds its NVMe status.
//
// `io` must be one of the warp's rounds (w.rounds): a warp blocked anywhere
// collects its own finished commands first.
#pragma once

#include <cstdint>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/algo/submission.h"
#include "sim/core/algo/warp_batch.h"
#include "sim/core/algo/warp_doorbell.h"

namespace gpunvme::algo {

template <class P>
GPUNVME_HD void submit(P& p, WarpContext& w, LaneMask mask, const Lanes<IoRequest>& request,
                       Lanes<Pending>& io) {
  const Timestamp requested = p.clock();
  LaneMask left = mask;
  while (left != 0) {
    // Lanes bound for the leader's queue form one group (__match_any_sync).
    const std::uint32_t queue = request[first_lane(p, left)].queue;
    const LaneMask group = p.ballot(left, [&](int lane) { return request[lane].queue == queue; });
    left &= ~group;
    switch (strategy_of<P>(w).submission) {
      case Submission::PerCommand:
      case Submission::TicketReady:
        detail::submit_per_thread(p, w, queue, group, request, io, requested);
        break;
      case Submission::WarpBatch:
        detail::submit_warp_batch(p, w, queue, group, request, io, requested);
        break;
      case Submission::Exclusive:
        detail::submit_exclusive(p, w, queue, group, request, io, requested);
        break;
      case Submission::WarpDoorbell:
        detail::submit_warp_doorbell(p, w, queue, group, request, io, requested);
        break;
      case Submission::AgentBatch:
        // Served by sim/core/algo/io_agents.h; never reached through submit().
        break;
    }
  }
}

template <class P>
GPUNVME_HD void wait(P& p, WarpContext& w, Lanes<Pending>& io, LaneMask mask) {
  for (;;) {
    bool all = true;
    for_each_lane(p, mask, [&](int lane) { all = all && io[lane].state == kCompleted; });
    if (all) return;
    if (detail::reap(p, w)) continue;
    WaitSet set;
    detail::add_reap_ranges<P>(set, w);
    detail::wait_on(p, set, [&] { return detail::reap_possible(p, w); });
  }
}

}  // namespace gpunvme::algo
