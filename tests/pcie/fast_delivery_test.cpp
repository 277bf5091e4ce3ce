// Fast mode's delivery at the last hop (Fabric::set_fast_delivery) against the fabric moving a
// burst's head to its target in an event of its own: on randomized streams of posted writes and
// reads on shipped topologies, on a switch with round-robin egress arbitration and on one whose
// small buffers pace bursts by credits, every transfer is delivered at the same picosecond. And
// the events it spares, counted by hand: one per burst whose target is not host memory (a GPU's
// memory, an SSD's registers, a read's completions), none where host memory serves the burst.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
// Named: the unit build compiles this file with the other fabric tests.
namespace fast_delivery {

nlohmann::json shipped_topology(const std::string& name) {
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/" + name + ".json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

struct StreamOp {
  Picoseconds at;
  bool read;
  std::string src;
  std::string target;
  std::uint64_t offset;
  std::uint32_t len;
};

std::vector<StreamOp> random_stream(const nlohmann::json& topology, std::uint64_t seed, int count) {
  std::vector<std::string> requesters, memories;
  for (const auto& n : topology.at("nodes")) {
    const std::string kind = n.at("kind");
    const std::string id = n.at("id");
    if (kind == "gpu" || kind == "nvme_ssd") requesters.push_back(id);
    if (kind == "gpu" || kind == "host_memory" || kind == "cxl_memory") memories.push_back(id);
  }
  const std::uint32_t sizes[] = {4, 8, 16, 64, 100, 256, 512, 4096, 4096, 4096, 8192, 65536};
  std::mt19937_64 random(seed);
  std::vector<StreamOp> ops;
  Picoseconds at = 0;
  for (int i = 0; i < count; ++i) {
    StreamOp op;
    at += random() % 4 == 0 ? random() % 2'000'000 : random() % 20'000;
    op.at = at;
    op.read = random() % 2 == 0;
    op.src = requesters[random() % requesters.size()];
    do {
      op.target = memories[random() % memories.size()];
    } while (op.target == op.src);
    op.len = random() % 5 == 0 ? static_cast<std::uint32_t>(1 + random() % 20000)
                               : sizes[random() % std::size(sizes)];
    op.offset = (random() % 4096) * 64 + (random() % 3 == 0 ? random() % 64 : 0);
    ops.push_back(op);
  }
  return ops;
}

// Each transfer's delivery time (or that the platform refused its path).
std::string run_stream(const nlohmann::json& topology, const std::vector<StreamOp>& ops,
                       bool fast_delivery) {
  Bench b(topology.dump());
  b.fabric.set_fast_delivery(fast_delivery);
  for (std::size_t i = 0; i < b.topology.nodes.size(); ++i) {
    const NodeConfig& n = b.topology.nodes[i];
    if (n.kind == "cxl_memory") {
      b.base[n.id] = b.memory.allocate(1ull << 30, i, RegionKind::HostMemory, n.id).base;
    }
  }
  constexpr Picoseconds kRefused = ~Picoseconds{0};
  std::vector<Picoseconds> done(ops.size(), 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const StreamOp& op = ops[i];
    b.at(op.at, [&b, &done, &op, i] {
      const std::uint64_t addr = b.base.at(op.target) + op.offset;
      try {
        if (op.read) {
          b.fabric.read(
              b.node(op.src), addr, op.len,
              [&done, i](const std::uint8_t*, std::uint32_t) { done[i] = Simulation::now(); });
        } else {
          b.fabric.write(b.node(op.src), addr, op.len, nullptr,
                         [&done, i] { done[i] = Simulation::now(); });
        }
      } catch (const BlockedTransfer&) {
        done[i] = kRefused;
      }
    });
  }
  b.run();
  std::string deliveries;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    deliveries += done[i] == kRefused ? fmt::format("{} refused\n", i)
                  : done[i] == 0      ? fmt::format("{} never delivered\n", i)
                                      : fmt::format("{} {}\n", i, done[i]);
  }
  return deliveries;
}

void expect_same_deliveries(const nlohmann::json& topology, const std::string& label) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<StreamOp> ops = random_stream(topology, seed, 300);
    const std::string per_hop = run_stream(topology, ops, false);
    const std::string fast = run_stream(topology, ops, true);
    EXPECT_EQ(per_hop.find("never"), std::string::npos) << label;
    EXPECT_EQ(fast, per_hop) << label << ", seed " << seed;
  }
}

TEST(FastDelivery, SameDeliveryTimesAsPerHopOnShippedTopologies) {
  for (const char* name : {"default", "four-gen4-ssds", "two-sockets", "iommu-translating",
                           "two-gpus-shared-ssds-iommu", "cxl-memory", "two-root-ports"}) {
    expect_same_deliveries(shipped_topology(name), name);
  }
}

TEST(FastDelivery, SameDeliveryTimesWithRoundRobinEgressAndCreditPacing) {
  nlohmann::json topology = shipped_topology("four-gen4-ssds");
  for (auto& n : topology.at("nodes")) {
    if (n.at("kind") == "switch") {
      n["port_arbitration"] = "round_robin";
      n["posted_header_credits"] = 4;
      n["posted_data_credits"] = 64;
      n["completion_header_credits"] = 4;
      n["completion_data_credits"] = 64;
    }
  }
  expect_same_deliveries(topology, "four-gen4-ssds, round robin, small buffers");
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
