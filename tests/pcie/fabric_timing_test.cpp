// Timing of the PCIe fabric against independent oracles: the cut-through closed form of one
// burst through a switch, the unloaded latency of a 64 B read as the sum of its hops,
// pcie-bench's measured 64 B DMA read latency, pcie-bench's effective write and read bandwidth
// formulas (Neugebauer et al., SIGCOMM 2018) with its DLLP reading and with the spec's, two
// flows splitting one link, host memory, root complex and inter-socket bandwidth, and
// posted-write ordering.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
namespace {

// One socket, an SSD and a GPU behind a Gen5 switch, as the shipped default. Defaults: link
// 30 ns, switch 115 ns, root complex 150 ns and 128 GB/s, host memory 200 ns and 300 GB/s, GPU
// BAR access 250 ns; MPS 256, MRRS 512, RCB 64, 64-bit addresses.
std::string switch_machine(int ssd_gen = 5, int ssd_lanes = 4, int gpu_gen = 5, int gpu_lanes = 16,
                           const std::string& extra_nodes = "", const std::string& extra_links = "",
                           const std::string& rc0 = "") {
  return R"({"name": "bench", "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0")" +
         rc0 + R"(},
      {"id": "sw0", "kind": "switch"},
      {"id": "gpu0", "kind": "gpu"},
      {"id": "ssd0", "kind": "nvme_ssd"})" +
         extra_nodes + R"(],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": )" +
         std::to_string(gpu_gen) + R"(, "width": )" + std::to_string(gpu_lanes) + R"(},
      {"from": "sw0", "to": "ssd0", "gen": )" +
         std::to_string(ssd_gen) + R"(, "width": )" + std::to_string(ssd_lanes) + "}" +
         extra_links + "]}";
}

// An endpoint directly on a root port, as in pcie-bench's setup (Gen3 x8 by default).
std::string host(const std::string& top = "", const std::string& rc_extra = "",
                 const std::string& mem_extra = "", int gen = 3, int lanes = 8) {
  return R"({"name": "host")" + top + R"(, "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0")" +
         mem_extra + R"(},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0")" +
         rc_extra + R"(},
      {"id": "dev0", "kind": "nvme_ssd"}],
    "links": [{"from": "rc0", "to": "dev0", "gen": )" +
         std::to_string(gen) + R"(, "width": )" + std::to_string(lanes) + "}]}";
}

TEST(FabricTiming, OneBurstThroughASwitchFollowsTheCutThroughClosedForm) {
  Bench b(switch_machine());
  Picoseconds delivered = 0;
  b.at(0, [&] {
    b.fabric.write(b.node("ssd0"), b.base["gpu0"], 4096, nullptr,
                   [&] { delivered = Simulation::now(); });
  });
  b.run();
  // 4096 B at MPS 256: 16 TLPs of 256 B payload + 16 B header + 8 B framing.
  const double wire = 16 * (256 + 16 + 8);
  const double x4 = ps_for(wire, tlp_bytes_per_ns(32, 4));
  const double x16 = ps_for(wire, tlp_bytes_per_ns(32, 16));
  // SSD -> switch: the head moves on after the first TLP, the tail after all.
  const double head_at_switch = x4 / 16 + 30e3 + 115e3;
  const double tail_at_switch = x4 + 30e3 + 115e3;
  // Switch -> GPU: a faster link cannot run ahead of the bytes arriving.
  const double head_at_gpu = head_at_switch + x16 / 16 + 30e3;
  const double tail_at_gpu = std::max(head_at_switch + x16, tail_at_switch) + 30e3;
  const double expected = std::max(head_at_gpu, tail_at_gpu) + 250e3;
  EXPECT_NEAR(static_cast<double>(delivered), expected, 3.0);
}

TEST(FabricTiming, UnloadedSixtyFourByteReadThroughASwitchIsTheSumOfItsHops) {
  Bench b(switch_machine());
  Picoseconds done = 0;
  b.at(0, [&] {
    b.fabric.read(b.node("ssd0"), b.base["gpu0"], 64,
                  [&](const std::uint8_t*, std::uint32_t) { done = Simulation::now(); });
  });
  b.run();
  // Request: one MRd TLP, 16 B header + 8 B framing. Completion: one CplD, 12 + 8 + 64 B.
  const double x4 = tlp_bytes_per_ns(32, 4), x16 = tlp_bytes_per_ns(32, 16);
  const double request = ps_for(24, x4) + 30e3 + 115e3 + ps_for(24, x16) + 30e3;
  const double target = 250e3;  // GPU BAR access
  const double completion = ps_for(84, x16) + 30e3 + 115e3 + ps_for(84, x4) + 30e3;
  EXPECT_NEAR(static_cast<double>(done), request + target + completion, 3.0);
}

