// Per-TLP flow control against closed forms written here: N equal senders into one egress share
// it equally and together reach the smaller of the egress's rate and the sum of theirs, at every
// transfer size; a receiver with fewer credits than the bandwidth-delay product paces a sender
// at credits x 16 B per credit loop; four SSDs behind the GPU's switch are never slower than
// four SSDs on the other socket whose writes end on the same switch->GPU link.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
namespace {

constexpr int kSenders = 4;
const std::uint32_t kSizes[] = {4096, 16384, 128 * 1024, 1024 * 1024};

// Payload bytes per ns of a Gen5 link of `lanes` carrying 256 B writes (280 B on the wire:
// 4 DW header with a 64-bit address, framing, sequence number, LCRC).
double payload_rate(int lanes) { return tlp_bytes_per_ns(32, lanes) * 256.0 / 280.0; }

// gpu0 behind sw0 (Gen5, `gpu_lanes`), the four SSDs (Gen5 x4) behind sw0 as well or, with
// `other_socket`, on root ports of a second socket's root complex.
std::string machine(int gpu_lanes, bool other_socket, const std::string& sw0 = "") {
  std::string nodes = R"({"id": "cpu0", "kind": "cpu"}, {"id": "cpu1", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "rc1", "kind": "root_complex", "socket": "cpu1"},
      {"id": "sw0", "kind": "switch")" +
                      sw0 + R"(}, {"id": "gpu0", "kind": "gpu"})";
  std::string links = R"({"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": )" +
                      std::to_string(gpu_lanes) + R"(},
      {"type": "inter_socket", "from": "cpu0", "to": "cpu1", "latency_ns": 70})";
  for (int i = 0; i < kSenders; ++i) {
    const std::string ssd = "ssd" + std::to_string(i);
    nodes += R"(, {"id": ")" + ssd + R"(", "kind": "nvme_ssd"})";
    links += R"(, {"from": ")" + std::string(other_socket ? "rc1" : "sw0") + R"(", "to": ")" + ssd +
             R"(", "gen": 5, "width": 4})";
  }
  return R"({"name": "sharing", "nodes": [)" + nodes + R"(], "links": [)" + links + "]}";
}

// Each SSD writes `bytes_each` into gpu0 in writes of `size`, all issued at once; returns the
// time each SSD's last write was delivered.
std::vector<Picoseconds> write_all(Bench& b, std::uint32_t size, std::uint64_t bytes_each) {
  std::vector<Picoseconds> done(kSenders, 0);
  b.at(0, [&] {
    for (int i = 0; i < kSenders; ++i) {
      const std::size_t ssd = b.node("ssd" + std::to_string(i));
      const std::uint64_t region = std::uint64_t(i) * bytes_each;
      for (std::uint64_t at = 0; at < bytes_each; at += size) {
        b.fabric.write(ssd, b.base["gpu0"] + region + at, size, nullptr,
                       [&done, i] { done[static_cast<std::size_t>(i)] = Simulation::now(); });
      }
    }
  });
  b.run();
  return done;
}

// As write_all, but each SSD keeps at most `in_flight` writes outstanding, issuing the next as
// one is delivered, as an SSD's data DMA engine does.
std::vector<Picoseconds> write_closed_loop(Bench& b, std::uint32_t size, std::uint64_t bytes_each,
                                           int in_flight) {
  std::vector<Picoseconds> done(kSenders, 0);
  std::vector<std::uint64_t> issued(kSenders, 0);
  std::function<void(int)> issue = [&](int i) {
    const auto at = issued[static_cast<std::size_t>(i)];
    if (at >= bytes_each) return;
    issued[static_cast<std::size_t>(i)] += size;
    b.fabric.write(b.node("ssd" + std::to_string(i)),
                   b.base["gpu0"] + std::uint64_t(i) * bytes_each + at, size, nullptr, [&, i] {
                     done[static_cast<std::size_t>(i)] = Simulation::now();
                     issue(i);
                   });
  };
  b.at(0, [&] {
    for (int i = 0; i < kSenders; ++i) {
      for (int k = 0; k < in_flight; ++k) issue(i);
    }
  });
  b.run();
  return done;
}

std::uint64_t bytes_each(std::uint32_t size) {
  return std::max<std::uint64_t>(4ull << 20, 32ull * size);
}

TEST(CreditSharing, EqualSendersGetEqualSharesOfTheEgressAtEverySize) {
  for (const int gpu_lanes : {16, 4}) {
    // x16: the egress carries what the four x4 links bring (each sender at its own link's
    // rate); x4: the egress is the bottleneck and each sender gets a quarter of it.
    const double each = std::min(payload_rate(4), payload_rate(gpu_lanes) / kSenders);
    for (const std::uint32_t size : kSizes) {
      SCOPED_TRACE(::testing::Message() << "gpu x" << gpu_lanes << ", " << size << " B writes");
      Bench b(machine(gpu_lanes, false));
      const std::uint64_t bytes = bytes_each(size);
      const std::vector<Picoseconds> done = write_all(b, size, bytes);
      const Picoseconds last = *std::max_element(done.begin(), done.end());
      // Together: within 3 % of the closed form (the first burst's latency and the last
      // bursts' drain are a fixed cost on a run of 16 MiB or more).
      const double total = kSenders * static_cast<double>(bytes) / ps_to_ns(last);
      EXPECT_NEAR(total, kSenders * each, 0.03 * kSenders * each);
      // Each: its own bytes over its own finish time, within 5 % of an equal share.
      for (int i = 0; i < kSenders; ++i) {
        const double rate = static_cast<double>(bytes) / ps_to_ns(done[static_cast<size_t>(i)]);
        EXPECT_NEAR(rate, each, 0.05 * each) << "ssd" << i;
      }
    }
  }
}

