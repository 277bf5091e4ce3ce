// Submission queue arbitration: the arbiter alone against the weights, then
// through the controller, where the fetch engine arbitrates whenever a
// command slot frees: weighted round robin service ratios match the weights
// within 2 %, the urgent class goes first without starving the admin queue,
// and the weighted classes resume in their ratio once it is done.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>

#include "models/nvme/arbiter.h"
#include "sim/kernel/params/config_error.h"
#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

TEST(Arbiter, RoundRobinIgnoresPriorities) {
  Arbiter a(0);
  a.add_queue(1, QueuePriority::High);
  a.add_queue(2, QueuePriority::Low);
  a.add_queue(3, QueuePriority::Urgent);
  for (std::uint16_t q : {2, 1, 3}) a.mark_ready(q);
  std::vector<std::uint16_t> order;
  for (int i = 0; i < 9; ++i) {
    const auto q = a.next();
    ASSERT_TRUE(q.has_value());
    order.push_back(*q);
    a.mark_ready(*q);  // always more work
  }
  EXPECT_EQ(order, (std::vector<std::uint16_t>{2, 1, 3, 2, 1, 3, 2, 1, 3}));
  EXPECT_EQ(a.burst(), 1u);
}

TEST(Arbiter, WeightedRoundRobinTurnsFollowWeights) {
  Arbiter a(7);
  EXPECT_EQ(a.burst(), 0xFFFFFFFFu);  // AB = 111b: no limit
  a.set_mechanism(ArbitrationMechanism::WeightedRoundRobinUrgent);
  a.set_arbitration(Arbitration{2, 2, 4, 9});  // weights low 3, medium 5, high 10
  EXPECT_EQ(a.burst(), 4u);
  // Two SQs per class: turns within a class alternate.
  const std::pair<std::uint16_t, QueuePriority> queues[] = {
      {1, QueuePriority::High},   {2, QueuePriority::High}, {3, QueuePriority::Medium},
      {4, QueuePriority::Medium}, {5, QueuePriority::Low},  {6, QueuePriority::Low}};
  for (const auto& [q, p] : queues) {
    a.add_queue(q, p);
    a.mark_ready(q);
  }
  std::map<std::uint16_t, int> turns;
  const int rounds = 50;
  for (int i = 0; i < rounds * 18; ++i) {
    const auto q = a.next();
    ASSERT_TRUE(q.has_value());
    ++turns[*q];
    a.mark_ready(*q);
  }
  // Exactly the weights per round, split evenly inside each class.
  EXPECT_EQ(turns[1] + turns[2], rounds * 10);
  EXPECT_EQ(turns[3] + turns[4], rounds * 5);
  EXPECT_EQ(turns[5] + turns[6], rounds * 3);
  EXPECT_EQ(turns[1], turns[2]);
  EXPECT_EQ(turns[5], turns[6]);
}

TEST(Arbiter, StrictPriorityAndWorkConservation) {
  Arbiter a(0);
  a.set_mechanism(ArbitrationMechanism::WeightedRoundRobinUrgent);
  a.set_arbitration(Arbitration{0, 0, 0, 7});
  a.add_queue(0, QueuePriority::Urgent);  // the admin SQ
  a.add_queue(1, QueuePriority::Urgent);
  a.add_queue(2, QueuePriority::High);
  a.add_queue(3, QueuePriority::Low);
  a.mark_ready(3);
  a.mark_ready(2);
  a.mark_ready(1);
  a.mark_ready(0);
  EXPECT_EQ(a.next(), std::optional<std::uint16_t>(0));  // admin first
  EXPECT_EQ(a.next(), std::optional<std::uint16_t>(1));  // then urgent
  a.mark_ready(1);
  EXPECT_EQ(a.next(), std::optional<std::uint16_t>(1));  // urgent again while it has work
  // With no command slots, only the admin SQ may be served.
  a.mark_ready(0);
  EXPECT_EQ(a.next(/*io_allowed=*/false), std::optional<std::uint16_t>(0));
  EXPECT_EQ(a.next(false), std::nullopt);
  // High has 8 credits, low 1; low alone is served at once (no idling).
  EXPECT_EQ(a.next(), std::optional<std::uint16_t>(2));
  EXPECT_EQ(a.next(), std::optional<std::uint16_t>(3));
  EXPECT_EQ(a.next(), std::nullopt);
  a.mark_ready(3);
  EXPECT_EQ(a.next(), std::optional<std::uint16_t>(3));
  a.remove_queue(3);
  a.mark_ready(3);  // gone: ignored
  EXPECT_FALSE(a.any_ready());
}

