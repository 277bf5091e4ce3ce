#include "sim/system/workload/io_path.h"

#include "models/pcie/pcie_specs.h"
#include "sim/system/workload/cpu_initiated.h"
#include "sim/system/workload/gpu_io_path.h"
#include "sim/system/workload/gpu_network_path.h"
#include "sim/system/workload/rate_limited_path.h"
#include "sim/system/workload/remote_io_path.h"
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

namespace {
std::unique_ptr<IoPath> make_unlimited_path(const RunConfig& config, Machine& machine,
                                            std::uint64_t max_io_bytes) {
  const IoPathKind path = ScenarioParams::from(config.scenario.params).path;
  // Tenants' paths are named after them: their warps and drivers must not
  // share names.
  const std::string name =
      config.qos.name.empty() ? "io_path" : "tenant_" + config.qos.name + "_io_path";
  if (path == IoPathKind::gds) {
    return std::make_unique<CpuInitiatedPath>(name.c_str(), config, machine,
                                              CpuInitiatedPath::Mode::Gds, max_io_bytes);
  }
  if (path == IoPathKind::bounce) {
    return std::make_unique<CpuInitiatedPath>(name.c_str(), config, machine,
                                              CpuInitiatedPath::Mode::Bounce, max_io_bytes);
  }
  if (path == IoPathKind::gpu_network) {
    return std::make_unique<GpuNetworkPath>(name.c_str(), config, machine, max_io_bytes);
  }
  if (is_remote_path(config)) {
    return std::make_unique<RemoteIoPath>(name.c_str(), config, machine, max_io_bytes);
  }
  return std::make_unique<GpuIoPath>(name.c_str(), config, machine, max_io_bytes);
}
}  // namespace

std::unique_ptr<IoPath> make_io_path(const RunConfig& config, Machine& machine,
                                     std::uint64_t max_io_bytes) {
  std::unique_ptr<IoPath> path = make_unlimited_path(config, machine, max_io_bytes);
  if (!config.qos.rate_limited()) return path;
  std::vector<std::uint32_t> lba_bytes;
  for (const std::string& id : ScenarioParams::from(config.scenario.params).ssds) {
    lba_bytes.push_back(machine.ssd(id).lba_bytes());
  }
  return std::make_unique<RateLimitedPath>(("tenant_" + config.qos.name + "_rate_limit").c_str(),
                                           config.qos, std::move(lba_bytes), std::move(path));
}

}  // namespace gpunvme
