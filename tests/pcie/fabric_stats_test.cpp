// Link statistics and the per-link accounting settings against closed forms written here, not
// taken from the model: utilization and overhead bytes of one posted write, ECRC's 4 B per TLP,
// Gen6 flit packing, round-robin switch egress arbitration under unequal load, endpoint
// receive credits, and that every declared parameter of every component kind has a source.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sim/system/run/catalog.h"
#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
namespace {

// One endpoint (an SSD) on a root port, writing into host memory; `top` adds topology fields.
std::string ssd_on_root_port(int gen, int lanes, const std::string& top = "") {
  return R"({"name": "rp")" + top + R"(, "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "ssd0", "kind": "nvme_ssd"}],
    "links": [{"from": "rc0", "to": "ssd0", "gen": )" +
         std::to_string(gen) + R"(, "width": )" + std::to_string(lanes) + "}]}";
}

// The statistics of ssd0->rc0 after one 4 KB posted write to host memory, taken over `elapsed`.
nlohmann::json one_write(const std::string& json, Picoseconds elapsed) {
  Bench b(json);
  b.at(0, [&] { b.fabric.write(b.node("ssd0"), b.base["dram0"], 4096, nullptr, nullptr); });
  b.run();
  return b.link("ssd0->rc0", elapsed);
}

TEST(LinkStatistics, OverheadAndUtilizationOfOnePostedWrite) {
  // 4096 B at MPS 256: 16 MWr TLPs, each 16 B header (64-bit address) + 8 B framing, sequence
  // number and LCRC.
  const double elapsed_ps = 10e6;  // 10 us
  const nlohmann::json l = one_write(ssd_on_root_port(4, 4), static_cast<Picoseconds>(elapsed_ps));
  ASSERT_FALSE(l.is_null());
  EXPECT_EQ(l["tlps"], 16);
  EXPECT_EQ(l["payload_bytes"], 4096);
  EXPECT_EQ(l["overhead_bytes"], 16 * (16 + 8));
  EXPECT_EQ(l["wire_bytes"], 4096 + 16 * 24);
  EXPECT_EQ(l["by_class"]["posted_write"]["tlps"], 16);
  // Busy time: the wire bytes at the link's TLP rate (Gen4 x4: 16 GT/s x 4 x 128/130 / 8, less
  // the spec's ACK / UpdateFC intervals and SKPs), over the window.
  const double busy_ps = ps_for(4096 + 16 * 24, tlp_bytes_per_ns(16, 4));
  EXPECT_NEAR(l["utilization"].get<double>(), busy_ps / elapsed_ps, 2e-6);
}

TEST(LinkStatistics, EcrcAddsFourBytesToEveryTlp) {
  const Picoseconds elapsed = 10'000'000;
  const nlohmann::json off = one_write(ssd_on_root_port(4, 4), elapsed);
  const nlohmann::json on = one_write(ssd_on_root_port(4, 4, R"(, "ecrc": true)"), elapsed);
  EXPECT_EQ(on["tlps"], 16);
  EXPECT_EQ(on["overhead_bytes"].get<int>() - off["overhead_bytes"].get<int>(), 16 * 4);
  EXPECT_EQ(on["wire_bytes"], 4096 + 16 * (16 + 8 + 4));
  // Reads: requests and completions both carry the digest.
  for (bool ecrc : {false, true}) {
    Bench b(ssd_on_root_port(4, 4, ecrc ? R"(, "ecrc": true)" : ""));
    b.at(0, [&] {
      b.fabric.read(b.node("ssd0"), b.base["dram0"], 4096, [](const std::uint8_t*, std::uint32_t) {});
    });
    b.run();
    // 4096 B at MRRS 512: 8 MRd of 16 + 8 B; completions at MPS 256: 16 CplD of 12 + 8 B.
    const int digest = ecrc ? 4 : 0;
    EXPECT_EQ(b.link("ssd0->rc0", elapsed)["wire_bytes"], 8 * (24 + digest));
    EXPECT_EQ(b.link("rc0->ssd0", elapsed)["wire_bytes"], 4096 + 16 * (20 + digest));
  }
}

