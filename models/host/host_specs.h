// Declared parameters of the host side: CPU sockets and their memory. The
// tables are cpu_params.def and models/pcie/host_memory_params.def.
#pragma once

#include "models/pcie/pcie_specs.h"
#include "sim/kernel/params/param_table.h"

namespace gpunvme::host {

// How a core learns that a command completed.
GPUNVME_ENUM(CpuCompletion, polling, interrupt)
// When the host path charges an IOMMU mapping per command.
GPUNVME_ENUM(IommuDmaMap, auto_, on, off)

// A cpu node's parameters, typed; times in picoseconds.
struct CpuParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/host/cpu_params.def"
#undef GPUNVME_PARAM
  static CpuParams from(const ParamValues& values);
};

// A host_memory node's parameters (declared with the fabric, which serves
// DMA into host memory).
using pcie::HostMemoryParams;

const ComponentSpec& cpu_spec();
const ComponentSpec& host_memory_spec();

}  // namespace gpunvme::host
