// A CXL Type-3 memory expander (cxl_memory): host-managed memory behind a CXL port, i.e. a
// PCIe link that carries CXL.mem flits instead of TLPs. The fabric (models/pcie/fabric.h)
// serves it like host memory (its bandwidth after its access latency) and charges the link
// in flits (cxl_link_wire_bytes); the router treats it as host memory reached through a root
// port or switch, so devices' DMA to it follows the ACS and IOMMU settings on the way.
//
// Link accounting, per 64 B cache line (CXL.mem moves whole lines; a partial line is a line
// with byte enables):
//  * a read request (M2S Req) takes one 16 B slot;
//  * a write (M2S RwD) and read data (S2M DRS) take one header slot and four data slots;
// a burst's slots are packed into flits of `slots_per_flit` slots, each `flit_bytes` on the wire.
// Left out: the spec's slot formats pack up to a few small headers (S2M DRS, NDR) into one
// slot, which the model charges one each; write completions (S2M NDR, one header per line
// upstream) are not charged; and the link's SKP ordered sets (~0.2 %).
#pragma once

#include <cstdint>
#include <string>

#include "models/pcie/link_accounting.h"
#include "sim/kernel/params/param_table.h"

namespace gpunvme::cxl {

struct CxlMemoryParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/cxl/cxl_memory_params.def"
#undef GPUNVME_PARAM
  static CxlMemoryParams from(const ParamValues& values);
};

const ComponentSpec& cxl_memory_spec();

inline constexpr std::uint32_t kLineBytes = 64;
inline constexpr std::uint32_t kSlotBytes = 16;
inline constexpr std::uint32_t kDataSlotsPerLine = kLineBytes / kSlotBytes;

// What one direction of a CXL link carries for a burst.
enum class CxlMessage { Request, DataWithHeader };

// Slots of payload in one flit: 4 in a 68 B flit, 15 in a 256 B flit.
std::uint32_t slots_per_flit(std::uint32_t flit_bytes);

// Cache lines that [addr, addr + len) touches.
std::uint64_t lines_touched(std::uint64_t addr, std::uint64_t len);

// Bytes on the wire (whole flits) for `lines` cache lines of `message`.
std::uint64_t cxl_link_wire_bytes(std::uint32_t flit_bytes, CxlMessage message,
                                  std::uint64_t lines);

// Cache-line data bytes per wire byte of a stream of DataWithHeader messages.
double data_efficiency(std::uint32_t flit_bytes);

// Bytes per ns of flits one direction of a CXL link carries: the lanes' rate after 128b/130b
// encoding at 8-32 GT/s; at 64 GT/s (PAM4, 1b/1b) the whole rate, the 256 B flit holding its
// own CRC and FEC.
double phy_bytes_per_ns(pcie::Gen gen, pcie::Width width);

// Data bytes per ns one direction of a CXL link carries at full load: phy_bytes_per_ns times
// data_efficiency.
double data_bytes_per_ns(pcie::Gen gen, pcie::Width width, std::uint32_t flit_bytes);

// Why a link of `gen` cannot carry `flit_bytes` flits, or "" when it can: CXL runs at 8, 16,
// 32 GT/s (Gen3-5 rates) with either flit, and at 64 GT/s (Gen6) only with 256 B flits.
std::string link_problem(pcie::Gen gen, std::uint32_t flit_bytes);

}  // namespace gpunvme::cxl
