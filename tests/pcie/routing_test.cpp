// Peer-to-peer admissibility and the path taken: one test per row of seed 003's "PCIe P2P
// Topology Truth Table", then the ACS controls one by one (PCIe Base Spec r5.0 §6.12), the
// nvidia-smi kinds, and what a blocked path does: a ConfigError naming the setting before the
// run, a BlockedTransfer (never a hang) inside it.
#include "models/pcie/routing.h"

#include <gtest/gtest.h>

#include <map>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"
#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
namespace {

// Two sockets. rc0 (socket 0) has a switch sw0 with gpu0, ssd0 and a second-level switch sw1
// (ssd3, gpu2), and gpu1 on a root port of its own. rc1 (socket 0) has ssd1 on a root port, rc2
// (socket 1) ssd2. Settings map a node id (or "top" for the topology's own fields) to JSON text
// spliced into that object.
using Settings = std::map<std::string, std::string>;

std::string machine(const Settings& s = {}) {
  auto at = [&s](const char* key) {
    auto it = s.find(key);
    return it == s.end() ? std::string() : it->second;
  };
  return R"({"name": "policy")" + at("top") + R"(, "nodes": [
      {"id": "cpu0", "kind": "cpu"}, {"id": "cpu1", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "dram1", "kind": "host_memory", "socket": "cpu1"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0")" +
         at("rc0") + R"(},
      {"id": "rc1", "kind": "root_complex", "socket": "cpu0")" +
         at("rc1") + R"(},
      {"id": "rc2", "kind": "root_complex", "socket": "cpu1")" +
         at("rc2") + R"(},
      {"id": "sw0", "kind": "switch")" +
         at("sw0") + R"(},
      {"id": "sw1", "kind": "switch")" +
         at("sw1") + R"(},
      {"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"}, {"id": "gpu2", "kind": "gpu"},
      {"id": "ssd0", "kind": "nvme_ssd"}, {"id": "ssd1", "kind": "nvme_ssd"},
      {"id": "ssd2", "kind": "nvme_ssd"}, {"id": "ssd3", "kind": "nvme_ssd"}],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "ssd0", "gen": 5, "width": 4},
      {"from": "rc0", "to": "gpu1", "gen": 5, "width": 16},
      {"from": "rc1", "to": "ssd1", "gen": 5, "width": 4},
      {"from": "rc2", "to": "ssd2", "gen": 5, "width": 4},
      {"from": "sw0", "to": "sw1", "gen": 5, "width": 16},
      {"from": "sw1", "to": "ssd3", "gen": 5, "width": 4},
      {"from": "sw1", "to": "gpu2", "gen": 5, "width": 16},
      {"type": "inter_socket", "from": "cpu0", "to": "cpu1", "latency_ns": 70}]})";
}

struct Fixture {
  TopologyConfig topology;
  TopologyGraph graph;
  Router router;
  explicit Fixture(const Settings& s = {})
      : topology(resolve_topology(catalog(), nlohmann::json::parse(machine(s)), "policy.json")),
        graph(topology),
        router(topology, graph) {}
  std::size_t node(const std::string& id) const {
    return static_cast<std::size_t>(topology.node(id) - topology.nodes.data());
  }
  ResolvedPath path(const std::string& from, const std::string& to,
                    Traffic traffic = Traffic::Request) const {
    return router.resolve(node(from), node(to), traffic);
  }
  std::string route(const std::string& from, const std::string& to,
                    Traffic traffic = Traffic::Request) const {
    return router.describe(path(from, to, traffic));
  }
  std::string id(std::size_t v) const {
    return v == ResolvedPath::npos ? "-" : topology.nodes[v].id;
  }
  // The ConfigError require_path throws for the pair, or an empty one.
  ConfigError refusal(const std::string& a, const std::string& b) const {
    try {
      router.require_path(node(a), node(b));
    } catch (const ConfigError& e) {
      return e;
    }
    return ConfigError("", "", "", "");
  }
};

const std::string kAcsOn = R"(, "acs_request_redirect": true, "acs_completion_redirect": true)";

