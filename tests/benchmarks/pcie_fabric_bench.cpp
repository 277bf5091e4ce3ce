// Benchmark of the PCIe fabric model: SSDs behind one Gen5 switch read GPU memory in 4 KB DMA
// reads through it, enough of them in flight to saturate the GPU's link, and the program prints
// how many simulated bytes the simulator moves per wall-clock second (and per event), so later
// changes to the fabric can be compared.
//
//   pcie_fabric_bench [total_reads] [ssds]     defaults: 1,000,000 reads, 4 SSDs
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/pcie/dma_engine.h"
#include "models/pcie/fabric.h"
#include "models/topology/topology_graph.h"
#include "sim/kernel/simulation.h"
#include "sim/system/run/catalog.h"

namespace {

using namespace gpunvme;

// One socket; a Gen5 switch with the GPU on x16 and `ssds` SSDs on x4 each: four or more SSDs
// together ask for more than the GPU's link carries.
std::string topology_json(int ssds) {
  std::string nodes = R"({"id": "cpu0", "kind": "cpu"},
      {"id": "rc0", "kind": "root_complex", "socket": "cpu0"},
      {"id": "sw0", "kind": "switch"}, {"id": "gpu0", "kind": "gpu"})";
  std::string links = R"({"from": "rc0", "to": "sw0", "gen": 5, "width": 16},
      {"from": "sw0", "to": "gpu0", "gen": 5, "width": 16})";
  for (int i = 0; i < ssds; ++i) {
    nodes += fmt::format(R"(, {{"id": "ssd{}", "kind": "nvme_ssd"}})", i);
    links += fmt::format(R"(, {{"from": "sw0", "to": "ssd{}", "gen": 5, "width": 4}})", i);
  }
  return R"({"name": "bench", "nodes": [)" + nodes + R"(], "links": [)" + links + "]}";
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t total_reads = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int ssds = argc > 2 ? std::atoi(argv[2]) : 4;
  if (total_reads == 0 || ssds < 1 || ssds > 64) {
    std::fprintf(stderr, "usage: pcie_fabric_bench [total_reads > 0] [ssds 1..64]\n");
    return 2;
  }
  constexpr std::uint64_t kRead = 4096;
  constexpr std::uint64_t kJobReads = 4096;  // reads per DMA transfer

  const auto wall_start = std::chrono::steady_clock::now();
  Simulation simulation;
  const TopologyConfig topology =
      resolve_topology(catalog(), nlohmann::json::parse(topology_json(ssds)), "bench");
  const TopologyGraph graph(topology);
  MemorySpace memory;
  pcie::Fabric fabric("pcie", topology, graph, memory);
  const std::size_t gpu = static_cast<std::size_t>(topology.node("gpu0") - topology.nodes.data());
  const std::uint64_t hbm =
      memory
          .allocate(std::max<std::uint64_t>(1ull << 30, static_cast<std::uint64_t>(ssds) << 26),
                    gpu, RegionKind::DeviceMemory, "hbm")
          .base;

  // Each SSD reads its share of the reads, a few thousand per DMA transfer, sweeping its own
  // 64 MiB of GPU memory; two transfers queued per SSD keep its engine busy between them.
  std::vector<std::unique_ptr<pcie::DmaEngine>> engines;
  std::vector<std::uint64_t> left(static_cast<std::size_t>(ssds));
  std::vector<std::uint64_t> offset(static_cast<std::size_t>(ssds), 0);
  std::function<void(int)> next = [&](int i) {
    const std::uint64_t reads = std::min(kJobReads, left[i]);
    if (reads == 0) return;
    left[i] -= reads;
    const std::uint64_t src = hbm + (static_cast<std::uint64_t>(i) << 26) + offset[i];
    offset[i] = (offset[i] + reads * kRead) % ((1ull << 26) - kJobReads * kRead);
    engines[i]->read(src, reads * kRead, [&next, i] { next(i); });
  };
  for (int i = 0; i < ssds; ++i) {
    const std::string id = fmt::format("ssd{}", i);
    const std::size_t node = static_cast<std::size_t>(topology.node(id) - topology.nodes.data());
    engines.push_back(
        std::make_unique<pcie::DmaEngine>((id + "_dma").c_str(), fabric, memory, node));
    left[i] = total_reads / ssds + (static_cast<std::uint64_t>(i) < total_reads % ssds ? 1 : 0);
  }
  for (int i = 0; i < ssds; ++i) {
    next(i);
    next(i);
  }
  const auto setup_done = std::chrono::steady_clock::now();
  simulation.run();
  const auto wall_end = std::chrono::steady_clock::now();

  std::uint64_t bytes = 0;
  for (const auto& engine : engines) bytes += engine->bytes_moved();
  const double wall = std::chrono::duration<double>(wall_end - setup_done).count();
  const double simulated_s = static_cast<double>(Simulation::now()) * 1e-12;
  const std::uint64_t events = Simulation::events();
  std::printf(
      "pcie_fabric_bench: %d SSDs (Gen5 x4) read GPU memory (Gen5 x16) through one switch, "
      "4 KB DMA reads\n",
      ssds);
  std::printf("  reads                      %llu\n",
              static_cast<unsigned long long>(bytes / kRead));
  std::printf("  simulated bytes            %llu\n", static_cast<unsigned long long>(bytes));
  std::printf("  simulated time             %.3f us\n", simulated_s * 1e6);
  std::printf("  simulated bandwidth        %.3f GB/s\n",
              static_cast<double>(bytes) / simulated_s / 1e9);
  std::printf("  events                     %llu (%.2f per read)\n",
              static_cast<unsigned long long>(events),
              static_cast<double>(events) / static_cast<double>(bytes / kRead));
  std::printf("  wall time                  %.3f s (setup %.3f s)\n", wall,
              std::chrono::duration<double>(setup_done - wall_start).count());
  std::printf("  simulated bytes / wall s   %.4g\n", static_cast<double>(bytes) / wall);
  std::printf("  events / wall s            %.4g\n", static_cast<double>(events) / wall);
  std::printf("  %-14s %11s %16s\n", "link", "utilization", "credit stall ns");
  for (const auto& link : fabric.statistics(Simulation::now())) {
    std::printf("  %-14s %11.4f %16.1f\n", link["direction"].get<std::string>().c_str(),
                link["utilization"].get<double>(), link["credit_stall_ns"].get<double>());
  }
  return 0;
}
