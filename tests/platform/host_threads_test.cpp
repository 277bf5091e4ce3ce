// Real concurrency: the strategies on the host-thread platform, one OS thread
// per warp (and per I/O agent or polling warp), against the software NVMe
// target's threads. The target checks the protocol as it serves (doorbells,
// SQ overrun, CQ head, a CID reused while outstanding, torn entries); the
// test checks that every command completes exactly once, successfully, with
// its data in its buffer. Queues go down to 2 entries.
//
// Under ThreadSanitizer (a separate build directory):
//   cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNVME_TSAN=ON
//   ninja -C build-tsan platform_tests && build-tsan/tests/platform_tests
#include "sim/platform/host_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sim/algo/completion.h"
#include "sim/algo/io_agents.h"
#include "sim/algo/queue_state.h"
#include "sim/algo/strategy.h"
#include "sim/platform/soft_target.h"

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
  explicit Watchdog(std::string what, int seconds = 120) : what_(std::move(what)) {
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
  ~Watchdog() {
    done_.store(true);
    thread_.join();
  }

 private:
  std::string what_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

struct Case {
  std::string name;
  algo::Strategy strategy;
  std::uint32_t entries = 8;
  std::uint32_t queues = 2;
  std::uint32_t warps = 6;
  std::uint32_t iodepth = 2;
  std::uint32_t rounds = 3;
  std::uint32_t cq_doorbell_batch = 1;
  std::uint32_t service_warps = 0;  // pollers or agents
  bool agents = false;
  bool shadow = false;
};

constexpr std::uint64_t kBufferBytes = 64;

// slba names the thread, its I/O number and its round slot, so that the
// target can check an entry's fields against each other.
std::uint64_t slba_of(std::uint32_t thread, std::uint32_t seq, std::uint32_t d) {
  return (std::uint64_t{thread} << 20) | (std::uint64_t{seq} << 4) | d;
}

void run_case(const Case& c) {
  Watchdog watchdog(c.name);
  const std::uint32_t threads = c.warps * algo::kWarpLanes;
  HostArena arena(1ull << 40, 64ull << 20);
  SoftTarget::Options options;
  options.shadow_doorbells = c.shadow;
  options.seed = 7;
  SoftTarget target(arena, c.queues, options);
  const std::uint64_t buffers =
      arena.allocate(std::uint64_t{threads} * c.iodepth * kBufferBytes, 4096);
  auto buffer_of = [&](std::uint32_t thread, std::uint32_t d) {
    return buffers + (std::uint64_t{thread} * c.iodepth + d) * kBufferBytes;
  };
  target.set_entry_check([&](std::uint16_t, const nvme::SubmissionEntry& e) {
    const nvme::ReadWriteFields rw = nvme::decode_read_write(e);
    const auto thread = static_cast<std::uint32_t>(rw.slba >> 20);
    const auto d = static_cast<std::uint32_t>(rw.slba & 0xF);
    return e.opcode() == static_cast<std::uint8_t>(nvme::NvmOpcode::Read) && thread < threads &&
           d < c.iodepth && rw.block_count == 1 && e.prp1 == buffer_of(thread, d) && e.prp2 == 0;
  });

  // Queues and their shared state, as the microbenchmark lays them out.
  const std::uint32_t users = (c.warps + c.queues - 1) / c.queues;
  const std::uint32_t cid_space =
      algo::cid_space_for(c.strategy.cid, 0, c.entries, users, c.iodepth);
  std::vector<algo::QueuePair> queues(c.queues);
  for (std::uint32_t i = 0; i < c.queues; ++i) {
    algo::QueuePair& q = queues[i];
    q.trace_id = i;
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
  algo::WarpContext base;
  base.queues = queues.data();
  base.queue_count = c.queues;
  base.strategy = c.strategy;
  base.cq_doorbell_batch = c.cq_doorbell_batch;
  base.cid_local_bits = algo::local_cid_bits(c.iodepth);
  base.iodepth = c.iodepth;
  const std::uint64_t shutdown = arena.allocate(4);
  const std::uint64_t replies = arena.allocate(std::uint64_t{threads} * c.iodepth * 8);

  // I/O agents: agent a owns queues a, a + agents, ...
  std::vector<algo::AgentRing> rings(c.agents ? c.service_warps : 0);
  std::vector<std::uint32_t> agent_of_queue(c.queues);
  std::vector<std::vector<algo::AgentQueue>> agent_queues(rings.size());
  std::vector<std::vector<std::uint32_t>> local_index(rings.size(),
                                                      std::vector<std::uint32_t>(c.queues, ~0u));
  for (std::uint32_t q = 0; c.agents && q < c.queues; ++q) {
    const std::uint32_t a = q % c.service_warps;
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

  target.start();
  std::atomic<std::uint64_t> completed{0}, failures{0};
  std::vector<std::thread> service;
  for (std::uint32_t s = 0; s < c.service_warps; ++s) {
    service.emplace_back([&, s] {
      HostWarp p(arena, target);
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
        for (std::uint32_t q = s; q < c.queues; q += c.service_warps) mine.push_back(q);
        algo::polling_warp(p, base, mine.data(), static_cast<std::uint32_t>(mine.size()), shutdown);
      }
    });
  }
  std::vector<std::thread> warps;
  for (std::uint32_t w = 0; w < c.warps; ++w) {
    warps.emplace_back([&, w] {
      HostWarp p(arena, target);
      algo::WarpContext context = base;
      context.cid_partition = w / c.queues;
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
            // Exclusive queues: warp w owns queue w; else warps share them.
            q.queue = w % c.queues;
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
  target.stop();

  const std::uint64_t expected = std::uint64_t{threads} * c.iodepth * c.rounds;
  EXPECT_EQ(completed.load(), expected) << c.name;
  EXPECT_EQ(failures.load(), 0u) << c.name << ": wrong status or data";
  EXPECT_EQ(target.completed(), expected) << c.name << ": a command completed twice or was lost";
  EXPECT_EQ(target.fetched(), expected) << c.name;
  EXPECT_EQ(target.outstanding(), 0u) << c.name;
  for (const std::string& v : target.violations()) ADD_FAILURE() << c.name << ": " << v;
  if (c.shadow) {
    // EventIdx asks for no MMIO doorbell; the 16-bit arithmetic of the test
    // (as in Linux) still rings once each time a ring index wraps.
    const std::uint64_t wraps = 2 * (expected / c.entries + c.queues);
    EXPECT_LE(target.doorbell_writes(), wraps) << c.name;
  }
}

algo::Strategy make(algo::QueueMapping m, CidScheme cid, Submission s, Completion c) {
  return {m, cid, s, c};
}

using M = algo::QueueMapping;

TEST(HostThreads, SharedQueueStrategiesUnderRealConcurrency) {
  std::vector<Case> cases;
  for (std::uint32_t entries : {2u, 4u, 64u}) {
    const std::string n = " entries=" + std::to_string(entries);
    cases.push_back(
        {"warp_batch" + n, algo::named_strategy(algo::NamedStrategy::WarpBatch), entries});
    cases.push_back(
        {"all_threads" + n,
         make(M::PerWarp, CidScheme::Counter, Submission::PerCommand, Completion::CqScan),
         entries});
    cases.push_back(
        {"bam_ticket" + n, algo::named_strategy(algo::NamedStrategy::BamTicket), entries});
  }
  for (const Case& c : cases) run_case(c);
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
  };
  Case pollers{"polling warps",
               make(M::PerWarp, CidScheme::SqSlot, Submission::WarpBatch, Completion::PollingWarps),
               4};
  pollers.service_warps = 2;
  pollers.cq_doorbell_batch = 3;
  cases.push_back(pollers);
  for (const Case& c : cases) run_case(c);
}

TEST(HostThreads, OwnedQueuesAgentsAndShadowDoorbells) {
  std::vector<Case> cases;
  for (std::uint32_t entries : {2u, 8u}) {
    Case own{"per_warp_queue entries=" + std::to_string(entries),
             algo::named_strategy(algo::NamedStrategy::PerWarpQueue), entries};
    own.queues = own.warps;
    cases.push_back(own);
    Case agents{"io_agents entries=" + std::to_string(entries),
                algo::named_strategy(algo::NamedStrategy::IoAgents), entries};
    agents.agents = true;
    agents.service_warps = 2;
    cases.push_back(agents);
  }
  Case shadow{"warp_batch with shadow doorbells",
              algo::named_strategy(algo::NamedStrategy::WarpBatch), 8};
  shadow.shadow = true;
  cases.push_back(shadow);
  Case shadow_scan{"bam_ticket with shadow doorbells",
                   algo::named_strategy(algo::NamedStrategy::BamTicket), 4};
  shadow_scan.shadow = true;
  cases.push_back(shadow_scan);
  for (const Case& c : cases) run_case(c);
}

}  // namespace
}  // namespace gpunvme
