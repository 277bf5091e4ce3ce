#include "sim/system/machine/machine.h"

#include <stdexcept>

#include "models/cxl/cxl_memory.h"
#include "models/pcie/pcie_specs.h"
#include "sim/kernel/params/config_error.h"

namespace gpunvme {

namespace {
// Builds a component whose constructor checks its parameters against each
// other: its ConfigError names the field, and the file is the topology's.
template <typename Build>
auto in_topology_file(const TopologyConfig& topology, Build build) {
  try {
    return build();
  } catch (const ConfigError& e) {
    if (!e.file().empty()) throw;
    throw ConfigError(topology.file, e.path(), e.value(), e.problem());
  }
}
}  // namespace

Machine::Machine(const TopologyConfig& topology) : topology_(topology), graph_(topology) {
  fabric_ = std::make_unique<pcie::Fabric>("pcie", topology, graph_, memory_);
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    const NodeConfig& node = topology.nodes[i];
    if (node.kind == "gpu") {
      gpus_[node.id] = in_topology_file(topology, [&] {
        return std::make_unique<gpu::Gpu>(node.id.c_str(), node.params, i, memory_);
      });
      copy_engines_[node.id] = std::make_unique<pcie::DmaEngine>(
          (node.id + "_copy_engine").c_str(), *fabric_, memory_, i,
          pcie::dma_engine_config(node.params, "copy_engine_"));
    } else if (node.kind == "nvme_ssd") {
      ssds_[node.id] = in_topology_file(topology, [&] {
        return std::make_unique<nvme::Controller>(node.id.c_str(), node.params, i, *fabric_,
                                                  memory_);
      });
    } else if (node.kind == "host_memory") {
      const auto bytes = static_cast<std::uint64_t>(
          pcie::HostMemoryParams::from(node.params).capacity_gib * static_cast<double>(1ull << 30));
      memory_.allocate(bytes, i, RegionKind::HostMemory, node.id);
    } else if (node.kind == "cxl_memory") {
      // Host-managed memory: buffers placed here are host memory to every user.
      const auto bytes = static_cast<std::uint64_t>(
          cxl::CxlMemoryParams::from(node.params).capacity_gib * static_cast<double>(1ull << 30));
      memory_.allocate(bytes, i, RegionKind::HostMemory, node.id);
    }
  }
  // A controller that moves data with a GPU's copy engine waits behind
  // that GPU's polls of host memory.
  for (auto& [id, ssd] : ssds_) {
    ssd->set_copy_op_delay([this](std::uint64_t addr) {
      for (const auto& [gpu_id, gpu] : gpus_) {
        if (gpu->owns(addr, 1)) return gpu->copy_op_poll_delay();
      }
      return Picoseconds{0};
    });
    // A software target's copies slow while warps crowd its CQ lines.
    nvme::Controller* controller = ssd.get();
    ssd->set_cq_line_extra_pollers([this, controller] {
      std::uint64_t extra = 0;
      for (const auto& [gpu_id, gpu] : gpus_) {
        extra += gpu->extra_host_line_pollers(
            [controller](std::uint64_t line) { return controller->cq_holds_line(line); });
      }
      return extra;
    });
    // And while warps sweep its CQ rings (the GPUs keep their sweeps only
    // for such a target).
    if (controller->counts_ring_sweepers()) {
      for (const auto& [gpu_id, gpu] : gpus_) gpu->set_track_host_sweeps(true);
      ssd->set_cq_ring_extra_sweepers([this, controller] {
        std::uint64_t extra = 0;
        for (const auto& [gpu_id, gpu] : gpus_) {
          extra += gpu->extra_ring_sweepers(
              [controller](std::uint64_t line) { return controller->cq_of_line(line); });
        }
        return extra;
      });
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

pcie::DmaEngine& Machine::copy_engine(const std::string& gpu_id) {
  return *copy_engines_.at(gpu_id);
}

void Machine::add_shared_driver(const std::string& ssd_id,
                                std::unique_ptr<host::NvmeDriver> driver) {
  shared_drivers_[ssd_id] = std::move(driver);
}

host::NvmeDriver* Machine::shared_driver(const std::string& ssd_id) const {
  auto it = shared_drivers_.find(ssd_id);
  return it == shared_drivers_.end() ? nullptr : it->second.get();
}

nlohmann::json Machine::dma_engines() const {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&out](const std::string& node, const char* kind, const pcie::DmaEngine& engine) {
    nlohmann::json entry = {{"node", node}, {"kind", kind}};
    entry.update(engine.statistics());
    out.push_back(std::move(entry));
  };
  for (const auto& [id, engine] : copy_engines_) add(id, "gpu_copy_engine", *engine);
  for (const auto& [id, ssd] : ssds_) add(id, "ssd_data_dma", ssd->dma_engine());
  return out;
}

}  // namespace gpunvme