TEST(LinkStatistics, Gen6FlitModePacksTlpsWithoutPerTlpLinkBytes) {
  // Flit mode (PCIe 6.0): 256 B flits of 236 B TLP bytes, 6 B DLP, 8 B CRC, 6 B FEC; TLPs
  // carry no framing, sequence number or LCRC of their own. 16 MWr of 256 + 16 B header.
  const double elapsed_ps = 1e6;
  const nlohmann::json l = one_write(ssd_on_root_port(6, 16), static_cast<Picoseconds>(elapsed_ps));
  EXPECT_EQ(l["wire_bytes"], 16 * (256 + 16));
  EXPECT_EQ(l["overhead_bytes"], 16 * 16);
  // TLP bytes per ns: 64 GT/s x 16 lanes / 8 x 236/256, less SKP ordered sets (4 B / 1538 B).
  const double tlp_rate = 64.0 * 16 / 8 * 236.0 / 256.0 * (1.0 - 4.0 / 1538.0);
  EXPECT_NEAR(l["utilization"].get<double>(), ps_for(16 * 272, tlp_rate) / elapsed_ps, 2e-6);
  // A Gen5 link keeps the 8 B per TLP.
  EXPECT_EQ(one_write(ssd_on_root_port(5, 16), 1'000'000)["wire_bytes"], 16 * (256 + 24));
  // pcie-bench's reading keeps its own Gen6 guess (per-TLP link bytes as on Gen5).
  EXPECT_EQ(one_write(ssd_on_root_port(6, 16, R"(, "dllp_intervals": "pcie_bench")"), 1'000'000)
                ["wire_bytes"],
            16 * (256 + 24));
}

// Two writers below one switch into a third device on a narrow port: ssd_a sits on x16, ssd_b
// on x4; the egress to the target (gpu0) is Gen5 x1, so both ports keep it backlogged.
std::string three_ports(const std::string& arbitration) {
  return R"({"name": "arb", "nodes": [
      {"id": "cpu0", "kind": "cpu"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "sw0", "kind": "switch", "port_arbitration": ")" +
         arbitration + R"("},
      {"id": "gpu0", "kind": "gpu"}, {"id": "ssd_a", "kind": "nvme_ssd"},
      {"id": "ssd_b", "kind": "nvme_ssd"}],
    "links": [{"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
              {"from": "sw0", "to": "gpu0", "gen": 5, "width": 1},
              {"from": "sw0", "to": "ssd_a", "gen": 5, "width": 16},
              {"from": "sw0", "to": "ssd_b", "gen": 5, "width": 4}]})";
}

struct Split {
  std::vector<Picoseconds> a, b;  // delivery times of each writer's bursts
};

// ssd_a offers 64 bursts of 4 KB at once, ssd_b 16: unequal load into one egress.
Split contend(const std::string& arbitration) {
  Bench bench(three_ports(arbitration));
  Split split;
  bench.at(0, [&] {
    for (int i = 0; i < 64; ++i) {
      bench.fabric.write(bench.node("ssd_a"), bench.base["gpu0"] + 4096ull * i, 4096, nullptr,
                         [&] { split.a.push_back(Simulation::now()); });
    }
    for (int i = 0; i < 16; ++i) {
      bench.fabric.write(bench.node("ssd_b"), bench.base["gpu0"] + (1ull << 20) + 4096ull * i,
                         4096, nullptr, [&] { split.b.push_back(Simulation::now()); });
    }
  });
  bench.run();
  return split;
}

TEST(SwitchArbitration, RoundRobinSharesAnEgressEquallyUnderUnequalLoad) {
  // With round robin and both ports backlogged the egress alternates between them: ssd_b's
  // 16 bursts are delivered within the first ~32 egress bursts, one ssd_a burst between each.
  const Split rr = contend("round_robin");
  const Split fcfs = contend("fcfs");
  ASSERT_EQ(rr.a.size(), 64u);
  ASSERT_EQ(rr.b.size(), 16u);
  ASSERT_EQ(fcfs.b.size(), 16u);
  // ssd_a bursts delivered before ssd_b's k-th. Round robin alternates the two backlogged
  // ports (ssd_a's head arrives first): k + 1, whatever the offered load. First come first
  // served follows arrival order, and ssd_a's x16 port brings bursts to the egress 16/4 = 4
  // times as fast as ssd_b's x4: 4k + 1 while ssd_a's ingress credits (the switch's 4096 data
  // credits = 16 bursts) last.
  auto before = [](const std::vector<Picoseconds>& a, Picoseconds t) {
    std::size_t n = 0;
    for (Picoseconds x : a) n += x < t ? 1 : 0;
    return n;
  };
  for (std::size_t k = 0; k < 16; ++k) {
    EXPECT_NEAR(static_cast<double>(before(rr.a, rr.b[k])), k + 1.0, 1.0) << k;
  }
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(static_cast<double>(before(fcfs.a, fcfs.b[k])), 4.0 * k + 1.0, 1.0) << k;
  }
  // Either way the egress is work conserving: 80 bursts of 16 x (256 + 24) B at the Gen5 x1
  // TLP rate (32 GT/s x 128/130 / 8, less one ACK and one UpdateFC per 512 symbol times, MPS
  // 256, x1: PCIe Base Spec r5.0 Table 3-9, and SKPs).
  const double x1_rate = 32.0 * 128 / 130 / 8 * (1.0 - 16.0 / 512.0 - 4.0 / 1538.0);
  const double all = 80 * ps_for(16 * 280, x1_rate);
  for (const Split* s : {&rr, &fcfs}) {
    const Picoseconds end = std::max(s->a.back(), s->b.back());
    EXPECT_NEAR(static_cast<double>(end), all, 0.01 * all);
  }
}

