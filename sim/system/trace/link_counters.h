// PCIe link utilization as trace counters: each sample gives every link
// direction's busy fraction since the previous sample (process "pcie", one
// counter series per direction).
#pragma once

#include <functional>

#include "models/pcie/fabric.h"
#include "sim/system/trace/trace_writer.h"

namespace gpunvme::trace {

std::function<void(TraceWriter&, Picoseconds)> link_utilization_sampler(const pcie::Fabric& fabric);

}  // namespace gpunvme::trace