// A controller that serves one command per microsecond from at most 8
// command slots, so that the SQs compete at the fetch engine.
BenchOptions contended() {
  return {"samsung-pm1743",
          {{"wrr_supported", true},
           {"controller_cores", 1},
           {"command_overhead_ns", 1000.0},
           {"max_active_commands", 8},
           {"arbitration_burst_log2", 0}}};
}

struct Contest {
  Bench bench;
  std::array<std::unique_ptr<TestHost>, 5> hosts;  // index = qid
  explicit Contest(const BenchOptions& o) : bench(o) {
    for (int q = 1; q <= 4; ++q) {
      hosts[q] = std::make_unique<TestHost>(("host" + std::to_string(q)).c_str(), bench);
    }
  }
  void bring_up(bool weighted, const Arbitration& arbitration) {
    host::BringUpOptions options;
    options.io_queues = 4;
    options.weighted_round_robin = weighted;
    options.set_arbitration = true;
    options.arbitration = arbitration;
    std::vector<host::IoQueueSpec> specs;
    const QueuePriority priorities[] = {QueuePriority::High, QueuePriority::Medium,
                                        QueuePriority::Low, QueuePriority::Urgent};
    for (std::uint16_t q = 1; q <= 4; ++q) {
      host::IoQueueSpec spec;
      spec.qid = q;
      spec.entries = 2048;
      spec.priority = priorities[q - 1];
      specs.push_back(spec);
    }
    const auto created = bench.bring_up(0, options, specs);
    ASSERT_EQ(created.size(), 4u);
    for (std::uint16_t q = 1; q <= 4; ++q) {
      ASSERT_EQ(created[q - 1].status, Status::Success);
      hosts[q]->attach(created[q - 1]);
    }
  }
  void fill(std::uint16_t qid, int commands) {
    for (int i = 0; i < commands; ++i) hosts[qid]->submit(make_flush(0, 1), nullptr, false);
    hosts[qid]->ring_sq();
  }
  std::uint64_t fetched(std::uint16_t qid) { return bench.ssd().sq_fetched(qid); }
};

// One speed per processor, or none. (Before any test that simulates: ASan
// misreports an exception thrown after SystemC's coroutines have run.)
TEST(ControllerArbitration, ProcessorSpeedsMustMatchTheProcessors) {
  try {
    Contest c(
        {"samsung-pm1743", {{"controller_cores", 2}, {"processor_time_scale", {1.0, 1.0, 1.0}}}});
    FAIL() << "three speeds for two processors were accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("processor_time_scale"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[1.0,1.0,1.0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("one entry per controller core (2)"), std::string::npos)
        << e.what();
  }
}

TEST(ControllerArbitration, WeightedServiceRatiosMatchTheWeights) {
  Contest c(contended());
  // High 8, medium 4, low 2 (zero-based 7, 3, 1); one command per turn.
  c.bring_up(true, Arbitration{0, 1, 3, 7});
  EXPECT_EQ(c.bench.ssd().arbitration_mechanism(), ArbitrationMechanism::WeightedRoundRobinUrgent);
  for (std::uint16_t q = 1; q <= 3; ++q) c.fill(q, 1500);
  // About 1,400 commands in 1.4 ms: no queue runs dry. Counted from 50 us,
  // after the first doorbell's head start.
  c.bench.run(us_to_ps(50));
  std::array<std::uint64_t, 4> start{};
  for (std::uint16_t q = 1; q <= 3; ++q) start[q] = c.fetched(q);
  c.bench.run(us_to_ps(1350));
  const double high = static_cast<double>(c.fetched(1) - start[1]);
  const double medium = static_cast<double>(c.fetched(2) - start[2]);
  const double low = static_cast<double>(c.fetched(3) - start[3]);
  EXPECT_GT(low, 150);
  EXPECT_LT(high, 1500);
  EXPECT_NEAR(high / medium, 2.0, 0.02 * 2.0);
  EXPECT_NEAR(medium / low, 2.0, 0.02 * 2.0);
  EXPECT_NEAR(high / (high + medium + low), 8.0 / 14.0, 0.02 * 8.0 / 14.0);
  c.bench.run();
  for (std::uint16_t q = 1; q <= 3; ++q) EXPECT_EQ(c.hosts[q]->completed(), 1500u);
  EXPECT_NO_THROW(c.bench.ssd().check_drained());
}

