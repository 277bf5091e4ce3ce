// The CXL memory expander (models/cxl) against hand-worked oracles: flits per message from the
// CXL flit layouts, one 64 B read as the sum of its hops, a stream at the link's flit rate, a
// stream at the expander's DRAM bandwidth, a link shared by two requesters, Micron's published
// CZ120 bandwidth, the router's ACS and IOMMU rules for DMA into CXL memory, the command line's
// errors for bad fields, and a bounce run whose buffers live in CXL memory.
#include "models/cxl/cxl_memory.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/run_cli.h"
#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
namespace {

using cli_test::gpunvme;

// Bytes per ns of the Gen5 PHY after 128b/130b encoding: 32 GT/s x lanes x 128/130 / 8.
double gen5_raw(int lanes) { return 32.0 * lanes * (128.0 / 130.0) / 8.0; }

// rc0 with dev0 (an SSD, Gen5 x16) and cxl0 on root ports; sw0 below rc0 with gpu0 and, when
// `cxl_below_switch`, cxl1. `cxl` and `sw` are JSON text spliced into cxl0's (and cxl1's) and
// sw0's objects; `rc` into rc0's.
std::string cxl_machine(const std::string& cxl = "", int cxl_lanes = 8, const std::string& rc = "",
                        const std::string& sw = "") {
  return R"({"name": "cxl", "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0")" +
         rc + R"(},
      {"id": "dev0", "kind": "nvme_ssd"},
      {"id": "dev1", "kind": "nvme_ssd"},
      {"id": "sw0", "kind": "switch")" +
         sw + R"(},
      {"id": "gpu0", "kind": "gpu"},
      {"id": "ssd2", "kind": "nvme_ssd"},
      {"id": "cxl1", "kind": "cxl_memory")" +
         cxl + R"(},
      {"id": "cxl0", "kind": "cxl_memory")" +
         cxl + R"(}],
    "links": [
      {"from": "rc0", "to": "dev0", "gen": 5, "width": 16},
      {"from": "rc0", "to": "dev1", "gen": 5, "width": 16},
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "ssd2", "gen": 5, "width": 4},
      {"from": "sw0", "to": "cxl1", "gen": 5, "width": 8},
      {"from": "rc0", "to": "cxl0", "gen": 5, "width": )" +
         std::to_string(cxl_lanes) + "}]}";
}

// The bench with 1 GiB of each expander mapped as host memory owned by it.
struct CxlBench : Bench {
  explicit CxlBench(const std::string& json) : Bench(json) {
    for (const char* id : {"cxl0", "cxl1"}) {
      base[id] = memory.allocate(1ull << 30, node(id), RegionKind::HostMemory, id).base;
    }
  }
};

TEST(CxlFlits, MessagesFillSlotsAndSlotsFillWholeFlits) {
  // 68 B flit: 4 slots. A 64 B write or read datum is a header slot and 4 data slots.
  EXPECT_EQ(cxl::cxl_link_wire_bytes(68, cxl::CxlMessage::DataWithHeader, 1), 2u * 68);
  EXPECT_EQ(cxl::cxl_link_wire_bytes(68, cxl::CxlMessage::DataWithHeader, 4), 5u * 68);
  EXPECT_EQ(cxl::cxl_link_wire_bytes(68, cxl::CxlMessage::Request, 4), 1u * 68);
  EXPECT_EQ(cxl::cxl_link_wire_bytes(68, cxl::CxlMessage::Request, 5), 2u * 68);
  // 256 B flit: 15 slots; 12 lines of data are 60 slots, 4 flits.
  EXPECT_EQ(cxl::cxl_link_wire_bytes(256, cxl::CxlMessage::DataWithHeader, 12), 4u * 256);
  EXPECT_EQ(cxl::cxl_link_wire_bytes(256, cxl::CxlMessage::DataWithHeader, 1), 1u * 256);
  // Lines a burst touches: an unaligned 64 B access touches two.
  EXPECT_EQ(cxl::lines_touched(0, 4096), 64u);
  EXPECT_EQ(cxl::lines_touched(32, 64), 2u);
  EXPECT_EQ(cxl::lines_touched(0, 0), 0u);
  // Streams: 64 B of data per 5/4 flits of 68 B; per 5/15 flits of 256 B.
  EXPECT_NEAR(cxl::data_efficiency(68), 64.0 / 85.0, 1e-12);
  EXPECT_NEAR(cxl::data_efficiency(256), 64.0 / (256.0 / 3.0), 1e-12);
  // The PHY: 128b/130b at 32 GT/s; at 64 GT/s the 256 B flit carries its own CRC and FEC.
  EXPECT_NEAR(cxl::phy_bytes_per_ns(Gen::kGen5, Width::kX8), 32.0 * 8 * 128 / 130 / 8, 1e-9);
  EXPECT_NEAR(cxl::data_bytes_per_ns(Gen::kGen6, Width::kX8, 256), 64.0 * 0.75, 1e-9);
  // Rates the CXL port runs at, and the flit 64 GT/s requires.
  EXPECT_EQ(cxl::link_problem(Gen::kGen5, 68), "");
  EXPECT_EQ(cxl::link_problem(Gen::kGen6, 256), "");
  EXPECT_NE(cxl::link_problem(Gen::kGen6, 68), "");
  EXPECT_NE(cxl::link_problem(Gen::kGen2, 68), "");
}

TEST(CxlTiming, OneSixtyFourByteReadIsTheSumOfItsHops) {
  CxlBench b(cxl_machine());
  Picoseconds from_cxl = 0, from_dram = 0;
  b.at(0, [&] {
    b.fabric.read(b.node("dev0"), b.base["cxl0"], 64, [&](const std::uint8_t*, std::uint32_t) {
      from_cxl = Simulation::now();
      b.fabric.read(b.node("dev0"), b.base["dram0"], 64,
                    [&, start = Simulation::now()](const std::uint8_t*, std::uint32_t) {
                      from_dram = Simulation::now() - start;
                    });
    });
  });
  b.run();
  const double x16 = tlp_bytes_per_ns(32, 16);
  // Request: an MRd TLP (24 B) to the root complex, into its memory fabric (one line
  // transaction), 150 ns, then one M2S Req slot: a 68 B flit on the x8 CXL link, 30 ns.
  const double request =
      ps_for(24, x16) + 30e3 + root_complex_ps(24) + 150e3 + ps_for(68, gen5_raw(8)) + 30e3;
  // The expander: 280 ns. The S2M DRS and its data: 5 slots, two flits (136 B), 30 ns; the
  // root complex turns it into a CplD (84 B) out of its memory fabric, 150 ns; the x16 link.
  const double completion =
      ps_for(136, gen5_raw(8)) + 30e3 + root_complex_ps(84) + 150e3 + ps_for(84, x16) + 30e3;
  EXPECT_NEAR(static_cast<double>(from_cxl), request + 280e3 + completion, 3.0);
  // Against host DRAM on the same machine (200 ns, no CXL link): 146.5 ns more, within the
  // published 2-5x of a local DRAM access.
  const double dram = ps_for(24, x16) + 30e3 + root_complex_ps(24) + 150e3 + 200e3 +
                      root_complex_ps(84) + 150e3 + ps_for(84, x16) + 30e3;
  EXPECT_NEAR(static_cast<double>(from_dram), dram, 3.0);
  EXPECT_NEAR(static_cast<double>(from_cxl) - dram, 80e3 + 60e3 + ps_for(68 + 136, gen5_raw(8)),
              3.0);
}

// Writes of `bytes` each from each of `writers`, back to back from time 0, into `target`;
// returns when each landed.
std::vector<Picoseconds> stream_writes(CxlBench& b, const std::vector<std::string>& writers,
                                       const std::string& target, std::uint32_t bytes, int count) {
  auto done = std::make_shared<std::vector<Picoseconds>>();
  for (const std::string& w : writers) {
    for (int i = 0; i < count; ++i) {
      b.at(0, [&b, w, target, bytes, i, done] {
        b.fabric.write(b.node(w), b.base[target] + std::uint64_t{bytes} * i, bytes, nullptr,
                       [done] { done->push_back(Simulation::now()); });
      });
    }
  }
  b.run();
  return *done;
}

TEST(CxlBandwidth, AStreamOfWritesRunsAtTheLinksFlitRate) {
  CxlBench b(cxl_machine());
  const auto done = stream_writes(b, {"dev0"}, "cxl0", 4096, 200);
  ASSERT_EQ(done.size(), 200u);
  // 4096 B = 64 lines = 320 slots = 80 flits of 68 B on Gen5 x8 (31.51 B/ns): 23.72 GB/s, below
  // the source's Gen5 x16, the root complex's 55 GB/s of lines and the expander's 76.8 GB/s.
  const double expected = 4096.0 / (80.0 * 68.0 / gen5_raw(8));
  EXPECT_NEAR(payload_gbps(done, 4096), expected, 0.01 * expected);
  EXPECT_NEAR(expected, 23.72, 0.01);
}

TEST(CxlBandwidth, TheExpandersDramBoundsAWideLink) {
  CxlBench b(cxl_machine(R"(, "bandwidth_gbps": 20)", 16));
  const auto done = stream_writes(b, {"dev0"}, "cxl0", 4096, 200);
  ASSERT_EQ(done.size(), 200u);
  // x16 carries 47.4 GB/s of data; the expander's DRAM takes 20.
  EXPECT_NEAR(payload_gbps(done, 4096), 20.0, 0.2);
}

TEST(CxlBandwidth, TwoWritersShareTheSaturatedLink) {
  CxlBench b(cxl_machine());
  std::map<std::string, std::vector<Picoseconds>> per_writer;
  const int count = 150;
  for (const std::string w : {"dev0", "dev1"}) {
    for (int i = 0; i < count; ++i) {
      b.at(0, [&b, &per_writer, w, i] {
        const std::uint64_t offset = (w == "dev0" ? 0 : 1ull << 24) + 4096ull * i;
        b.fabric.write(b.node(w), b.base["cxl0"] + offset, 4096, nullptr,
                       [&per_writer, w] { per_writer[w].push_back(Simulation::now()); });
      });
    }
  }
  b.run();
  const double link = 4096.0 / (80.0 * 68.0 / gen5_raw(8));
  const Picoseconds last = std::max(per_writer["dev0"].back(), per_writer["dev1"].back());
  // Together: the link's 23.72 GB/s (less the first burst's fixed latency, <1 %).
  EXPECT_NEAR(2.0 * count * 4096 / static_cast<double>(last) * 1000.0, link, 0.02 * link);
  // Each: about half, finishing within a few bursts of each other.
  const double gap = std::abs(static_cast<double>(per_writer["dev0"].back()) -
                              static_cast<double>(per_writer["dev1"].back()));
  EXPECT_LT(gap, 10 * 80.0 * 68.0 / gen5_raw(8) * 1000.0);
}

TEST(CxlBandwidth, ReadsPredictMicronsPublishedCz120Figure) {
  // Prediction, nothing fitted: Micron measured up to 36 GB/s on one CZ120 (PCIe 5.0 x8) with
  // Intel MLC at 2 reads per write [micron-cz120]. Read data fills the upstream direction; with
  // writes at half the reads' rate downstream, the total is 1.5 x the read rate.
  CxlBench b(cxl_machine());
  std::vector<Picoseconds> done;
  for (int i = 0; i < 300; ++i) {
    b.at(0, [&b, &done, i] {
      b.fabric.read(
          b.node("dev0"), b.base["cxl0"] + 4096ull * i, 4096,
          [&done](const std::uint8_t*, std::uint32_t) { done.push_back(Simulation::now()); });
    });
  }
  b.run();
  const double reads = payload_gbps(done, 4096);
  EXPECT_NEAR(reads, 23.72, 0.02 * 23.72);
  EXPECT_NEAR(1.5 * reads, 36.0, 0.05 * 36.0);
}

struct Routes {
  TopologyConfig topology;
  TopologyGraph graph;
  Router router;
  explicit Routes(const std::string& json)
      : topology(resolve_topology(catalog(), nlohmann::json::parse(json), "bench.json")),
        graph(topology),
        router(topology, graph) {}
  ResolvedPath path(const std::string& from, const std::string& to) {
    auto index = [this](const std::string& id) {
      return static_cast<std::size_t>(topology.node(id) - topology.nodes.data());
    };
    return router.resolve(index(from), index(to));
  }
};

TEST(CxlRouting, DeviceDmaIntoCxlMemoryFollowsAcsAndTheIommu) {
  // Below one switch: the switch turns it (a CXL 3 switch with UIO), unless ACS redirects it.
  EXPECT_EQ(Routes(cxl_machine()).path("ssd2", "cxl1").taken, "direct");
  EXPECT_EQ(Routes(cxl_machine("", 8, "", R"(, "acs_request_redirect": true)"))
                .path("ssd2", "cxl1")
                .taken,
            "redirected");
  // Through the root complex: memory traffic, whatever its peer-to-peer policy for BARs.
  EXPECT_EQ(Routes(cxl_machine()).path("ssd2", "cxl0").taken, "root_complex");
  EXPECT_EQ(Routes(cxl_machine("", 8, R"(, "peer_to_peer": "block")")).path("dev0", "cxl0").taken,
            "root_complex");
  // A GPU's BAR stays refused under that policy.
  EXPECT_TRUE(
      Routes(cxl_machine("", 8, R"(, "peer_to_peer": "block")")).path("dev0", "gpu0").blocked);
  // A translating IOMMU translates DMA into CXL memory as into DRAM; peer BARs unmapped there
  // do not concern it.
  const ResolvedPath translated =
      Routes(cxl_machine("", 8, R"(, "iommu": "translate", "iommu_maps_peer_bars": false)"))
          .path("ssd2", "cxl1");
  EXPECT_EQ(translated.taken, "translated");
  EXPECT_FALSE(translated.blocked);
}

// Writes `text` to a file of the build's temporary folder and returns its path.
std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kTopology =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/cxl-memory.json";
const std::string kBounce = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/cxl/bounce-cxl.json";

TEST(CxlConfig, BadFieldsAreErrorsWithTheirPaths) {
  auto run = [](const std::string& args) {
    return gpunvme("check --topology " + kTopology + " --scenario " + kBounce + " " + args);
  };
  EXPECT_EQ(run("").code, 0);
  cli_test::Outcome o = run("--set scenario.host_buffers=cxl9");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.host_buffers = \"cxl9\": expected the id of a host_memory or "
                          "cxl_memory node"),
            std::string::npos)
      << o.output;
  o = run("--set scenario.host_buffers=gpu0");
  EXPECT_EQ(o.code, 2);
  o = run("--set scenario.path=gds");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.host_buffers = \"cxl0\": host_buffers places the bounce path's"),
            std::string::npos)
      << o.output;
  o = run("--set topology.nodes.cxl0.flit_bytes=100");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.nodes[6].flit_bytes = 100"), std::string::npos) << o.output;
  o = run("--set topology.nodes.cxl0.access_latency_ns=-1");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.nodes[6].access_latency_ns"), std::string::npos) << o.output;
  o = run("--set topology.links.3.gen=6");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.nodes[6].flit_bytes = 68: at 64 GT/s a CXL link carries 256 B "
                          "flits only"),
            std::string::npos)
      << o.output;
  EXPECT_EQ(run("--set topology.links.3.gen=6 --set topology.nodes.cxl0.flit_bytes=256").code, 0);
  // An SSD whose DMA the platform refuses to route to the buffers: sw1 redirects it upstream
  // (ACS), and sw0 above does not forward redirected TLPs.
  const std::string blocked = temp_file("cxl_blocked.json", R"({"name": "blocked", "nodes": [
      {"id": "cpu0", "kind": "cpu"}, {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "sw0", "kind": "switch", "acs_upstream_forwarding": false},
      {"id": "sw1", "kind": "switch", "acs_request_redirect": true},
      {"id": "gpu0", "kind": "gpu"}, {"id": "ssd0", "kind": "nvme_ssd"},
      {"id": "cxl0", "kind": "cxl_memory"}],
    "links": [{"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "sw1", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw1", "to": "ssd0", "gen": 5, "width": 4},
      {"from": "sw1", "to": "cxl0", "gen": 5, "width": 8}]})");
  o = gpunvme("check --topology " + blocked + " --scenario " + kBounce);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("acs_upstream_forwarding"), std::string::npos) << o.output;
}