TEST(CreditSharing, FewerCreditsThanTheBandwidthDelayProductPaceTheSenderPerLoop) {
  // One SSD writes 4 MiB in 1 MiB bursts into gpu0 through sw0 whose ingress buffer holds 4 KiB
  // (256 posted data credits); gpu0's link is x16, so the switch forwards as fast as data comes
  // and only the credit loop limits the SSD. The loop: one 280 B TLP on the x4 link, the
  // 500 ns link flight, the 115 ns switch, the TLP on the x16 link, the 500 ns UpdateFC flight.
  const std::string sw0 = R"(, "posted_data_credits": 256)";
  std::string topology = machine(16, false, sw0);
  // Lengthen ssd0's link so the loop dwarfs the TLP times.
  const std::string ssd0_link = R"("to": "ssd0", "gen": 5, "width": 4})";
  topology.replace(topology.find(ssd0_link), ssd0_link.size(),
                   R"("to": "ssd0", "gen": 5, "width": 4, "latency_ns": 500})");
  Bench b(topology);
  std::vector<Picoseconds> done;
  b.at(0, [&] {
    for (int i = 0; i < 4; ++i) {
      b.fabric.write(b.node("ssd0"), b.base["gpu0"] + (std::uint64_t(i) << 20), 1u << 20, nullptr,
                     [&done] { done.push_back(Simulation::now()); });
    }
  });
  b.run();
  ASSERT_EQ(done.size(), 4u);
  const double loop_ns = ps_for(280, tlp_bytes_per_ns(32, 4)) / 1000.0 + 500 + 115 +
                         ps_for(280, tlp_bytes_per_ns(32, 16)) / 1000.0 + 500;
  const double expected = 256 * 16 / loop_ns;  // B/ns: the buffer once per loop
  ASSERT_LT(expected, payload_rate(4) / 2);    // well below the wire
  const double measured = payload_gbps(done, 1 << 20);
  EXPECT_NEAR(measured, expected, 0.01 * expected);
  // The pacing shows on the link: every burst, the time beyond the wire's (~3/4 of the run).
  const nlohmann::json link = b.link("ssd0->sw0", Simulation::now());
  EXPECT_EQ(link["credit_paced"], 4);
  EXPECT_GT(link["credit_paced_ns"].get<double>(), 0.7 * 4 * (1 << 20) / expected);
  EXPECT_EQ(link["by_class"]["posted_write"]["credit_paced"], 4);
  // The default buffer (4096 data credits, 64 KiB) is above the loop's bandwidth-delay
  // product at x4 (~15 GB/s x ~1.13 us = ~17 KB) and keeps the SSD at its link's rate.
  Bench wide(machine(16, false));
  std::vector<Picoseconds> wide_done;
  wide.at(0, [&] {
    for (int i = 0; i < 4; ++i) {
      wide.fabric.write(wide.node("ssd0"), wide.base["gpu0"] + (std::uint64_t(i) << 20), 1u << 20,
                        nullptr, [&wide_done] { wide_done.push_back(Simulation::now()); });
    }
  });
  wide.run();
  EXPECT_NEAR(payload_gbps(wide_done, 1 << 20), payload_rate(4), 0.01 * payload_rate(4));
}

TEST(CreditSharing, SameSwitchIsNeverSlowerThanThePathAcrossSockets) {
  for (const std::uint32_t size : kSizes) {
    SCOPED_TRACE(::testing::Message() << size << " B writes");
    const std::uint64_t bytes = bytes_each(size);
    Bench near(machine(16, false));
    Bench far(machine(16, true));
    const std::vector<Picoseconds> near_done = write_all(near, size, bytes);
    const std::vector<Picoseconds> far_done = write_all(far, size, bytes);
    const Picoseconds near_last = *std::max_element(near_done.begin(), near_done.end());
    const Picoseconds far_last = *std::max_element(far_done.begin(), far_done.end());
    EXPECT_LE(near_last, far_last);
    // Closed loop, two writes in flight per SSD: the longer path's latency can only cost.
    Bench near_loop(machine(16, false));
    Bench far_loop(machine(16, true));
    const std::vector<Picoseconds> near_loop_done = write_closed_loop(near_loop, size, bytes, 2);
    const std::vector<Picoseconds> far_loop_done = write_closed_loop(far_loop, size, bytes, 2);
    EXPECT_LE(*std::max_element(near_loop_done.begin(), near_loop_done.end()),
              *std::max_element(far_loop_done.begin(), far_loop_done.end()));
  }
}

}  // namespace
}  // namespace gpunvme::pcie::testing