TEST(FabricTiming, SixtyFourByteDmaReadFromHostMemoryMatchesPcieBenchMedian) {
  Bench b(host());
  std::vector<Picoseconds> latencies;
  std::function<void()> next = [&] {
    const Picoseconds start = Simulation::now();
    b.fabric.read(b.node("dev0"), b.base["dram0"] + 4096 * latencies.size(), 64,
                  [&, start](const std::uint8_t*, std::uint32_t) {
                    latencies.push_back(Simulation::now() - start);
                    if (latencies.size() < 8) next();
                  });
  };
  b.at(0, next);
  b.run();
  ASSERT_EQ(latencies.size(), 8u);
  // pcie-bench measured a median of ~570 ns (550-600) for a 64 B DMA read of host memory from a
  // Gen3 x8 device on a Xeon E5 (CALIBRATION.md).
  for (Picoseconds l : latencies) EXPECT_NEAR(ps_to_ns(l), 570.0, 0.05 * 570.0);
  // And the sum of the modelled steps: request on the link, the root complex (one line
  // transaction, longer than 24 B at 128 GB/s; 150 ns), DRAM (200 ns), the completion back through
  // the root complex and the link.
  const double gen3x8 = tlp_bytes_per_ns(8, 8);
  const double expected = ps_for(24, gen3x8) + 30e3 + root_complex_ps(24) + 150e3 + 200e3 +
                          root_complex_ps(84) + 150e3 + ps_for(84, gen3x8) + 30e3;
  EXPECT_NEAR(static_cast<double>(latencies.back()), expected, 3.0);
}

// ACK / UpdateFC intervals at 8 GT/s and up for MPS 128, 256, 512 (PCIe Base Spec r5.0 Tables
// 3-9 and 2-48, as pcie-bench's model/pcie.py lists them).
int dllp_interval(int lanes, int mps) {
  const int slot = mps == 128 ? 0 : mps == 256 ? 1 : 2;
  static const int x8[] = {163, 203, 182}, x16[] = {144, 168, 182};
  return lanes == 8 ? x8[slot] : x16[slot];
}

double oracle_tlp_bytes_per_ns(double gtps, int lanes, int mps, bool pcie_bench) {
  const double raw = gtps * lanes * (128.0 / 130.0) / 8.0;
  const double interval = dllp_interval(lanes, mps) * (pcie_bench ? 1.0 : lanes);
  return raw * (1.0 - 16.0 / interval - 4.0 / 1538.0);
}

// Back-to-back aligned writes and reads of one size to host memory, run through the fabric,
// against pcie-bench's mem_bw formulas: write = TLP bandwidth x size / (ceil(size / MPS) x 24 +
// size); read (completion-bound) = TLP bandwidth x size / (ceil(size / MPS) x 20 + size). Both
// DLLP readings: pcie-bench's (its published figures) and the spec's (what the fabric uses).
TEST(FabricTiming, StreamsRunAtPcieBenchEffectiveBandwidthWithinOnePercent) {
  struct Link {
    double gtps;
    int gen, lanes;
  };
  for (const Link link : {Link{8, 3, 8}, Link{16, 4, 16}}) {
    for (int mps : {128, 256, 512}) {
      for (const bool pcie_bench : {true, false}) {
        for (int size : {64, 256, 1024, 4096}) {
          SCOPED_TRACE(fmt::format("Gen{} x{} MPS {} size {} {}", link.gen, link.lanes, mps, size,
                                   pcie_bench ? "pcie_bench" : "symbol_times"));
          const std::string top = fmt::format(R"(, "mps": {}, "dllp_intervals": "{}")", mps,
                                              pcie_bench ? "pcie_bench" : "symbol_times");
          Bench b(host(top, "", "", link.gen, link.lanes));
          std::vector<Picoseconds> writes, reads;
          const int count = 120;
          b.at(0, [&] {
            for (int i = 0; i < count; ++i) {
              b.fabric.write(b.node("dev0"), b.base["dram0"] + 4096ull * i, size, nullptr,
                             [&] { writes.push_back(Simulation::now()); });
            }
          });
          b.at(100'000'000, [&] {
            for (int i = 0; i < count; ++i) {
              b.fabric.read(b.node("dev0"), b.base["dram0"] + 4096ull * i, size,
                            [&](auto, auto) { reads.push_back(Simulation::now()); });
            }
          });
          b.run();
          const double tlp = oracle_tlp_bytes_per_ns(link.gtps, link.lanes, mps, pcie_bench);
          const int tlps = (size + mps - 1) / mps;
          const double write_gbps = tlp * size / (tlps * 24.0 + size);
          const double read_gbps = tlp * size / (tlps * 20.0 + size);
          EXPECT_NEAR(payload_gbps(writes, size), write_gbps, 0.01 * write_gbps);
          EXPECT_NEAR(payload_gbps(reads, size), read_gbps, 0.01 * read_gbps);
        }
      }
    }
  }
}