TEST(EndpointCredits, GpuReceiveCreditsThrottleWhenSmall) {
  // Eight writes from an SSD on x16 into GPU memory, back to back. The default buffers take
  // 64 KiB and 4 KiB bursts without a stall; with 4 posted headers and 64 data credits (1 KB)
  // advertised, a 4 KiB burst needs the whole buffer and the switch's egress to the GPU waits
  // for credits.
  auto stall = [](const std::string& gpu_extra, std::uint64_t bytes) {
    Bench b(R"({"name": "ep", "nodes": [
        {"id": "cpu0", "kind": "cpu"},
        {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
        {"id": "sw0", "kind": "switch"},
        {"id": "gpu0", "kind": "gpu")" +
            gpu_extra + R"(}, {"id": "ssd0", "kind": "nvme_ssd"}],
      "links": [{"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
                {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
                {"from": "sw0", "to": "ssd0", "gen": 5, "width": 16}]})");
    b.at(0, [&] {
      for (int i = 0; i < 8; ++i) {
        b.fabric.write(b.node("ssd0"), b.base["gpu0"] + bytes * i,
                       static_cast<std::uint32_t>(bytes), nullptr, nullptr);
      }
    });
    b.run();
    return b.fabric.credit_stall_ps("sw0->gpu0");
  };
  EXPECT_EQ(stall("", 65536), 0u);
  EXPECT_EQ(stall("", 4096), 0u);
  EXPECT_GT(stall(R"(, "posted_header_credits": 4, "posted_data_credits": 64)", 4096), 0u);
}

TEST(Catalog, EveryDeclaredParameterHasADocAndASource) {
  const Catalog& c = catalog();
  std::vector<const ComponentSpec*> specs = {&c.link, &c.topology, &c.scenario};
  for (const ComponentSpec& s : c.node_kinds) specs.push_back(&s);
  std::size_t checked = 0;
  for (const ComponentSpec* spec : specs) {
    std::set<std::string> names;
    for (const ParamSpec& p : spec->params) {
      EXPECT_TRUE(names.insert(p.name).second) << spec->kind << "." << p.name << " twice";
      EXPECT_FALSE(p.doc.empty()) << spec->kind << "." << p.name;
      EXPECT_FALSE(p.source.empty()) << spec->kind << "." << p.name;
      ++checked;
    }
  }
  // Every kind the topologies use is in the catalog, with the settings added for the fabric.
  for (const char* kind : {"cpu", "host_memory", "root_complex", "switch", "gpu", "nvme_ssd"}) {
    EXPECT_NE(c.node_kind(kind), nullptr) << kind;
  }
  for (auto [kind, name] : {std::pair{"gpu", "copy_engine_chunk_bytes"},
                            std::pair{"gpu", "posted_data_credits"},
                            std::pair{"nvme_ssd", "dma_outstanding_writes"},
                            std::pair{"nvme_ssd", "completion_header_credits"},
                            std::pair{"switch", "port_arbitration"}}) {
    ASSERT_NE(c.node_kind(kind), nullptr);
    EXPECT_NE(c.node_kind(kind)->find(name), nullptr) << kind << "." << name;
  }
  EXPECT_NE(c.topology.find("ecrc"), nullptr);
  EXPECT_GT(checked, 100u);
}

}  // namespace
}  // namespace gpunvme::pcie::testing