TEST(CxlConfig, DescribeListsTheKindAndItsParameters) {
  const cli_test::Outcome kinds = gpunvme("describe");
  EXPECT_EQ(kinds.code, 0);
  EXPECT_NE(kinds.output.find("cxl_memory"), std::string::npos);
  const cli_test::Outcome o = gpunvme("describe cxl_memory");
  EXPECT_EQ(o.code, 0);
  for (const char* p :
       {"capacity_gib", "access_latency_ns", "bandwidth_gbps", "flit_bytes", "micron-cz120"}) {
    EXPECT_NE(o.output.find(p), std::string::npos) << p << "\n" << o.output;
  }
  EXPECT_NE(gpunvme("describe scenario").output.find("host_buffers"), std::string::npos);
}

TEST(CxlRun, BounceBuffersInCxlMemoryCrossTheCxlLink) {
  const std::string out = ::testing::TempDir() + "cxl_bounce.json";
  const cli_test::Outcome o = gpunvme("run --topology " + kTopology + " --scenario " + kBounce +
                                      " --set scenario.ios=400 --out " + out);
  ASSERT_EQ(o.code, 0) << o.output;
  const nlohmann::json result = nlohmann::json::parse(std::ifstream(out));
  const nlohmann::json& pcie = result.at("pcie");
  ASSERT_EQ(pcie.at("cxl_memory").size(), 1u);
  // Every byte is written by the SSD and read back by the copy engine.
  EXPECT_EQ(pcie.at("cxl_memory")[0].at("bytes").get<std::uint64_t>(), 2ull * 400 * 131072);
  bool ssd_to_cxl = false, gpu_from_cxl = false;
  for (const auto& p : result.at("paths")) {
    if (p.at("from") == "ssd0" && p.at("to") == "cxl0") {
      ssd_to_cxl = true;
      EXPECT_EQ(p.at("path"), "root_complex");
    }
    if (p.at("from") == "gpu0" && p.at("to") == "cxl0") gpu_from_cxl = true;
  }
  EXPECT_TRUE(ssd_to_cxl) << result.at("paths").dump();
  EXPECT_TRUE(gpu_from_cxl) << result.at("paths").dump();
  std::uint64_t flits = 0;
  for (const auto& l : pcie.at("links")) {
    if (l.at("type") == "cxl") flits += l.at("wire_bytes").get<std::uint64_t>();
  }
  // Each 128 KiB goes down as 2048 lines of RwD (2560 flits) and up as DRS (2560 flits); read
  // requests add 2048 slots (512 flits) down: 5632 flits of 68 B per I/O.
  EXPECT_EQ(flits, 400ull * 5632 * 68);
}

