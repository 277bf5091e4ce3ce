#include "models/host/host_specs.h"

namespace gpunvme::host {

CpuParams CpuParams::from(const ParamValues& values) {
  CpuParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/host/cpu_params.def"
#undef GPUNVME_PARAM
  return out;
}

const ComponentSpec& cpu_spec() {
  static const ComponentSpec spec{
      "cpu",
      "A CPU socket: cores that run the host's I/O stack; its root complexes and memory name it "
      "as their socket.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/host/cpu_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

const ComponentSpec& host_memory_spec() {
  static const ComponentSpec spec{
      "host_memory",
      "DRAM behind a CPU socket, reachable by DMA through that socket's root complexes.",
      pcie::host_memory_params()};
  return spec;
}

}  // namespace gpunvme::host
