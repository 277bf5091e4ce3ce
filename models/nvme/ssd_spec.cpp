// The declared parameters of an NVMe SSD: the controller's, then the flash
// back end's (models/flash/flash_params.cpp).
#include "models/flash/flash_params.h"
#include "models/nvme/controller.h"
#include "models/nvme/ssd_params.h"
#include "models/pcie/dma_engine.h"
#include "models/pcie/pcie_specs.h"

namespace gpunvme::nvme {

SsdParams SsdParams::from(const ParamValues& values) {
  SsdParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/nvme/ssd_params.def"
#include "models/flash/flash_params.def"
#undef GPUNVME_PARAM
  out.credits = pcie::PortCredits::from(values);
  return out;
}

std::vector<ParamSpec> controller_param_specs() {
  return {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/nvme/ssd_params.def"
#undef GPUNVME_PARAM
  };
}

const ComponentSpec& nvme_ssd_spec() {
  static const ComponentSpec spec = [] {
    ComponentSpec s{"nvme_ssd",
                    "An NVMe SSD: the controller (registers, admin and I/O queues, doorbells, "
                    "arbitration, DMA, interrupts, faults) and its flash back end. Device "
                    "profiles in configs/ssd/ set these per drive.",
                    controller_param_specs()};
    for (const ParamSpec& p : flash::flash_param_specs()) s.params.push_back(p);
    for (ParamSpec& p : pcie::dma_engine_params(
             "dma_", "controller's data DMA engine (read data out, write data in)", 131072,
             "estimate: 128 KiB = 32 pages, the transfer limit of the common MDTS 5 (NVMe base "
             "spec 1.4 §3.1.1; the shipped profiles' mdts), so one command's contiguous data is "
             "one burst: one event per hop per command, as before the engine existed; the fabric "
             "still splits it into MPS-sized TLPs [nvme-base-1.4] [nvme-base-2.0]",
             64,
             "estimate: 64 chunks of up to 128 KiB in flight exceed what an x4 drive's "
             "data path keeps busy (a 4 KiB posted write lands in ~1 us at ~1.5 M IOPS: ~2 in "
             "flight); the fabric's read_tags limit binds first for write commands")) {
      s.params.push_back(std::move(p));
    }
    for (ParamSpec& p : pcie::endpoint_credit_params("SSD")) s.params.push_back(std::move(p));
    return s;
  }();
  return spec;
}

}  // namespace gpunvme::nvme