// The arbitration burst (Set Features Arbitration, AB) is how many commands
// the controller may take from one SQ per turn. With one read of SQ entries
// in flight at a time and one controller core, commands run in fetch order,
// one per microsecond, so the completion order shows the turns: runs of
// 2^AB commands per queue, round robin over the queues.
TEST(ControllerArbitration, BurstSetsTheCommandsTakenPerTurn) {
  for (const std::uint8_t burst_log2 : {0, 2}) {
    SCOPED_TRACE(int{burst_log2});
    Contest c({"samsung-pm1743",
               {{"controller_cores", 1},
                {"command_overhead_ns", 1000.0},
                {"max_active_commands", 64},
                {"sq_fetch_burst", 8},
                {"max_outstanding_fetches", 1}}});
    c.bring_up(false, Arbitration{burst_log2, 0, 0, 0});
    std::vector<std::uint16_t> order;
    for (std::uint16_t q = 1; q <= 3; ++q) {
      for (int i = 0; i < 12; ++i) {
        c.hosts[q]->submit(
            make_flush(0, 1),
            [&order, q](const CompletionEntry&, Picoseconds) { order.push_back(q); }, false);
      }
    }
    // All three doorbells leave together; the first to land gets a turn of
    // its own (nothing else is ready), the others are there before that
    // fetch returns and join the round robin behind it.
    for (std::uint16_t q = 1; q <= 3; ++q) c.hosts[q]->ring_sq();
    c.bench.run();
    ASSERT_EQ(order.size(), 36u);
    std::string seen;
    for (std::uint16_t q : order) seen += std::to_string(q);
    SCOPED_TRACE(seen);
    // The oracle: the spec's round robin, written out. After the lone first
    // turn, the queues take turns from the first one on, each taking up to
    // `burst` commands; a queue that has run dry drops out.
    const std::size_t burst = std::size_t{1} << burst_log2;
    std::array<std::size_t, 4> left{0, 12, 12, 12};
    std::vector<std::uint16_t> expected;
    auto turn = [&](std::uint16_t q) {
      for (std::size_t k = 0; k < burst && left[q] > 0; ++k, --left[q]) expected.push_back(q);
    };
    turn(order[0]);
    for (std::uint16_t q = order[0]; expected.size() < 36;
         q = static_cast<std::uint16_t>(q % 3 + 1)) {
      turn(q);
    }
    EXPECT_EQ(order, expected);
  }
}

TEST(ControllerArbitration, RoundRobinServesEveryQueueAlike) {
  Contest c(contended());
  c.bring_up(false, Arbitration{0, 1, 3, 7});  // weights set, but round robin selected
  for (std::uint16_t q = 1; q <= 3; ++q) c.fill(q, 1000);
  // The first doorbell lands a few nanoseconds before the others and its
  // queue takes the free slots: count from a later start.
  c.bench.run(us_to_ps(50));
  std::array<std::uint64_t, 4> start{};
  for (std::uint16_t q = 1; q <= 3; ++q) start[q] = c.fetched(q);
  c.bench.run(us_to_ps(1150));
  const double a = static_cast<double>(c.fetched(1) - start[1]);
  const double b = static_cast<double>(c.fetched(2) - start[2]);
  const double d = static_cast<double>(c.fetched(3) - start[3]);
  EXPECT_LT(a, 1000);
  EXPECT_NEAR(a / b, 1.0, 0.02);
  EXPECT_NEAR(b / d, 1.0, 0.02);
  c.bench.run();
}

