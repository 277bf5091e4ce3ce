// The strategies on the scripted platform (sim/core/platform/scripted.h): warps
// interleaved operation by operation in orders the tests choose, against an
// NVMe target the tests drive by hand. Each test states the interleaving it
// forces and what must hold:
// - no lost completion: every request completes exactly once, and every
//   warp returns (none waits for a wake-up that never comes);
// - each request gets its own completion: the target completes a command
//   with a status derived from its LBA, and the requester checks it;
// - no CID twice in flight on a queue, no doorbell beyond the ring, no CQ
//   head passing the tail, no CQ overflow (the target's checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/mapping.h"
#include "sim/core/algo/queue_state.h"
#include "sim/core/algo/strategy.h"
#include "sim/core/platform/scripted.h"

namespace gpunvme {
namespace {

using algo::LaneMask;
using algo::Lanes;
using platform::ScriptedMachine;
using platform::ScriptedOp;
using platform::ScriptedStep;
using platform::ScriptedTarget;
using platform::ScriptedWarp;

constexpr std::uint64_t kDoorbells = 0xF0000000u;

// The status the target gives the command reading `slba`: unique per
// request in these tests, so a completion matched to the wrong request
// shows.
std::uint16_t status_for(std::uint64_t slba) { return static_cast<std::uint16_t>(1 + slba % 4000); }

// Queues, a target and warps of one strategy.
struct Rig {
  ScriptedMachine machine{0x10000000u, 8u << 20};
  ScriptedTarget target{machine};
  std::vector<algo::QueuePair> queues;
  algo::Strategy strategy;
  std::uint32_t iodepth = 1;
  std::uint32_t users = 1;  // warps sharing a queue (CID partitions)
  // Service warps (polling warps, I/O agents) return once this word is set,
  // by the last compute warp to finish.
  std::uint64_t shutdown = 0;
  std::uint64_t finished = 0;
  std::uint32_t compute_warps = 0;
  // io_agents: one agent owning every queue, its request ring.
  algo::AgentRing ring;
  std::vector<std::uint32_t> agent_of_queue;
  // Completed requests: slba -> times its requester saw it complete.
  std::map<std::uint64_t, int> completed;
  std::vector<std::string> wrong;  // completions seen with another request's status

  Rig(algo::Strategy s, std::uint32_t queue_count, std::uint32_t entries, std::uint32_t depth = 1,
      std::uint32_t sharing = 1, std::int64_t configured_cid_space = 0)
      : strategy(s), iodepth(depth), users(sharing) {
    queues.reserve(queue_count);
    for (std::uint32_t i = 0; i < queue_count; ++i) {
      algo::QueuePair q;
      q.trace_id = i;
      q.qid = static_cast<std::uint16_t>(i + 1);
      q.entries = entries;
      q.sq_base = machine.allocate(std::uint64_t{entries} * nvme::kSqEntrySize, 4096);
      q.cq_base = machine.allocate(std::uint64_t{entries} * nvme::kCqEntrySize, 4096);
      q.sq_doorbell = kDoorbells + 8u * i;
      q.cq_doorbell = kDoorbells + 8u * i + 4u;
      const std::uint32_t cid_space =
          algo::cid_space_for(s.cid, configured_cid_space, entries, users, iodepth);
      algo::place_queue_state(q, cid_space, s.submission == algo::Submission::AgentBatch,
                              [&](std::uint64_t bytes, std::uint64_t alignment) {
                                return machine.allocate(bytes, alignment);
                              });
      queues.push_back(q);
      target.add_queue(q);
    }
    shutdown = machine.allocate(4);
    finished = machine.allocate(4);
    ring.entries = 8;
    ring.base = machine.allocate(std::uint64_t{ring.entries} * sizeof(algo::AgentRequest), 4096);
    ring.tail = machine.allocate(4);
    ring.gate = machine.allocate(std::uint64_t{ring.entries} * 4);
    ring.ready = machine.allocate(std::uint64_t{ring.entries} * 4);
    agent_of_queue.assign(queue_count, 0);
  }

