// Command slots (max_active_commands) against hand-computed oracles.
//  * Two slots, one queue, five Flush commands of fixed service time with the
//    SQ and CQ in the controller memory buffer (every SQE read and CQE write
//    costs exactly cmb_access_ns, no PCIe): the completion times, fetch waits,
//    service times and slot statistics are written out by hand below.
//  * Two SQs sharing four slots with an arbitration burst of two: the order
//    in which commands are fetched once the slots are full, written by hand
//    from the round robin of NVMe base spec 4.13.
//  * Little's law over a loaded run: mean commands in the controller equals
//    throughput x mean service time; with more outstanding commands than
//    slots the extra queueing shows in the fetch wait (by Little's law again,
//    extra depth / throughput), while the service time stays put.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

constexpr double kCmbAccessNs = 100.0;  // c: one SQE read or CQE write in the CMB
constexpr double kServiceNs = 1000.0;   // S: a Flush's processing (no volatile cache)

BenchOptions slot_bench(int slots, int cores, int burst_log2) {
  return {"samsung-pm1743",
          {{"cmb_mib", 4},
           {"cmb_access_ns", kCmbAccessNs},
           {"controller_cores", cores},
           {"command_overhead_ns", kServiceNs},
           {"max_active_commands", slots},
           {"arbitration_burst_log2", burst_log2}}};
}

TEST(CommandSlots, TwoSlotsFiveCommandsByHand) {
  Bench bench(slot_bench(/*slots=*/2, /*cores=*/2, /*burst_log2=*/3));
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(64, 1, host::QueuePlacement::cmb));
  std::vector<Picoseconds> seen(5, 0);
  const Picoseconds submitted = Simulation::now();
  for (int i = 0; i < 5; ++i) {
    host.submit(
        make_flush(0, 1),
        [&seen, i](const CompletionEntry& cqe, Picoseconds) {
          EXPECT_TRUE(cqe.ok());
          seen[i] = Simulation::now();
        },
        /*ring=*/false);
  }
  host.ring_sq();
  bench.run();
  ASSERT_EQ(host.completed(), 5u);

  // By hand, from the doorbell's arrival A: commands 0 and 1 take both
  // slots (one SQE read, arriving at A + c) and complete at A + c + S; each
  // completion frees a slot and starts the read of the next SQE, so 2 and 3
  // arrive at A + 2c + S and complete at A + 2c + 2S; 4 takes the slot 2
  // frees and completes at A + 3c + 3S. The host sees each completion a CQE
  // write (c) later.
  const Picoseconds c = ns_to_ps(kCmbAccessNs);
  const Picoseconds s = ns_to_ps(kServiceNs);
  EXPECT_EQ(seen[1], seen[0]);
  EXPECT_EQ(seen[2] - seen[0], c + s);
  EXPECT_EQ(seen[3], seen[2]);
  EXPECT_EQ(seen[4] - seen[2], c + s);
  EXPECT_GT(seen[0], submitted + 2 * c + s);  // plus the doorbell's posted write

  const Controller& ssd = bench.ssd();
  // Service: every command exactly S from its SQE's arrival to its CQE.
  EXPECT_EQ(ssd.service().min(), s);
  EXPECT_EQ(ssd.service().max(), s);
  // Fetch wait from the doorbell: c, c, 2c + S, 2c + S, 3c + 2S.
  EXPECT_EQ(ssd.fetch_wait().min(), c);
  EXPECT_EQ(ssd.fetch_wait().max(), 3 * c + 2 * s);
  EXPECT_NEAR(ssd.fetch_wait().mean(), (9.0 * c + 4.0 * s) / 5.0, 1.0);

  // Slots: both busy from A to A + 2c + 2S, one until A + 3c + 3S, so the
  // mean over the I/O span 3(c + S) is 5/3; commands sit S each in the
  // controller, 5S in all; the fetch engine waited for a slot twice, c + S
  // each time (the slot 1 frees is taken in the instant 0 frees one).
  const nlohmann::json slots = ssd.statistics(Simulation::now()).at("slots");
  EXPECT_EQ(slots.at("count").get<std::uint32_t>(), 2u);
  EXPECT_EQ(slots.at("busy_max").get<std::uint32_t>(), 2u);
  EXPECT_NEAR(slots.at("busy_mean").get<double>(), 5.0 / 3.0, 1e-9);
  EXPECT_NEAR(slots.at("commands_mean").get<double>(),
              5.0 * kServiceNs / (3.0 * (kCmbAccessNs + kServiceNs)), 1e-9);
  EXPECT_EQ(slots.at("fetch_stalls").get<std::uint64_t>(), 2u);
  EXPECT_NEAR(slots.at("stalled_ns").get<double>(), 2.0 * (kCmbAccessNs + kServiceNs), 1e-6);
}

// Without a slot limit in the way the same five commands are fetched at once
// and finish together: the slots, not the queue or the processors, held
// commands 2 to 4 back.
TEST(CommandSlots, EnoughSlotsFetchEverythingAtOnce) {
  Bench bench(slot_bench(/*slots=*/8, /*cores=*/8, /*burst_log2=*/3));
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(64, 1, host::QueuePlacement::cmb));
  std::vector<Picoseconds> seen;
  for (int i = 0; i < 5; ++i) {
    host.submit(
        make_flush(0, 1),
        [&seen](const CompletionEntry&, Picoseconds) { seen.push_back(Simulation::now()); }, false);
  }
  host.ring_sq();
  bench.run();
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen.front(), seen.back());
  const nlohmann::json slots = bench.ssd().statistics(Simulation::now()).at("slots");
  EXPECT_EQ(slots.at("busy_max").get<std::uint32_t>(), 5u);
  EXPECT_EQ(slots.at("fetch_stalls").get<std::uint64_t>(), 0u);
  EXPECT_EQ(bench.ssd().fetch_wait().max(), ns_to_ps(kCmbAccessNs));
}