TEST(ControllerArbitration, UrgentGoesFirstButStarvesNeitherAdminNorTheRest) {
  Contest c(contended());
  c.bring_up(true, Arbitration{0, 1, 3, 7});
  for (std::uint16_t q = 1; q <= 3; ++q) c.fill(q, 1500);
  c.bench.run(us_to_ps(200));
  // 400 urgent commands: while they last, the weighted classes get no turn
  // (the few fetched before the urgent doorbell arrived excepted).
  c.fill(4, 400);
  // An admin command during the urgent burst is served at once.
  Picoseconds admin_done = 0;
  const Picoseconds admin_sent = Simulation::now();
  c.bench.driver().admin(make_get_features(0, FeatureId::Arbitration),
                         [&](const CompletionEntry& cqe) {
                           EXPECT_TRUE(cqe.ok());
                           EXPECT_EQ(cqe.dw0, (Arbitration{0, 1, 3, 7}.encode()));
                           admin_done = Simulation::now();
                         });
  c.bench.run(us_to_ps(20));
  std::array<std::uint64_t, 4> mid{};
  for (std::uint16_t q = 1; q <= 3; ++q) mid[q] = c.fetched(q);
  c.bench.run(us_to_ps(250));
  for (std::uint16_t q = 1; q <= 3; ++q) {
    EXPECT_EQ(c.fetched(q), mid[q]) << "queue " << q << " fetched while urgent had work";
  }
  // One command per microsecond, all of them urgent.
  EXPECT_NEAR(static_cast<double>(c.fetched(4)), 270.0, 10.0);
  ASSERT_NE(admin_done, 0u);
  EXPECT_LT(admin_done - admin_sent, us_to_ps(20));
  // After the urgent queue drains, the weighted classes resume in ratio.
  c.bench.run(us_to_ps(150 + 700));
  EXPECT_EQ(c.fetched(4), 400u);
  const double high = static_cast<double>(c.fetched(1) - mid[1]);
  const double medium = static_cast<double>(c.fetched(2) - mid[2]);
  const double low = static_cast<double>(c.fetched(3) - mid[3]);
  EXPECT_GT(low, 60);
  EXPECT_NEAR(high / medium, 2.0, 0.04 * 2.0);
  EXPECT_NEAR(medium / low, 2.0, 0.04 * 2.0);
  c.bench.run();
  EXPECT_EQ(c.hosts[4]->completed(), 400u);
  EXPECT_NO_THROW(c.bench.ssd().check_drained());
}

// batch_service (the software controller's shape): processor t polls queues
// t+1, t+1+cores, ...; a free processor fetches what its queue holds (up to
// sq_fetch_burst) and serves it as one batch, batch_overhead_ns plus
// command_overhead_ns per command, every command of the batch finishing
// together, and takes its next batch batch_gap_ns later. Two processors,
// three queues of 8 flushes rung together: queues 1 and 3 share processor 0
// and are served one after the other, queue 2 runs on processor 1 alongside
// queue 1. Returns each queue's latencies; with `reads`, queues 1 and 2
// make 4 KiB reads into host pages instead of flushes.
// `scale`: processor_time_scale (empty: both nominal); `statistics`, where
// given, receives the controller's statistics after the run.
std::array<std::vector<Picoseconds>, 4> batch_service_latencies(
    double gap_ns, bool reads = false, std::vector<double> scale = {},
    nlohmann::json* statistics = nullptr) {
  Contest c({"samsung-pm1743",
             {{"controller_cores", 2},
              {"processor_time_scale", scale},
              {"batch_service", true},
              {"batch_overhead_ns", 10000.0},
              {"batch_gap_ns", gap_ns},
              {"command_overhead_ns", 1000.0},
              {"volatile_write_cache", false},
              {"max_active_commands", 1024},
              {"sq_fetch_burst", 8},
              {"arbitration_burst_log2", 7}}});
  c.bring_up(false, Arbitration{7, 0, 0, 0});
  std::array<std::vector<Picoseconds>, 4> latency;
  for (std::uint16_t q = 1; q <= 3; ++q) {
    for (int i = 0; i < 8; ++i) {
      const SubmissionEntry sqe =
          reads && q < 3 ? make_read(0, 1, static_cast<std::uint64_t>(8 * q + i) * 8, 7,
                                     c.bench.driver().allocate(host::QueuePlacement::host, 4096), 0)
                         : make_flush(0, 1);
      c.hosts[q]->submit(
          sqe,
          [&latency, q](const CompletionEntry& e, Picoseconds l) {
            EXPECT_EQ(e.status(), Status::Success);
            latency[q].push_back(l);
          },
          false);
    }
  }
  for (std::uint16_t q = 1; q <= 3; ++q) c.hosts[q]->ring_sq();
  c.bench.run();
  EXPECT_NO_THROW(c.bench.ssd().check_drained());
  if (statistics != nullptr) *statistics = c.bench.ssd().statistics(Simulation::now());
  return latency;
}