// Row 1: GPU -> NVMe behind the same switch, ACS disabled, IOMMU disabled: P2P works, the ideal
// case: the traffic turns in the switch.
TEST(TruthTable, Row1SameSwitchAcsOffIommuOffIsDirect) {
  Fixture f;
  for (auto [from, to] : {std::pair{"ssd0", "gpu0"}, std::pair{"gpu0", "ssd0"}}) {
    for (Traffic traffic : {Traffic::Request, Traffic::Completion}) {
      const ResolvedPath p = f.path(from, to, traffic);
      EXPECT_EQ(f.router.describe(p), std::string(from) + " -> sw0 -> " + to);
      EXPECT_EQ(p.taken, "direct");
      EXPECT_EQ(p.kind, "PIX");
      EXPECT_FALSE(p.blocked);
    }
  }
  EXPECT_NO_THROW(f.router.require_path(f.node("gpu0"), f.node("ssd0")));
  // In the fabric the data never touches the root complex's link.
  Bench b(machine());
  b.at(0, [&] { b.fabric.write(b.node("ssd0"), b.base["gpu0"], 4096, nullptr, nullptr); });
  b.run();
  EXPECT_TRUE(b.link("sw0->rc0", Simulation::now()).is_null());
  EXPECT_EQ(b.link("sw0->gpu0", Simulation::now())["payload_bytes"], 4096);
}

// Row 2: same switch, ACS enabled, IOMMU disabled: "No, ACS blocks P2P at switch". The requests
// no longer turn in the switch: they are redirected to the root complex, which either routes
// them back down (P2P through the host bridge) or refuses them.
TEST(TruthTable, Row2SameSwitchAcsOnIsRedirectedOrRefusedByTheRootComplex) {
  Fixture f(Settings{{"sw0", kAcsOn}});
  for (auto [from, to] : {std::pair{"ssd0", "gpu0"}, std::pair{"gpu0", "ssd0"}}) {
    const ResolvedPath p = f.path(from, to);
    EXPECT_EQ(f.router.describe(p), std::string(from) + " -> sw0 -> rc0 -> sw0 -> " + to);
    EXPECT_EQ(p.taken, "redirected");
    EXPECT_EQ(f.id(p.redirected_by), "sw0");
    EXPECT_EQ(p.kind, "PIX");  // where the devices sit; `taken` says what the traffic does
  }
  // Completion Redirect sends the completions of a peer read up as well.
  EXPECT_EQ(f.route("gpu0", "ssd0", Traffic::Completion), "gpu0 -> sw0 -> rc0 -> sw0 -> ssd0");
  // A root complex that does not forward peer traffic turns the redirect into a refusal.
  Fixture refused(Settings{{"sw0", kAcsOn}, {"rc0", R"(, "peer_to_peer": "block")"}});
  EXPECT_TRUE(refused.path("ssd0", "gpu0").blocked);
  const ConfigError e = refused.refusal("gpu0", "ssd0");
  EXPECT_EQ(e.file(), "policy.json");
  EXPECT_EQ(e.path(), "$.nodes[4].peer_to_peer");
  EXPECT_EQ(e.value(), "\"block\"");
  EXPECT_NE(std::string(e.what()).find("sw0 sends the traffic there"), std::string::npos)
      << e.what();
  // DMA to host memory is not peer-to-peer: ACS and the root complex's P2P policy do not apply.
  EXPECT_EQ(refused.route("ssd0", "dram0"), "ssd0 -> sw0 -> rc0 -> cpu0 -> dram0");
  EXPECT_FALSE(refused.path("ssd0", "dram0").blocked);
}

