// Real concurrency: the strategies on the host-thread platform, one OS thread
// per warp (and per I/O agent or polling warp), against the software NVMe
// target's threads. The target checks the protocol as it serves (doorbells,
// SQ overrun, CQ head, a CID reused while outstanding, torn entries); the
// test checks that every command completes exactly once, successfully, with
// its data in its buffer. Queues go down to 2 entries; 16 to 32 warps race on
// them. Every case runs twice: with acquire/release accesses and in the
// platform's relaxed mode, where only the algorithm's fences order a warp's
// stores (sim/core/platform/host_threads.h), so that a missing fence shows up.
// Queues are chosen by the library's mapping (sim/core/algo/mapping.h), over one
// or several software targets (SSDs).
//
// Under ThreadSanitizer: scripts/build.sh tsan builds only this program
// (build-tsan/platform_tsan_tests) and scripts/test.sh runs it.
#include "sim/core/platform/host_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/mapping.h"
#include "sim/core/algo/queue_state.h"
#include "sim/core/algo/strategy.h"
#include "sim/core/platform/soft_target.h"

namespace gpunvme {
namespace {

using algo::CidScheme;
using algo::Completion;
using algo::Submission;
using platform::HostArena;
using platform::HostWarp;
using platform::SoftTarget;

// A hang is a failure: end the process with a message instead of waiting
// for the test runner's timeout.
class Watchdog {
 public:
  explicit Watchdog(std::string what, int seconds = 300) : what_(std::move(what)) {
    thread_ = std::thread([this, seconds] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
      while (!done_.load()) {
        if (std::chrono::steady_clock::now() > until) {
          std::fprintf(stderr, "hang: %s did not finish\n", what_.c_str());
          std::_Exit(1);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  // Each case's wall time goes to the log, so that a slow case on a loaded
  // machine can be told from a hang.
  ~Watchdog() {
    done_.store(true);
    thread_.join();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started_;
    std::fprintf(stderr, "case %s: %.2f s\n", what_.c_str(), took.count());
  }

 private:
  std::string what_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<bool> done_{false};
  std::thread thread_;
};

struct Case {
  std::string name;
  algo::Strategy strategy;
  std::uint32_t entries = 8;
  std::uint32_t queues = 2;  // per SSD
  std::uint32_t warps = 16;
  std::uint32_t iodepth = 2;
  std::uint32_t rounds = 2;
  std::uint32_t cq_doorbell_batch = 1;
  std::uint32_t service_warps = 0;  // pollers or agents
  bool agents = false;
  bool shadow = false;
  std::uint32_t ssds = 1;
  algo::SsdMapping ssd_mapping = algo::SsdMapping::Interleave;
  bool relaxed = false;
};

constexpr std::uint64_t kBufferBytes = 64;
// Host warps per notional SM (per_sm mapping).
constexpr std::uint32_t kWarpsPerSm = 4;

// slba names the thread, its I/O number and its round slot, so that the
// target can check an entry's fields against each other.
std::uint64_t slba_of(std::uint32_t thread, std::uint32_t seq, std::uint32_t d) {
  return (std::uint64_t{thread} << 20) | (std::uint64_t{seq} << 4) | d;
}

// Several software targets behind one MMIO window each.
class MmioRouter : public platform::MmioTarget {
 public:
  explicit MmioRouter(std::vector<std::unique_ptr<SoftTarget>>& targets) : targets_(targets) {}
  void mmio_write(std::uint64_t addr, std::uint32_t value) override {
    for (auto& t : targets_) {
      if (addr >= t->doorbell_base() && addr < t->doorbell_base() + kWindow) {
        t->mmio_write(addr, value);
        return;
      }
    }
    stray.fetch_add(1);
  }
  static constexpr std::uint64_t kWindow = 1ull << 32;
  std::atomic<std::uint64_t> stray{0};

 private:
  std::vector<std::unique_ptr<SoftTarget>>& targets_;
};

// What each queue of the table served, to check the mapping's spread.
struct RunStats {
  std::vector<std::uint64_t> fetched_per_ssd;
};

RunStats run_case(const Case& c) {
  const std::string name = c.name + (c.relaxed ? " [relaxed]" : "");
  Watchdog watchdog(name);
  const std::uint32_t threads = c.warps * algo::kWarpLanes;
  const std::uint32_t all_queues = c.queues * c.ssds;
  HostArena arena(1ull << 40, 64ull << 20);
  std::vector<std::unique_ptr<SoftTarget>> targets;
  for (std::uint32_t k = 0; k < c.ssds; ++k) {
    SoftTarget::Options options;
    options.shadow_doorbells = c.shadow;
    options.seed = 7 + k;
    options.doorbell_base = 0xFEE0'0000'0000ull + k * MmioRouter::kWindow;
    targets.push_back(std::make_unique<SoftTarget>(arena, c.queues, options));
  }
  MmioRouter mmio(targets);
  const std::uint64_t buffers =
      arena.allocate(std::uint64_t{threads} * c.iodepth * kBufferBytes, 4096);
  auto buffer_of = [&](std::uint32_t thread, std::uint32_t d) {
    return buffers + (std::uint64_t{thread} * c.iodepth + d) * kBufferBytes;
  };
  for (auto& target : targets) {
    target->set_entry_check([&](std::uint16_t, const nvme::SubmissionEntry& e) {
      const nvme::ReadWriteFields rw = nvme::decode_read_write(e);
      const auto thread = static_cast<std::uint32_t>(rw.slba >> 20);
      const auto d = static_cast<std::uint32_t>(rw.slba & 0xF);
      return e.opcode() == static_cast<std::uint8_t>(nvme::NvmOpcode::Read) && thread < threads &&
             d < c.iodepth && rw.block_count == 1 && e.prp1 == buffer_of(thread, d) &&
             e.prp2 == 0;
    });
  }

  // The mapping, and each warp's index among the users of its home queue
  // (CID partitions), as the microbenchmark computes them.
  algo::QueueMap map;
  map.mapping = c.strategy.mapping;
  map.ssd_mapping = c.ssd_mapping;
  map.exclusive = c.strategy.submission == Submission::Exclusive;
  map.agents = c.agents ? c.service_warps : 0;
  map.queues_per_ssd = c.queues;
  map.ssds = c.ssds;
  std::vector<std::uint32_t> partition(c.warps);
  std::vector<std::uint32_t> seen(all_queues, 0);
  std::uint32_t users = 1;
  for (std::uint32_t w = 0; w < c.warps; ++w) {
    const std::uint32_t home = algo::home_queue(map, w, w / kWarpsPerSm);
    partition[w] = home == ~0u ? w : seen[home]++;
    users = std::max(users, partition[w] + 1);
  }

  // Queues and their shared state, as the microbenchmark lays them out:
  // queue i of SSD k at table index i * ssds + k.
  const std::uint32_t cid_space =
      algo::cid_space_for(c.strategy.cid, 0, c.entries, users, c.iodepth);
  std::vector<algo::QueuePair> queues(all_queues);
  for (std::uint32_t k = 0; k < c.ssds; ++k) {
    SoftTarget& target = *targets[k];
    for (std::uint32_t i = 0; i < c.queues; ++i) {
      algo::QueuePair& q = queues[i * c.ssds + k];
      q.trace_id = i * c.ssds + k;
      q.qid = static_cast<std::uint16_t>(i + 1);
      q.entries = c.entries;
      q.sq_base = arena.allocate(std::uint64_t{c.entries} * nvme::kSqEntrySize, 4096);
      q.cq_base = arena.allocate(std::uint64_t{c.entries} * nvme::kCqEntrySize, 4096);
      algo::place_queue_state(q, cid_space, true, [&](std::uint64_t bytes, std::uint64_t align) {
        return arena.allocate(bytes, align);
      });
      q.sq_doorbell = target.sq_doorbell(q.qid);
      q.cq_doorbell = target.cq_doorbell(q.qid);
      target.create_queue(q.qid, q.sq_base, q.cq_base, c.entries);
      if (c.shadow) {
        q.sq_shadow = target.sq_shadow(q.qid);
        q.cq_shadow = target.cq_shadow(q.qid);
        q.sq_event_idx = target.sq_event_idx(q.qid);
        q.cq_event_idx = target.cq_event_idx(q.qid);
      }
    }
  }
  algo::WarpContext base;
  base.queues = queues.data();
  base.queue_count = all_queues;
  base.strategy = c.strategy;
  base.cq_doorbell_batch = c.cq_doorbell_batch;
  base.cid_local_bits = algo::local_cid_bits(c.iodepth);
  base.iodepth = c.iodepth;
  const std::uint64_t shutdown = arena.allocate(4);
  const std::uint64_t replies = arena.allocate(std::uint64_t{threads} * c.iodepth * 8);

  // I/O agents own the queues the mapping assigns them.
  std::vector<algo::AgentRing> rings(c.agents ? c.service_warps : 0);
  std::vector<std::uint32_t> agent_of_queue(all_queues);
  std::vector<std::vector<algo::AgentQueue>> agent_queues(rings.size());
  std::vector<std::vector<std::uint32_t>> local_index(rings.size(),
                                                      std::vector<std::uint32_t>(all_queues, ~0u));
  for (std::uint32_t q = 0; c.agents && q < all_queues; ++q) {
    const std::uint32_t a = algo::agent_of_queue(map, q);
    agent_of_queue[q] = a;
    local_index[a][q] = static_cast<std::uint32_t>(agent_queues[a].size());
    algo::AgentQueue owned;
    owned.queue = q;
    agent_queues[a].push_back(owned);
  }
  for (algo::AgentRing& ring : rings) {
    ring.entries = 16;
    ring.base = arena.allocate(16 * sizeof(algo::AgentRequest), 64);
    ring.tail = arena.allocate(4);
    ring.gate = arena.allocate(16 * 4);
    ring.ready = arena.allocate(16 * 4);
  }

  platform::HostWarpOptions warp_options;
  warp_options.relaxed = c.relaxed;
  for (auto& target : targets) target->start();
  std::atomic<std::uint64_t> completed{0}, failures{0}, unmapped{0};
  std::vector<std::thread> service;
  for (std::uint32_t s = 0; s < c.service_warps; ++s) {
    service.emplace_back([&, s] {
      HostWarp p(arena, mmio, nullptr, warp_options);
      if (c.agents) {
        algo::AgentContext a;
        a.w = base;
        a.ring = rings[s];
        a.owned = agent_queues[s].data();
        a.owned_count = static_cast<std::uint32_t>(agent_queues[s].size());
        a.local_index = local_index[s].data();
        a.batch_size = 4;
        a.shutdown = shutdown;
        algo::agent_loop(p, a);
      } else {
        std::vector<std::uint32_t> mine;
        for (std::uint32_t q = s; q < all_queues; q += c.service_warps) mine.push_back(q);
        algo::polling_warp(p, base, mine.data(), static_cast<std::uint32_t>(mine.size()), shutdown);
      }
    });
  }
  std::vector<std::thread> warps;
  for (std::uint32_t w = 0; w < c.warps; ++w) {
    warps.emplace_back([&, w] {
      HostWarp p(arena, mmio, nullptr, warp_options);
      algo::WarpContext context = base;
      context.cid_partition = partition[w];
      std::vector<algo::Lanes<algo::Pending>> rounds(c.iodepth, algo::Lanes<algo::Pending>{});
      context.rounds = rounds.data();
      context.round_count = c.iodepth;
      std::uint32_t seq = 0;
      for (std::uint32_t r = 0; r < c.rounds; ++r) {
        std::vector<algo::Lanes<std::uint64_t>> reply(c.iodepth);
        for (std::uint32_t d = 0; d < c.iodepth; ++d) {
          algo::Lanes<algo::IoRequest> request{};
          for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
            const std::uint32_t thread = w * algo::kWarpLanes + static_cast<std::uint32_t>(lane);
            algo::IoRequest& q = request[lane];
            q.slba = slba_of(thread, seq, d);
            q.nlb_zero_based = 0;
            q.bytes = 512;
            q.buffer = buffer_of(thread, d);
            const algo::QueueUser user{w, w / kWarpsPerSm, thread,
                                       std::uint64_t{seq} * c.iodepth + d};
            const std::uint64_t block = std::uint64_t{thread} + seq + d;
            q.queue = algo::map_queue(map, user,
                                      c.ssd_mapping == algo::SsdMapping::Stripe
                                          ? algo::stripe_ssd(map, block)
                                          : algo::kAnySsd);
            if (q.queue >= all_queues) {
              unmapped.fetch_add(1);
              q.queue = 0;
            }
            q.pool_index = d;
            reply[d][lane] = replies + (std::uint64_t{thread} * c.iodepth + d) * 8;
          }
          if (c.agents) {
            algo::agent_post(p, rings.data(), agent_of_queue.data(), algo::kAllLanes, request,
                             reply[d]);
          } else {
            rounds[d].fill(algo::Pending{});
            algo::submit(p, context, algo::kAllLanes, request, rounds[d]);
          }
        }
        for (std::uint32_t d = 0; d < c.iodepth; ++d) {
          algo::Lanes<std::uint16_t> status{};
          if (c.agents) {
            algo::agent_wait(p, algo::kAllLanes, reply[d], status);
          } else {
            algo::wait(p, context, rounds[d], algo::kAllLanes);
            for (int lane = 0; lane < algo::kWarpLanes; ++lane)
              status[lane] = rounds[d][lane].status;
          }
          for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
            const std::uint32_t thread = w * algo::kWarpLanes + static_cast<std::uint32_t>(lane);
            const std::uint64_t got = p.load<std::uint64_t>(buffer_of(thread, d));
            if (status[lane] != 0 || got != SoftTarget::data_pattern(slba_of(thread, seq, d))) {
              failures.fetch_add(1);
            }
            const std::uint64_t zero = 0;
            p.store_bytes(buffer_of(thread, d), &zero, 8);
            completed.fetch_add(1);
          }
        }
        ++seq;
      }
    });
  }
  for (std::thread& t : warps) t.join();
  arena.store_release(shutdown, 1);
  for (std::thread& t : service) t.join();
  for (auto& target : targets) target->stop();

  const std::uint64_t expected = std::uint64_t{threads} * c.iodepth * c.rounds;
  RunStats stats;
  std::uint64_t target_completed = 0, target_fetched = 0;
  for (std::uint32_t k = 0; k < c.ssds; ++k) {
    SoftTarget& target = *targets[k];
    target_completed += target.completed();
    target_fetched += target.fetched();
    stats.fetched_per_ssd.push_back(target.fetched());
    EXPECT_EQ(target.outstanding(), 0u) << name;
    for (const std::string& v : target.violations()) ADD_FAILURE() << name << ": " << v;
    if (c.shadow) {
      // EventIdx asks for no MMIO doorbell; the 16-bit arithmetic of the
      // test (as in Linux) still rings once each time a ring index wraps.
      const std::uint64_t wraps = 2 * (expected / c.entries + c.queues);
      EXPECT_LE(target.doorbell_writes(), wraps) << name;
    }
  }
  EXPECT_EQ(unmapped.load(), 0u) << name << ": the mapping chose a queue outside the table";
  EXPECT_EQ(mmio.stray.load(), 0u) << name << ": MMIO outside every target";
  EXPECT_EQ(completed.load(), expected) << name;
  EXPECT_EQ(failures.load(), 0u) << name << ": wrong status or data";
  EXPECT_EQ(target_completed, expected) << name << ": a command completed twice or was lost";
  EXPECT_EQ(target_fetched, expected) << name;
  return stats;
}

// Every case with acquire/release accesses, then relaxed.
void run_both(Case c) {
  c.relaxed = false;
  run_case(c);
  c.relaxed = true;
  run_case(c);
}

algo::Strategy make(algo::QueueMapping m, CidScheme cid, Submission s, Completion c) {
  return {m, cid, s, c};
}

using M = algo::QueueMapping;
using algo::NamedStrategy;

TEST(HostThreads, SharedQueueStrategiesUnderRealConcurrency) {
  std::vector<Case> cases;
  for (std::uint32_t entries : {2u, 4u, 64u}) {
    const std::string n = " entries=" + std::to_string(entries);
    cases.push_back({"warp_batch" + n, algo::named_strategy(NamedStrategy::WarpBatch), entries});
    cases.push_back({"all_threads" + n, algo::named_strategy(NamedStrategy::AllThreads), entries});
    cases.push_back({"bam_ticket" + n, algo::named_strategy(NamedStrategy::BamTicket), entries});
  }
  // 32 warps: warp_batch on one queue of two entries, the most contended
  // ring; the per-thread policies, which hand one slot from thread to thread
  // in ticket order, on two queues of four (a ring of two makes them
  // take minutes under ThreadSanitizer on two cores).
  Case batch{"warp_batch 32 warps, 1 queue of 2", algo::named_strategy(NamedStrategy::WarpBatch),
             2, 1, 32};
  batch.rounds = 1;
  cases.push_back(batch);
  for (NamedStrategy s : {NamedStrategy::AllThreads, NamedStrategy::BamTicket}) {
    Case c{std::string(s == NamedStrategy::AllThreads ? "all_threads" : "bam_ticket") +
               " 32 warps, 2 queues of 4",
           algo::named_strategy(s), 4, 2, 32};
    c.rounds = 1;
    cases.push_back(c);
  }
  for (const Case& c : cases) run_both(c);
}

TEST(HostThreads, CidSchemesAndPollingWarps) {
  std::vector<Case> cases = {
      {"counter_lock per_command flags",
       make(M::PerWarp, CidScheme::CounterLock, Submission::PerCommand, Completion::CidFlags), 4},
      {"counter_lock ticket scan",
       make(M::PerWarp, CidScheme::CounterLock, Submission::TicketReady, Completion::CqScan), 2},
      {"warp_partition batch scan",
       make(M::PerWarp, CidScheme::WarpPartition, Submission::WarpBatch, Completion::CqScan), 4},
      {"thread_pool ticket flags",
       make(M::PerWarp, CidScheme::ThreadPool, Submission::TicketReady, Completion::CidFlags), 8},
      {"counter warp_batch flags",
       make(M::PerWarp, CidScheme::Counter, Submission::WarpBatch, Completion::CidFlags), 2},
  };
  Case pollers{"polling warps",
               make(M::PerWarp, CidScheme::SqSlot, Submission::WarpBatch, Completion::PollingWarps),
               2};
  pollers.service_warps = 2;
  pollers.cq_doorbell_batch = 3;
  cases.push_back(pollers);
  for (const Case& c : cases) run_both(c);
}

TEST(HostThreads, OwnedQueuesAgentsAndShadowDoorbells) {
  std::vector<Case> cases;
  for (std::uint32_t entries : {2u, 8u}) {
    Case own{"per_warp_queue entries=" + std::to_string(entries),
             algo::named_strategy(NamedStrategy::PerWarpQueue), entries};
    own.queues = own.warps;
    cases.push_back(own);
    Case agents{"io_agents entries=" + std::to_string(entries),
                algo::named_strategy(NamedStrategy::IoAgents), entries};
    agents.agents = true;
    agents.service_warps = 2;
    cases.push_back(agents);
  }
  Case own32{"per_warp_queue 32 warps, entries=2", algo::named_strategy(NamedStrategy::PerWarpQueue),
              2, 32, 32};
  own32.rounds = 1;
  cases.push_back(own32);
  Case agents32{"io_agents 32 warps, entries=2", algo::named_strategy(NamedStrategy::IoAgents), 2,
                4, 32};
  agents32.agents = true;
  agents32.service_warps = 4;
  agents32.rounds = 1;
  cases.push_back(agents32);
  Case shadow{"warp_batch with shadow doorbells", algo::named_strategy(NamedStrategy::WarpBatch),
              8};
  shadow.shadow = true;
  cases.push_back(shadow);
  Case shadow_scan{"bam_ticket with shadow doorbells",
                   algo::named_strategy(NamedStrategy::BamTicket), 4};
  shadow_scan.shadow = true;
  cases.push_back(shadow_scan);
  for (const Case& c : cases) run_both(c);
}

// The library's queue mappings, over one and several SSDs: every I/O lands
// on a queue of the table, the protocol holds, and striping or interleaving
// reaches every SSD.
TEST(HostThreads, QueueMappingsAcrossSsds) {
  std::vector<Case> cases;
  for (M m : {M::PerSm, M::PerWarp, M::RoundRobin}) {
    for (std::uint32_t ssds : {1u, 3u}) {
      for (auto ssd_mapping : {algo::SsdMapping::Interleave, algo::SsdMapping::Stripe}) {
        if (ssds == 1 && ssd_mapping == algo::SsdMapping::Stripe) continue;
        Case c{"mapping " + std::to_string(static_cast<int>(m)) + " ssds=" +
                   std::to_string(ssds) +
                   (ssd_mapping == algo::SsdMapping::Stripe ? " stripe" : " interleave"),
               make(m, CidScheme::Counter, Submission::TicketReady, Completion::CqScan), 4};
        c.queues = 3;
        c.rounds = 1;
        c.ssds = ssds;
        c.ssd_mapping = ssd_mapping;
        cases.push_back(c);
      }
    }
  }
  // Per-agent: two agents own the queues of three SSDs.
  for (auto ssd_mapping : {algo::SsdMapping::Interleave, algo::SsdMapping::Stripe}) {
    Case agents{"per_agent ssds=3", algo::named_strategy(NamedStrategy::IoAgents), 4};
    agents.agents = true;
    agents.service_warps = 2;
    agents.queues = 4;
    agents.rounds = 1;
    agents.ssds = 3;
    agents.ssd_mapping = ssd_mapping;
    cases.push_back(agents);
  }
  // A warp owns a queue on each of two SSDs.
  Case own{"per_warp_queue stripe ssds=2", algo::named_strategy(NamedStrategy::PerWarpQueue), 4};
  own.queues = own.warps;
  own.ssds = 2;
  own.rounds = 1;
  own.ssd_mapping = algo::SsdMapping::Stripe;
  cases.push_back(own);
  for (const Case& c : cases) {
    for (bool relaxed : {false, true}) {
      Case r = c;
      r.relaxed = relaxed;
      const RunStats stats = run_case(r);
      for (std::size_t k = 0; k < stats.fetched_per_ssd.size(); ++k) {
        EXPECT_GT(stats.fetched_per_ssd[k], 0u) << c.name << ": SSD " << k << " got nothing";
      }
    }
  }
}

// The mapping functions themselves: which queue each user gets.
TEST(QueueMapping, ChoosesTheQueuesTheStrategiesDescribe) {
  algo::QueueMap m;
  m.queues_per_ssd = 4;
  m.ssds = 2;
  m.mapping = M::PerSm;
  EXPECT_EQ(algo::map_queue(m, {9, 5, 300, 7}, algo::kAnySsd), 5u);  // sm 5 of 8 queues
  EXPECT_EQ(algo::map_queue(m, {9, 5, 300, 7}, 1), (5u % 4) * 2 + 1);
  m.mapping = M::PerWarp;
  EXPECT_EQ(algo::map_queue(m, {9, 5, 300, 7}, algo::kAnySsd), 1u);  // warp 9 mod 8
  EXPECT_EQ(algo::map_queue(m, {9, 5, 300, 7}, 0), (9u % 4) * 2);
  m.mapping = M::RoundRobin;
  // Consecutive I/Os of one thread walk the pool.
  for (std::uint64_t seq = 0; seq < 16; ++seq) {
    EXPECT_EQ(algo::map_queue(m, {0, 0, 3, seq}, algo::kAnySsd), (3 + seq) % 8);
  }
  EXPECT_EQ(algo::home_queue(m, 3, 1), ~0u);
  m.ssd_mapping = algo::SsdMapping::Stripe;
  EXPECT_EQ(algo::stripe_ssd(m, 13), 1u);
  m.mapping = M::PerWarp;
  EXPECT_EQ(algo::home_queue(m, 6, 0), 2u);  // index on each SSD
  m.exclusive = true;
  EXPECT_EQ(algo::map_queue(m, {3, 0, 96, 0}, 1), 3u * 2 + 1);
  EXPECT_EQ(algo::map_queue(m, {3, 0, 96, 0}, algo::kAnySsd), 3u);
  m.exclusive = false;
  m.agents = 3;
  m.mapping = M::PerAgent;
  // Agent a owns queues a, a + 3, ... of every SSD; warps of agent 1 spread
  // over its queues 1 (and none else of 4: 1 + 3 = 4 is out of range).
  for (std::uint32_t warp = 0; warp < 12; ++warp) {
    const std::uint32_t q = algo::map_queue(m, {warp, 0, 0, 0}, algo::kAnySsd);
    EXPECT_LT(q, 8u);
    EXPECT_EQ(algo::agent_of_queue(m, q), warp % 3) << warp;
    EXPECT_EQ(q % 2, warp % 2) << warp;
  }
  EXPECT_EQ(algo::map_queue(m, {0, 0, 0, 0}, algo::kAnySsd), 0u);
  EXPECT_EQ(algo::map_queue(m, {3, 0, 0, 0}, algo::kAnySsd), 3u * 2 + 1);  // queue 3, SSD 1
}

// ---------------------------------------------------------------------------
// Relaxed mode exposes a missing fence. One warp submits 32 reads; a device
// stand-in looks at the SQ entries a doorbell covers at the moment the
// doorbell arrives, as an SSD fetching them would. With the algorithm's
// fences every entry is complete; with fences skipped, relaxed mode shows
// the doorbell overtaking the entries, and acquire/release mode (x86's
// strong ordering) hides it.

class FetchAtDoorbell : public platform::MmioTarget {
 public:
  FetchAtDoorbell(HostArena& arena, const algo::QueuePair& q) : arena_(arena), q_(q) {}
  void mmio_write(std::uint64_t addr, std::uint32_t value) override {
    if (addr != q_.sq_doorbell) return;
    for (; tail_ != value; tail_ = (tail_ + 1) % q_.entries) {
      nvme::SubmissionEntry e;
      arena_.read(q_.sq_base + std::uint64_t{tail_} * nvme::kSqEntrySize, &e, sizeof e);
      ++fetched;
      if (e.opcode() != static_cast<std::uint8_t>(nvme::NvmOpcode::Read) || e.nsid != 1 ||
          e.prp1 == 0) {
        ++stale;
      }
    }
  }
  std::uint32_t fetched = 0;
  std::uint32_t stale = 0;

 private:
  HostArena& arena_;
  const algo::QueuePair& q_;
  std::uint32_t tail_ = 0;
};

struct FenceProbe {
  std::uint32_t fetched;
  std::uint32_t stale;
};

FenceProbe submit_one_warp(Submission submission, bool relaxed, bool skip_fences) {
  HostArena arena(1ull << 40, 1ull << 20);
  algo::QueuePair q;
  q.entries = 64;
  q.sq_base = arena.allocate(64ull * nvme::kSqEntrySize, 4096);
  q.cq_base = arena.allocate(64ull * nvme::kCqEntrySize, 4096);
  q.sq_doorbell = 0xFEE0'0000'0000ull + 8;
  q.cq_doorbell = q.sq_doorbell + 4;
  const algo::Strategy strategy =
      submission == Submission::Exclusive
          ? make(M::PerWarp, CidScheme::SqSlot, submission, Completion::OwnerDrain)
          : make(M::PerWarp, CidScheme::SqSlot, submission, Completion::CidFlags);
  algo::place_queue_state(q, algo::cid_space_for(strategy.cid, 0, q.entries, 1, 1), false,
                          [&](std::uint64_t bytes, std::uint64_t align) {
                            return arena.allocate(bytes, align);
                          });
  const std::uint64_t buffers = arena.allocate(32 * 4096, 4096);
  FetchAtDoorbell device(arena, q);
  platform::HostWarpOptions options;
  options.relaxed = relaxed;
  options.skip_fences = skip_fences;
  HostWarp p(arena, device, nullptr, options);
  algo::WarpContext w;
  w.queues = &q;
  w.queue_count = 1;
  w.strategy = strategy;
  algo::Lanes<algo::Pending> round{};
  w.rounds = &round;
  w.round_count = 1;
  algo::Lanes<algo::IoRequest> request{};
  for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
    request[lane].slba = static_cast<std::uint64_t>(lane);
    request[lane].bytes = 512;
    request[lane].buffer = buffers + 4096ull * static_cast<std::uint64_t>(lane);
  }
  algo::submit(p, w, algo::kAllLanes, request, round);
  return {device.fetched, device.stale};
}

TEST(HostThreads, RelaxedOrderingExposesAMissingFence) {
  for (Submission s : {Submission::PerCommand, Submission::TicketReady, Submission::WarpBatch,
                       Submission::Exclusive}) {
    const std::string what = "submission " + std::to_string(static_cast<int>(s));
    const FenceProbe fenced = submit_one_warp(s, true, false);
    EXPECT_EQ(fenced.fetched, 32u) << what;
    EXPECT_EQ(fenced.stale, 0u) << what << ": the algorithm's fences order the SQE";
    const FenceProbe unfenced = submit_one_warp(s, true, true);
    EXPECT_EQ(unfenced.fetched, 32u) << what;
    EXPECT_GT(unfenced.stale, 0u) << what << ": relaxed mode must expose the missing fence";
    const FenceProbe strong = submit_one_warp(s, false, true);
    EXPECT_EQ(strong.stale, 0u) << what << ": acquire/release hides it";
  }
}

// The relaxed store buffer may reorder stores to different locations, but
// two stores to one location keep program order (the CQ head written twice
// in one drain must not go back to the older value at the fence).
TEST(HostThreads, RelaxedStoreBufferKeepsPerLocationOrder) {
  HostArena arena(1ull << 40, 1 << 16);
  struct NoMmio : platform::MmioTarget {
    void mmio_write(std::uint64_t, std::uint32_t) override {}
  } mmio;
  const std::uint64_t head = arena.allocate(4);
  const std::uint64_t flag = arena.allocate(8);
  platform::HostWarpOptions options;
  options.relaxed = true;
  HostWarp p(arena, mmio, nullptr, options);
  p.store_u32(head, 32);
  p.store_u32(flag, 1);
  p.store_u32(head, 40);
  const std::uint64_t wide = 0x0102'0304'0506'0708ull;
  p.store_bytes(flag, &wide, 8);  // overlaps the 4-byte store to `flag`
  EXPECT_NE(arena.load_acquire(head), 40u) << "the newest store waits for a fence";
  EXPECT_EQ(p.buffered_stores(), 2u) << "an overwritten store leaves the buffer";
  p.fence_gpu();
  EXPECT_EQ(arena.load_acquire(head), 40u);
  std::uint64_t got = 0;
  arena.read(flag, &got, 8);
  EXPECT_EQ(got, wide);
  EXPECT_EQ(p.buffered_stores(), 0u);
}

}  // namespace
}  // namespace gpunvme
