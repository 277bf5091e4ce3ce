// Pieces every submission and completion policy shares: the request and the
// per-lane record of an outstanding command, the warp's context, building an
// SQE, ringing a doorbell (directly or through a shadow doorbell), SQ slot
// gates and CID allocation.
//
// SQ flow control (every shared-queue policy): ticket t names slot t % N in
// lap t / N (N = entries). Each slot has a gate word counting the laps whose
// command has been consumed by its requester. Ticket t may fill its slot once
//   gate[t % N] >= t / N          (the slot's previous command is consumed: its
//                                  CID, when CID = slot, is free again), and
//   gate[(t+1) % N] >= (t+1) / N  (ticket t-N+1 is consumed, hence fetched: at
//                                  most N-1 entries are between head and tail).
// A requester releases its slot when it has consumed the completion, so a warp
// blocked on a gate first collects its own finished commands ("reaping"):
// otherwise a warp could wait on a slot that only it would free.
#pragma once

#include <cstdint>
#include <type_traits>

#include "sim/core/algo/lanes.h"
#include "sim/core/algo/policies.h"
#include "sim/core/algo/queue_pair.h"
#include "sim/core/algo/stages.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_queue.h"
#include "sim/core/protocol/nvme_wide_cid.h"

namespace gpunvme::algo {

struct IoRequest {
  nvme::NvmOpcode opcode = nvme::NvmOpcode::Read;
  std::uint64_t slba = 0;
  std::uint16_t nlb_zero_based = 0;
  std::uint64_t buffer = 0;  // page-aligned GPU buffer of (nlb + 1) LBAs
  std::uint32_t bytes = 0;
  std::uint32_t queue = 0;       // index into the queue table: the mapping's choice
  std::uint32_t pool_index = 0;  // this I/O's place among the thread's own (0..iodepth-1)
};

enum PendingState : std::uint8_t {
  kIdle = 0,
  kClaimed = 1,      // holds a ticket and CID, not yet published
  kOutstanding = 2,  // published to the SSD
  kCompleted = 3,    // completion consumed by the requester; status valid
};

// One lane's command: where it went and, once completed, its status.
struct Pending {
  std::uint32_t queue = 0;
  std::uint32_t ticket = 0;
  std::uint32_t cid = 0;     // 16 bits unless the queue has wide CIDs
  std::uint16_t status = 0;  // NVMe status field without the phase bit (0 = success)
  std::uint8_t state = kIdle;
};

// A queue the warp owns alone (per-warp queues): its counters live in the
// warp's registers.
struct OwnedQueue {
  std::uint32_t queue = 0;
  std::uint32_t ticket = 0;   // next SQ ticket
  std::uint32_t cq_head = 0;  // CQ entries consumed
  std::uint32_t cq_rung = 0;  // CQ head last written to the doorbell
};

constexpr std::uint32_t kMaxOwnedQueues = 16;

// Everything a warp needs to run a strategy: warp-uniform configuration and
// the warp's private state (registers or shared memory on a GPU).
struct WarpContext {
  const QueuePair* queues = nullptr;
  std::uint32_t queue_count = 0;
  Strategy strategy{};
  // Ring the CQ head doorbell once this many entries are consumed since the
  // last ring (capped at entries - 1, so that a full CQ always gets one).
  std::uint32_t cq_doorbell_batch = 1;
  std::uint32_t max_batch = 32;  // commands per warp-collective doorbell
  // CID partitions: this warp's index among the users of its queues, the
  // bits of warp-local CIDs, and the I/Os a thread keeps in flight.
  std::uint32_t cid_partition = 0;
  std::uint32_t cid_local_bits = 5;
  std::uint32_t iodepth = 1;
  std::uint32_t local_cids_in_use[32] = {};  // bitmap of warp-local CIDs (up to 1024)
  // The warp's commands, for reaping: `round_count` lane arrays.
  Lanes<Pending>* rounds = nullptr;
  std::uint32_t round_count = 0;
  OwnedQueue owned[kMaxOwnedQueues] = {};
  std::uint32_t owned_count = 0;
  // A failed command keeps its CID and SQ slot, and its delivery waits,
  // until the host has decided what to do with it (error_mailbox.h):
  // held_failed() and release_held() in completion.h.
  bool hold_failed = false;