// Row 3: same switch, ACS disabled, IOMMU enabled (strict): "No, IOMMU intercepts DMA". Devices
// are given I/O virtual addresses, so their requests climb to the root complex; a peer BAR that
// is not mapped in the requester's context faults. Mapped, the traffic is translated.
TEST(TruthTable, Row3SameSwitchIommuTranslatingBlocksUnmappedPeersAndTranslatesMappedOnes) {
  Fixture strict(Settings{{"rc0", R"(, "iommu": "translate", "iommu_maps_peer_bars": false)"}});
  EXPECT_TRUE(strict.path("ssd0", "gpu0").blocked);
  const ConfigError e = strict.refusal("gpu0", "ssd0");
  EXPECT_EQ(e.path(), "$.nodes[4].iommu_maps_peer_bars");
  EXPECT_EQ(e.value(), "false");
  EXPECT_NE(std::string(e.what()).find("faults"), std::string::npos) << e.what();
  // Host memory is mapped through the DMA API: translated, not blocked.
  const ResolvedPath host = strict.path("ssd0", "dram0");
  EXPECT_EQ(host.taken, "translated");
  EXPECT_EQ(strict.id(host.translated_by), "rc0");

  Fixture mapped(Settings{{"rc0", R"(, "iommu": "translate", "iommu_maps_peer_bars": true)"}});
  const ResolvedPath p = mapped.path("ssd0", "gpu0");
  EXPECT_EQ(mapped.router.describe(p), "ssd0 -> sw0 -> rc0 -> sw0 -> gpu0");
  EXPECT_EQ(p.taken, "translated");
  EXPECT_EQ(mapped.id(p.nodes[p.translate_position]), "rc0");
  // Completions are routed by requester ID, never translated: they turn in the switch.
  EXPECT_EQ(mapped.route("gpu0", "ssd0", Traffic::Completion), "gpu0 -> sw0 -> ssd0");
  // In the fabric each request is looked up in rc0's IOTLB.
  Bench b(machine(Settings{{"rc0", R"(, "iommu": "translate", "iommu_maps_peer_bars": true)"}}));
  b.at(0, [&] { b.fabric.write(b.node("ssd0"), b.base["gpu0"], 4096, nullptr, nullptr); });
  b.at(1'000'000, [&] { b.fabric.write(b.node("ssd0"), b.base["gpu0"], 4096, nullptr, nullptr); });
  b.run();
  const nlohmann::json paths = b.fabric.paths();
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0]["path"], "translated");
  EXPECT_EQ(paths[0]["translated_by"], "rc0");
  EXPECT_EQ(paths[0]["iotlb"]["lookups"], 2);
  EXPECT_EQ(paths[0]["iotlb"]["misses"], 1);
  EXPECT_EQ(paths[0]["iotlb"]["hits"], 1);
}

// Row 4: same switch, ACS disabled, IOMMU passthrough: P2P works: untranslated and direct.
TEST(TruthTable, Row4SameSwitchIommuPassthroughIsDirect) {
  Fixture f(Settings{{"rc0", R"(, "iommu": "passthrough")"}});
  const ResolvedPath p = f.path("ssd0", "gpu0");
  EXPECT_EQ(f.router.describe(p), "ssd0 -> sw0 -> gpu0");
  EXPECT_EQ(p.taken, "direct");
  EXPECT_EQ(f.id(p.translated_by), "-");
  EXPECT_EQ(f.path("ssd0", "dram0").taken, "root_complex");
}

// Row 5: GPU -> NVMe on different CPU root complexes, any ACS, any IOMMU: "No, must traverse
// the CPU". Never direct: through the CPU fabric (and the inter-socket link), or refused where
// the platform says so.
TEST(TruthTable, Row5DifferentRootComplexesTraverseTheCpuOrAreRefused) {
  for (const Settings& s :
       {Settings{}, Settings{{"sw0", kAcsOn}},
        Settings{{"rc0", R"(, "iommu": "translate", "iommu_maps_peer_bars": true)"},
                 {"rc1", R"(, "iommu": "passthrough")"}}}) {
    Fixture f(s);
    const ResolvedPath same_socket = f.path("gpu0", "ssd1");
    EXPECT_EQ(same_socket.kind, "NODE");
    EXPECT_NE(same_socket.taken, "direct");
    EXPECT_EQ(f.route("gpu0", "ssd1"), "gpu0 -> sw0 -> rc0 -> cpu0 -> rc1 -> ssd1");
    const ResolvedPath far = f.path("gpu0", "ssd2");
    EXPECT_EQ(far.kind, "SYS");
    EXPECT_EQ(f.router.describe(far), "gpu0 -> sw0 -> rc0 -> cpu0 -> cpu1 -> rc2 -> ssd2");
    EXPECT_EQ(far.taken, s.count("rc0") ? "translated" : "cpu_fabric");
    EXPECT_FALSE(far.blocked);
  }
  Fixture refused(Settings{{"top", R"(, "p2p_across_root_complexes": "refuse")"}});
  EXPECT_TRUE(refused.path("gpu0", "ssd2").blocked);
  EXPECT_TRUE(refused.path("ssd1", "gpu0").blocked);
  const ConfigError e = refused.refusal("gpu0", "ssd2");
  EXPECT_EQ(e.path(), "$.p2p_across_root_complexes");
  EXPECT_EQ(e.value(), "\"refuse\"");
  // Peers under one root complex and host memory are unaffected.
  EXPECT_FALSE(refused.path("gpu0", "ssd0").blocked);
  EXPECT_FALSE(refused.path("ssd2", "dram0").blocked);
  EXPECT_EQ(refused.path("ssd2", "dram0").taken, "cpu_fabric");  // NUMA remote memory
}