  // The last compute warp to finish sets the shutdown word.
  static void finish(ScriptedWarp& p, const Rig& rig) {
    if (p.atomic_add_u32(rig.finished, 1) + 1 == rig.compute_warps) p.store_u32(rig.shutdown, 1);
  }

  algo::WarpContext context(std::uint32_t partition) const {
    algo::WarpContext w;
    w.queues = queues.data();
    w.queue_count = static_cast<std::uint32_t>(queues.size());
    w.strategy = strategy;
    w.iodepth = iodepth;
    w.cid_partition = partition;
    w.cid_local_bits = algo::local_cid_bits(iodepth);
    return w;
  }

  void seen(std::uint64_t slba, std::uint16_t status) {
    ++completed[slba];
    if (status != status_for(slba)) {
      wrong.push_back("request " + std::to_string(slba) + " got status " + std::to_string(status));
    }
  }

  // A compute warp of a queue-based strategy: `batches` times, iodepth
  // rounds of one command per lane of `mask` to queue `queue` (LBAs from
  // `first_lba` on), submitted, then waited for.
  int spawn_compute(std::uint32_t partition, std::uint32_t queue, LaneMask mask,
                    std::uint64_t first_lba, std::uint32_t batches) {
    ++compute_warps;
    if (strategy.submission == algo::Submission::AgentBatch) {
      return spawn_agent_compute(partition, queue, mask, first_lba, batches);
    }
    return machine.spawn([this, partition, queue, mask, first_lba, batches](ScriptedWarp& p) {
      algo::WarpContext w = context(partition);
      std::vector<Lanes<algo::Pending>> rounds(iodepth);
      w.rounds = rounds.data();
      w.round_count = iodepth;
      std::uint64_t lba = first_lba;
      for (std::uint32_t b = 0; b < batches; ++b) {
        for (std::uint32_t d = 0; d < iodepth; ++d) {
          Lanes<algo::IoRequest> request{};
          algo::visit_lanes(mask, [&](int lane) {
            request[lane].slba = lba++;
            request[lane].bytes = 4096;
            request[lane].buffer = 0x20000000u;
            request[lane].queue = queue;
            request[lane].pool_index = d;
          });
          rounds[d].fill(algo::Pending{});
          algo::submit(p, w, mask, request, rounds[d]);
        }
        for (std::uint32_t d = 0; d < iodepth; ++d) {
          algo::wait(p, w, rounds[d], mask);
          const std::uint64_t round_first =
              lba - std::uint64_t{iodepth - d} * algo::lane_count(mask);
          algo::visit_lanes(mask, [&](int lane) {
            seen(round_first + algo::lane_rank(mask, lane), rounds[d][lane].status);
          });
        }
      }
      finish(p, *this);
    });
  }

  // io_agents: the compute side posts to the agent's ring and waits for the
  // replies.
  int spawn_agent_compute(std::uint32_t partition, std::uint32_t queue, LaneMask mask,
                          std::uint64_t first_lba, std::uint32_t batches) {
    std::vector<std::uint64_t> replies(iodepth);
    for (std::uint64_t& r : replies) r = machine.allocate(8 * algo::kWarpLanes, 8);
    (void)partition;
    return machine.spawn([this, replies, queue, mask, first_lba, batches](ScriptedWarp& p) {
      std::uint64_t lba = first_lba;
      for (std::uint32_t b = 0; b < batches; ++b) {
        std::vector<std::uint64_t> round_first(iodepth);
        std::vector<Lanes<std::uint64_t>> reply(iodepth);
        for (std::uint32_t d = 0; d < iodepth; ++d) {
          Lanes<algo::IoRequest> request{};
          round_first[d] = lba;
          algo::visit_lanes(mask, [&](int lane) {
            request[lane].slba = lba++;
            request[lane].bytes = 4096;
            request[lane].buffer = 0x20000000u;
            request[lane].queue = queue;
            reply[d][lane] = replies[d] + 8u * static_cast<std::uint32_t>(lane);
          });
          algo::agent_post(p, &ring, agent_of_queue.data(), mask, request, reply[d]);
        }
        for (std::uint32_t d = 0; d < iodepth; ++d) {
          Lanes<std::uint16_t> status{};
          algo::agent_wait(p, mask, reply[d], status);
          algo::visit_lanes(mask, [&](int lane) {
            seen(round_first[d] + algo::lane_rank(mask, lane), status[lane]);
          });
        }
      }
      finish(p, *this);
    });
  }