// Oracle: the batch time B + 8 c = 18 us, and 2 x 18 us plus the gap for
// the queue that waits.
TEST(ControllerArbitration, BatchServiceServesAFetchAsOneBatchOnItsQueuesProcessor) {
  const double batch_us = 10.0 + 8 * 1.0;
  for (double gap_us : {0.0, 5.0}) {
    const auto latency = batch_service_latencies(gap_us * 1000.0);
    for (std::uint16_t q = 1; q <= 3; ++q) {
      ASSERT_EQ(latency[q].size(), 8u) << "queue " << q;
      const auto [lo, hi] = std::minmax_element(latency[q].begin(), latency[q].end());
      // One batch: its commands complete within the CQE posts' spread.
      EXPECT_LT(ps_to_ns(*hi - *lo), 500.0) << "queue " << q;
      // The doorbell, the SQE fetch and the CQE posts over PCIe add about
      // 2 us to the processor's time.
      const double expected_us = q == 3 ? 2 * batch_us + gap_us : batch_us;
      EXPECT_GE(ps_to_ns(*lo) / 1000.0, expected_us) << "queue " << q << ", gap " << gap_us;
      EXPECT_LT(ps_to_ns(*hi) / 1000.0, expected_us + 3.0) << "queue " << q << ", gap " << gap_us;
    }
  }
}

// The processor takes no other batch until the last completion of its batch
// is posted (the software controller's thread waits for the batch's copies):
// queue 1's reads complete after their processing (page reads, then DMA;
// the PM1743's reads of one die follow each other, 67 to 203 us), and queue
// 3's flushes, which share queue 1's processor, complete the gap and a batch
// time (18 us) after queue 1's last read. Were the processor free once it
// had processed queue 1's batch, the flushes would complete at 36 us.
TEST(ControllerArbitration, BatchServiceHoldsTheProcessorUntilTheBatchCompletes) {
  for (double gap_us : {0.0, 5.0}) {
    const auto latency = batch_service_latencies(gap_us * 1000.0, true);
    for (std::uint16_t q = 1; q <= 3; ++q) ASSERT_EQ(latency[q].size(), 8u) << "queue " << q;
    const Picoseconds first_done = *std::max_element(latency[1].begin(), latency[1].end());
    const Picoseconds waiting_done = *std::min_element(latency[3].begin(), latency[3].end());
    EXPECT_GE(ps_to_ns(waiting_done - first_done) / 1000.0, gap_us + 18.0) << "gap " << gap_us;
    EXPECT_LT(ps_to_ns(waiting_done - first_done) / 1000.0, gap_us + 18.0 + 3.0)
        << "gap " << gap_us;
  }
}

// doorbell_pickup_ns: an SQ tail doorbell reaches the processors P later.
// Queue 1's batch (18 us: 10 us + 8 x 1 us) on an idle processor 0 starts P
// after its doorbell, so its latency grows by P. Queue 3, rung 5 us after
// queue 1 and served by the same processor, is picked up while that
// processor is still busy (5 us + P < 18 us), so it follows queue 1's batch
// at once either way: queue 3's completions trail queue 1's by the same
// time with and without P. The statistics' fetch wait counts from the
// doorbell's arrival, so it includes P.
struct PickupRun {
  std::array<std::vector<Picoseconds>, 4> latency;
  double fetch_wait_mean_ns = 0;
};

PickupRun pickup_latencies(double pickup_ns) {
  Contest c({"samsung-pm1743",
             {{"controller_cores", 2},
              {"batch_service", true},
              {"batch_overhead_ns", 10000.0},
              {"batch_gap_ns", 0.0},
              {"command_overhead_ns", 1000.0},
              {"doorbell_pickup_ns", pickup_ns},
              {"volatile_write_cache", false},
              {"max_active_commands", 1024},
              {"sq_fetch_burst", 8},
              {"arbitration_burst_log2", 7}}});
  c.bring_up(false, Arbitration{7, 0, 0, 0});
  PickupRun r;
  for (std::uint16_t q : {std::uint16_t{1}, std::uint16_t{3}}) {
    for (int i = 0; i < 8; ++i) {
      c.hosts[q]->submit(
          make_flush(0, 1),
          [&r, q](const CompletionEntry& e, Picoseconds l) {
            EXPECT_EQ(e.status(), Status::Success);
            r.latency[q].push_back(l);
          },
          false);
    }
  }
  c.hosts[1]->ring_sq();
  c.bench.run(ns_to_ps(5000.0));
  c.hosts[3]->ring_sq();
  c.bench.run();
  EXPECT_NO_THROW(c.bench.ssd().check_drained());
  const nlohmann::json stats = c.bench.ssd().statistics(Simulation::now());
  r.fetch_wait_mean_ns = stats.at("fetch_wait_ns").at("mean").get<double>();
  return r;
}