// Row 6: GPU -> NVMe through a PLX/Broadcom switch, ACS "check", IOMMU disabled or passthrough:
// "Maybe, depends on switch firmware".
TEST(TruthTable, Row6SwitchFirmwareDecides) {
  Fixture routes(
      Settings{{"sw0", R"(, "peer_routing": "route")"}, {"rc0", R"(, "iommu": "passthrough")"}});
  EXPECT_EQ(routes.path("ssd0", "gpu0").taken, "direct");
  Fixture upstream(Settings{{"sw0", R"(, "peer_routing": "upstream")"}});
  EXPECT_EQ(upstream.route("ssd0", "gpu0"), "ssd0 -> sw0 -> rc0 -> sw0 -> gpu0");
  EXPECT_EQ(upstream.path("ssd0", "gpu0").taken, "redirected");
  Fixture refuses(Settings{{"sw0", R"(, "peer_routing": "block")"}});
  EXPECT_TRUE(refuses.path("ssd0", "gpu0").blocked);
  EXPECT_EQ(refuses.refusal("ssd0", "gpu0").path(), "$.nodes[7].peer_routing");
  // Traffic that leaves the switch upstream is not the firmware's peer routing.
  EXPECT_FALSE(refuses.path("ssd0", "dram0").blocked);
}

// Row 7: multi-GPU host with a shared NVMe pool, ACS disabled, IOMMU disabled or passthrough:
// "Yes (one GPU): P2P to closest GPU only". ssd0 shares a switch with gpu0 only.
TEST(TruthTable, Row7SharedNvmeReachesOnlyTheClosestGpuDirectly) {
  Fixture f(Settings{{"rc0", R"(, "iommu": "passthrough")"}});
  int direct = 0;
  for (const char* gpu : {"gpu0", "gpu1", "gpu2"}) {
    const ResolvedPath p = f.path("ssd0", gpu);
    EXPECT_FALSE(p.blocked) << gpu;
    if (p.taken == "direct" && p.kind == "PIX") ++direct;
  }
  EXPECT_EQ(direct, 1);
  EXPECT_EQ(f.path("ssd0", "gpu0").kind, "PIX");
  EXPECT_EQ(f.path("ssd0", "gpu1").kind, "PHB");  // another root port: through the root complex
  EXPECT_EQ(f.path("ssd0", "gpu1").taken, "root_complex");
  EXPECT_EQ(f.path("ssd0", "gpu2").kind, "PXB");  // below a second switch: direct, but not PIX
}

// ---------------------------------------------------------------------------------------------
// The ACS controls one by one.

TEST(Acs, RequestRedirectWithoutCompletionRedirectLetsCompletionsTurnInTheSwitch) {
  Fixture f(Settings{{"sw0", R"(, "acs_request_redirect": true)"}});
  EXPECT_EQ(f.path("ssd0", "gpu0").taken, "redirected");
  EXPECT_EQ(f.route("gpu0", "ssd0", Traffic::Completion), "gpu0 -> sw0 -> ssd0");
  // The fabric reports the completions' route where it differs from the requests'.
  Bench b(machine(Settings{{"sw0", R"(, "acs_request_redirect": true)"}}));
  b.at(0, [&] { b.fabric.read(b.node("ssd0"), b.base["gpu0"], 512, [](auto, auto) {}); });
  b.run();
  const nlohmann::json p = b.fabric.paths()[0];
  EXPECT_EQ(p["route"], nlohmann::json({"ssd0", "sw0", "rc0", "sw0", "gpu0"}));
  EXPECT_EQ(p["completion_route"], nlohmann::json({"gpu0", "sw0", "ssd0"}));
  EXPECT_EQ(p["redirected_by"], "sw0");
}

