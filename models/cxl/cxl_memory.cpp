#include "models/cxl/cxl_memory.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpunvme::cxl {

CxlMemoryParams CxlMemoryParams::from(const ParamValues& values) {
  CxlMemoryParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/cxl/cxl_memory_params.def"
#undef GPUNVME_PARAM
  return out;
}

const ComponentSpec& cxl_memory_spec() {
  static const ComponentSpec spec{
      "cxl_memory",
      "A CXL Type-3 memory expander on a PCIe link (its gen and width are the CXL port's): "
      "host-managed memory that host buffers (scenario host_buffers) and devices' DMA can use.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/cxl/cxl_memory_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

std::uint32_t slots_per_flit(std::uint32_t flit_bytes) {
  // 68 B: 2 B protocol id, 4 x 16 B slots, 2 B CRC. 256 B: 2 B flit header, a 14 B header
  // slot and 14 x 16 B slots, 2 B credit return, 8 B CRC, 6 B FEC.
  if (flit_bytes == 68) return 4;
  if (flit_bytes == 256) return 15;
  throw std::invalid_argument(fmt::format("no CXL flit of {} B (68 or 256)", flit_bytes));
}

std::uint64_t lines_touched(std::uint64_t addr, std::uint64_t len) {
  if (len == 0) return 0;
  return (addr + len - 1) / kLineBytes - addr / kLineBytes + 1;
}

std::uint64_t cxl_link_wire_bytes(std::uint32_t flit_bytes, CxlMessage message,
                                  std::uint64_t lines) {
  const std::uint64_t slots_per_line =
      message == CxlMessage::Request ? 1 : 1 + std::uint64_t{kDataSlotsPerLine};
  const std::uint64_t per_flit = slots_per_flit(flit_bytes);
  const std::uint64_t flits = (lines * slots_per_line + per_flit - 1) / per_flit;
  return flits * flit_bytes;
}

double data_efficiency(std::uint32_t flit_bytes) {
  const double slots_per_line = 1.0 + kDataSlotsPerLine;
  return static_cast<double>(kLineBytes) /
         (slots_per_line / slots_per_flit(flit_bytes) * static_cast<double>(flit_bytes));
}

double phy_bytes_per_ns(pcie::Gen gen, pcie::Width width) {
  const double lanes_bytes_per_ns = pcie::lane_gtps(gen) * static_cast<int>(width) / 8.0;
  return gen == pcie::Gen::kGen6 ? lanes_bytes_per_ns
                                 : lanes_bytes_per_ns * pcie::encoding_efficiency(gen);
}

double data_bytes_per_ns(pcie::Gen gen, pcie::Width width, std::uint32_t flit_bytes) {
  return phy_bytes_per_ns(gen, width) * data_efficiency(flit_bytes);
}

std::string link_problem(pcie::Gen gen, std::uint32_t flit_bytes) {
  const double gtps = pcie::lane_gtps(gen);
  if (gtps < 8.0) {
    return fmt::format("a CXL link runs at 8, 16, 32 or 64 GT/s, not {} GT/s (gen 3 to 6)", gtps);
  }
  if (gtps > 32.0 && flit_bytes != 256) {
    return fmt::format("at {} GT/s a CXL link carries 256 B flits only (flit_bytes = {})", gtps,
                       flit_bytes);
  }
  return "";
}

}  // namespace gpunvme::cxl