TEST(ControllerArbitration, DoorbellPickupDelaysABatchOnlyWhereItsProcessorIsIdle) {
  const PickupRun base = pickup_latencies(0.0);
  const PickupRun picked = pickup_latencies(3000.0);
  for (std::uint16_t q : {std::uint16_t{1}, std::uint16_t{3}}) {
    ASSERT_EQ(base.latency[q].size(), 8u) << "queue " << q;
    ASSERT_EQ(picked.latency[q].size(), 8u) << "queue " << q;
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(picked.latency[1][i] - base.latency[1][i], ns_to_ps(3000.0)) << "command " << i;
    EXPECT_EQ(picked.latency[3][i] - picked.latency[1][i], base.latency[3][i] - base.latency[1][i])
        << "command " << i;
  }
  // Queue 3 waits behind queue 1's whole batch: about 18 - 5 + 18 us.
  EXPECT_GT(ps_to_ns(base.latency[3][0]) / 1000.0, 31.0);
  // Every command's fetch wait grows by P (queue 3's because queue 1's batch
  // ends P later).
  EXPECT_NEAR(picked.fetch_wait_mean_ns - base.fetch_wait_mean_ns, 3000.0, 1.0);
}

TEST(ControllerArbitration, DoorbellPickupIsABatchServiceControllersOnly) {
  try {
    Contest c({"samsung-pm1743", {{"doorbell_pickup_ns", 1000.0}}});
    FAIL() << "a doorbell pickup without batch_service was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("doorbell_pickup_ns"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch_service"), std::string::npos) << e.what();
  }
}

// A processor slower by 2.5 (processor_time_scale) takes 2.5 times the
// batch time (10 us + 8 x 1 us = 18 us -> 45 us) for queue 2's batch, while
// processor 0 serves queues 1 and 3 at the nominal 18 us each; the
// statistics count each processor's batches, commands and busy time (fetch
// to last completion posted: the batch time plus about 2 us of PCIe).
TEST(ControllerArbitration, EachProcessorRunsAtItsOwnSpeed) {
  nlohmann::json stats;
  const auto latency = batch_service_latencies(0.0, false, {1.0, 2.5}, &stats);
  const double expected_us[4] = {0, 18.0, 45.0, 36.0};
  for (std::uint16_t q = 1; q <= 3; ++q) {
    ASSERT_EQ(latency[q].size(), 8u) << "queue " << q;
    const auto [lo, hi] = std::minmax_element(latency[q].begin(), latency[q].end());
    EXPECT_GE(ps_to_ns(*lo) / 1000.0, expected_us[q]) << "queue " << q;
    EXPECT_LT(ps_to_ns(*hi) / 1000.0, expected_us[q] + 3.0) << "queue " << q;
  }
  const nlohmann::json& processors = stats.at("batch_processors");
  ASSERT_EQ(processors.size(), 2u);
  EXPECT_EQ(processors[0].at("batches"), 2);
  EXPECT_EQ(processors[0].at("commands"), 16);
  EXPECT_EQ(processors[1].at("batches"), 1);
  EXPECT_EQ(processors[1].at("commands"), 8);
  EXPECT_GE(processors[0].at("busy_ns").get<double>(), 2 * 18000.0);
  EXPECT_LT(processors[0].at("busy_ns").get<double>(), 2 * 18000.0 + 6000.0);
  EXPECT_GE(processors[1].at("busy_ns").get<double>(), 45000.0);
  EXPECT_LT(processors[1].at("busy_ns").get<double>(), 45000.0 + 3000.0);
}

}  // namespace
}  // namespace gpunvme::nvme::testing