const std::string kKvTier =
    std::string(GPUNVME_SOURCE_DIR) + "/scenarios/cxl/kv-cache-cxl-tier.json";

TEST(CxlConfig, TheKvTiersMemoryMustBeHostOrCxlMemory) {
  cli_test::Outcome o = gpunvme("check --topology " + kTopology + " --scenario " + kKvTier +
                                " --set scenario.host_kv_memory=ssd0");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("$.host_kv_memory = \"ssd0\": expected the id of a host_memory or "
                          "cxl_memory node"),
            std::string::npos)
      << o.output;
  o = gpunvme("check --topology " + kTopology + " --scenario " + kBounce +
              " --set scenario.host_kv_memory=cxl0");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("host_kv_memory"), std::string::npos) << o.output;
}

TEST(CxlRun, AKvCacheTierInCxlMemoryMovesTheDramTiersBytes) {
  auto run = [](const std::string& tier) {
    const std::string out = ::testing::TempDir() + "cxl_kv_" + tier + ".json";
    const cli_test::Outcome o = gpunvme("run --topology " + kTopology + " --scenario " + kKvTier +
                                        " --set scenario.host_kv_memory=" + tier + " --out " + out);
    EXPECT_EQ(o.code, 0) << o.output;
    return nlohmann::json::parse(std::ifstream(out));
  };
  const nlohmann::json in_cxl = run("cxl0");
  const nlohmann::json in_dram = run("dram0");
  auto bytes = [](const nlohmann::json& r, const char* list) {
    return r.at("pcie").at(list)[0].at("bytes").get<std::uint64_t>();
  };
  // Conservation: what the tier moved leaves DRAM and arrives at the expander, byte for byte;
  // the host's queues stay in DRAM.
  EXPECT_EQ(bytes(in_dram, "cxl_memory"), 0u);
  EXPECT_GT(bytes(in_cxl, "cxl_memory"), 0u);
  EXPECT_EQ(bytes(in_cxl, "cxl_memory"),
            bytes(in_dram, "host_memory") - bytes(in_cxl, "host_memory"));
  // Every byte the expander served crossed its CXL link.
  std::uint64_t link_payload = 0;
  for (const auto& l : in_cxl.at("pcie").at("links")) {
    if (l.at("type") == "cxl") link_payload += l.at("payload_bytes").get<std::uint64_t>();
  }
  EXPECT_EQ(link_payload, bytes(in_cxl, "cxl_memory"));
}

}  // namespace
}  // namespace gpunvme::pcie::testing