  // The I/O agent serving every queue (io_agents).
  int spawn_agent() {
    return machine.spawn([this](ScriptedWarp& p) {
      std::vector<algo::AgentQueue> owned(queues.size());
      std::vector<std::uint32_t> local(queues.size());
      for (std::uint32_t i = 0; i < queues.size(); ++i) {
        owned[i].queue = i;
        local[i] = i;
      }
      algo::AgentContext a;
      a.w = context(0);
      a.ring = ring;
      a.owned = owned.data();
      a.owned_count = static_cast<std::uint32_t>(owned.size());
      a.local_index = local.data();
      a.batch_size = 2;
      a.shutdown = shutdown;
      algo::agent_loop(p, a);
    });
  }

  // A polling warp draining every queue (polling_warps).
  int spawn_poller() {
    return machine.spawn([this](ScriptedWarp& p) {
      std::vector<std::uint32_t> mine(queues.size());
      for (std::uint32_t i = 0; i < queues.size(); ++i) mine[i] = i;
      algo::polling_warp(p, context(0), mine.data(), static_cast<std::uint32_t>(mine.size()),
                         shutdown);
    });
  }

  // The target's part, as the tests' idle hook: fetch what is rung, complete
  // what is fetched (oldest first, or newest first), as far as the CQs have
  // room. Returns whether anything moved.
  bool serve(bool newest_first = false) {
    bool moved = false;
    for (std::size_t i = 0; i < target.queue_count(); ++i) {
      if (!target.fetch(i).empty()) moved = true;
      ScriptedTarget::Queue& q = target.queue(i);
      while (!q.fetched.empty() && target.cq_has_room(i)) {
        const ScriptedTarget::Command c = newest_first ? q.fetched.back() : q.fetched.front();
        target.complete(i, c.cid, status_for(c.slba));
        moved = true;
      }
    }
    return moved;
  }

