// The simulated machine built from a resolved topology: the address space,
// the topology graph, the PCIe fabric and one model per device.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/gpu/gpu.h"
#include "models/host/nvme_driver.h"
#include "models/nvme/controller.h"
#include "models/pcie/dma_engine.h"
#include "models/pcie/fabric.h"
#include "models/topology/topology_graph.h"
#include "sim/kernel/memory_space.h"
#include "sim/system/config/run_config.h"

namespace gpunvme {

class Machine {
 public:
  explicit Machine(const TopologyConfig& topology);

  const TopologyConfig& topology() const { return topology_; }
  const TopologyGraph& graph() const { return graph_; }
  MemorySpace& memory() { return memory_; }
  pcie::Fabric& fabric() { return *fabric_; }

  std::size_t node_index(const std::string& id) const;
  gpu::Gpu& gpu(const std::string& id);
  nvme::Controller& ssd(const std::string& id);
  const std::map<std::string, std::unique_ptr<nvme::Controller>>& ssds() const { return ssds_; }
  const std::map<std::string, std::unique_ptr<gpu::Gpu>>& gpus() const { return gpus_; }
  // The copy engine of a GPU: host <-> device copies (bounce buffers, KV-cache tiers) go
  // through it, with the GPU's copy_engine_* parameters.
  pcie::DmaEngine& copy_engine(const std::string& gpu_id);
  // Per DMA engine (each GPU's copy engine, each SSD's data DMA): what it moved; the result's
  // pcie.dma_engines.
  nlohmann::json dma_engines() const;

  // An SSD that several tenants share has one host driver, which brings it up
  // once for all of their queues; each tenant's path creates its queues
  // through it. Null for an SSD whose path brings it up itself.
  void add_shared_driver(const std::string& ssd_id, std::unique_ptr<host::NvmeDriver> driver);
  host::NvmeDriver* shared_driver(const std::string& ssd_id) const;

  // Models of network hardware that every workload of the run reaching it
  // uses together (a NIC or DPU port, a cable, a network switch, a target's
  // cores), by a key naming the kind and the topology node or link: the
  // first workload builds it with `make`, later ones get the same object, so
  // tenants reading one storage host contend at its NIC, cables and cores.
  template <class Model, class Make>
  std::shared_ptr<Model> shared_model(const std::string& key, Make make) {
    std::shared_ptr<void>& slot = shared_models_[key];
    if (!slot) slot = std::shared_ptr<Model>(make());
    return std::static_pointer_cast<Model>(slot);
  }

 private:
  const TopologyConfig& topology_;
  TopologyGraph graph_;
  MemorySpace memory_;
  std::unique_ptr<pcie::Fabric> fabric_;
  std::map<std::string, std::unique_ptr<gpu::Gpu>> gpus_;
  std::map<std::string, std::unique_ptr<nvme::Controller>> ssds_;
  std::map<std::string, std::unique_ptr<pcie::DmaEngine>> copy_engines_;     // by GPU id
  std::map<std::string, std::unique_ptr<host::NvmeDriver>> shared_drivers_;  // by SSD id
  std::map<std::string, std::shared_ptr<void>> shared_models_;               // by key
};

}  // namespace gpunvme