TEST(FabricTiming, TwoFlowsShareOneLinkDirectionEqually) {
  // Two Gen4 x4 SSDs write into a GPU whose own link is Gen4 x4: together they offer twice what
  // the GPU link carries, so it sets the pace and each gets half.
  Bench b(switch_machine(4, 4, 4, 4, R"(, {"id": "ssd1", "kind": "nvme_ssd"})",
                         R"(, {"from": "sw0", "to": "ssd1", "gen": 4, "width": 4})"));
  std::vector<Picoseconds> all;
  std::map<std::string, std::vector<Picoseconds>> per_ssd;
  b.at(0, [&] {
    for (int i = 0; i < 300; ++i) {
      for (const char* ssd : {"ssd0", "ssd1"}) {
        b.fabric.write(b.node(ssd), b.base["gpu0"] + 4096ull * (2 * i + (ssd[3] - '0')), 4096,
                       nullptr, [&, ssd] {
                         all.push_back(Simulation::now());
                         per_ssd[ssd].push_back(Simulation::now());
                       });
      }
    }
  });
  b.run();
  const double link = tlp_bytes_per_ns(16, 4) * 4096.0 / (16 * 24 + 4096);
  EXPECT_NEAR(payload_gbps(all, 4096), link, link * 1e-3);
  // Over the time both were sending, each had half.
  for (const char* ssd : {"ssd0", "ssd1"}) {
    EXPECT_NEAR(payload_gbps(per_ssd[ssd], 4096), link / 2, link * 0.01) << ssd;
  }
}

TEST(FabricTiming, HostMemoryBandwidthBoundsAFastLink) {
  // A 10 GB/s memory behind a Gen3 x8 link (~7.1 GB/s of payload) does not limit; at 3 GB/s it
  // does, for writes and for reads.
  for (double gbps : {10.0, 3.0}) {
    Bench b(host("", "", fmt::format(R"(, "bandwidth_gbps": {})", gbps)));
    std::vector<Picoseconds> writes, reads;
    b.at(0, [&] {
      for (int i = 0; i < 200; ++i) {
        b.fabric.write(b.node("dev0"), b.base["dram0"] + 4096ull * i, 4096, nullptr,
                       [&] { writes.push_back(Simulation::now()); });
      }
    });
    b.at(1'000'000'000, [&] {
      for (int i = 0; i < 200; ++i) {
        b.fabric.read(b.node("dev0"), b.base["dram0"] + 4096ull * i, 4096,
                      [&](auto, auto) { reads.push_back(Simulation::now()); });
      }
    });
    b.run();
    const double link_write = tlp_bytes_per_ns(8, 8) * 4096.0 / (16 * 24 + 4096);
    const double link_read = tlp_bytes_per_ns(8, 8) * 4096.0 / (16 * 20 + 4096);
    EXPECT_NEAR(payload_gbps(writes, 4096), std::min(gbps, link_write), 1e-3 * gbps) << gbps;
    EXPECT_NEAR(payload_gbps(reads, 4096), std::min(gbps, link_read), 1e-3 * gbps) << gbps;
  }
}