TEST(Acs, AcsPortsLimitTheControlsToChosenDownstreamPorts) {
  Fixture f(Settings{{"sw0", R"(, "acs_request_redirect": true, "acs_ports": ["gpu0"])"}});
  EXPECT_EQ(f.path("gpu0", "ssd0").taken, "redirected");  // arrives on gpu0's port
  EXPECT_EQ(f.path("ssd0", "gpu0").taken, "direct");      // arrives on ssd0's port
  try {
    Fixture bad(Settings{{"sw0", R"(, "acs_ports": ["ssd3"])"}});  // below sw1, not sw0
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.nodes[7].acs_ports[0]");
    EXPECT_EQ(e.value(), "\"ssd3\"");
    EXPECT_NE(e.problem().find("sw1, gpu0, ssd0"), std::string::npos) << e.problem();
  }
}

TEST(Acs, RedirectedTrafficClimbsThroughUpperSwitchesOnlyWithUpstreamForwarding) {
  Fixture f(Settings{{"sw1", R"(, "acs_request_redirect": true)"}});
  EXPECT_EQ(f.route("ssd3", "gpu2"), "ssd3 -> sw1 -> sw0 -> rc0 -> sw0 -> sw1 -> gpu2");
  EXPECT_EQ(f.id(f.path("ssd3", "gpu2").redirected_by), "sw1");
  Fixture no_forwarding(Settings{{"sw0", R"(, "acs_upstream_forwarding": false)"},
                                 {"sw1", R"(, "acs_request_redirect": true)"}});
  EXPECT_TRUE(no_forwarding.path("ssd3", "gpu2").blocked);
  EXPECT_EQ(no_forwarding.refusal("ssd3", "gpu2").path(), "$.nodes[7].acs_upstream_forwarding");
  // Traffic sw1 does not redirect never needs it.
  EXPECT_FALSE(no_forwarding.path("ssd3", "gpu0").blocked);
}

// ---------------------------------------------------------------------------------------------

TEST(Routing, KindsFollowNvidiaSmiTopoVocabulary) {
  Fixture f;
  EXPECT_EQ(f.path("gpu0", "ssd0").kind, "PIX");
  EXPECT_EQ(f.path("gpu0", "ssd3").kind, "PXB");
  EXPECT_EQ(f.path("gpu0", "gpu1").kind, "PHB");
  EXPECT_EQ(f.path("gpu0", "ssd1").kind, "NODE");
  EXPECT_EQ(f.path("gpu0", "ssd2").kind, "SYS");
  EXPECT_EQ(f.path("gpu0", "dram0").kind, "PHB");
  EXPECT_EQ(f.path("gpu0", "gpu0").kind, "X");
  EXPECT_EQ(f.path("gpu0", "gpu0").taken, "local");
}

TEST(Routing, RootComplexesConfinedToTheirOwnPortsRefuseTrafficAcrossThem) {
  Fixture confined(Settings{{"rc0", R"(, "peer_to_peer": "same_root_complex")"}});
  EXPECT_TRUE(confined.path("gpu0", "ssd1").blocked);
  EXPECT_TRUE(confined.path("ssd1", "gpu0").blocked);  // rc0 again, on the way down
  EXPECT_FALSE(confined.path("gpu0", "gpu1").blocked);
  EXPECT_EQ(confined.refusal("gpu0", "ssd1").path(), "$.nodes[4].peer_to_peer");
}

TEST(Routing, TrafficOfTheCpuItselfIsNotPeerToPeer) {
  // MMIO from a core (a host driver ringing a doorbell) and its completions: host traffic,
  // whatever the peer-to-peer policies say.
  const Settings refusing{{"top", R"(, "p2p_across_root_complexes": "refuse")"},
                          {"rc0", R"(, "peer_to_peer": "block", "iommu": "translate")"}};
  Fixture f(refusing);
  const ResolvedPath local = f.path("cpu0", "ssd0");
  EXPECT_FALSE(local.blocked);
  EXPECT_FALSE(local.peer_to_peer);
  EXPECT_EQ(local.taken, "root_complex");
  EXPECT_EQ(f.router.describe(local), "cpu0 -> rc0 -> sw0 -> ssd0");
  EXPECT_EQ(f.path("cpu1", "ssd0").taken, "cpu_fabric");
  EXPECT_EQ(f.route("ssd0", "cpu1", Traffic::Completion), "ssd0 -> sw0 -> rc0 -> cpu0 -> cpu1");
  Bench b(machine(refusing));
  bool delivered = false;
  b.at(0, [&] {
    b.fabric.write(b.node("cpu1"), b.base["gpu0"], 4, nullptr, [&] { delivered = true; });
  });
  b.run();
  EXPECT_TRUE(delivered);
}

