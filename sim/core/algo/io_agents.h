// I/O-agent warps (seeds 001 and 003): compute warps do not touch NVMe
// queues. They post requests to a ring in GPU memory that a few agent warps
// serve; each agent owns its queues alone (no atomics on queue state),
// builds the SQEs, rings the SQ doorbell every `batch_size` commands or once
// the oldest unrung command has waited `batch_timeout` (with a timeout of 0:
// at the end of every pass, so whatever arrived together shares a doorbell),
// drains its CQs and writes each completion to the requester's reply word.
//
// Request ring (per agent): a compute warp's leader takes tickets for its
// lanes with one atomic; a slot is free once the agent has taken the request
// of the previous lap (gate word = laps taken); lanes write their 64 B
// descriptors, fence, and set the slot's ready mark (lap + 1).
#pragma once

#include <cstdint>

#include "sim/core/algo/io_common.h"

namespace gpunvme::algo {

struct AgentRing {
  std::uint64_t base = 0;  // entries x 64 B descriptors
  std::uint32_t entries = 0;
  std::uint64_t tail = 0;   // 32-bit ticket counter
  std::uint64_t gate = 0;   // per slot: laps taken by the agent
  std::uint64_t ready = 0;  // per slot: lap + 1 once the descriptor is written
};

// The descriptor a compute lane posts (64 B, one slot of the ring).
struct AgentRequest {
  std::uint64_t slba;
  std::uint64_t buffer;
  std::uint64_t reply;      // the requester's 8 B reply word
  std::uint64_t requested;  // when the thread had the request (stage records)
  std::uint32_t bytes;
  std::uint32_t queue;
  std::uint16_t nlb_zero_based;
  std::uint8_t opcode;
  std::uint8_t reserved[21];
};
static_assert(sizeof(AgentRequest) == 64, "one descriptor per 64 B slot");

// Reply word: status + 1 in the low half (0 = pending), the CID and queue
// trace id in the high half (for the requester's stage record).
GPUNVME_HD constexpr std::uint64_t make_reply(std::uint16_t status, std::uint16_t cid,
                                              std::uint32_t trace) {
  return (std::uint64_t{status} + 1u) | (std::uint64_t{cid} << 32) |
         (std::uint64_t{trace & 0xFFFFu} << 48);
}

// Per queue an agent owns: its counters, in the agent's registers.
struct AgentQueue {
  std::uint32_t queue = 0;   // index into the queue table
  std::uint32_t ticket = 0;  // SQ entries written
  std::uint32_t rung = 0;    // SQ tail last written to the doorbell
  std::uint32_t cq_head = 0;
  std::uint32_t cq_rung = 0;
  std::uint32_t outstanding = 0;  // rung, not completed
  Timestamp first_unrung = 0;     // when the oldest unrung entry was written
};

struct AgentContext {
  WarpContext w;  // queue table, CQ doorbell batching
  AgentRing ring;
  std::uint32_t ring_head = 0;  // next request to take
  AgentQueue* owned = nullptr;  // the queues this agent owns
  std::uint32_t owned_count = 0;
  const std::uint32_t* local_index = nullptr;  // queue index -> index into owned (or ~0u)
  std::uint32_t batch_size = 32;
  Timestamp batch_timeout = 0;  // picoseconds; 0 = ring at the end of every pass
  std::uint64_t shutdown = 0;   // GPU word set once every compute warp is done
};

// ---- compute side

// Posts one request per lane of `mask` to the agents serving request[lane].queue
// (`agent_of_queue[queue]` names the agent; `rings[agent]` its ring) with
// reply words `reply[lane]` (zero, in GPU memory).
template <class P>
GPUNVME_HD void agent_post(P& p, const AgentRing* rings, const std::uint32_t* agent_of_queue,
                           LaneMask mask, const Lanes<IoRequest>& request,
                           const Lanes<std::uint64_t>& reply) {
  const Timestamp requested = p.clock();
  LaneMask left = mask;
  while (left != 0) {
    const std::uint32_t agent = agent_of_queue[request[first_lane(p, left)].queue];
    const LaneMask group =
        p.ballot(left, [&](int lane) { return agent_of_queue[request[lane].queue] == agent; });
    left &= ~group;
    const AgentRing& ring = rings[agent];
    const std::uint32_t first = p.atomic_add_u32(ring.tail, lane_count(group));
    auto slot_free = [&](std::uint32_t t) {
      return p.load_u32(detail::word(ring.gate, t % ring.entries)) >= t / ring.entries;
    };
    // Lanes post as their slots free up: the agent takes requests in ticket
    // order, so the group's later tickets (a group may hold more tickets than
    // the ring has slots) wait only on its earlier ones being taken.
    LaneMask pending = group;
    while (pending != 0) {
      const LaneMask free =
          p.ballot(pending, [&](int lane) { return slot_free(first + lane_rank(group, lane)); });
      if (free == 0) {
        p.wait_until(
            [&] {
              bool any = false;
              for_each_lane(p, pending, [&](int lane) {
                any = any || slot_free(first + lane_rank(group, lane));
              });
              return any;
            },
            ring.gate, std::uint64_t{ring.entries} * 4);
        continue;
      }
      p.for_lanes(free, [&](int lane) {
        const IoRequest& r = request[lane];
        AgentRequest d{};
        d.slba = r.slba;
        d.buffer = r.buffer;
        d.reply = reply[lane];
        d.requested = requested;
        d.bytes = r.bytes;
        d.queue = r.queue;
        d.nlb_zero_based = r.nlb_zero_based;
        d.opcode = static_cast<std::uint8_t>(r.opcode);
        const std::uint32_t t = first + lane_rank(group, lane);
        p.store_bytes(ring.base + std::uint64_t{t % ring.entries} * sizeof(AgentRequest), &d,
                      sizeof d);
      });
      // The descriptor must be visible before its ready mark (agents run on
      // other SMs).
      p.fence_gpu();
      p.for_lanes(free, [&](int lane) {
        const std::uint32_t t = first + lane_rank(group, lane);
        p.store_u32(detail::word(ring.ready, t % ring.entries), t / ring.entries + 1u);
      });
      pending &= ~free;
    }
  }
}

// Waits for the replies of `mask`; status[lane] receives each NVMe status.
template <class P>
GPUNVME_HD void agent_wait(P& p, LaneMask mask, const Lanes<std::uint64_t>& reply,
                           Lanes<std::uint16_t>& status) {
  LaneMask pending = mask;
  while (pending != 0) {
    Lanes<std::uint64_t> value;
    const LaneMask got = p.ballot(pending, [&](int lane) {
      value[lane] = p.template load<std::uint64_t>(reply[lane]);
      return (value[lane] & 0xFFFFFFFFu) != 0;
    });
    if (got != 0) {
      for_each_lane(p, got, [&](int lane) {
        status[lane] = static_cast<std::uint16_t>((value[lane] & 0xFFFFFFFFu) - 1u);
        p.stage(static_cast<std::uint16_t>(value[lane] >> 48),
                static_cast<std::uint16_t>(value[lane] >> 32), Stage::Delivered);
      });
      p.for_lanes(got, [&](int lane) {
        const std::uint64_t zero = 0;
        p.store_bytes(reply[lane], &zero, 8);
      });
      pending &= ~got;
      continue;
    }
    std::uint64_t low = ~std::uint64_t{0}, high = 0;
    for_each_lane(p, pending, [&](int lane) {
      low = reply[lane] < low ? reply[lane] : low;
      high = reply[lane] + 8 > high ? reply[lane] + 8 : high;
    });
    p.wait_until(
        [&] {
          bool any = false;
          for_each_lane(p, pending, [&](int lane) {
            any = any || (p.template load<std::uint64_t>(reply[lane]) & 0xFFFFFFFFu) != 0;
          });
          return any;
        },
        low, high - low);
  }
}

// ---- agent side

namespace detail {

// Drains the CQ of one owned queue into the requesters' reply words.
template <class P>
GPUNVME_HD bool agent_drain(P& p, AgentContext& a, AgentQueue& s) {
  const QueuePair& q = a.w.queue(s.queue);
  bool any = false;
  for (;;) {
    Lanes<nvme::CompletionEntry> entry;
    const LaneMask valid = p.ballot(kAllLanes, [&](int lane) {
      const std::uint32_t position = s.cq_head + static_cast<std::uint32_t>(lane);
      entry[lane] = p.template load<nvme::CompletionEntry>(cq_entry(q, position));
      return entry[lane].phase() == expected_phase(position, q.entries);
    });
    const std::uint32_t fresh = leading_run(valid);
    if (fresh == 0) return any;
    // Acquire the SSD's writes (the data came before the CQE) before the
    // requesters are told.
    if (!any) p.fence_system();
    any = true;
    const LaneMask drained = lanes_below(fresh);
    record_lanes(p, drained,
                 [&](int lane) { record(p, q, entry[lane].cid, Stage::CompletionSeen); });
    s.cq_head += fresh;
    s.outstanding -= fresh;
    if (cq_doorbell_due(a.w, q, s.cq_head, s.cq_rung)) {
      ring_cq(p, q, s.cq_rung % q.entries, s.cq_head % q.entries);
      s.cq_rung = s.cq_head;
    }
    record_lanes(p, drained, [&](int lane) { record(p, q, entry[lane].cid, Stage::CqHeadSynced); });
    p.for_lanes(drained, [&](int lane) {
      const std::uint16_t cid = entry[lane].cid;
      const std::uint64_t table = q.agent_table + std::uint64_t{cid % q.entries} * 8;
      const std::uint64_t reply = p.template load<std::uint64_t>(table);
      const std::uint64_t value =
          make_reply(static_cast<std::uint16_t>(entry[lane].status_field >> 1), cid, q.trace_id);
      p.store_bytes(reply, &value, 8);
      const std::uint64_t free = 0;
      p.store_bytes(table, &free, 8);
    });
    if (fresh < static_cast<std::uint32_t>(kWarpLanes)) return any;
  }
}

// Whether the next entry of an owned queue with commands in flight has
// arrived.
template <class P>
GPUNVME_HD bool agent_queue_waiting(P& p, const AgentContext& a, const AgentQueue& s) {
  if (s.outstanding == 0) return false;
  const QueuePair& q = a.w.queue(s.queue);
  const auto e = p.template load<nvme::CompletionEntry>(cq_entry(q, s.cq_head));
  return e.phase() == expected_phase(s.cq_head, q.entries);
}

}  // namespace detail

// An agent warp's whole life: serves requests until `shutdown` is set and
// nothing is left in flight.
template <class P>
GPUNVME_HD void agent_loop(P& p, AgentContext& a) {
  const AgentRing& ring = a.ring;
  for (;;) {
    bool progress = false;
    // 1. Completions.
    for (std::uint32_t i = 0; i < a.owned_count; ++i) {
      AgentQueue& s = a.owned[i];
      if (s.outstanding != 0 && detail::agent_drain(p, a, s)) progress = true;
    }

    // 2. New requests: the ready prefix of the ring, up to a warp's width,
    // stopping at the first whose queue has no room.
    Lanes<AgentRequest> d;
    bool ring_blocked = false;  // requests wait, but their queues have no room
    const LaneMask ready = p.ballot(kAllLanes, [&](int lane) {
      const std::uint32_t t = a.ring_head + static_cast<std::uint32_t>(lane);
      return p.load_u32(detail::word(ring.ready, t % ring.entries)) == t / ring.entries + 1u;
    });
    const LaneMask run = lanes_below(leading_run(ready));
    if (run != 0) {
      p.for_lanes(run, [&](int lane) {
        const std::uint32_t t = a.ring_head + static_cast<std::uint32_t>(lane);
        d[lane] = p.template load<AgentRequest>(ring.base + std::uint64_t{t % ring.entries} *
                                                                sizeof(AgentRequest));
      });
      // A request may take its queue's next slot once the slot's previous
      // command and the one after it (ticket - entries + 1: at most
      // entries - 1 unfetched) have completed; the agent's table word of a
      // slot is zero when it is free.
      // Requests taken in the same pass count too: at most entries - 1 of a
      // queue's commands are in flight.
      Lanes<std::uint32_t> ticket;
      Lanes<std::uint32_t> in_flight;
      for_each_lane(p, run, [&](int lane) {
        std::uint32_t before = 0;
        for_each_lane(p, run & lanes_below(static_cast<std::uint32_t>(lane)),
                      [&](int l) { before += d[l].queue == d[lane].queue ? 1u : 0u; });
        const AgentQueue& s = a.owned[a.local_index[d[lane].queue]];
        ticket[lane] = s.ticket + before;
        in_flight[lane] = (s.ticket - s.rung) + s.outstanding + before;
      });
      const LaneMask room = p.ballot(run, [&](int lane) {
        const QueuePair& q = a.w.queue(d[lane].queue);
        const std::uint32_t t = ticket[lane];
        return in_flight[lane] + 1u <= q.entries - 1u &&
               p.template load<std::uint64_t>(q.agent_table + std::uint64_t{t % q.entries} * 8) ==
                   0 &&
               p.template load<std::uint64_t>(q.agent_table +
                                              std::uint64_t{(t + 1) % q.entries} * 8) == 0;
      });
      const LaneMask taken = lanes_below(leading_run(room)) & run;
      ring_blocked = taken == 0;
      if (taken != 0) {
        progress = true;
        // Hand the ring slots back before building: compute lanes may post
        // again while the agent works.
        p.for_lanes(taken, [&](int lane) {
          const std::uint32_t t = a.ring_head + static_cast<std::uint32_t>(lane);
          p.store_u32(detail::word(ring.gate, t % ring.entries), t / ring.entries + 1u);
        });
        a.ring_head += lane_count(taken);
        Lanes<std::uint32_t> slot;
        for_each_lane(p, taken, [&](int lane) {
          AgentQueue& s = a.owned[a.local_index[d[lane].queue]];
          const QueuePair& q = a.w.queue(s.queue);
          if (s.ticket == s.rung && s.first_unrung == 0) s.first_unrung = p.clock();
          slot[lane] = s.ticket % q.entries;
          ++s.ticket;
          p.stage_at(static_cast<std::uint16_t>(q.trace_id), static_cast<std::uint16_t>(slot[lane]),
                     Stage::Request, d[lane].requested);
          detail::record(p, q, static_cast<std::uint16_t>(slot[lane]), Stage::CidAllocated);
        });
        p.for_lanes(taken, [&](int lane) {
          const QueuePair& q = a.w.queue(d[lane].queue);
          IoRequest r;
          r.opcode = static_cast<nvme::NvmOpcode>(d[lane].opcode);
          r.slba = d[lane].slba;
          r.nlb_zero_based = d[lane].nlb_zero_based;
          r.buffer = d[lane].buffer;
          r.bytes = d[lane].bytes;
          detail::write_sqe(p, q, slot[lane], static_cast<std::uint16_t>(slot[lane]), r);
          p.store_bytes(q.agent_table + std::uint64_t{slot[lane]} * 8, &d[lane].reply, 8);
        });
        record_lanes(p, taken, [&](int lane) {
          detail::record(p, a.w.queue(d[lane].queue), static_cast<std::uint16_t>(slot[lane]),
                         Stage::SqeBuilt);
        });
      }
    }

    // 3. Doorbells that are due.
    const Timestamp now = p.clock();
    bool fenced = false;
    Timestamp deadline = 0;
    for (std::uint32_t i = 0; i < a.owned_count; ++i) {
      AgentQueue& s = a.owned[i];
      const std::uint32_t unrung = s.ticket - s.rung;
      if (unrung == 0) continue;
      const bool due =
          unrung >= a.batch_size || a.batch_timeout == 0 || now >= s.first_unrung + a.batch_timeout;
      if (!due) {
        const Timestamp at = s.first_unrung + a.batch_timeout;
        deadline = deadline == 0 || at < deadline ? at : deadline;
        continue;
      }
      const QueuePair& q = a.w.queue(s.queue);
      if (!fenced) {
        // The entries must be visible to the SSDs before any doorbell.
        p.fence_system();
        fenced = true;
      }
      for (std::uint32_t t = s.rung; t != s.ticket; ++t) {
        detail::record(p, q, static_cast<std::uint16_t>(t % q.entries), Stage::SqTailSynced);
      }
      detail::ring_sq(p, q, s.rung % q.entries, s.ticket % q.entries);
      for (std::uint32_t t = s.rung; t != s.ticket; ++t) {
        detail::record(p, q, static_cast<std::uint16_t>(t % q.entries), Stage::DoorbellRung);
      }
      s.outstanding += unrung;
      s.rung = s.ticket;
      s.first_unrung = 0;
      progress = true;
    }
    if (progress) continue;

    // 4. Nothing to do: leave, or sleep until a request, a completion, the
    // shutdown word or a doorbell deadline.
    bool busy = false;
    for (std::uint32_t i = 0; i < a.owned_count; ++i) {
      busy = busy || a.owned[i].outstanding != 0 || a.owned[i].ticket != a.owned[i].rung;
    }
    if (!busy && p.load_u32(a.shutdown) != 0) return;
    WaitSet set;
    set.add(ring.ready, std::uint64_t{ring.entries} * 4);
    set.add(a.shutdown, 4);
    for (std::uint32_t i = 0; i < a.owned_count; ++i) {
      const AgentQueue& s = a.owned[i];
      if (s.outstanding == 0) continue;
      const QueuePair& q = a.w.queue(s.queue);
      set.add(q.cq_base, std::uint64_t{q.entries} * nvme::kCqEntrySize);
    }
    auto wake = [&] {
      const std::uint32_t t = a.ring_head;
      if (!ring_blocked &&
          p.load_u32(detail::word(ring.ready, t % ring.entries)) == t / ring.entries + 1u) {
        return true;
      }
      if (!busy && p.load_u32(a.shutdown) != 0) return true;
      for (std::uint32_t i = 0; i < a.owned_count; ++i) {
        if (detail::agent_queue_waiting(p, a, a.owned[i])) return true;
      }
      return false;
    };
    if (deadline != 0 || set.overflow) {
      const Timestamp limit = set.overflow && (deadline == 0 || deadline > p.clock() + 1000000u)
                                  ? p.clock() + 1000000u
                                  : deadline;
      p.wait_until_deadline(wake, limit, set.flat, set.count);
    } else {
      p.wait_until_any(wake, set.flat, set.count);
    }
  }
}

}  // namespace gpunvme::algo
