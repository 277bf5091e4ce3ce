// The SSD's own steps of every I/O command as trace slices: process
// "SSD <id>", one enclosing "command" slice from the SQ tail doorbell to the
// completion being posted, with fetch_wait, processing, then media_read and
// dma_to_host (reads) or dma_from_host and media_write (writes). A command
// that ends early (an error, a flush, a deallocation) shows the time after
// processing as execution.
#pragma once

#include <string>
#include <vector>

#include "models/nvme/controller.h"
#include "sim/system/trace/trace_writer.h"

namespace gpunvme::trace {

// The stage slices of one command, in order (pure: no trace needed).
std::vector<StageSlice> ssd_command_stages(const nvme::CommandSteps& steps);

// Sends `controller`'s commands to the active trace, as SSD `ssd_id`.
void observe_ssd_commands(nvme::Controller& controller, const std::string& ssd_id);

}  // namespace gpunvme::trace
