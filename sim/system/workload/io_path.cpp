#include "sim/system/workload/io_path.h"

#include "models/pcie/pcie_specs.h"
#include "sim/system/workload/cpu_initiated.h"
#include "sim/system/workload/gpu_io_path.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

HostSide nearest_host_side(const Machine& machine, std::size_t ssd) {
  const TopologyConfig& topology = machine.topology();
  HostSide best;
  std::size_t best_hops = static_cast<std::size_t>(-1);
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    const NodeConfig& node = topology.nodes[i];
    if (node.kind != "host_memory") continue;
    const std::string socket = pcie::HostMemoryParams::from(node.params).socket;
    const std::size_t hops = machine.graph().route(i, ssd).size();
    if (socket.empty() || hops == 0 || hops >= best_hops) continue;
    best = HostSide{machine.node_index(socket), i};
    best_hops = hops;
  }
  return best;
}

std::unique_ptr<IoPath> make_io_path(const RunConfig& config, Machine& machine,
                                     std::uint64_t max_io_bytes) {
  const IoPathKind path = ScenarioParams::from(config.scenario.params).path;
  if (path == IoPathKind::gds) {
    return std::make_unique<CpuInitiatedPath>("io_path", config, machine,
                                              CpuInitiatedPath::Mode::Gds, max_io_bytes);
  }
  if (path == IoPathKind::bounce) {
    return std::make_unique<CpuInitiatedPath>("io_path", config, machine,
                                              CpuInitiatedPath::Mode::Bounce, max_io_bytes);
  }
  return std::make_unique<GpuIoPath>("io_path", config, machine, max_io_bytes);
}

}  // namespace gpunvme