  void expect_clean(std::uint64_t requests) {
    EXPECT_TRUE(machine.all_done()) << "a warp waits for a wake-up that never comes";
    for (const std::string& e : target.errors()) ADD_FAILURE() << e;
    for (const std::string& e : machine.errors()) ADD_FAILURE() << e;
    for (const std::string& e : wrong) ADD_FAILURE() << e;
    EXPECT_EQ(completed.size(), requests) << "requests completed";
    for (const auto& [slba, times] : completed) {
      EXPECT_EQ(times, 1) << "request " << slba << " completed " << times << " times";
    }
    for (std::size_t i = 0; i < target.queue_count(); ++i) {
      EXPECT_TRUE(target.queue(i).fetched.empty()) << "queue " << i << " has commands in flight";
    }
  }
};

bool is_store_to(const ScriptedStep& s, std::uint64_t addr) {
  return s.op == ScriptedOp::kStore && s.addr == addr;
}
bool is_atomic_on(const ScriptedStep& s, std::uint64_t addr) {
  return s.op == ScriptedOp::kAtomic && s.addr == addr;
}

// ---------------------------------------------------------------------------
// The platform itself.

TEST(ScriptedPlatform, RunsWarpsOneOperationAtATimeInTheChosenOrder) {
  // Two warps each add to a word twice; stepping B, A, A, B gives the
  // sequence of old values that order implies, and a wait blocks until
  // another warp's store makes it true.
  ScriptedMachine m(0x1000, 4096);
  const std::uint64_t counter = m.allocate(4);
  const std::uint64_t flag = m.allocate(4);
  std::vector<std::pair<int, std::uint32_t>> seen;
  auto body = [&](ScriptedWarp& p) {
    seen.emplace_back(p.id(), p.atomic_add_u32(counter, 1));
    seen.emplace_back(p.id(), p.atomic_add_u32(counter, 1));
  };
  const int a = m.spawn(body);
  const int b = m.spawn(body);
  const int c = m.spawn([&](ScriptedWarp& p) {
    p.wait_until([&] { return p.load_u32(flag) == 1; }, flag, 4);
    seen.emplace_back(p.id(), 100);
  });
  EXPECT_EQ(m.next(a).op, ScriptedOp::kStart);
  m.step(b);  // to its first atomic
  EXPECT_TRUE(is_atomic_on(m.next(b), counter));
  m.step(a);
  m.step(a);  // A's first atomic: old value 0
  m.step(b);  // B's first: 1
  m.step(a);  // A's second: 2, then A returns
  EXPECT_TRUE(m.done(a));
  m.run(c);
  EXPECT_TRUE(m.blocked(c));
  m.run(c);
  EXPECT_TRUE(m.blocked(c)) << "re-evaluated, still false";
  m.put<std::uint32_t>(flag, 1);
  m.step(c);
  EXPECT_TRUE(m.done(c));
  m.run(b);
  EXPECT_TRUE(m.all_done());
  const std::vector<std::pair<int, std::uint32_t>> expected = {
      {a, 0}, {b, 1}, {a, 2}, {c, 100}, {b, 3}};
  EXPECT_EQ(seen, expected);
}

TEST(ScriptedPlatform, TargetPostsCompletionsWithThePhaseOfTheirLapAndChecksDoorbells) {
  // A 4-entry queue: the fifth completion lands in slot 0 with phase 0; a
  // CQ head doorbell past the tail and a second command with an in-flight
  // CID are errors.
  ScriptedMachine m(0x100000, 1 << 20);
  ScriptedTarget t(m);
  algo::QueuePair q;
  q.entries = 4;
  q.sq_base = m.allocate(4 * 64, 4096);
  q.cq_base = m.allocate(4 * 16, 4096);
  q.sq_doorbell = kDoorbells;
  q.cq_doorbell = kDoorbells + 4;
  t.add_queue(q);
  auto put_sqe = [&](std::uint32_t slot, std::uint16_t cid) {
    m.put(q.sq_base + slot * 64u, nvme::make_read(cid, 1, 100 + cid, 0, 0x1000, 0));
  };
  const int w = m.spawn([&](ScriptedWarp& p) {
    for (std::uint32_t i = 0; i < 5; ++i) {
      put_sqe(i % 4, static_cast<std::uint16_t>(i));
      p.mmio_store_u32(q.sq_doorbell, (i + 1) % 4);
      p.fence_system();  // parks here: the test serves the command
      p.mmio_store_u32(q.cq_doorbell, (i + 1) % 4);
    }
    put_sqe(1, 7);
    put_sqe(2, 7);
    p.mmio_store_u32(q.sq_doorbell, 3);
    p.mmio_store_u32(q.cq_doorbell, 2);  // passes the tail: nothing posted since head 1
  });
  for (std::uint32_t i = 0; i < 5; ++i) {
    m.run_until(w, [](const ScriptedStep& s) { return s.op == ScriptedOp::kFence; });
    ASSERT_EQ(t.fetch(0).size(), 1u);
    ASSERT_TRUE(t.complete(0, static_cast<std::uint16_t>(i), 9));
    const auto e = m.get<nvme::CompletionEntry>(q.cq_base + (i % 4) * 16u);
    EXPECT_EQ(e.cid, i);
    EXPECT_EQ(e.phase(), i < 4 ? 1 : 0) << "completion " << i;
    EXPECT_EQ(e.status_field >> 1, 9);
    m.step(w);
  }
  m.run(w);
  EXPECT_TRUE(m.done(w));
  EXPECT_EQ(t.fetch(0).size(), 2u);
  const std::vector<std::string> errors = t.errors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("passes the tail"), std::string::npos);
  EXPECT_NE(errors[1].find("CID 7 fetched while still in flight"), std::string::npos);
  EXPECT_TRUE(t.complete(0, 7, 0));
  EXPECT_TRUE(t.complete(0, 7, 0));
  EXPECT_FALSE(t.complete(0, 7, 0)) << "nothing of CID 7 left in flight";
}

// ---------------------------------------------------------------------------
// The lost wake-up around publish_ready (ticket_ready submission).

// A warp that marks its entry ready and then offers to publish: the shape of
// submit_per_thread's ticket_ready path, with the publication step passed
// in, so that a publication without the re-check can be driven through the
// same script.
template <class Publish>
void mark_and_publish(ScriptedWarp& p, const algo::QueuePair& q, std::uint64_t slba,
                      Publish&& publish) {
  const std::uint32_t t = p.atomic_add_u32(q.ticket, 1);
  const nvme::SubmissionEntry sqe =
      nvme::make_read(static_cast<std::uint16_t>(t % q.entries), q.nsid, slba, 0, 0x1000, 0);
  p.store_bytes(q.sq_base + std::uint64_t{t % q.entries} * nvme::kSqEntrySize, &sqe, sizeof sqe);
  p.fence_system();
  p.store_u32(algo::detail::word(q.ready, t % q.entries), t / q.entries + 1u);
  p.fence_gpu();
  publish(p, q);
}

// publish_ready without its re-check after the lock is released.
void publish_once(ScriptedWarp& p, const algo::QueuePair& q) {
  if (p.atomic_cas_u32(q.tail_lock, 0u, 1u) != 0u) return;
  const std::uint32_t tail = p.load_u32(q.turn);
  std::uint32_t end = tail;
  while (p.load_u32(algo::detail::word(q.ready, end % q.entries)) == end / q.entries + 1u) ++end;
  if (end != tail) {
    algo::detail::ring_sq(p, q, tail % q.entries, end % q.entries);
    p.store_u32(q.turn, end);
  }
  p.store_u32(q.tail_lock, 0u);
}

// The interleaving: A takes the tail lock and scans the ready marks (finding
// only its own entry); B marks its entry ready and fails to take the lock,
// so it leaves the publication to A; then A rings the doorbell and releases
// the lock. Returns the entries the SQ tail doorbell covers at the end.
template <class Publish>
std::uint64_t lock_handed_over_during_scan(Publish&& publish) {
  Rig rig(algo::named_strategy(algo::NamedStrategy::BamTicket), 1, 8);
  const algo::QueuePair q = rig.queues[0];
  const int a = rig.machine.spawn([&](ScriptedWarp& p) { mark_and_publish(p, q, 1, publish); });
  const int b = rig.machine.spawn([&](ScriptedWarp& p) { mark_and_publish(p, q, 2, publish); });
  ScriptedMachine& m = rig.machine;
  // A: ticket 0, entry, ready mark, takes the lock, scans (slot 1 not ready).
  m.run_until(a, [&](const ScriptedStep& s) { return is_atomic_on(s, q.tail_lock); });
  m.step(a);
  m.run_until(a, [&](const ScriptedStep& s) { return s.op == ScriptedOp::kMmio; });
  // B: ticket 1, entry, ready mark; its lock attempt fails while A holds it.
  m.run(b);
  EXPECT_TRUE(m.done(b));
  EXPECT_EQ(m.get<std::uint32_t>(q.tail_lock), 1u);
  // A rings for its own entry, releases the lock, and (with the re-check)
  // finds B's mark and publishes it.
  m.run(a);
  EXPECT_TRUE(m.all_done());
  return rig.target.queue(0).sq_rung;
}

TEST(ScriptedRaces, TicketReadyLockHolderRechecksAfterReleasingSoNoReadyEntryIsStranded) {
  // publish_ready: both entries reach the doorbell (B's through A's re-check).
  EXPECT_EQ(lock_handed_over_during_scan([](ScriptedWarp& p, const algo::QueuePair& q) {
              algo::detail::publish_ready(p, q);
            }),
            2u);
  // The same interleaving strands B's entry when the holder does not re-check:
  // the script finds the race.
  EXPECT_EQ(lock_handed_over_during_scan(publish_once), 1u);
}

TEST(ScriptedRaces, BamTicketWarpsCompleteThroughTheLockHandOver) {
  // The whole strategy (submit and wait) through the same hand-over: A holds
  // the tail lock, parked before ringing, while B's lanes mark their entries
  // ready and fail to take it; then everyone runs with the target serving.
  // Every request completes once, with its own status.
  Rig rig(algo::named_strategy(algo::NamedStrategy::BamTicket), 1, 8, 1, 2);
  const algo::QueuePair q = rig.queues[0];
  ScriptedMachine& m = rig.machine;
  const int a = rig.spawn_compute(0, 0, 0x3u, 100, 2);
  const int b = rig.spawn_compute(1, 0, 0x3u, 200, 2);
  m.run_until(a, [&](const ScriptedStep& s) { return s.op == ScriptedOp::kMmio; });
  ASSERT_EQ(m.get<std::uint32_t>(q.tail_lock), 1u);
  m.run(b);
  EXPECT_TRUE(m.blocked(b));
  m.on_idle([&] { return rig.serve(); });
  EXPECT_TRUE(m.run_all({a, b}));
  rig.expect_clean(8);
}

// ---------------------------------------------------------------------------
// The CQ lock handed over while the entries wrap (phase flip).

TEST(ScriptedRaces, CidFlagsDrainLockHandedOverAcrossTheWrap) {
  // warp_batch (cid_flags completion), a 4-entry queue shared by two warps
  // of 3 lanes... one lane each per batch, several batches so the CQ wraps.
  // Script per batch: A takes the CQ lock and reads the head entry; the
  // target posts further completions, crossing the end of the ring (their
  // phase flips) while A holds the lock; B, finding the lock held, waits; A
  // drains what it saw, releases; B (or A) drains the wrapped entries.
  Rig rig(algo::named_strategy(algo::NamedStrategy::WarpBatch), 1, 4, 1, 2);
  const algo::QueuePair q = rig.queues[0];
  ScriptedMachine& m = rig.machine;
  const int a = rig.spawn_compute(0, 0, 0x1u, 100, 6);
  const int b = rig.spawn_compute(1, 0, 0x3u, 200, 6);
  int handovers = 0;
  for (int round = 0; round < 40 && !m.all_done(); ++round) {
    // Both submit (B's two commands and A's one: the queue's 3 slots).
    m.run(a);
    m.run(b);
    rig.target.fetch(0);
    // One completion, so that A's reap takes the lock; park A inside.
    ScriptedTarget::Queue& tq = rig.target.queue(0);
    if (!tq.fetched.empty()) {
      const auto c = tq.fetched.front();
      rig.target.complete(0, c.cid, status_for(c.slba));
    }
    if (m.run_until(a, [&](const ScriptedStep& s) { return is_store_to(s, q.cq_head); })) {
      // A holds the lock, has read the entries; the rest arrive now.
      EXPECT_EQ(m.get<std::uint32_t>(q.cq_lock), 1u);
      rig.serve();
      m.run(b);  // finds the lock held: waits or reaps nothing
      ++handovers;
    }
    m.run_all({a, b}, 3, 5000);  // until both wait for the target
  }
  m.on_idle([&] { return rig.serve(); });
  EXPECT_TRUE(m.run_all({a, b}));
  EXPECT_GT(handovers, 2);
  EXPECT_GE(rig.target.queue(0).cq_posted, 2u * q.entries) << "the CQ wrapped at least twice";
  rig.expect_clean(18);
}

TEST(ScriptedRaces, CqScanHeadLockHandedOverAcrossTheWrap) {
  // bam_ticket (cq_scan completion), 4-entry queue, two warps of one lane.
  // Script per round: A finds its CQE, marks it consumed and takes the CQ
  // lock to move the head; while A holds it (parked before releasing), B
  // finds its own CQE, marks it and fails to take the lock; A's re-check
  // after releasing must move the head over B's entry too, across the end
  // of the ring. The CQ head doorbell may never pass the tail.
  Rig rig(algo::named_strategy(algo::NamedStrategy::BamTicket), 1, 4, 1, 2);
  const algo::QueuePair q = rig.queues[0];
  ScriptedMachine& m = rig.machine;
  const int a = rig.spawn_compute(0, 0, 0x1u, 100, 8);
  const int b = rig.spawn_compute(1, 0, 0x1u, 200, 8);
  int handovers = 0;
  for (int round = 0; round < 40 && !m.all_done(); ++round) {
    m.run(a);
    m.run(b);
    rig.serve();
    if (m.run_until(a, [&](const ScriptedStep& s) {
          return is_store_to(s, q.cq_lock) && m.get<std::uint32_t>(q.cq_lock) == 1u;
        })) {
      // A is about to release the lock; B consumes its entry meanwhile.
      m.run_until(b, [&](const ScriptedStep& s) { return is_atomic_on(s, q.cq_lock); });
      m.step(b);  // fails: A holds the lock
      ++handovers;
    }
    m.run_all({a, b}, 2, 5000);  // until both wait for the target
    // Everything posted is consumed by now: the head covers it all (B's
    // entry through A's re-check).
    EXPECT_EQ(rig.target.queue(0).cq_released, rig.target.queue(0).cq_posted) << "round " << round;
  }
  m.on_idle([&] { return rig.serve(); });
  EXPECT_TRUE(m.run_all({a, b}));
  EXPECT_GT(handovers, 2);
  EXPECT_GE(rig.target.queue(0).cq_posted, 3u * q.entries);
  EXPECT_EQ(rig.target.queue(0).cq_released, rig.target.queue(0).cq_posted)
      << "the head moved over every consumed entry";
  rig.expect_clean(16);
}

// ---------------------------------------------------------------------------
// CID reuse at the wrap.

TEST(ScriptedRaces, CqScanDoesNotMatchAConsumedEntryOfItsReusedCid) {
  // per_command submission, counter_lock CIDs over a CID space of 2, cq_scan
  // completion, a 4-entry queue. A CID is free again once its command is
  // consumed, before the CQ head moves past its entry. Script: B's command
  // (CID 0) completes; B consumes it and takes the CQ lock, and stays parked
  // holding it, the head unmoved. A's first command (CID 1) completes and is
  // consumed; A's second command gets CID 0 again, while B's consumed entry
  // with CID 0 is still in the scan window. A must skip that entry and wait
  // for its own: its request gets its own status, not B's.
  const algo::Strategy s{algo::QueueMapping::PerWarp, algo::CidScheme::CounterLock,
                         algo::Submission::PerCommand, algo::Completion::CqScan};
  Rig rig(s, 1, 4, 1, 2, 2);
  const algo::QueuePair q = rig.queues[0];
  ScriptedMachine& m = rig.machine;
  const int a = rig.spawn_compute(0, 0, 0x1u, 100, 2);
  const int b = rig.spawn_compute(1, 0, 0x1u, 200, 1);
  m.run(b);
  rig.serve();
  ASSERT_TRUE(m.run_until(b, [&](const ScriptedStep& st) { return is_atomic_on(st, q.cq_lock); }));
  m.step(b);  // B takes the CQ lock
  ASSERT_EQ(m.get<std::uint32_t>(q.cq_lock), 1u);
  m.run(a);  // A's first command, CID 1
  rig.serve();
  m.run(a);  // consumed; A's second command takes CID 0 and waits
  EXPECT_TRUE(m.blocked(a)) << "A took the consumed entry of CID 0 as its own";
  EXPECT_EQ(rig.target.queue(0).sq_rung, 3u);
  EXPECT_EQ(m.get<std::uint32_t>(q.cq_head), 0u) << "the head is held back by B's lock";
  // A's entry arrives; A finds it while B still holds the lock.
  rig.serve();
  m.run(a);
  EXPECT_TRUE(m.done(a));
  EXPECT_EQ(m.get<std::uint32_t>(q.cq_head), 0u);
  m.on_idle([&] { return rig.serve(); });
  EXPECT_TRUE(m.run_all({b, a}));
  rig.expect_clean(3);
}

// Every named strategy and the policy variants (CID schemes, completion
// policies), over tiny queues that wrap many times, under interleavings
// chosen by seed: warps stepped round robin in a shuffled order with
// varying quanta, the target completing oldest or newest first. What must
// hold: every request completes once with its own status, no CID twice in
// flight, every warp returns. Deterministic: the same seeds every run.
struct Case {
  const char* name;
  algo::Strategy strategy;
};

// Whether each warp owns a queue of its own (exclusive submission).
bool own_queues(const algo::Strategy& s) { return s.submission == algo::Submission::Exclusive; }

std::vector<Case> cases() {
  using algo::CidScheme;
  using algo::Completion;
  using algo::NamedStrategy;
  using algo::QueueMapping;
  using algo::Submission;
  return {
      {"all_threads", algo::named_strategy(NamedStrategy::AllThreads)},
      {"bam_ticket", algo::named_strategy(NamedStrategy::BamTicket)},
      {"warp_batch", algo::named_strategy(NamedStrategy::WarpBatch)},
      {"per_command/counter_lock/cid_flags",
       {QueueMapping::PerWarp, CidScheme::CounterLock, Submission::PerCommand,
        Completion::CidFlags}},
      {"ticket_ready/warp_partition/cid_flags",
       {QueueMapping::PerWarp, CidScheme::WarpPartition, Submission::TicketReady,
        Completion::CidFlags}},
      {"warp_batch/thread_pool/cq_scan",
       {QueueMapping::PerWarp, CidScheme::ThreadPool, Submission::WarpBatch, Completion::CqScan}},
      {"warp_batch/polling_warps",
       {QueueMapping::PerWarp, CidScheme::SqSlot, Submission::WarpBatch, Completion::PollingWarps}},
      {"per_warp_queue", algo::named_strategy(NamedStrategy::PerWarpQueue)},
      {"io_agents", algo::named_strategy(NamedStrategy::IoAgents)},
  };
}

TEST(ScriptedRaces, EveryQueueStrategyUnderSeededInterleavingsOfWrappingQueues) {
  for (const Case& c : cases()) {
    for (std::uint32_t seed = 1; seed <= 6; ++seed) {
      SCOPED_TRACE(std::string(c.name) + " seed " + std::to_string(seed));
      std::mt19937 random(seed);
      // Three warps on one 4-entry queue (iodepth 2 but for all_threads).
      const std::uint32_t depth = c.strategy.cid == algo::CidScheme::ThreadPool ? 1 : 2;
      const bool owned = own_queues(c.strategy);
      Rig rig(c.strategy, owned ? 3 : 1, 4, depth, owned ? 1 : 3);
      const LaneMask masks[3] = {0x1u, 0x3u, 0x5u};
      std::vector<int> order;
      for (std::uint32_t w = 0; w < 3; ++w) {
        order.push_back(
            rig.spawn_compute(owned ? 0 : w, owned ? w : 0, masks[w], 1000 * (w + 1), 3));
      }
      if (c.strategy.completion == algo::Completion::PollingWarps) {
        order.push_back(rig.spawn_poller());
      }
      if (c.strategy.submission == algo::Submission::AgentBatch) order.push_back(rig.spawn_agent());
      std::shuffle(order.begin(), order.end(), random);
      const bool newest_first = seed % 2 == 0;
      rig.machine.on_idle([&] { return rig.serve(newest_first); });
      const std::uint64_t quantum = 1 + random() % 5;
      // About 4000 steps each: a limit far above that stops a livelock.
      EXPECT_TRUE(rig.machine.run_all(order, quantum, 50000));
      rig.expect_clean(std::uint64_t{depth} * 3 * (1 + 2 + 2));
      for (std::size_t i = 0; i < rig.target.queue_count(); ++i) {
        EXPECT_GT(rig.target.queue(i).cq_posted, 4u) << "queue " << i << " wrapped";
      }
    }
  }
}

}  // namespace
}  // namespace gpunvme