  GPUNVME_HD const QueuePair& queue(std::uint32_t index) const { return queues[index]; }
  GPUNVME_HD OwnedQueue& own(std::uint32_t queue_index) {
    for (std::uint32_t i = 0; i < owned_count; ++i) {
      if (owned[i].queue == queue_index) return owned[i];
    }
    OwnedQueue& o = owned[owned_count < kMaxOwnedQueues ? owned_count++ : kMaxOwnedQueues - 1];
    o = OwnedQueue{queue_index, 0, 0, 0};
    return o;
  }
};

// The strategy a warp runs: its WarpContext's, or, where the platform fixes
// one at compile time (a static constexpr P::fixed_strategy(), as a GPU
// kernel built for one strategy does), that one, so that the compiler drops
// the other strategies' code. The simulator's platforms fix none.
template <class P, class = void>
struct FixesStrategy : std::false_type {};
template <class P>
struct FixesStrategy<P, std::void_t<decltype(P::fixed_strategy())>> : std::true_type {};

template <class P>
GPUNVME_HD Strategy strategy_of(const WarpContext& w) {
  if constexpr (FixesStrategy<P>::value) {
    return P::fixed_strategy();
  } else {
    return w.strategy;
  }
}

// Addresses a wait watches (address, length pairs). A waiter that would need
// more falls back to timed re-checks.
struct WaitSet {
  static constexpr std::uint32_t kMaxRanges = 96;
  std::uint64_t flat[2 * kMaxRanges];
  std::uint32_t count = 0;
  bool overflow = false;
  GPUNVME_HD void add(std::uint64_t addr, std::uint64_t len) {
    if (addr == 0 || len == 0) return;
    for (std::uint32_t i = 0; i < count; ++i) {
      if (flat[2 * i] == addr && flat[2 * i + 1] == len) return;
    }
    if (count == kMaxRanges) {
      overflow = true;
      return;
    }
    flat[2 * count] = addr;
    flat[2 * count + 1] = len;
    ++count;
  }
};

namespace detail {

GPUNVME_HD constexpr std::uint32_t min_u32(std::uint32_t a, std::uint32_t b) {
  return a < b ? a : b;
}

GPUNVME_HD constexpr std::uint32_t expected_phase(std::uint32_t position, std::uint32_t entries) {
  return ((position / entries) & 1u) == 0 ? 1u : 0u;
}

GPUNVME_HD inline std::uint64_t cq_entry(const QueuePair& q, std::uint32_t position) {
  return q.cq_base + std::uint64_t{position % q.entries} * nvme::kCqEntrySize;
}

GPUNVME_HD inline std::uint64_t word(std::uint64_t base, std::uint32_t index) {
  return base + std::uint64_t{index} * 4;
}

// The CID a completion entry of queue `q` names (32 bits on a wide-CID queue).
GPUNVME_HD inline std::uint32_t cqe_cid(const QueuePair& q, const nvme::CompletionEntry& e) {
  return nvme::completion_cid(e, q.wide_cids != 0);
}

template <class P>
GPUNVME_HD void record(P& p, const QueuePair& q, std::uint32_t cid, Stage stage) {
  p.stage(static_cast<std::uint16_t>(q.trace_id), cid, stage);
}

// Writes the 64 B entry for `r` into SQ slot `slot` (one lane's work).
template <class P>
GPUNVME_HD void write_sqe(P& p, const QueuePair& q, std::uint32_t slot, std::uint32_t cid,
                          const IoRequest& r) {
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
  const auto short_cid = static_cast<std::uint16_t>(cid);
  nvme::SubmissionEntry sqe =
      r.opcode == nvme::NvmOpcode::Write
          ? nvme::make_write(short_cid, q.nsid, r.slba, r.nlb_zero_based, r.buffer, prp2)
          : nvme::make_read(short_cid, q.nsid, r.slba, r.nlb_zero_based, r.buffer, prp2);
  if (q.wide_cids != 0) nvme::set_wide_cid(sqe, cid);
  p.store_bytes(q.sq_base + std::uint64_t{slot} * nvme::kSqEntrySize, &sqe, sizeof sqe);
}

// Records `stage` for the command in SQ slot `slot`, which another warp may
// have filled: its CID is read back from the entry, only while records are
// kept (in pinned host memory that read is a PCIe round trip).
template <class P>
GPUNVME_HD void record_slot(P& p, const QueuePair& q, std::uint32_t slot, Stage stage) {
  if (!p.recording()) return;
  const std::uint64_t entry = q.sq_base + std::uint64_t{slot % q.entries} * nvme::kSqEntrySize;
  // A wide CID is all of CDW2 (bytes 11:8); a 16-bit one is CDW0 31:16.
  const std::uint32_t cid =
      q.wide_cids != 0 ? p.observe_u32(entry + 8) : p.observe_u32(entry) >> 16;
  record(p, q, cid, stage);
}

// Publishes a new SQ tail (old_tail -> new_tail are ring indices). With a
// shadow doorbell the value goes to the shadow word and the MMIO write is
// made only when the controller's EventIdx falls in the window passed over,
// as the Linux driver does (nvme_dbbuf_update_and_check_event). A controller
// that polls its shadow doorbells whatever EventIdx says (q.shadow_polled)
// needs the shadow word alone: the entries were fenced before, and no
// EventIdx decides anything.
template <class P>
GPUNVME_HD void ring_sq(P& p, const QueuePair& q, std::uint32_t old_tail, std::uint32_t new_tail) {
  if (q.sq_shadow == 0) {
    p.mmio_store_u32(q.sq_doorbell, new_tail);
    return;
  }
  p.store_u32(q.sq_shadow, new_tail);
  if (q.shadow_polled != 0) return;
  // The shadow value must be visible to the controller before EventIdx is
  // read, or both sides could skip the doorbell.
  p.fence_system();
  const std::uint32_t event = p.load_u32(q.sq_event_idx);
  if (nvme::need_event(static_cast<std::uint16_t>(event), static_cast<std::uint16_t>(new_tail),
                       static_cast<std::uint16_t>(old_tail))) {
    p.mmio_store_u32(q.sq_doorbell, new_tail);
  }
}

template <class P>
GPUNVME_HD void ring_cq(P& p, const QueuePair& q, std::uint32_t old_head, std::uint32_t new_head) {
  if (q.cq_shadow == 0) {
    p.mmio_store_u32(q.cq_doorbell, new_head);
    return;
  }
  p.store_u32(q.cq_shadow, new_head);
  if (q.shadow_polled != 0) return;
  p.fence_system();
  const std::uint32_t event = p.load_u32(q.cq_event_idx);
  if (nvme::need_event(static_cast<std::uint16_t>(event), static_cast<std::uint16_t>(new_head),
                       static_cast<std::uint16_t>(old_head))) {
    p.mmio_store_u32(q.cq_doorbell, new_head);
  }
}

// The CQ head doorbell is due once `batch` entries (at most entries - 1) are
// consumed since the last ring.
GPUNVME_HD inline bool cq_doorbell_due(const WarpContext& w, const QueuePair& q, std::uint32_t head,
                                       std::uint32_t rung) {
  const std::uint32_t batch =
      min_u32(w.cq_doorbell_batch == 0 ? 1 : w.cq_doorbell_batch, q.entries - 1);
  return head - rung >= batch;
}

// ---- SQ slot gates

// Whether ticket `t` may fill its slot (the two conditions above).
template <class P>
GPUNVME_HD bool gate_open(P& p, const QueuePair& q, std::uint32_t t) {
  return p.load_u32(word(q.slot_gate, t % q.entries)) >= t / q.entries &&
         p.load_u32(word(q.slot_gate, (t + 1) % q.entries)) >= (t + 1) / q.entries;
}
template <class P>
GPUNVME_HD void release_slot(P& p, const QueuePair& q, std::uint32_t t) {
  p.store_u32(word(q.slot_gate, t % q.entries), t / q.entries + 1);
}

// ---- CIDs

// Chooses a CID for every lane of `group` (all on queue `q`). `ticket` holds
// each lane's SQ ticket; `aggregated` lets one lane take the counter for the
// whole group (warp-collective submission).
template <class P>
GPUNVME_HD void allocate_cids(P& p, WarpContext& w, const QueuePair& q, LaneMask group,
                              const Lanes<std::uint32_t>& ticket, const Lanes<IoRequest>& request,
                              Lanes<std::uint32_t>& cid, bool aggregated) {
  const std::uint32_t space = q.cid_space;
  switch (strategy_of<P>(w).cid) {
    case CidScheme::SqSlot:
      for_each_lane(p, group, [&](int lane) {
        cid[lane] = static_cast<std::uint16_t>(ticket[lane] % q.entries);
      });
      return;
    case CidScheme::Counter:
      if (aggregated) {
        const std::uint32_t base = p.atomic_add_u32(q.cid_counter, lane_count(group));
        for_each_lane(p, group, [&](int lane) {
          cid[lane] = static_cast<std::uint16_t>((base + lane_rank(group, lane)) % space);
        });
      } else {
        p.for_lanes(group, [&](int lane) {
          cid[lane] = static_cast<std::uint16_t>(p.atomic_add_u32(q.cid_counter, 1u) % space);
        });
      }
      return;
    case CidScheme::CounterLock: {
      // A candidate from the counter, then its lock bit; a lane whose bit was
      // already set (the CID is still outstanding) retries with a new one.
      LaneMask want = group;
      while (want != 0) {
        if (aggregated) {
          const std::uint32_t base = p.atomic_add_u32(q.cid_counter, lane_count(want));
          for_each_lane(p, want, [&](int lane) {
            cid[lane] = static_cast<std::uint16_t>((base + lane_rank(want, lane)) % space);
          });
        } else {
          p.for_lanes(want, [&](int lane) {
            cid[lane] = static_cast<std::uint16_t>(p.atomic_add_u32(q.cid_counter, 1u) % space);
          });
        }
        const LaneMask got = p.ballot(want, [&](int lane) {
          const std::uint32_t bit = 1u << (cid[lane] % 32);
          return (p.atomic_or_u32(word(q.cid_bits, cid[lane] / 32), bit) & bit) == 0;
        });
        want &= ~got;
      }
      return;
    }
    case CidScheme::WarpPartition: {
      // Warp-local ids from the warp's own bitmap (warp-uniform bookkeeping
      // every lane repeats, one instruction): no shared state at all.
      p.for_lanes(group, [](int) {});
      for_each_lane(p, group, [&](int lane) {
        const std::uint32_t local_ids = 1u << w.cid_local_bits;
        cid[lane] = 0;  // the workload sizes the pool to the warp's I/Os: always found
        for (std::uint32_t id = 0; id < local_ids; ++id) {
          std::uint32_t& bits = w.local_cids_in_use[id / 32];
          if ((bits & (1u << (id % 32))) == 0) {
            bits |= 1u << (id % 32);
            cid[lane] = static_cast<std::uint16_t>((w.cid_partition << w.cid_local_bits) | id);
            break;
          }
        }
      });
      return;
    }
    case CidScheme::ThreadPool:
      for_each_lane(p, group, [&](int lane) {
        cid[lane] = static_cast<std::uint16_t>(
            ((w.cid_partition * kWarpLanes + static_cast<std::uint32_t>(lane)) * w.iodepth) +
            request[lane].pool_index);
      });
      return;
    case CidScheme::ThreadWide:
      // The thread's own range of 2^(k - 5) CIDs (k = cid_local_bits, 32
      // lanes x iodepth rounded up to a power of two), one per I/O it keeps
      // in flight: (warp partition << 5 | lane) << (k - 5) | I/O index.
      // Computed, not allocated: no shared word, no bitmap, no retry.
      for_each_lane(p, group, [&](int lane) {
        cid[lane] = (w.cid_partition << w.cid_local_bits) |
                    (static_cast<std::uint32_t>(lane) << (w.cid_local_bits - 5u)) |
                    request[lane].pool_index;
      });
      return;
  }
}

// ---- Building entries

// The step every queue-based submission policy takes once lanes `lanes`
// hold their SQ slots (ticket[lane] % entries): a CID for each
// (allocate_cids; `aggregated` as there), the I/O's first records, the 64 B
// entries written by the lanes in parallel, and a system-scope fence, as the
// SSD reads the entries over PCIe once a doorbell covers them. io[lane].cid
// receives the CID.
template <class P>
GPUNVME_HD void build_sqes(P& p, WarpContext& w, const QueuePair& q, LaneMask lanes,
                           const Lanes<std::uint32_t>& ticket, const Lanes<IoRequest>& request,
                           Timestamp requested, bool aggregated, Lanes<std::uint32_t>& cid,
                           Lanes<Pending>& io) {
  allocate_cids(p, w, q, lanes, ticket, request, cid, aggregated);
  for_each_lane(p, lanes, [&](int lane) {
    io[lane].cid = cid[lane];
    p.stage_at(static_cast<std::uint16_t>(q.trace_id), cid[lane], Stage::Request, requested);
    record(p, q, cid[lane], Stage::CidAllocated);
  });
  p.for_lanes(lanes, [&](int lane) {
    write_sqe(p, q, ticket[lane] % q.entries, cid[lane], request[lane]);
  });
  p.fence_system();
}

// Gives the CIDs of consumed commands back: `io[lane]` for lanes of `done`.
template <class P, class Records>
GPUNVME_HD void release_cids(P& p, WarpContext& w, const Records& io, LaneMask done) {
  switch (strategy_of<P>(w).cid) {
    case CidScheme::CounterLock:
      p.for_lanes(done, [&](int lane) {
        const std::uint32_t cid = io[lane].cid;
        p.atomic_and_u32(word(w.queue(io[lane].queue).cid_bits, cid / 32u), ~(1u << (cid % 32u)));
      });
      return;
    case CidScheme::WarpPartition:
      for_each_lane(p, done, [&](int lane) {
        const std::uint32_t id = io[lane].cid & ((1u << w.cid_local_bits) - 1u);
        w.local_cids_in_use[id / 32] &= ~(1u << (id % 32));
      });
      return;
    default: return;
  }
}

}  // namespace detail
}  // namespace gpunvme::algo