// Two SQs, four slots, arbitration burst 2 (AB = 1), one processor. Queue 1's
// doorbell lands first: its two turns of two fill the four slots before
// queue 2's doorbell arrives. From then on every completion frees one slot
// and the arbiter serves the SQ whose turn it is, one command per turn (a
// turn takes at most the free slots): queue 1 (ready since its last turn)
// before queue 2, then alternately until queue 1 runs dry.
TEST(CommandSlots, ArbitrationOrderWhenSlotsFree) {
  Bench bench(slot_bench(/*slots=*/4, /*cores=*/1, /*burst_log2=*/1));
  TestHost q1("q1", bench);
  TestHost q2("q2", bench);
  host::BringUpOptions options;
  options.io_queues = 2;
  std::vector<host::IoQueueSpec> specs(2);
  for (std::uint16_t q = 0; q < 2; ++q) {
    specs[q].qid = static_cast<std::uint16_t>(q + 1);
    specs[q].entries = 64;
    specs[q].placement = host::QueuePlacement::cmb;
  }
  const auto created = bench.bring_up(0, options, specs);
  ASSERT_EQ(created.size(), 2u);
  q1.attach(created[0]);
  q2.attach(created[1]);
  std::string order;
  for (TestHost* h : {&q1, &q2}) {
    const char name = h == &q1 ? '1' : '2';
    for (int i = 0; i < 6; ++i) {
      h->submit(
          make_flush(0, 1), [&order, name](const CompletionEntry&, Picoseconds) { order += name; },
          false);
    }
  }
  q1.ring_sq();
  q2.ring_sq();
  bench.run();
  // One processor serves commands in fetch order, so completions show it.
  EXPECT_EQ(order, "111112122222");
  EXPECT_EQ(bench.ssd().sq_fetched(1), 6u);
  EXPECT_EQ(bench.ssd().sq_fetched(2), 6u);
}

struct LoadedRun {
  double io_iops = 0;
  double service_mean_ns = 0;
  double fetch_wait_mean_ns = 0;
  nlohmann::json slots;
};

// A closed loop of 4 KiB random reads at `depth` on the PM1743 profile with
// `slots` command slots.
LoadedRun loaded_run(std::uint32_t depth, int slots) {
  Bench bench({"samsung-pm1743", {{"max_active_commands", slots}}});
  TestHost host("host", bench);
  host.attach(bench.bring_up_one(4096));
  const std::uint64_t buffers = bench.driver().allocate(host::QueuePlacement::host, 4096ull * 4096);
  const std::uint32_t lba = bench.ssd().lba_bytes();
  const std::uint64_t pages = bench.ssd().capacity_lbas() / (4096 / lba);
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::uint64_t> pick(0, pages - 1);
  const LoopResult r = closed_loop(bench, host, depth, 20 * depth, [&](std::uint64_t i) {
    return make_read(0, 1, pick(rng) * (4096 / lba), static_cast<std::uint16_t>(4096 / lba - 1),
                     buffers + (i % 4096) * 4096, 0);
  });
  EXPECT_EQ(r.errors, 0u);
  const nlohmann::json stats = bench.ssd().statistics(Simulation::now());
  return {stats.at("io_iops").get<double>(), bench.ssd().service().mean() / 1000.0,
          bench.ssd().fetch_wait().mean() / 1000.0, stats.at("slots")};
}

TEST(CommandSlots, LittlesLawAndWhereTheQueueingGoes) {
  const LoadedRun at_slots = loaded_run(256, 256);
  const LoadedRun deep = loaded_run(1024, 256);
  for (const LoadedRun* run : {&at_slots, &deep}) {
    // Little's law over the whole I/O span: mean commands in the controller
    // = throughput x mean time each spends there.
    EXPECT_NEAR(run->slots.at("commands_mean").get<double>(),
                run->io_iops * run->service_mean_ns * 1e-9,
                1e-6 * run->slots.at("commands_mean").get<double>());
    EXPECT_EQ(run->slots.at("busy_max").get<std::uint32_t>(), 256u);
  }
  // Four times the depth: the controller's service time stays where it was
  // (within 10 %), the extra 768 commands wait in the SQ, which by Little's
  // law adds 768 / throughput to the fetch wait (within 10 %).
  EXPECT_NEAR(deep.service_mean_ns, at_slots.service_mean_ns, 0.10 * at_slots.service_mean_ns);
  const double added_ns = deep.fetch_wait_mean_ns - at_slots.fetch_wait_mean_ns;
  const double expected_ns = 768.0 / deep.io_iops * 1e9;
  EXPECT_NEAR(added_ns, expected_ns, 0.10 * expected_ns);
  EXPECT_GT(deep.slots.at("fetch_stalls").get<std::uint64_t>(), 0u);
}

}  // namespace
}  // namespace gpunvme::nvme::testing
