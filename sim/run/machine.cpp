#include "sim/run/machine.h"

#include <stdexcept>

namespace gpunvme {

Machine::Machine(const TopologyConfig& topology) : topology_(topology), graph_(topology) {
  fabric_ = std::make_unique<pcie::Fabric>("pcie", topology, graph_, memory_);
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    const NodeConfig& node = topology.nodes[i];
    if (node.kind == "gpu") {
      gpus_[node.id] = std::make_unique<gpu::Gpu>(node.id.c_str(), node.params, i, memory_);
    } else if (node.kind == "nvme_ssd") {
      ssds_[node.id] = std::make_unique<nvme::Controller>(node.id.c_str(), node.params, i,
                                                          *fabric_, memory_);
    } else if (node.kind == "host_memory") {
      const auto bytes = static_cast<std::uint64_t>(node.params.real("capacity_gib") *
                                                    static_cast<double>(1ull << 30));
      memory_.allocate(bytes, i, RegionKind::HostMemory, node.id);
    }
  }
}

std::size_t Machine::node_index(const std::string& id) const {
  for (std::size_t i = 0; i < topology_.nodes.size(); ++i) {
    if (topology_.nodes[i].id == id) return i;
  }
  throw std::out_of_range("no node " + id);
}

gpu::Gpu& Machine::gpu(const std::string& id) { return *gpus_.at(id); }
nvme::Controller& Machine::ssd(const std::string& id) { return *ssds_.at(id); }

}  // namespace gpunvme
