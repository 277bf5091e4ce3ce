// An nvme_ssd node's parameters, typed: the controller's (ssd_params.def),
// then the flash back end's (models/flash/flash_params.def), then its PCIe
// receive credits; times in picoseconds. Its dma_* parameters are
// pcie::dma_engine_config's. nvme_ssd_spec() (controller.h) is built from the
// same tables.
#pragma once

#include "models/pcie/pcie_specs.h"
#include "sim/kernel/params/param_table.h"

// The flash table names its enums unqualified.
#include "models/flash/flash_params.h"

namespace gpunvme::nvme {

using flash::GcPolicy;
using flash::Media;
using flash::Precondition;

struct SsdParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/flash/flash_params.def"
#include "models/nvme/ssd_params.def"
#undef GPUNVME_PARAM
  pcie::PortCredits credits;
  static SsdParams from(const ParamValues& values);
};

// The controller's declared parameters (ssd_params.def), in `describe` order.
std::vector<ParamSpec> controller_param_specs();

}  // namespace gpunvme::nvme
