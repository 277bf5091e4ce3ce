// The declared parameters of an NVMe SSD: the controller's, then the flash
// back end's (models/flash/flash_params.cpp).
#include <fmt/format.h>

#include "models/flash/flash_params.h"
#include "models/nvme/controller.h"
#include "models/nvme/ssd_params.h"
#include "models/pcie/dma_engine.h"
#include "models/pcie/pcie_specs.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"

namespace gpunvme::nvme {

void check_batch_time_scale(const SsdParams& ssd, const ParamValues& values,
                            const std::string& file, const std::string& node_path) {
  const std::vector<double>& busy = ssd.batch_time_busy_cores;
  const std::vector<double>& scale = ssd.batch_time_scale;
  const std::vector<double>& footprint = ssd.batch_time_footprint_ns_per_mib;
  const auto shown = [&values](const char* name) { return render_value(values.json().at(name)); };
  if (footprint.empty() && ssd.batch_time_footprint_mib > 0) {
    throw ConfigError(file, node_path + ".batch_time_footprint_mib",
                      shown("batch_time_footprint_mib"),
                      "a footprint without batch_time_footprint_ns_per_mib charges nothing: "
                      "expected 0, or set batch_time_footprint_ns_per_mib");
  }
  if (!footprint.empty()) {
    if (footprint.size() != busy.size()) {
      throw ConfigError(file, node_path + ".batch_time_footprint_ns_per_mib",
                        shown("batch_time_footprint_ns_per_mib"),
                        fmt::format("expected one time per MiB per count of "
                                    "batch_time_busy_cores ({})",
                                    busy.size()));
    }
    if (!(ssd.batch_time_footprint_mib > 0)) {
      throw ConfigError(file, node_path + ".batch_time_footprint_mib",
                        shown("batch_time_footprint_mib"),
                        "expected the calibration's footprint in MiB, > 0, with "
                        "batch_time_footprint_ns_per_mib set");
    }
  }
  if (busy.empty() && scale.empty()) return;
  if (!ssd.batch_service) {
    const char* set = busy.empty() ? "batch_time_scale" : "batch_time_busy_cores";
    throw ConfigError(file, node_path + "." + set, shown(set),
                      "a batch's time by the processors busy is a batch_service controller's: set "
                      "batch_service = true, or leave batch_time_busy_cores and batch_time_scale "
                      "empty");
  }
  if (busy.size() != scale.size()) {
    throw ConfigError(file, node_path + ".batch_time_scale", shown("batch_time_scale"),
                      fmt::format("expected one scale per count of batch_time_busy_cores ({}), "
                                  "each > 0",
                                  busy.size()));
  }
  for (std::size_t i = 1; i < busy.size(); ++i) {
    if (!(busy[i] > busy[i - 1])) {
      throw ConfigError(file, node_path + ".batch_time_busy_cores", shown("batch_time_busy_cores"),
                        fmt::format("expected busy-processor counts >= 1 in ascending order, each "
                                    "above the one before (entry {} is {}, after {})",
                                    i, busy[i], busy[i - 1]));
    }
  }
}

SsdParams SsdParams::from(const ParamValues& values) {
  SsdParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/flash/flash_params.def"
#include "models/nvme/ssd_params.def"
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
