// Fast mode's delivery at the last hop (Fabric::set_fast_delivery) against the fabric moving a
// burst's head to its target in an event of its own: on randomized streams of posted writes and
// reads on shipped topologies, on a switch with round-robin egress arbitration and on one whose
// small buffers pace bursts by credits, every transfer is delivered at the same picosecond. And
// the events it spares, counted by hand: one per burst whose target is not host memory (a GPU's
// memory, an SSD's registers, a read's completions), none where host memory serves the burst.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/pcie/random_stream.h"

namespace gpunvme::pcie::testing {
// Named: the unit build compiles this file with the other fabric tests.
namespace fast_delivery {

std::function<void(Fabric&)> with_fast_delivery(bool on) {
  return [on](Fabric& f) { f.set_fast_delivery(on); };
}

void expect_same_deliveries(const nlohmann::json& topology, const std::string& label) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<StreamOp> ops = random_stream(topology, seed, 300);
    const std::string per_hop = run_stream(topology, ops, with_fast_delivery(false)).deliveries;
    const std::string fast = run_stream(topology, ops, with_fast_delivery(true)).deliveries;
    EXPECT_EQ(per_hop.find("never"), std::string::npos) << label;
    EXPECT_EQ(fast, per_hop) << label << ", seed " << seed;
  }
}

TEST(FastDelivery, SameDeliveryTimesAsPerHopOnShippedTopologies) {
  for (const char* name : kStreamTopologies) expect_same_deliveries(shipped_topology(name), name);
}

TEST(FastDelivery, SameDeliveryTimesWithRoundRobinEgressAndCreditPacing) {
  expect_same_deliveries(round_robin_small_buffers(), "four-gen4-ssds, round robin, small buffers");
}

// The model callbacks of one posted write on an idle fabric: the driver's own, then one per
// stage after the first (the head reaching it; the first is booked when the write is sent), one
// for the head reaching the target and one for the delivery. Fast delivery books the target's
// part at the last stage, so the head's arrival there is no event of its own, except where host
// memory serves the write at its bandwidth (its server is booked when the head arrives).
std::uint64_t callbacks_of_one_write(const char* src, const char* target, bool fast_delivery) {
  Bench b(shipped_topology("four-gen4-ssds").dump());
  b.fabric.set_fast_delivery(fast_delivery);
  Picoseconds delivered = 0;
  b.at(1'000'000, [&] {
    b.fabric.write(b.node(src), b.base.at(target), 64, nullptr,
                   [&delivered] { delivered = Simulation::now(); });
  });
  const std::uint64_t before = Simulation::events(Simulation::EventKind::kModelCallback);
  b.run();
  EXPECT_GT(delivered, Picoseconds{1'000'000});
  return Simulation::events(Simulation::EventKind::kModelCallback) - before;
}

TEST(FastDelivery, SparesTheArrivalEventWhereNoHostMemoryServes) {
  // ssd0 -> sw0 -> gpu0: two stages. Per hop: driver 1, second stage 1, arrival 1, delivery 1.
  EXPECT_EQ(callbacks_of_one_write("ssd0", "gpu0", false), 4u);
  EXPECT_EQ(callbacks_of_one_write("ssd0", "gpu0", true), 3u);
  // ssd0 -> sw0 -> rc0 -> dram0: host memory books its bandwidth when the head arrives, in
  // either mode.
  const std::uint64_t to_host = callbacks_of_one_write("ssd0", "dram0", false);
  EXPECT_GE(to_host, 4u);
  EXPECT_EQ(callbacks_of_one_write("ssd0", "dram0", true), to_host);
}

}  // namespace fast_delivery
}  // namespace gpunvme::pcie::testing
