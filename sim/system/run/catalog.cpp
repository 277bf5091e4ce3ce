#include "sim/system/run/catalog.h"

#include "models/cxl/cxl_memory.h"
#include "models/gpu/gpu.h"
#include "models/host/host_specs.h"
#include "models/network/network.h"
#include "models/nic/rdma_nic.h"
#include "models/nvme/controller.h"
#include "models/nvmf/nvmf.h"
#include "models/pcie/pcie_specs.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

const Catalog& catalog() {
  static const Catalog c{
      {host::cpu_spec(), host::host_memory_spec(), pcie::root_complex_spec(), pcie::switch_spec(),
       gpu::gpu_spec(), nvme::nvme_ssd_spec(), nic::rdma_nic_spec(), nvmf::dpu_node_spec(),
       network::network_switch_spec(), nvmf::nvmf_target_spec(), cxl::cxl_memory_spec()},
      pcie::link_spec(),
      pcie::topology_spec(),
      scenario_spec(),
  };
  return c;
}

}  // namespace gpunvme
