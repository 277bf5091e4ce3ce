#include "sim/system/trace/ssd_commands.h"

#include "sim/core/protocol/nvme_entries.h"

namespace gpunvme::trace {

std::vector<StageSlice> ssd_command_stages(const nvme::CommandSteps& steps) {
  const auto opcode = static_cast<nvme::NvmOpcode>(steps.opcode);
  std::vector<StageSlice> stages;
  stages.push_back({"fetch_wait", steps.rung, steps.fetched});
  Picoseconds at = steps.fetched;
  if (steps.processed) {
    stages.push_back({"processing", at, *steps.processed});
    at = *steps.processed;
  }
  if (steps.data_ready && opcode == nvme::NvmOpcode::Read) {
    stages.push_back({"media_read", at, *steps.data_ready});
    stages.push_back({"dma_to_host", *steps.data_ready, steps.completed});
  } else if (steps.data_ready && opcode == nvme::NvmOpcode::Write) {
    stages.push_back({"dma_from_host", at, *steps.data_ready});
    stages.push_back({"media_write", *steps.data_ready, steps.completed});
  } else {
    stages.push_back({"execution", at, steps.completed});
  }
  return stages;
}

void observe_ssd_commands(nvme::Controller& controller, const std::string& ssd_id) {
  controller.observe_commands([ssd_id](const nvme::CommandSteps& steps) {
    TraceWriter* trace = active();
    if (trace == nullptr) return;
    trace->io(Side::ssd, ssd_id, "command", steps.rung, steps.completed, ssd_command_stages(steps),
              {ssd_id, steps.qid, steps.cid});
  });
}

}  // namespace gpunvme::trace