TEST(FabricTiming, RootComplexFabricBandwidthBoundsWhatCrossesIt) {
  // The root complex carries TLPs (headers included) at fabric_bandwidth_gbps each way.
  Bench b(host("", R"(, "fabric_bandwidth_gbps": 3)"));
  std::vector<Picoseconds> writes;
  b.at(0, [&] {
    for (int i = 0; i < 200; ++i) {
      b.fabric.write(b.node("dev0"), b.base["dram0"] + 4096ull * i, 4096, nullptr,
                     [&] { writes.push_back(Simulation::now()); });
    }
  });
  b.run();
  EXPECT_NEAR(payload_gbps(writes, 4096), 3.0 * 4096 / (16 * 24 + 4096), 3e-3);
  const nlohmann::json rc = b.fabric.report(Simulation::now())["root_complexes"][0];
  EXPECT_EQ(rc["fabric"]["in"]["wire_bytes"], 200 * (16 * 24 + 4096));
  EXPECT_GT(rc["fabric"]["in"]["utilization"].get<double>(), 0.99);
}

TEST(FabricTiming, InterSocketLinkAddsItsLatencyAndBoundsBandwidth) {
  const std::string json = R"({"name": "numa", "nodes": [
      {"id": "cpu0", "kind": "cpu"}, {"id": "cpu1", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "dram1", "kind": "host_memory", "socket": "cpu1"},
      {"id": "rc1", "kind": "root_complex", "socket": "cpu1"},
      {"id": "dev0", "kind": "nvme_ssd"}],
    "links": [{"from": "rc1", "to": "dev0", "gen": 4, "width": 4},
              {"type": "inter_socket", "from": "cpu0", "to": "cpu1", "latency_ns": 70,
               "bandwidth_gbps": 2}]})";
  auto one_write = [&](const char* memory) {
    Bench b(json);
    Picoseconds done = 0;
    b.at(0, [&] {
      b.fabric.write(b.node("dev0"), b.base[memory], 64, nullptr,
                     [&] { done = Simulation::now(); });
    });
    b.run();
    return static_cast<double>(done);
  };
  // Remote memory: the 88 B TLP crosses the 2 GB/s link, then 70 ns of flight.
  EXPECT_NEAR(one_write("dram0") - one_write("dram1"), ps_for(88, 2.0) + 70e3, 3.0);
  Bench b(json);
  std::vector<Picoseconds> writes;
  b.at(0, [&] {
    for (int i = 0; i < 100; ++i) {
      b.fabric.write(b.node("dev0"), b.base["dram0"] + 4096ull * i, 4096, nullptr,
                     [&] { writes.push_back(Simulation::now()); });
    }
  });
  b.run();
  EXPECT_NEAR(payload_gbps(writes, 4096), 2.0 * 4096 / (16 * 24 + 4096), 2e-3);
  const nlohmann::json link = b.link("cpu1->cpu0", Simulation::now());
  EXPECT_EQ(link["type"], "inter_socket");
  EXPECT_EQ(link["payload_bytes"], 100 * 4096);
  EXPECT_EQ(b.fabric.paths()[0]["path"], "cpu_fabric");
  EXPECT_EQ(b.fabric.paths()[0]["kind"], "SYS");
}

TEST(FabricTiming, PostedWritesOfOneRequesterStayInOrderThroughIotlbMisses) {
  // A data burst to a page the IOTLB misses, then a completion-sized write to a page it holds:
  // the walk delays the data, and the small write must not overtake it (producer-consumer
  // ordering of posted writes, PCIe r5.0 §2.4.1).
  Bench b(switch_machine(5, 4, 5, 16, "", "",
                         R"(, "iommu": "translate", "iommu_maps_peer_bars": true)"));
  std::vector<std::string> order;
  const std::uint64_t data = b.base["gpu0"] + (1 << 20), flag = b.base["gpu0"];
  b.at(0, [&] { b.fabric.write(b.node("ssd0"), flag, 16, nullptr, nullptr); });  // warm
  b.at(10'000'000, [&] {
    b.fabric.write(b.node("ssd0"), data, 4096, nullptr, [&] { order.push_back("data"); });
    b.fabric.write(b.node("ssd0"), flag, 16, nullptr, [&] { order.push_back("flag"); });
  });
  b.run();
  EXPECT_EQ(order, (std::vector<std::string>{"data", "flag"}));
  const nlohmann::json rc = b.fabric.report(Simulation::now())["root_complexes"][0];
  EXPECT_EQ(rc["iotlb"]["misses"], 2);
  EXPECT_EQ(rc["iotlb"]["hits"], 1);
}

}  // namespace
}  // namespace gpunvme::pcie::testing
