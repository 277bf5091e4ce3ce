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

// batch_time_busy_cores, batch_time_scale and the footprint term
// (batch_time_footprint_ns_per_mib, batch_time_footprint_mib) checked against
// each other and the controller (ConfigError naming `file` and
// `node_path`.FIELD): as many scales and times per MiB as counts, counts
// strictly ascending, a footprint > 0 exactly when times per MiB are set,
// and only on a batch_service controller (the only one whose processors take
// batches).
void check_batch_time_scale(const SsdParams& ssd, const ParamValues& values,
                            const std::string& file, const std::string& node_path);

// The controller's declared parameters (ssd_params.def), in `describe` order.
std::vector<ParamSpec> controller_param_specs();

}  // namespace gpunvme::nvme
