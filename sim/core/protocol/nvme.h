// NVMe protocol definitions shared by the GPU-side algorithms, the simulated
// controller and the software target.
//
// Header-only, no exceptions, no heap, and every function usable from CUDA
// device code (GPUNVME_HD). Byte layouts follow the NVM Express Base
// Specification 1.4; each header cites the sections it implements.
//
//   nvme_status.h     Status Code Type / Status Code values
//   nvme_entries.h    SubmissionEntry, CompletionEntry, SglDescriptor, opcodes
//   nvme_commands.h   command builders and decoders
//   nvme_registers.h  controller registers and doorbell addressing
//   nvme_queue.h      SQ/CQ ring arithmetic, phase tags, EventIdx test
//   nvme_prp.h        PRP builder (host) and walker (controller)
//   nvme_sgl.h        SGL walker (controller)
#pragma once

#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_queue.h"
#include "sim/core/protocol/nvme_registers.h"
#include "sim/core/protocol/nvme_sgl.h"
#include "sim/core/protocol/nvme_status.h"
#include "sim/core/protocol/portability.h"
