// The ACS/IOMMU truth table with IOMMU domains, on several GPUs and two hosts (sockets): what a
// shared SSD's request does when its target is or is not mapped in the domain it is made in
// (pcie::domain_outcome), for every combination of ACS P2P Request Redirect on the SSD's switch
// and the IOMMU mode of its root complex. The expected column is written by hand from the rules
// (PCIe Base 5.0 6.12 for ACS; Intel VT-d: only a translated request is checked against a
// domain), not from the code's output.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/pcie/routing.h"
#include "sim/system/run/run.h"
#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {
namespace {

// Socket cpu0: rc0 -> sw0 -> {gpu0, gpu1, ssd0}; rc1 -> gpu2. Socket cpu1: rc2 -> gpu3, and its
// memory dram1. gpu0 and gpu1 are two tenants' GPUs under the SSD's switch.
std::string topology(bool acs_redirect, const std::string& iommu) {
  return R"({"name": "domains", "nodes": [
      {"id": "cpu0", "kind": "cpu"}, {"id": "cpu1", "kind": "cpu"},
      {"id": "dram0", "kind": "host_memory", "socket": "cpu0"},
      {"id": "dram1", "kind": "host_memory", "socket": "cpu1"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0", "iommu": ")" +
         iommu + R"("},
      {"id": "rc1", "kind": "root_complex", "socket": "cpu0"},
      {"id": "rc2", "kind": "root_complex", "socket": "cpu1"},
      {"id": "sw0", "kind": "switch", "acs_request_redirect": )" +
         (acs_redirect ? std::string("true") : std::string("false")) + R"(},
      {"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"}, {"id": "gpu2", "kind": "gpu"},
      {"id": "gpu3", "kind": "gpu"}, {"id": "ssd0", "kind": "nvme_ssd"}],
    "links": [
      {"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu1", "gen": 5, "width": 16},
      {"from": "sw0", "to": "ssd0", "gen": 5, "width": 4},
      {"from": "rc1", "to": "gpu2", "gen": 5, "width": 16},
      {"from": "rc2", "to": "gpu3", "gen": 5, "width": 16},
      {"type": "inter_socket", "from": "cpu0", "to": "cpu1", "latency_ns": 70}]})";
}

struct Row {
  bool acs_redirect;
  const char* iommu;
  const char* target;
  bool mapped;
  bool performed;
  const char* taken;  // the path taken, or "refused"
};

// ssd0's request to each target. Without a translating IOMMU nothing checks the domain: the
// request goes as the topology routes it (turned in sw0, or sent up by ACS, or through the CPU
// fabric) whether or not its target is in the domain. With iommu = translate every request of
// ssd0 climbs to rc0 and is translated; an unmapped target is refused there.
const std::vector<Row> kTable = {
    // acs    iommu          target   mapped performed taken
    {false, "off", "gpu1", true, true, "direct"},
    {false, "off", "gpu1", false, true, "direct"},
    {true, "off", "gpu1", true, true, "redirected"},
    {true, "off", "gpu1", false, true, "redirected"},
    {false, "passthrough", "gpu1", false, true, "direct"},
    {true, "passthrough", "gpu1", false, true, "redirected"},
    {false, "translate", "gpu1", true, true, "translated"},
    {false, "translate", "gpu1", false, false, "refused"},
    {true, "translate", "gpu1", true, true, "translated"},
    {true, "translate", "gpu1", false, false, "refused"},
    // Another root complex of the same host: through the CPU fabric unless translated.
    {false, "off", "gpu2", false, true, "cpu_fabric"},
    {true, "passthrough", "gpu2", false, true, "cpu_fabric"},
    {false, "translate", "gpu2", true, true, "translated"},
    {true, "translate", "gpu2", false, false, "refused"},
    // The other host (socket).
    {false, "off", "gpu3", false, true, "cpu_fabric"},
    {false, "translate", "gpu3", true, true, "translated"},
    {false, "translate", "gpu3", false, false, "refused"},
    // Host memory of either socket.
    {false, "off", "dram0", false, true, "root_complex"},
    {true, "passthrough", "dram1", false, true, "cpu_fabric"},
    {false, "translate", "dram0", true, true, "translated"},
    {true, "translate", "dram1", false, false, "refused"},
};

TEST(DomainTruthTable, EveryRowAsWrittenByHand) {
  for (const Row& row : kTable) {
    const TopologyConfig t = resolve_topology(
        catalog(), nlohmann::json::parse(topology(row.acs_redirect, row.iommu)), "domains.json");
    const TopologyGraph graph(t);
    const Router router(t, graph);
    auto index = [&t](const char* id) {
      return static_cast<std::size_t>(t.node(id) - t.nodes.data());
    };
    const ResolvedPath path = router.resolve(index("ssd0"), index(row.target), Traffic::Request);
    const DomainOutcome out = domain_outcome(path, row.mapped);
    SCOPED_TRACE(std::string("acs ") + (row.acs_redirect ? "on" : "off") + ", iommu " + row.iommu +
                 ", ssd0 -> " + row.target + (row.mapped ? " (mapped)" : " (not mapped)"));
    EXPECT_EQ(out.performed, row.performed);
    EXPECT_EQ(out.taken, row.taken);
    EXPECT_EQ(out.checked, std::string(row.iommu) == "translate");
    EXPECT_EQ(out.refused_by == index("rc0"), !row.performed);
  }
}

TEST(DomainTruthTable, ABlockedPathIsNeverPerformed) {
  ResolvedPath blocked;
  blocked.blocked = true;
  blocked.taken = "blocked";
  EXPECT_FALSE(domain_outcome(blocked, true).performed);
  EXPECT_EQ(domain_outcome(blocked, true).taken, "blocked");
}

}  // namespace
}  // namespace gpunvme::pcie::testing