TEST(Routing, ScenarioWithABlockedPairIsAConfigErrorBeforeTheRun) {
  // The shipped default: gpu0 and ssd0 behind sw0.
  try {
    load_config("", "",
                {"topology.nodes.sw0.acs_request_redirect=true",
                 "topology.nodes.rc0.peer_to_peer=\"block\""},
                1);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.nodes[2].peer_to_peer");
    EXPECT_NE(std::string(e.what()).find("gpu0 to ssd0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_config("", "",
                           {"topology.nodes.rc0.iommu=\"translate\"",
                            "topology.nodes.rc0.iommu_maps_peer_bars=false"},
                           1),
               ConfigError);
  EXPECT_NO_THROW(load_config("", "", {"topology.nodes.sw0.acs_request_redirect=true"}, 1));
  EXPECT_NO_THROW(load_config("", "", {"topology.nodes.rc0.iommu=\"translate\""}, 1));
}

TEST(Routing, ABlockedTransferInsideARunStopsItWithTheReason) {
  Bench b(machine(Settings{{"top", R"(, "p2p_across_root_complexes": "refuse")"}}));
  // Refused at the call, before anything moves.
  try {
    b.fabric.write(b.node("ssd2"), b.base["gpu0"], 64, nullptr, nullptr);
    FAIL() << "expected BlockedTransfer";
  } catch (const BlockedTransfer& e) {
    EXPECT_NE(std::string(e.what()).find("from ssd2 to gpu0 is blocked"), std::string::npos)
        << e.what();
  }
  // Issued from inside the simulation, the run ends with the error instead of waiting forever.
  b.at(1000, [&] { b.fabric.read(b.node("gpu0"), b.base["gpu2"], 64, [](auto, auto) {}); });
  b.at(2000, [&] { b.fabric.write(b.node("ssd2"), b.base["gpu0"], 64, nullptr, nullptr); });
  try {
    b.run();
    FAIL() << "expected the run to stop";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("from ssd2 to gpu0 is blocked"), std::string::npos)
        << e.what();
  }
}

TEST(Routing, RedirectedWriteCrossesTheRootComplexLinkBothWaysAndTakesLonger) {
  auto deliver = [](const std::string& json) {
    Bench b(json);
    Picoseconds at = 0;
    b.at(0, [&] {
      b.fabric.write(b.node("ssd0"), b.base["gpu0"], 64, nullptr, [&] { at = Simulation::now(); });
    });
    b.run();
    const nlohmann::json up = b.link("sw0->rc0", at), down = b.link("rc0->sw0", at);
    return std::tuple{at, up.is_null() ? 0 : up["wire_bytes"].get<int>(),
                      down.is_null() ? 0 : down["wire_bytes"].get<int>()};
  };
  const auto [direct, direct_up, direct_down] = deliver(machine());
  const auto [redirected, up, down] = deliver(machine(Settings{{"sw0", kAcsOn}}));
  // One TLP: 64 B payload + 16 B header + 8 B framing, on the Gen5 x16 link each way.
  EXPECT_EQ(direct_up + direct_down, 0);
  EXPECT_EQ(up, 88);
  EXPECT_EQ(down, 88);
  // The detour: that link twice (serialization + 30 ns each), the root complex's peer fabric
  // (88 B at 32 GB/s, then 150 ns) and the switch a second time (115 ns).
  const double extra =
      2 * (ps_for(88, tlp_bytes_per_ns(32, 16)) + 30e3) + ps_for(88, 32.0) + 150e3 + 115e3;
  EXPECT_NEAR(static_cast<double>(redirected - direct), extra, 3.0);
}

}  // namespace
}  // namespace gpunvme::pcie::testing
